"""Seed 001's testbed on real Linux TCP (issue 15, build item 4), side by side with the simulator.

The same testbed as :mod:`.scenario` (Fig. 3 / Table I): server — 1 Gbit/s access — emulator
(path delay) — AP — 20 Mbit/s WiFi with random loss — client; RTT 3 / 100 / 200 ms. Real parts:

* **network**: ``tcpvideo emulate``'s :class:`~tcpvideo.emulate.network.Network` built from the
  study's own scenario (the simulator's parser gives nodes, addresses and routes; every link with
  delay or loss is a ``crates/linkem`` TUN emulator carrying the simulator's loss streams, seed and
  channel); namespaces are ``tve-ccplb-<hex>-n<i>`` (run id ``ccplb-<hex>``), removed on exit and
  by ``tcpvideo emulate --cleanup`` after a kill;
* **server**: tcpvideo's origin (``crates/origin``, ``bulk`` mode: the file as fast as TCP takes
  it, as the simulated server's ``mode = "bulk"``) with ``--congestion-control`` = the kernel CC
  (``cubic``, or the registered BPF twin ``tv_compound`` / ``tv_ccp`` / ``tv_ccplca`` /
  ``tv_ccplb``); the origin itself is unchanged: the harness takes a duplicate of the origin's
  listening socket (``pidfd_getfd(2)``, root) and writes the stream's facts — POB in MSS-sized
  segments, POBRate, the video rate — into its BPF socket storage (``tcpvideo.bpf.set_app_info``).
  The map is ``BPF_F_CLONE``, so the accepted connection inherits them before its CC's ``init``
  runs: per socket, in the kernel, written by the server side, as the issue asks. (In the seed the
  server learns POB from the client; one client per run makes "set on the listener" the same.)
* **client**: :mod:`.real_client` in the client's namespace: one GET, read as data arrives, the
  frame-deadline player (:mod:`.frame_player`, the model's own, bound) on the read times;
* **cwnd**: ``ss -tin`` in the server's namespace every ``sample_interval`` (the kernel's
  ``tcp_info``; ``cwnd:`` in segments, ``retrans:cur/total``); retransmissions are the server
  namespace's ``RetransSegs`` (``/proc/net/snmp``) over the run, which counts fast, timeout and
  loss-probe retransmissions as the simulator's summary does.

Simulated side: the same scenario through ``tcpvideo.simulate`` and the study's reducer; its cwnd
is the sender's ``cwnd_bytes`` series in MSS (1448 B) segments. The cwnd median of either runtime
is taken over the samples while the body is in flight.

Deviations (written down, not hidden): the real client stamps reads with the machine's monotonic
clock (a loaded machine delays reads: a late read is a late frame), the simulated one with
simulated time; linkem emulates the links in user space, so a loaded machine adds delay jitter;
the kernel's MSS is 1448 B as the simulator's; the real run's losses come from the same linkem
loss streams as the simulator's, but which packets meet them differs once the two TCPs diverge.
"""

from __future__ import annotations

import copy
import ctypes
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from tcpvideo.studies.ccplb.scenario import (CCS, PACKET_BYTES, RTTS_MS, VIDEO_RATE_BPS, Scale, pob_seconds,
                                             scenario)

MSS_BYTES = 1448
ORIGIN_PORT = 8000
FILE_NAME = "video.mp4"
READY_TIMEOUT_S = 10.0
_SYS_PIDFD_GETFD = 438  # same number on x86_64 and aarch64 (asm-generic)


def kernel_cc(cc: str) -> str:
    """The kernel name of a study CC: CUBIC is Linux's own, the rest are tcpvideo's BPF twins."""
    if cc not in CCS:
        raise ValueError(f"cc: unknown congestion control {cc!r} (the study's: {', '.join(CCS)})")
    return "cubic" if cc == "cubic" else f"tv_{cc}"


def pob_segments(pob_packets: int) -> float:
    """POB in MSS-sized segments: the same bytes the simulator's CCPLB takes from AppInfo."""
    return pob_packets * PACKET_BYTES / MSS_BYTES


def missing(ccs: Sequence[str] = CCS) -> Optional[str]:
    """Why the real testbed cannot run here (one line), or None."""
    from tcpvideo import bpf
    from tcpvideo.cli.origin import find_origin_binary
    from tcpvideo.emulate.network import PrivilegeError, check_privileges

    try:
        check_privileges()
    except PrivilegeError as e:
        return str(e)
    if shutil.which("ss") is None:
        return "needs `ss` (iproute2) for the cwnd samples"
    if find_origin_binary() is None:
        return "needs the origin binary: cargo build -p tcpvideo-origin --release"
    if any(c != "cubic" for c in ccs):
        why = bpf.missing()
        if why:
            return why
    return None


# ------------------------------------------------------------------------------------------------
# the origin's listening socket, from outside the origin
# ------------------------------------------------------------------------------------------------
def _listener_inode(pid: int, port: int) -> Optional[int]:
    """Inode of the TCP socket listening on ``port`` in ``pid``'s network namespace."""
    try:
        lines = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        f = line.split()
        if len(f) > 9 and f[3] == "0A" and int(f[1].split(":")[1], 16) == port:
            return int(f[9])
    return None


def duplicate_listener(pid: int, port: int) -> int:
    """A descriptor, in this process, of the socket ``pid`` listens on at ``port`` (pidfd_getfd)."""
    inode = _listener_inode(pid, port)
    if inode is None:
        raise RuntimeError(f"origin (pid {pid}) has no listening socket on port {port}")
    target = f"socket:[{inode}]"
    fd_dir = Path(f"/proc/{pid}/fd")
    remote = next((int(p.name) for p in fd_dir.iterdir() if os.readlink(p) == target), None)
    if remote is None:
        raise RuntimeError(f"origin (pid {pid}): listening socket {target} not among its descriptors")
    pidfd = os.pidfd_open(pid)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.syscall(_SYS_PIDFD_GETFD, pidfd, remote, 0)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"pidfd_getfd on the origin's listener: {os.strerror(err)}")
        return fd
    finally:
        os.close(pidfd)


# ------------------------------------------------------------------------------------------------
# cwnd samples (ss -tin)
# ------------------------------------------------------------------------------------------------
_SS_CWND = re.compile(r"\bcwnd:(\d+)")
_SS_RETRANS = re.compile(r"\bretrans:\d+/(\d+)")
_SS_CC = re.compile(r"^\s+([a-z][a-z0-9_]*)\s", re.M)  # the info line opens with the socket's CC name


def parse_ss(text: str) -> Optional[tuple[int, int]]:
    """(cwnd segments, retransmissions so far) of the first connection in ``ss -tin`` output."""
    m = _SS_CWND.search(text)
    if not m:
        return None
    r = _SS_RETRANS.search(text)
    return int(m[1]), int(r[1]) if r else 0


@dataclass
class SsSampler:
    """``ss -tin`` on the server's connection every ``interval_s``, in a thread."""

    namespace: str
    port: int
    interval_s: float = 0.1
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (monotonic s, cwnd, retrans)
    ccs: set[str] = field(default_factory=set)  # congestion controls ss named on the connection

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> list[tuple[float, int, int]]:
        self._stop.set()
        self._thread.join(timeout=5.0)
        return self.samples

    def _loop(self) -> None:
        argv = ["ip", "netns", "exec", self.namespace, "ss", "-tinH", "state", "established",
                "sport", "=", f":{self.port}"]
        nxt = time.monotonic()
        while not self._stop.is_set():
            t = time.monotonic()
            r = subprocess.run(argv, capture_output=True, text=True)
            got = parse_ss(r.stdout)
            if got:
                self.samples.append((t, *got))
                self.ccs.update(_SS_CC.findall(r.stdout))
            nxt += self.interval_s
            self._stop.wait(max(0.0, nxt - time.monotonic()))


def _retrans_segs(namespace: str) -> int:
    out = subprocess.run(["ip", "netns", "exec", namespace, "cat", "/proc/net/snmp"], capture_output=True,
                         text=True).stdout
    tcp = [line.split() for line in out.splitlines() if line.startswith("Tcp:")]
    return int(tcp[1][tcp[0].index("RetransSegs")])


# ------------------------------------------------------------------------------------------------
# one run each way
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Point:
    cc: str
    rtt_ms: float
    pob_packets: int = 448
    pob_rate: float = 1.0


def _scenario(point: Point, media_s: float, seed: int) -> dict:
    scale = Scale("real", media_s=media_s, seeds=(seed,), slack_s=6.0)
    # the real client reads as data arrive, so its simulated twin does too
    return scenario(point.cc, point.rtt_ms, scale, point.pob_packets, point.pob_rate, client="at_once")


def run_sim(point: Point, media_s: float, seed: int) -> dict:
    """The simulated testbed: discards, underflows, retransmissions, cwnd median (segments)."""
    import tcpvideo
    from tcpvideo.studies.ccplb.metrics import reducer

    res = tcpvideo.simulate(_scenario(point, media_s, seed), seed=seed)
    summary, _ = reducer(res)
    prog = res.progressive.to_pylist()[0]
    t_req = prog["request_s"] or 0.0
    s = res.series.to_pydict()
    # while the body is in flight: from the request until the sender has all of it acked
    cw = [c / MSS_BYTES for t, f, c, a in zip(s["t_s"], s["flow"], s["cwnd_bytes"], s["bytes_acked"])
          if f == 0 and c is not None and t >= t_req and (a or 0) < prog["file_bytes"]]
    return {"picture_discards": summary["picture_discards"], "underflows": summary["underflows"],
            "retransmissions": summary["retransmissions"], "cwnd_median": statistics.median(cw) if cw else None,
            "body_done": summary["body_done"], "cwnd_samples": len(cw)}


def run_real(point: Point, media_s: float, seed: int, work: Path, sample_interval_s: float = 0.1) -> dict:
    """The same testbed on real Linux TCP; the kernel CC must be registered (``tcpvideo bpf load``)."""
    from tcpvideo import bpf
    from tcpvideo.cli.origin import find_origin_binary
    from tcpvideo.emulate import network as netmod
    from tcpvideo.emulate.plan import make_plan
    from tcpvideo.studies.ccplb import real_client
    from tcpvideo.studies.ccplb.frame_player import progressive_frames

    kcc = kernel_cc(point.cc)
    sc = _scenario(point, media_s, seed)
    prog = sc["flow"][0]["progressive"]
    # The network only: emulate's planner builds the nodes, links and routes of the scenario; the
    # flow is run here (origin + client), not by emulate's bulk apps, so it is described as bulk.
    net_sc = copy.deepcopy(sc)
    net_sc["flow"][0] = {"name": "vlc", "client": "client", "server": "server", "app": "bulk", "tcp": {"cc": "cubic"}}
    plan = make_plan(json.dumps(net_sc), "json", net_sc, seed)
    work.mkdir(parents=True, exist_ok=True)
    media_dir = Path(tempfile.mkdtemp(prefix="ccplb-media-", dir=work))
    frames = progressive_frames(VIDEO_RATE_BPS, media_s, 1.0)
    with open(media_dir / FILE_NAME, "wb") as f:
        f.truncate(sum(frames))  # the bytes are not decoded: only their arrival times matter
    server, client = 0, 3
    server_ip = plan.nodes[server]["ip"]
    netmod.cleanup()
    net = netmod.Network(plan, run_id=f"ccplb-{secrets.token_hex(2)}")
    dup_fd = None
    with net:
        ns_server = net.ns[server]
        origin = net.popen(server, [find_origin_binary(), str(media_dir), "--listen", f"{server_ip}:{ORIGIN_PORT}",
                                    "--mode", "bulk", "--congestion-control", kcc, "--no-bpf", "--log-format", "json"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while _listener_inode(origin.pid, ORIGIN_PORT) is None:
            if origin.poll() is not None:
                err = origin.stderr.read().decode(errors="replace").strip().splitlines()
                raise RuntimeError(f"origin exited ({origin.returncode}): {err[-1] if err else ''}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"origin did not listen on {server_ip}:{ORIGIN_PORT} in {READY_TIMEOUT_S} s")
            time.sleep(0.05)
        if kcc in bpf.APP_INFO_USERS:
            dup_fd = duplicate_listener(origin.pid, ORIGIN_PORT)
            try:
                bpf.set_app_info(dup_fd, pob_segments=pob_segments(point.pob_packets), pob_rate=point.pob_rate,
                                 video_rate_bps=VIDEO_RATE_BPS)
            finally:
                os.close(dup_fd)
        spec = {"host": server_ip, "port": ORIGIN_PORT, "path": f"/{FILE_NAME}", "rate_bps": VIDEO_RATE_BPS,
                "media_s": media_s, "chunk_s": 1.0, "startup_threshold_s": float(prog["startup_threshold"].rstrip("s")),
                "timeout_s": media_s + 60.0, "out": str(work / "client.json")}
        (work / "client.spec.json").write_text(json.dumps(spec))
        retrans0 = _retrans_segs(ns_server)
        sampler = SsSampler(ns_server, ORIGIN_PORT, sample_interval_s)
        sampler.start()
        cli = net.popen(client, [sys.executable, "-u", real_client.__file__, str(work / "client.spec.json")],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            cli.wait(timeout=spec["timeout_s"] + 15)
        finally:
            samples = sampler.stop()
        retrans = _retrans_segs(ns_server) - retrans0
        linkem = net.stop_links()
    out = json.loads((work / "client.json").read_text()) if (work / "client.json").exists() else \
        {"error": f"client wrote no result: {cli.stderr.read().decode(errors='replace')[-300:]}"}
    if out.get("error"):
        raise RuntimeError(f"real client ({point.cc}, {point.rtt_ms:g} ms): {out['error']}")
    t_end = out["t_end_ns"] / 1e9
    cw = [c for t, c, _ in samples if t <= t_end]
    (work / "ss_samples.json").write_text(json.dumps(samples))
    (media_dir / FILE_NAME).unlink(missing_ok=True)
    media_dir.rmdir()
    return {"picture_discards": out["picture_discards"], "underflows": out["underflows"], "retransmissions": retrans,
            "cwnd_median": statistics.median(cw) if cw else None, "body_done": out["body_done"],
            "cwnd_samples": len(cw), "ss_retrans_total": samples[-1][2] if samples else None,
            "kernel_cc": kcc, "ss_cc": sorted(sampler.ccs), "linkem": {str(k): v for k, v in linkem.items()} if isinstance(linkem, dict) else None}


# ------------------------------------------------------------------------------------------------
# the simulated-vs-real table
# ------------------------------------------------------------------------------------------------
METRICS = ("picture_discards", "underflows", "retransmissions", "cwnd_median")


def compare(points: Sequence[Point], media_s: float, seed: int, out: Path,
            log: Callable[[str], None] = print) -> list[dict]:
    """Run every point both ways; write ``out/sim_vs_real.{json,md}``; return the rows."""
    from tcpvideo import bpf

    why = missing(sorted({p.cc for p in points}))
    if why:
        raise RuntimeError(why)
    names = sorted({kernel_cc(p.cc) for p in points} - {"cubic"})
    newly = [n for n in names if n not in bpf.registered_names()]
    bpf.load(newly)
    rows = []
    try:
        for p in points:
            t0 = time.perf_counter()
            sim = run_sim(p, media_s, seed)
            real = run_real(p, media_s, seed, out / "runs" / f"{p.cc}-{p.rtt_ms:g}ms-pob{p.pob_packets}-{p.pob_rate:g}")
            row = {"cc": p.cc, "kernel_cc": real["kernel_cc"], "rtt_ms": p.rtt_ms, "pob_packets": p.pob_packets,
                   "pob_rate": p.pob_rate, "seed": seed, "media_s": media_s,
                   **{f"sim_{k}": sim[k] for k in METRICS}, **{f"real_{k}": real[k] for k in METRICS},
                   "real_cwnd_samples": real["cwnd_samples"], "real_ss_cc": real["ss_cc"], "wall_s": round(time.perf_counter() - t0, 1)}
            rows.append(row)
            log(format_row(row))
    finally:
        bpf.unload(newly)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sim_vs_real.json").write_text(json.dumps(rows, indent=1))
    (out / "sim_vs_real.md").write_text(markdown(rows))
    return rows


def _fmt(x) -> str:
    if x is None:
        return "-"
    return f"{x:.0f}" if isinstance(x, float) else str(x)


def format_row(r: dict) -> str:
    return (f"{r['cc']:>8} {r['rtt_ms']:>4g} ms: " +
            "  ".join(f"{k} {_fmt(r['sim_' + k])}/{_fmt(r['real_' + k])}" for k in METRICS) + " (sim/real)")


def cwnd_ratio(r: dict) -> Optional[float]:
    """Median real cwnd over median simulated cwnd (the kernel-vs-simulator figure of merit)."""
    if not r["sim_cwnd_median"] or r["real_cwnd_median"] is None:
        return None
    return r["real_cwnd_median"] / r["sim_cwnd_median"]


def markdown(rows: Sequence[dict]) -> str:
    head = "| CC | kernel | RTT ms | " + " | ".join(f"{k} sim | real" for k in METRICS) + " | cwnd real/sim |"
    sep = "|" + "---|" * (4 + 2 * len(METRICS))
    body = ["| " + " | ".join([r["cc"], r["kernel_cc"], f"{r['rtt_ms']:g}"] +
                              [_fmt(r[f"{w}_{k}"]) for k in METRICS for w in ("sim", "real")] +
                              ["-" if cwnd_ratio(r) is None else f"{cwnd_ratio(r):.2f}"]) + " |" for r in rows]
    return "\n".join([head, sep, *body]) + "\n"


def default_points(ccs: Sequence[str] = CCS, rtts: Sequence[float] = RTTS_MS) -> list[Point]:
    return [Point(cc, rtt) for rtt in rtts for cc in ccs]


__all__ = ["Point", "compare", "run_real", "run_sim", "missing", "kernel_cc", "pob_segments", "pob_seconds",
           "default_points", "parse_ss", "duplicate_listener"]
