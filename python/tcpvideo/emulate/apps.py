"""The real applications of an emulated run: every flow endpoint of one host, in one process.

``tcpvideo emulate`` starts this file by path inside each host's network namespace (stdlib
only, so starting 100 of them is cheap) with a JSON spec listing the host's endpoints, and reads
back one JSON result. Each flow is one TCP connection, like the simulator's flows
(crates/sim/src/app/):

* **bulk** (``direction`` down: the server sends; up: the client sends): the sender feeds the
  socket with sendfile(2) from a sparse file (the seed-004 harness's sender,
  ``linux_dumbbell._send_until``'s method: one system call keeps the socket full, no GIL waits),
  ``bytes`` or until the end of the run, then closes if ``close``; the receiver reads as fast as it
  can;
* **reqresp**: the client sends request i of ``request_bytes`` at max(start + at_i, completion
  of response i-1) on one persistent connection, and reads ``response_bytes``; the server reads
  each request in full and answers with sendfile.

Each flow's TCP settings are applied on its sockets where Linux has a per-socket knob
(TCP_CONGESTION, TCP_MAXSEG, TCP_NODELAY, SO_SNDBUF/SO_RCVBUF, keep-alive); the per-namespace
and per-route ones were applied by the caller (``plan.py``). The sender's TCP_INFO is read
every ``sample_interval`` (the struct ``ss -tin`` prints, without a fork per sample) for the
``series`` table, and once at the end for the ``flows`` table.

Protocol with the controller: the process binds its listeners, prints ``ready``, reads the
run's common start ``t0`` (wall-clock seconds; all namespaces share CLOCK_REALTIME) from stdin,
runs until ``t0 + duration`` and writes its result file. Times in the result are relative to t0.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from linux_dumbbell import _sparse_source, tcp_info  # noqa: E402  (stdlib-only helpers, by path)

_SPARSE = 1 << 30
_CHUNK = 1 << 16


def _sleep_until(t: float, stop: threading.Event) -> bool:
    """Sleep until wall time ``t``; False if the run ended first."""
    while True:
        left = t - time.time()
        if left <= 0:
            return True
        if stop.wait(min(left, 0.2)):
            return False


def apply_socket_options(s: socket.socket, tcp: dict) -> None:
    """The per-socket TCP knobs of a flow's ``tcp`` settings (before connect/listen)."""
    if "cc" in tcp:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, tcp["cc"].encode())
    params = dict(tcp.get("cc_params") or [])
    if params:
        # the per-socket facts of the CCP family's BPF ports (plan.PER_SOCKET_CC_PARAMS); on a
        # listener every accepted connection inherits them
        from tcpvideo import bpf

        vr = params.get("video_rate_mbps")
        bpf.set_app_info(s, pob_segments=params.get("pob_segments"), pob_rate=params.get("pob_rate"),
                         video_rate_bps=None if vr is None else vr * 1e6)
    if "mss" in tcp:
        # the simulator's mss is the payload size; TCP_MAXSEG caps the MSS the same way
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, int(tcp["mss"]))
    if tcp.get("nagle") is False:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if "snd_buf" in tcp:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, int(tcp["snd_buf"]) // 2)  # the kernel doubles it
    if "rcv_buf" in tcp:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(tcp["rcv_buf"]) // 2)
    if "keepalive_idle_ns" in tcp:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, max(1, round(tcp["keepalive_idle_ns"] / 1e9)))
        if "keepalive_interval_ns" in tcp:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, max(1, round(tcp["keepalive_interval_ns"] / 1e9)))
        if "keepalive_probes" in tcp:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, int(tcp["keepalive_probes"]))


def _send(conn: socket.socket, src: int, nbytes: int | None, end: float, state: dict) -> int:
    """sendfile ``nbytes`` (None: until ``end``); returns what was sent."""
    conn.setblocking(True)
    sent, offset = 0, state.setdefault("offset", 0)
    while nbytes is None or sent < nbytes:
        left = end - time.time()
        if left <= 0:
            break
        sec = int(left)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", sec, int((left - sec) * 1e6)))
        want = _SPARSE - offset if nbytes is None else min(nbytes - sent, _SPARSE - offset)
        try:
            n = os.sendfile(conn.fileno(), src, offset, want)
        except (BlockingIOError, InterruptedError):
            continue
        if n == 0:
            break
        sent += n
        offset = (offset + n) % _SPARSE
    state["offset"] = offset
    return sent


def _recv(conn: socket.socket, nbytes: int | None, end: float, buf: bytearray) -> int:
    """Read ``nbytes`` (None: until EOF) or until ``end``; returns what was read."""
    got = 0
    view = memoryview(buf)
    while nbytes is None or got < nbytes:
        left = end - time.time()
        if left <= 0:
            break
        conn.settimeout(min(left, 0.5))
        try:
            want = len(buf) if nbytes is None else min(len(buf), nbytes - got)
            n = conn.recv_into(view[:want])
        except socket.timeout:
            continue
        if n == 0:
            break
        got += n
    return got


class Endpoint:
    """One side of one flow; ``run`` is its thread body; ``result`` what it measured."""

    def __init__(self, spec: dict, host: "Host"):
        self.spec, self.host = spec, host
        self.flow = spec["flow"]
        self.app = spec["app"]
        self.sock: socket.socket | None = None
        self.is_sender = spec["sender"]
        self.result: dict = {"flow": self.flow, "role": spec["role"], "sender": self.is_sender,
                             "bytes_sent": 0, "bytes_received": 0, "error": None}
        self.series: list[list] = []

    # ---------------------------------------------------------------- server side
    def serve(self, ls: socket.socket) -> None:
        h = self.host
        ls.settimeout(0.2)
        while not h.stop.is_set():
            try:
                conn, _ = ls.accept()
                break
            except socket.timeout:
                continue
        else:
            return
        self.sock = conn
        self.result["accepted_s"] = time.time() - h.t0
        self._talk(conn)

    # ---------------------------------------------------------------- client side
    def connect(self) -> None:
        h, sp = self.host, self.spec
        if not _sleep_until(h.t0 + sp["start_s"], h.stop):
            return
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        apply_socket_options(s, sp["tcp"])
        s.bind((sp["bind"], 0))
        s.settimeout(max(1.0, h.end - time.time()))
        t = time.time()
        s.connect((sp["server_ip"], sp["port"]))
        self.result["connect_s"] = t - h.t0
        self.result["handshake_rtt_ms"] = (time.time() - t) * 1e3
        self.sock = s
        self._talk(s)

    # ---------------------------------------------------------------- the application
    def _talk(self, conn: socket.socket) -> None:
        h, app = self.host, self.app
        buf = bytearray(_CHUNK)
        if app["kind"] == "bulk":
            if self.is_sender:
                src = _sparse_source()
                try:
                    self.result["bytes_sent"] = _send(conn, src, app["bytes"], h.end, {})
                    self.result["done_s"] = time.time() - h.t0
                    self._final_info(conn)
                finally:
                    os.close(src)
                if app["close"]:
                    conn.shutdown(socket.SHUT_WR)
            else:
                n = _recv(conn, app["bytes"], h.end, buf)
                self.result["bytes_received"] = n
                self.result["done_s"] = time.time() - h.t0
        elif self.spec["role"] == "client":  # reqresp client
            reqs, rows = app["requests"], []
            start = h.t0 + self.spec["start_s"]
            for i, (at_ns, req_bytes, resp_bytes) in enumerate(reqs):
                scheduled = start + at_ns / 1e9
                if not _sleep_until(scheduled, h.stop):
                    rows.append([i, scheduled - h.t0, None, None, resp_bytes])
                    continue
                sent = time.time()
                try:
                    conn.sendall(b"G" * req_bytes)
                    got = _recv(conn, resp_bytes, h.end, buf)
                except OSError:
                    got = 0
                self.result["bytes_received"] += got
                done = time.time() if got == resp_bytes else None
                rows.append([i, scheduled - h.t0, sent - h.t0, None if done is None else done - h.t0, resp_bytes])
                if done is None:
                    break
            self.result["requests"] = rows
        else:  # reqresp server
            src = _sparse_source()
            try:
                for _at_ns, req_bytes, resp_bytes in app["requests"]:
                    if _recv(conn, req_bytes, h.end, buf) < req_bytes:
                        break
                    self.result["bytes_sent"] += _send(conn, src, resp_bytes, h.end, {})
                self._final_info(conn)
            finally:
                os.close(src)

    def _final_info(self, conn: socket.socket) -> None:
        try:
            self.result["info"] = tcp_info(conn)
        except OSError:
            pass

    def sample(self, now: float) -> None:
        s = self.sock
        if s is None or not self.is_sender:
            return
        try:
            i = tcp_info(s)
        except OSError:
            return
        mss = i["snd_mss"] or 1
        self.series.append([now - self.host.t0, i["snd_cwnd"] * mss,
                            None if i["snd_ssthresh"] >= 0x7FFFFFFF else i["snd_ssthresh"] * mss,
                            i["rtt"] / 1e3 if i["rtt"] else None, i["unacked"] * mss, i["bytes_acked"],
                            i["bytes_received"]])
        self.result["max_cwnd_bytes"] = max(self.result.get("max_cwnd_bytes", 0), i["snd_cwnd"] * mss)
        if i["state"] != 1 and "info" not in self.result:  # left ESTABLISHED: keep the last look
            self.result["info"] = i


class Host:
    def __init__(self, spec: dict):
        self.spec = spec
        self.t0 = 0.0  # set by the controller once every host is ready (run())
        self.end = 0.0
        self.stop = threading.Event()
        self.endpoints: list[Endpoint] = []

    def run(self) -> dict:
        threads = []
        for sp in self.spec["servers"]:
            ep = Endpoint(sp, self)
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            apply_socket_options(ls, sp["tcp"])
            ls.bind((sp["bind"], sp["port"]))
            ls.listen(4)
            self.endpoints.append(ep)
            threads.append(threading.Thread(target=self._guard, args=(ep, ep.serve, ls), daemon=True))
        for sp in self.spec["clients"]:
            ep = Endpoint(sp, self)
            self.endpoints.append(ep)
            threads.append(threading.Thread(target=self._guard, args=(ep, ep.connect), daemon=True))
        # every host listens before any client connects: report ready, then learn the common start
        print("ready", flush=True)
        line = sys.stdin.readline()
        if not line.strip():
            return {"endpoints": [], "error": "no start time from the controller"}
        self.t0 = float(line)
        self.end = self.t0 + self.spec["duration_s"]
        for t in threads:
            t.start()
        interval = self.spec.get("sample_interval_s")
        next_sample = self.t0
        while time.time() < self.end and any(t.is_alive() for t in threads):
            if interval:
                now = time.time()
                if now >= next_sample:
                    if now >= self.t0:
                        for ep in self.endpoints:
                            ep.sample(now)
                    next_sample += interval * max(1, int((now - next_sample) / interval) + 1)
                time.sleep(max(0.0, min(next_sample - time.time(), self.end - time.time())))
            else:
                time.sleep(min(0.2, max(0.0, self.end - time.time())))
        for ep in self.endpoints:
            if "info" not in ep.result and ep.sock is not None and ep.is_sender:
                ep._final_info(ep.sock)
        self.stop.set()
        for t in threads:  # they notice the end within their 0.5 s timeouts
            t.join(timeout=1.0)
        for ep in self.endpoints:
            if ep.sock is not None:
                try:
                    ep.sock.close()
                except OSError:
                    pass
        for t in threads:
            t.join(timeout=2.0)
        return {"endpoints": [dict(ep.result, series=ep.series) for ep in self.endpoints]}

    def _guard(self, ep: Endpoint, fn, *args) -> None:
        try:
            fn(*args)
        except Exception as e:  # one flow's failure is reported, the others go on
            if not self.stop.is_set():  # (after the end, sockets are closed under it: not a failure)
                ep.result["error"] = f"{type(e).__name__}: {e}"


def main(argv: list[str]) -> None:
    spec = json.loads(Path(argv[1]).read_text())
    res = Host(spec).run()
    Path(spec["result"]).write_text(json.dumps(res))


if __name__ == "__main__":
    main(sys.argv)
