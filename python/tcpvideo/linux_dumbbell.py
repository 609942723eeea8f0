"""Seed 004's dumbbell on real Linux TCP: the reference tcpvideo's congestion controls answer to.

bench/cc_vs_ns3.py compares tcpvideo's simulator with ns-3; where they disagree tcpvideo claims
to follow Linux. This module produces the evidence for that claim from the kernel itself: the
same bulk flows (explicit per-flow base RTT and start time, e.g. drawn by a tcpvideo scenario)
through the same bottleneck, with real Linux reno/cubic/bbr senders.

Topology (data flows server -> clients)::

    srv ns ==veth== rtr ns [tbf 100 Mbit/s, 1375 pkts] tun0 ~~delay line~~ tun0 cli ns
    10.2xx.0.1       10.2xx.0.2                    10.98.0.1      10.98.0.2, 10.99.0.<i+1>

* **Bottleneck**: tbf (tc-tbf(8)) on the router's TUN device, egress towards the clients:
  ``rate 100mbit burst 15000 limit 2062500``. On a TUN device the qdisc sees the bare IP packet
  (skb->len = IP length, no link header), so 1375 full 1500-byte packets = 2 062 500 bytes: the
  seed's "1375 packets" drop-tail queue (tbf tail-drops in its inner bfifo). The bucket (15000 B,
  10 packets, 1.2 ms at 100 Mbit/s) only matters after the queue drained; it is large enough
  that a late tbf watchdog timer (hrtimer, up to ~1 ms on this shared machine) costs no capacity,
  and small enough that at most 10 packets leave back to back. No peakrate, so tbf's ``mtu``
  is irrelevant. Serialization is 120 us per packet (ns-3's PPP link: 1502 bytes, 120.16 us).
* **Delay**: the native delay line (``delayline.py``, crates/linkem, bound in crates/py/src/linkem.rs) between the
  router's and the client namespace's TUN devices; flow i's client address gets rtt_i/2 one way
  each direction (looked up by destination rtr->cli, by source cli->rtr). The delay sits after
  the queue on the data path, like ns-3's bottleneck + access link delays.
* **Hosts**: one client namespace with one address per flow (10.99.0.<i+1>/32 on its TUN
  device), one server namespace. Offloads off on the veth (tso/gso/gro), so 1448-byte payloads
  (1500-byte IP packets with the timestamp option) reach the bottleneck; a TUN device carries no
  GSO packets anyway. TCP sysctls as the tcpvideo/ns-3 bench: SACK, timestamps, window scaling
  on; ``tcp_rmem``/``tcp_wmem`` max 32 MiB (and ``rmem_max``/``wmem_max``), autotuning on (no
  SO_RCVBUF/SO_SNDBUF: Linux as deployed; ``rwnd_limited_ms``/``sndbuf_limited_ms`` from
  TCP_INFO show whether a window ever limited a flow); ``tcp_no_metrics_save`` (fresh namespaces
  anyway). ECN off. The congestion control per flow with setsockopt(TCP_CONGESTION) on the
  listening socket (accepted sockets inherit it). The server's veth qdisc is the default
  (pfifo_fast): no fq on this kernel, so BBR paces with TCP's internal pacing (tcp_internal_pacing,
  Linux >= 4.13), which is what BBR does without fq.
* **Flows**: at t0 + start_i the client connects from its address i (a handshake: its connect()
  time is a per-flow RTT measurement of the delay line); the server then sends without pause
  until t0 + duration. Goodput = bytes the client application read by t0 + duration (and after
  t0 + warmup), over the run, as tcpvideo and ns-3 count it. After the warm-up the count is
  the kernel's (tcpi_bytes_received at the two instants): a Python reader lagging on a loaded
  machine would otherwise move bytes from before the instant to after it.

Measured (``LinuxDumbbellResult``):

* per-flow goodput, connect() RTT, and from the sender's TCP_INFO at the end (tcp(7),
  include/uapi/linux/tcp.h): ``tcpi_total_retrans`` (segments retransmitted), bytes_retrans,
  min_rtt, rwnd/sndbuf-limited time;
* the server namespace's TCP MIB counters before/after (/proc/net/netstat, /proc/net/snmp):
  RetransSegs, TCPSackRecovery + TCPRenoRecovery (fast-recovery episodes), TCPTimeouts (RTOs),
  TCPLossProbes (TLP);
* the bottleneck queue: the tbf's qlen sampled every ``queue_interval`` (1 ms) over rtnetlink
  (``tcpvideo._core.QdiscSampler``, crates/linkem/src/qdisc_sampler.rs); mean = time-weighted over
  [t0, t0+duration] using the sample times actually read, max = largest sample (a lower bound on
  the true peak: a queue of 1375 packets changes by <= ~9 packets per ms at 100 Mbit/s, plus
  bursts); drops = tbf drop counter over the same window; the sampler's own lateness reported;
  a per-second series (queue at the second's start, max in the second, cumulative drops) is kept
  in ``queue_sampling["per_second"]``;
* the delay line: ICMP echo RTT per client address on the idle path before the flows (configured
  vs measured), and its release lateness percentiles and counters over the run.

Needs root. Everything lives in a ``netns.Network`` (namespaces removed on exit, Ctrl-C and
errors included; stale ones of dead runs are swept by the next run). The endpoint half
(``server``, ``client``, ``ping``) is stdlib-only and runs by path inside the namespaces.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional, Sequence

PORT = 5301
MSS_IP_PACKET = 1500
QUEUE_PKTS = 1375
RATE = "100mbit"
TBF_BURST = 15000
BUF_MAX = 32 * 1024 * 1024
CLIENT_NET = "10.99.0"
TUN_RTR, TUN_CLI = "10.98.0.1", "10.98.0.2"


# --------------------------------------------------------------------------------------------
# endpoints (run inside namespaces; stdlib only)
# --------------------------------------------------------------------------------------------
# struct tcp_info (include/uapi/linux/tcp.h): 8 single bytes, 24 u32 (rto ... total_retrans),
# then u64 pacing_rate, max_pacing_rate, bytes_acked, bytes_received, u32 segs_out, segs_in,
# notsent_bytes, min_rtt, data_segs_in, data_segs_out, u64 delivery_rate, busy_time,
# rwnd_limited, sndbuf_limited, u32 delivered, delivered_ce, u64 bytes_sent, bytes_retrans.
_TCP_INFO = struct.Struct("=8B24I4Q6I4Q2I2Q")
_TCP_INFO_NAMES = (["state", "ca_state", "retransmits", "probes", "backoff", "options", "wscale",
                    "app_limited"] +
                   ["rto", "ato", "snd_mss", "rcv_mss", "unacked", "sacked", "lost", "retrans",
                    "fackets", "last_data_sent", "last_ack_sent", "last_data_recv",
                    "last_ack_recv", "pmtu", "rcv_ssthresh", "rtt", "rttvar", "snd_ssthresh",
                    "snd_cwnd", "advmss", "reordering", "rcv_rtt", "rcv_space", "total_retrans"] +
                   ["pacing_rate", "max_pacing_rate", "bytes_acked", "bytes_received"] +
                   ["segs_out", "segs_in", "notsent_bytes", "min_rtt", "data_segs_in",
                    "data_segs_out"] +
                   ["delivery_rate", "busy_time", "rwnd_limited", "sndbuf_limited"] +
                   ["delivered", "delivered_ce"] + ["bytes_sent", "bytes_retrans"])


def tcp_info(sock: socket.socket) -> dict:
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    raw = raw[:_TCP_INFO.size].ljust(_TCP_INFO.size, b"\0")
    return dict(zip(_TCP_INFO_NAMES, _TCP_INFO.unpack(raw)))


def _sleep_until(t: float) -> None:
    while True:
        left = t - time.time()
        if left <= 0:
            return
        time.sleep(min(left, 0.5))


# Bulk senders feed the socket with sendfile(2) from a sparse file (pages of zeros) under a
# kernel send timeout that ends at the end of the run: the thread stays inside one system call,
# so the socket never runs dry because ten Python threads wait for the interpreter lock on a
# loaded machine. (With send() in a Python loop it did, now and then: Linux then sees nothing in
# flight and raises CA_EVENT_TX_START, which restarts Vegas and resets an idle window.)
_SPARSE_BYTES = 1 << 30


def _sparse_source() -> int:
    """A read-only fd of a 1 GiB sparse file (unlinked at once; no disk or memory behind it)."""
    import tempfile

    fd, path = tempfile.mkstemp(prefix="tcpvideo-bulk-")
    try:
        os.ftruncate(fd, _SPARSE_BYTES)
    finally:
        os.unlink(path)
    return fd


def _send_until(conn: socket.socket, end: float, out: dict) -> None:
    src = _sparse_source()
    conn.setblocking(True)
    sent, offset = 0, 0
    try:
        while True:
            left = end - time.time()
            if left <= 0:
                break
            # SO_SNDTIMEO bounds the time one call may wait for buffer space in total.
            sec = int(left)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                            struct.pack("ll", sec, int((left - sec) * 1e6)))
            try:
                n = os.sendfile(conn.fileno(), src, offset, _SPARSE_BYTES - offset)
            except (BlockingIOError, InterruptedError):
                continue  # the timeout expired with nothing sent: the loop checks the clock
            sent += n
            offset = (offset + n) % _SPARSE_BYTES
    except OSError as e:
        out["error"] = str(e)
    finally:
        os.close(src)
    info = tcp_info(conn)  # at the end of the measured run, before the close
    out.update(sent=sent, info=info)
    conn.close()


def server(a: argparse.Namespace) -> None:
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # accepted sockets inherit the listener's congestion control (tcp(7) TCP_CONGESTION)
    ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, a.cc.encode())
    ls.bind(("0.0.0.0", a.port))
    ls.listen(256)
    ls.settimeout(0.5)
    end = a.t0 + a.duration
    print("READY", flush=True)
    results: dict[str, dict] = {}
    threads = []
    while len(threads) < a.conns and time.time() < end:
        try:
            conn, peer = ls.accept()
        except socket.timeout:
            continue
        out = results.setdefault(peer[0], {"accepted_at": time.time() - a.t0})
        out["cc"] = conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
        t = threading.Thread(target=_send_until, args=(conn, end, out), daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    ls.close()
    print("RESULT " + json.dumps(results), flush=True)


def _receive(i: int, a: argparse.Namespace, flow: dict, out: dict) -> None:
    src = f"{a.client_net}.{i + 1}"
    _sleep_until(a.t0 + flow["start_s"])
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    t = time.perf_counter()
    s.connect((a.host, a.port))
    out["connect_ms"] = (time.perf_counter() - t) * 1e3
    # The kernel's own SYN -> SYN-ACK sample (the client sends no data, so its srtt is still that one
    # sample): microsecond stamps taken in softirq, free of this thread's scheduling delay, which
    # connect_ms includes.
    out["handshake_rtt_ms"] = tcp_info(s)["rtt"] / 1e3
    out["connected_at"] = time.time() - a.t0
    end, warm = a.t0 + a.duration, a.t0 + a.warmup
    buf = bytearray(1 << 18)
    got, at_warm = 0, None
    while True:
        now = time.time()
        if at_warm is None and now >= warm:
            at_warm = got
            out["kernel_bytes_at_warmup"] = tcp_info(s)["bytes_received"]
            out["kernel_bytes_at_warmup_t"] = time.time() - a.t0  # when it was read (late on a loaded machine)
        if now >= end:
            out["kernel_bytes"] = tcp_info(s)["bytes_received"]
            out["kernel_bytes_t"] = time.time() - a.t0
            break
        s.settimeout(max(0.001, min(end, warm if at_warm is None else end) - now))
        try:
            n = s.recv_into(buf)
        except socket.timeout:
            continue
        if n == 0:
            break
        got += n
    out.update(bytes=got, bytes_at_warmup=at_warm if at_warm is not None else 0, src=src)
    # Close a little after the end so that the server reads its TCP_INFO first (a close with
    # unread data sends a RST).
    time.sleep(0.5)
    s.close()


def client(a: argparse.Namespace) -> None:
    flows = json.loads(a.flows)
    outs = [dict() for _ in flows]
    threads = [threading.Thread(target=_receive, args=(i, a, f, outs[i]), daemon=True)
               for i, f in enumerate(flows)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("RESULT " + json.dumps(outs), flush=True)


def _icmp_checksum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def ping(a: argparse.Namespace) -> None:
    """ICMP echo (RFC 792) from each source address to the host; RTTs in ms, sorted.

    The reply's arrival time is the kernel's receive timestamp (SO_TIMESTAMPNS, CLOCK_REALTIME),
    and the request's departure time is read just before sendto(), so the interpreter's wake-up
    after the reply is not part of the RTT (it is ~0.1-0.3 ms on a loaded machine).
    """
    so_ts = getattr(socket, "SO_TIMESTAMPNS", 35)
    res = {}
    for src in a.sources.split(","):
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        s.setsockopt(socket.SOL_SOCKET, so_ts, 1)
        s.bind((src, 0))
        s.settimeout(1.0)
        ident = os.getpid() & 0xFFFF
        rtts = []
        for seq in range(a.count):
            hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
            payload = b"tcpvideo" * 7  # 56 bytes, like ping(8)
            pkt = struct.pack("!BBHHH", 8, 0, _icmp_checksum(hdr + payload), ident, seq) + payload
            t = time.time_ns()
            s.sendto(pkt, (a.host, 0))
            while True:
                try:
                    data, anc, _, _ = s.recvmsg(2048, 64)
                except socket.timeout:
                    break
                ihl = (data[0] & 0xF) * 4
                typ, _, _, rid, rseq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
                if typ == 0 and rid == ident and rseq == seq:
                    rx = time.time_ns()
                    for level, kind, val in anc:
                        if level == socket.SOL_SOCKET and kind == so_ts and len(val) >= 16:
                            sec, nsec = struct.unpack("=qq", val[:16])
                            rx = sec * 1_000_000_000 + nsec
                    rtts.append((rx - t) / 1e6)
                    break
            time.sleep(a.interval)
        s.close()
        rtts.sort()
        res[src] = {"sent": a.count, "received": len(rtts), "rtts_ms": rtts}
    print("RESULT " + json.dumps(res), flush=True)


def _endpoint_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="role", required=True)
    s = sub.add_parser("server")
    s.add_argument("--port", type=int, default=PORT)
    s.add_argument("--cc", required=True)
    s.add_argument("--conns", type=int, required=True)
    s.add_argument("--t0", type=float, required=True)
    s.add_argument("--duration", type=float, required=True)
    c = sub.add_parser("client")
    c.add_argument("--host", required=True)
    c.add_argument("--port", type=int, default=PORT)
    c.add_argument("--client-net", default=CLIENT_NET)
    c.add_argument("--flows", required=True, help="JSON list of {start_s}")
    c.add_argument("--t0", type=float, required=True)
    c.add_argument("--duration", type=float, required=True)
    c.add_argument("--warmup", type=float, default=0.0)
    g = sub.add_parser("ping")
    g.add_argument("--host", required=True)
    g.add_argument("--sources", required=True, help="comma-separated source addresses")
    g.add_argument("--count", type=int, default=5)
    g.add_argument("--interval", type=float, default=0.02)
    return p


# --------------------------------------------------------------------------------------------
# orchestration (root)
# --------------------------------------------------------------------------------------------
@dataclass
class FlowSpec:
    rtt_ms: float  # base round-trip time (propagation, without queueing)
    start_s: float  # when the client connects, seconds after t0


@dataclass
class LinuxDumbbellResult:
    cc: str
    duration_s: float
    warmup_s: float
    flows: list[dict]  # per flow: spec, goodput, connect/ping RTT, tcp_info extract
    goodput_mbps: float
    goodput_after_warmup_mbps: float
    per_flow_goodput_mbps: list[float]
    queue_mean_pkts: float
    queue_max_pkts: int
    queue_mean_after_warmup_pkts: float
    bottleneck_drops: int
    bottleneck_rate_mbps: float  # what tbf sent over the run (saturation check)
    bottleneck_rate_after_warmup_mbps: float
    retransmissions: int  # sum of tcpi_total_retrans
    mib: dict  # server namespace TCP MIB deltas
    queue_sampling: dict  # samples, interval, lateness of the sampler
    delay_line: dict  # lateness, counters
    ping: dict  # per flow address: configured vs measured RTT
    tbf: dict  # final `tc -s` counters
    load_1m: tuple = field(default_factory=tuple)

    def to_json(self) -> dict:
        return asdict(self)


def _mib(ns) -> dict[str, int]:
    """TcpExt and Tcp counters of a namespace (/proc/net/netstat, /proc/net/snmp)."""
    out = {}
    for path in ("/proc/net/netstat", "/proc/net/snmp"):
        lines = ns.run(["cat", path]).stdout.splitlines()
        for hdr, val in zip(lines[0::2], lines[1::2]):
            k1, names = hdr.split(":", 1)
            _, vals = val.split(":", 1)
            if k1 in ("TcpExt", "Tcp"):
                for n, v in zip(names.split(), vals.split()):
                    out[f"{k1}.{n}"] = int(v)
    return out


def _queue_summary(cols: dict, t_start_ns: int, t_end_ns: int, t_warm_ns: int,
                   interval: float) -> dict:
    ts, ql, drops, sent = cols["t_ns"], cols["qlen"], cols["drops"], cols["bytes"]
    idx = [k for k, t in enumerate(ts) if t_start_ns <= t <= t_end_ns]
    if len(idx) < 2:
        raise RuntimeError(f"queue sampler got {len(idx)} samples in the run window")

    def tw_mean(ks):
        area = tot = 0.0
        for a, b in zip(ks, ks[1:]):
            dt = ts[b] - ts[a]
            area += ql[a] * dt
            tot += dt
        return area / tot if tot else float("nan")

    gaps = [ts[b] - ts[a] for a, b in zip(idx, idx[1:])]
    gaps.sort()
    warm = [k for k in idx if ts[k] >= t_warm_ns]
    first, last = idx[0], idx[-1]
    span = (ts[last] - ts[first]) / 1e9
    return {
        "mean": tw_mean(idx),
        "mean_after_warmup": tw_mean(warm) if len(warm) > 1 else float("nan"),
        "max": max(ql[k] for k in idx),
        "drops": drops[last] - drops[first],
        "rate_mbps": 8.0 * (sent[last] - sent[first]) / span / 1e6,
        "rate_after_warmup_mbps": (8.0 * (sent[warm[-1]] - sent[warm[0]])
                                   / ((ts[warm[-1]] - ts[warm[0]]) / 1e9) / 1e6
                                   if len(warm) > 1 else float("nan")),
        "samples": len(idx),
        "interval_ms": interval * 1e3,
        "gap_median_ms": gaps[len(gaps) // 2] / 1e6,
        "gap_p99_ms": gaps[int(0.99 * (len(gaps) - 1))] / 1e6,
        "gap_max_ms": gaps[-1] / 1e6,
        "error": cols.get("error"),
        # per second of the run: [t_s, qlen at the first sample of the second, largest qlen in
        # the second, cumulative drops since t0] (where a loss episode happened, for comparisons
        # with a simulator's per-second queue and drop series)
        "per_second": _per_second(ts, ql, drops, idx, t_start_ns),
    }


def _per_second(ts, ql, drops, idx, t_start_ns) -> list[list]:
    out: list[list] = []
    d0 = drops[idx[0]]
    for k in idx:
        sec = int((ts[k] - t_start_ns) // 1_000_000_000)
        if not out or out[-1][0] != sec:
            out.append([sec, ql[k], ql[k], drops[k] - d0])
        else:
            out[-1][2] = max(out[-1][2], ql[k])
            out[-1][3] = drops[k] - d0
    return out


def run(flows: Sequence[FlowSpec], cc: str, duration: float, warmup: float = 5.0,
        queue_pkts: int = QUEUE_PKTS, rate: str = RATE, queue_interval: float = 0.001,
        rt_priority: int = 10, ping_count: int = 5, log=print) -> LinuxDumbbellResult:
    """Run the dumbbell once on real Linux (root). ``flows``: per-flow base RTT and start."""
    from tcpvideo import netns
    from tcpvideo._core import QdiscSampler
    from tcpvideo.delayline import DelayLine, TunPair, netns_path

    if len(flows) > 250:
        raise ValueError("at most 250 flows (one client address each in 10.99.0.0/24)")
    me = Path(__file__).resolve()
    addrs = [f"{CLIENT_NET}.{i + 1}" for i in range(len(flows))]
    with netns.Network() as net:
        srv, rtr = net.chain(["srv", "rtr"])
        cli = net.add_namespace("cli")
        srv_ip, rtr_ip = net.ip(srv, rtr), net.ip(rtr, srv)
        rtr.sysctl("net.ipv4.ip_forward", 1)  # chain() only sets it on middle namespaces
        for ns in (srv, rtr, cli):
            for k, v in (("net.ipv4.conf.all.rp_filter", 0), ("net.ipv4.conf.default.rp_filter", 0),
                         ("net.ipv4.tcp_sack", 1), ("net.ipv4.tcp_timestamps", 1),
                         ("net.ipv4.tcp_window_scaling", 1), ("net.ipv4.tcp_ecn", 0),
                         ("net.ipv4.tcp_no_metrics_save", 1),
                         ("net.ipv4.tcp_rmem", f"4096 131072 {BUF_MAX}"),
                         ("net.ipv4.tcp_wmem", f"4096 16384 {BUF_MAX}"),
                         ("net.core.rmem_max", BUF_MAX), ("net.core.wmem_max", BUF_MAX),
                         ("net.ipv6.conf.all.disable_ipv6", 1),
                         ("net.ipv6.conf.default.disable_ipv6", 1)):
                ns.run(["sysctl", "-q", "-w", f"{k}={v}"], check=False)
        with TunPair(net, rtr, cli, TUN_RTR, TUN_CLI) as pair:
            for a in addrs:
                cli.run(["ip", "addr", "add", f"{a}/32", "dev", pair.b_dev])
            cli.run(["ip", "route", "add", f"{srv_ip}/32", "dev", pair.b_dev])
            rtr.run(["ip", "route", "add", f"{CLIENT_NET}.0/24", "dev", pair.a_dev])
            srv.run(["ip", "route", "add", f"{CLIENT_NET}.0/24", "via", rtr_ip])
            srv.run(["ip", "route", "add", f"{TUN_CLI}/32", "via", rtr_ip])
            limit = queue_pkts * MSS_IP_PACKET
            rtr.run(["tc", "qdisc", "replace", "dev", pair.a_dev, "root", "tbf", "rate", rate,
                     "burst", str(TBF_BURST), "limit", str(limit)])
            one_way = {a: f.rtt_ms / 2e3 for a, f in zip(addrs, flows)}
            line = DelayLine(pair, a_to_b=one_way, b_to_a=one_way, rt_priority=rt_priority)
            line.start()
            sampler = None
            try:
                # 1. delay accuracy on the idle path
                pp = cli.python(me, ["ping", "--host", srv_ip, "--sources", ",".join(addrs),
                                     "--count", ping_count])
                ping_raw = json.loads(pp.wait_for("^RESULT ", timeout=60).string[7:])
                pings = {}
                for a, f in zip(addrs, flows):
                    r = ping_raw[a]["rtts_ms"]
                    pings[a] = {"configured_ms": f.rtt_ms, "received": len(r),
                                "min_ms": r[0] if r else None,
                                "median_ms": r[len(r) // 2] if r else None}
                line_before = line.stats()
                # 2. the flows
                t0 = time.time() + 2.0
                mono_t0 = time.monotonic_ns() + int((t0 - time.time()) * 1e9)
                sp = srv.python(me, ["server", "--cc", cc, "--conns", len(flows), "--t0", t0,
                                     "--duration", duration])
                sp.wait_for("^READY$")
                mib0 = _mib(srv)
                sampler = QdiscSampler(pair.a_dev, netns_path(rtr), queue_interval)
                sampler.start()
                spec = json.dumps([{"start_s": f.start_s} for f in flows])
                cp = cli.python(me, ["client", "--host", srv_ip, "--flows", spec, "--t0", t0,
                                     "--duration", duration, "--warmup", warmup])
                log(f"  linux {cc}: {len(flows)} flows, {duration:g} s ...")
                cres = json.loads(cp.wait_for("^RESULT ", timeout=duration + 60).string[7:])
                sres = json.loads(sp.wait_for("^RESULT ", timeout=30).string[7:])
                cols = sampler.stop()
                sampler = None
                mib1 = _mib(srv)
                tbf = rtr.qdisc_stats(pair.a_dev)
            finally:
                if sampler is not None:
                    try:
                        sampler.stop()
                    except Exception:
                        pass
                lres = line.stop()
    # ---- summary
    q = _queue_summary(cols, mono_t0, mono_t0 + int(duration * 1e9),
                       mono_t0 + int(warmup * 1e9), queue_interval)
    per_flow, per_flow_after, rows = [], [], []
    retrans = 0
    for a, f, c in zip(addrs, flows, cres):
        s = sres.get(a, {})
        info = s.get("info", {})
        retrans += info.get("total_retrans", 0)
        g = 8.0 * c.get("bytes", 0) / duration / 1e6
        per_flow.append(g)
        # after the warm-up: bytes the kernel received (tcpi_bytes_received) between the two
        # instants, so that data waiting in the receive buffer at the warm-up instant (the Python
        # reader lagging on a loaded machine) is not counted twice; over the time between the two
        # readings as they happened (a reader thread starved at one instant and not the other
        # would otherwise put up to its lateness of extra bytes over the nominal interval)
        span = c.get("kernel_bytes_t", duration) - c.get("kernel_bytes_at_warmup_t", warmup)
        per_flow_after.append(8.0 * (c.get("kernel_bytes", 0) - c.get("kernel_bytes_at_warmup", 0))
                              / (span if span > 0 else duration - warmup) / 1e6)
        rows.append({"addr": a, "rtt_ms": f.rtt_ms, "start_s": f.start_s,
                     "connected_at_s": c.get("connected_at"), "connect_ms": c.get("connect_ms"),
                     "handshake_rtt_ms": c.get("handshake_rtt_ms"),
                     "ping_min_ms": pings[a]["min_ms"], "goodput_mbps": g,
                     "bytes_read": c.get("bytes", 0), "bytes_received": c.get("kernel_bytes"),
                     "cc": s.get("cc"),
                     "total_retrans": info.get("total_retrans"),
                     "bytes_retrans": info.get("bytes_retrans"),
                     "min_rtt_ms": info.get("min_rtt", 0) / 1e3 if info else None,
                     "srtt_end_ms": info.get("rtt", 0) / 1e3 if info else None,
                     "cwnd_end": info.get("snd_cwnd"),
                     "rwnd_limited_ms": info.get("rwnd_limited", 0) / 1e3 if info else None,
                     "sndbuf_limited_ms": info.get("sndbuf_limited", 0) / 1e3 if info else None,
                     "error": s.get("error")})
    keys = ("Tcp.RetransSegs", "TcpExt.TCPSackRecovery", "TcpExt.TCPRenoRecovery",
            "TcpExt.TCPTimeouts", "TcpExt.TCPLossProbes", "TcpExt.TCPSpuriousRTOs",
            "TcpExt.TCPLossUndo", "TcpExt.TCPSackRecoveryFail", "TcpExt.TCPFastRetrans",
            "TcpExt.TCPSlowStartRetrans", "TcpExt.TCPLostRetransmit", "TcpExt.TCPDSACKRecv",
            "TcpExt.TCPSACKReorder", "TcpExt.TCPHystartTrainDetect",
            "TcpExt.TCPHystartDelayDetect")
    mib = {k.split(".", 1)[1]: mib1.get(k, 0) - mib0.get(k, 0) for k in keys}
    mib["recovery_episodes"] = mib["TCPSackRecovery"] + mib["TCPRenoRecovery"]
    return LinuxDumbbellResult(
        cc=cc, duration_s=duration, warmup_s=warmup, flows=rows,
        goodput_mbps=sum(per_flow), goodput_after_warmup_mbps=sum(per_flow_after),
        per_flow_goodput_mbps=per_flow, queue_mean_pkts=q["mean"], queue_max_pkts=q["max"],
        queue_mean_after_warmup_pkts=q["mean_after_warmup"], bottleneck_drops=q["drops"],
        bottleneck_rate_mbps=q["rate_mbps"],
        bottleneck_rate_after_warmup_mbps=q["rate_after_warmup_mbps"], retransmissions=retrans, mib=mib,
        queue_sampling=q, delay_line={"before_flows": line_before, **lres}, ping=pings,
        tbf=tbf, load_1m=os.getloadavg())


def main(argv: Optional[list[str]] = None) -> None:
    a = _endpoint_parser().parse_args(argv)
    {"server": server, "client": client, "ping": ping}[a.role](a)


if __name__ == "__main__":
    if __package__ in (None, ""):
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
