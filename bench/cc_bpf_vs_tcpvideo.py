#!/usr/bin/env python3
"""Vegas and BIC, tcpvideo vs a real Linux stack running BPF ports of them (issue 3's evidence).

bench/cc_vs_ns3.py finds two algorithms where tcpvideo and ns-3 disagree and tcpvideo claims to
follow Linux: Vegas (tcpvideo keeps a ~720-packet standing queue on the 10-flow dumbbell, ns-3
~24) and BIC (tcpvideo drops ~2x what ns-3 drops). bench/cc_vs_linux.py checks such claims
against the kernel, but this kernel has no tcp_vegas or tcp_bic module. So this bench loads
tcpvideo's own BPF struct_ops ports of Linux's Vegas and BIC (bpf/: tv_vegas, tv_bic,
written from tcp_vegas.c / tcp_bic.c, calling the kernel's tcp_slow_start, tcp_cong_avoid_ai and
Reno helpers as kfuncs) and runs the same flows as cc_vs_linux on the same real-Linux dumbbell
(python/tcpvideo/linux_dumbbell.py: namespaces, tbf 100 Mbit/s with 1375 packets, TUN delay line
with the per-flow RTTs), real Linux TCP underneath (loss recovery, RACK, delayed ACKs, TSQ...).

Per algorithm: tcpvideo (``cc_vs_linux.run_tcpvideo``, the cc_vs_ns3 scenario) vs real Linux with
the BPF CC (``cc_vs_linux.run_linux``) vs ns-3 (numbers read from a cc_vs_ns3 JSON, ``--ns3-json``;
ns-3 is not rerun): goodput, mean and max bottleneck queue, drops, retransmitted segments,
recovery episodes / RTOs, Jain's index. Evidence that the BPF CC really ran: every accepted
socket's TCP_CONGESTION, the cc name in ``ss -ti`` polled in the server namespace during the run
(with cwnd/ssthresh samples), and the CCs' own per-flow counters (a global array in each BPF
object, read with bpftool). Per flow, Vegas's base RTT as the kernel port measured it against the
configured RTT (the inflated base RTT of late starters is the explanation of tcpvideo's standing
queue), and BIC's loss count and delayed-ACK ratio.

The CCs are registered at the start and unregistered on exit (errors, Ctrl-C and SIGTERM
included). Real runs take real time (duration + ~8 s each) on a shared machine: the 1-minute load
average is printed with each row. Needs root, clang, bpftool, libbpf headers (see
bpf/README.md).

    python bench/cc_bpf_vs_tcpvideo.py --ns3-json bench/out/cc_vs_ns3.json   # vegas, bic; 10 flows, 60 s
    python bench/cc_bpf_vs_tcpvideo.py --cc vegas --flows 1 --duration 10    # one flow, tcpvideo too
    python bench/cc_bpf_vs_tcpvideo.py --sanity-rate 10mbit --duration 30     # tv_vegas alone settles?
    python bench/cc_bpf_vs_tcpvideo.py --flows 2 --duration 10 --ss-trace    # is the BPF CC used?
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))

from cc_vs_linux import _f, _r, accuracy, run_linux, run_tcpvideo  # noqa: E402
from cc_vs_ns3 import dumbbell_scenario, jain  # noqa: E402

from tcpvideo import bpf  # noqa: E402

# tcpvideo algorithm -> the BPF struct_ops port's name (bpf/<name>.bpf.c)
BPF_CC = {"vegas": "tv_vegas", "bic": "tv_bic"}


# --------------------------------------------------------------------------------------------
# the BPF congestion controls
# --------------------------------------------------------------------------------------------
class Registered:
    """Build and register BPF congestion controls; unregister them on exit."""

    def __init__(self, names: list[str]):
        self.names = names

    def __enter__(self) -> "Registered":
        bpf.load(self.names)
        return self

    def __exit__(self, *exc) -> None:
        try:
            bpf.unload(self.names)
        except bpf.BpfError as e:
            print(f"warning: {e}")


def register_fresh(name: str) -> None:
    """Re-register one CC: new global counters (the per-flow array starts zeroed)."""
    bpf.load([name])


def bpf_flow_stats(name: str, n: int) -> list[dict]:
    """The CC's per-client counters (global array `<name>_flows`, index = client number 1..n)."""
    # The newest map of that name: an earlier registration's maps linger until the sockets that
    # used it are freed.
    r = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True, text=True, check=True)
    ids = [m["id"] for m in json.loads(r.stdout) if m.get("name") == f"{name}.bss"]
    if not ids:
        raise RuntimeError(f"no map {name}.bss: is {name} registered?")
    r = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(max(ids))],
                       capture_output=True, text=True, check=True)
    arr = json.loads(r.stdout)[0]["formatted"]["value"][".bss"][0][f"{name}_flows"]
    return [arr[i + 1] for i in range(n)]


# --------------------------------------------------------------------------------------------
# Watching the run from outside. linux_dumbbell.run creates its namespaces itself and returns
# only summaries (its API has no hook and no queue time series), so this thread finds its
# namespaces by netns.Network's naming (tvt-<our pid>-<n>-<role>), the run's t0 from the server
# process's command line (--t0), and polls `ss -ti` in the server namespace and the tbf's backlog
# (`tc -s qdisc`) in the router namespace.
# --------------------------------------------------------------------------------------------
class Monitor(threading.Thread):
    def __init__(self, port: int, ss_interval: float, queue_interval: float,
                 snapshot_at: float | None = None, snapshot=None):
        super().__init__(daemon=True)
        self.port, self.ss_interval, self.queue_interval = port, ss_interval, queue_interval
        # snapshot(): called once at t0 + snapshot_at (the BPF counters at the end of the
        # measured run, before the senders' close() sends FINs and restarts Vegas)
        self.snapshot_at, self.snapshot_fn = snapshot_at, snapshot
        self.snapshot = None
        self.samples: list[dict] = []  # ss: t_s, peer, cc, cwnd, ssthresh, rtt_ms, minrtt_ms
        # (t_s since t0, tbf backlog packets, tbf drops so far)
        self.queue: list[tuple[float, int, int]] = []
        self.t0: float | None = None
        self.stop_ev = threading.Event()
        self.ns_re = re.compile(rf"^tvt-{os.getpid()}-\d+-(srv|rtr)$")

    def _namespaces(self) -> dict[str, str]:
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        found = {}
        for line in out.splitlines():
            name = line.split()[0] if line.strip() else ""
            m = self.ns_re.match(name)
            if m:
                found[m.group(1)] = name
        return found

    def _find_t0(self, srv: str) -> float | None:
        pids = subprocess.run(["ip", "netns", "pids", srv], capture_output=True, text=True).stdout
        for pid in pids.split():
            try:
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"server" in argv and b"--t0" in argv:
                return float(argv[argv.index(b"--t0") + 1])
        return None

    def run(self) -> None:
        ns: dict[str, str] = {}
        next_ss = 0.0
        while not self.stop_ev.wait(self.queue_interval):
            if len(ns) < 2:
                ns = self._namespaces()
                continue
            if self.t0 is None:
                self.t0 = self._find_t0(ns["srv"])
                continue
            r = subprocess.run(["ip", "netns", "exec", ns["rtr"], "tc", "-s", "qdisc", "show"],
                               capture_output=True, text=True)
            q = parse_tbf(r.stdout)
            if q is not None:
                self.queue.append((round(time.time() - self.t0, 3), *q))
            if (self.snapshot_fn and self.snapshot is None
                    and time.time() >= self.t0 + self.snapshot_at):
                try:
                    self.snapshot = self.snapshot_fn()
                except Exception as e:  # keep monitoring; the caller reports the gap
                    self.snapshot = {"error": str(e)}
            if time.time() >= next_ss:
                next_ss = time.time() + self.ss_interval
                r = subprocess.run(["ip", "netns", "exec", ns["srv"], "ss", "-tinH", "state",
                                    "established", "sport", "=", f":{self.port}"],
                                   capture_output=True, text=True)
                self.samples.extend(parse_ss(r.stdout, time.time() - self.t0))

    def stop(self) -> "Monitor":
        self.stop_ev.set()
        self.join(timeout=5)
        return self


def parse_tbf(text: str) -> tuple[int, int] | None:
    """(backlog packets, dropped packets) of the tbf qdisc in `tc -s qdisc show` output."""
    in_tbf, dropped = False, None
    for line in text.splitlines():
        if line.startswith("qdisc "):
            in_tbf = line.split()[1] == "tbf"
        elif in_tbf and "dropped" in line:
            m = re.search(r"dropped (\d+)", line)
            dropped = int(m.group(1)) if m else None
        elif in_tbf and line.strip().startswith("backlog"):
            m = re.search(r"(\d+)p", line)
            if m and dropped is not None:
                return int(m.group(1)), dropped
    return None


def parse_ss(text: str, t: float) -> list[dict]:
    """`ss -tinH` output -> one dict per connection (peer, cc name, cwnd, ssthresh, rtt)."""
    out, peer = [], None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            parts = line.split()
            peer = parts[-1].rsplit(":", 1)[0] if parts else None
            continue
        toks = line.split()
        rec = {"t_s": round(t, 3), "peer": peer,
               "cc": next((x for x in toks if ":" not in x and x.isidentifier()), None)}
        for x in toks:
            k, _, v = x.partition(":")
            if k in ("cwnd", "ssthresh"):
                rec[k] = int(v)
            elif k == "rtt":
                rec["rtt_ms"] = float(v.split("/")[0])
            elif k == "minrtt":
                rec["minrtt_ms"] = float(v)
        out.append(rec)
    return out


# --------------------------------------------------------------------------------------------
# ns-3 numbers from a cc_vs_ns3 JSON (not rerun)
# --------------------------------------------------------------------------------------------
def load_ns3(path: str | None, a) -> dict[str, dict]:
    if not path:
        return {}
    d = json.loads(Path(path).read_text())
    same = (d.get("flows") == a.flows and d.get("duration_s") == a.duration
            and d.get("seed") == a.seed)
    if not same:
        print(f"note: {path} is {d.get('flows')} flows, {d.get('duration_s')} s, seed "
              f"{d.get('seed')}: ns-3 column not comparable, left out")
        return {}
    return {r["cc"]: r["ns3"] for r in d["rows"] if not r.get("ns3_matched")}


# --------------------------------------------------------------------------------------------
# tables
# --------------------------------------------------------------------------------------------
def print_table(rows: list[dict]) -> None:
    hdr = (f"{'cc':5} | {'goodput Mbit/s tv / lx / ns-3':>29} | {'mean queue pkts tv / lx / ns-3':>30} | "
           f"{'max queue tv/lx/ns-3':>20} | {'drops tv / lx / ns-3':>22} | {'retrans tv / lx':>16} | "
           f"{'recov/RTO tv | lx | ns-3':>24} | {'Jain tv/lx/ns-3':>15} | load")
    print()
    print(hdr)
    print("-" * len(hdr))
    for row in rows:
        tv, lx, ns = row["tcpvideo"], row["linux"], row.get("ns3") or {}
        g = ns.get
        print(f"{row['cc']:5} | {tv['goodput_mbps']:6.2f} / {lx['goodput_mbps']:6.2f} / "
              f"{_f(g('goodput_mbps'), '6.2f'):>6} {_r(tv['goodput_mbps'], lx['goodput_mbps'])} | "
              f"{tv['queue_mean_pkts']:6.0f} / {lx['queue_mean_pkts']:6.0f} / "
              f"{_f(g('queue_mean_pkts'), '5.0f'):>5} {_r(tv['queue_mean_pkts'], lx['queue_mean_pkts'])} | "
              f"{tv['queue_max_pkts']:5.0f}/{lx['queue_max_pkts']:5d}/{_f(g('queue_max_pkts'), '5.0f'):>5}"
              f"    | {tv['bottleneck_drops']:5d} / {lx['bottleneck_drops']:5d} / "
              f"{_f(g('bottleneck_drops'), '5d'):>5} | {tv['retransmissions']:6d} / "
              f"{lx['retransmissions']:6d} | "
              f"{_f(tv['recovery_episodes'], '4d')}/{tv['rto_episodes']:<3d}|"
              f"{lx['recovery_episodes']:4d}/{lx['rto_episodes']:<3d}|"
              f"{_f(g('recovery_episodes'), '4d')}/{_f(g('rto_episodes'), '<3d')} | "
              f"{jain(tv['per_flow_goodput_mbps']):4.2f}/{jain(lx['per_flow_goodput_mbps']):4.2f}/"
              f"{_f(jain(g('per_flow_goodput_mbps')) if g('per_flow_goodput_mbps') else None, '4.2f'):>4}"
              f"      | {row['load_1m']:.1f}")
    print("\n(tv = tcpvideo's simulator; lx = real Linux 6.18 TCP with the BPF port (tv_vegas / "
          "tv_bic) on the namespace dumbbell; ns-3 = 3.44 from the cc_vs_ns3 JSON; (x%) = tcpvideo "
          "relative to Linux. Queue: time-weighted mean of the tbf qlen sampled every 1 ms (lx). "
          "Retrans: segments. Recov/RTO: fast-recovery episodes / timeouts. load: 1-min load "
          "average when the Linux run ended.)")
    print("\nAccuracy of the emulated path (Linux runs):")
    for row in rows:
        acc = row["accuracy"]
        print(f"  {row['cc']}: ping - configured RTT {_f(acc['ping_min_err_ms_mean'], '+.3f')} ms "
              f"(max {_f(acc['ping_min_err_ms_max'], '+.3f')}); delay-line lateness data p99 "
              f"{acc['late_data']['late_p99_us']:.0f} us, ACKs p99 "
              f"{acc['late_acks']['late_p99_us']:.0f} us; sampler gap p99 "
              f"{acc['sampler']['gap_p99_ms']:.2f} ms; tbf {acc['bottleneck_rate_mbps']:.2f} Mbit/s")


def print_flows(row: dict) -> None:
    lx, tv = row["linux"], row["tcpvideo"]
    bpf = row["bpf_flows"]
    tvf = tv.get("per_flow", [])
    print(f"\n{row['cc']}: per flow (lx = real Linux with {row['bpf_cc']}; counters from the BPF "
          "port, read 0.2 s before the end of the run)")
    if row["cc"] == "vegas":
        print(f"{'flow':>4} {'RTT ms':>7} {'start s':>7} | {'baseRTT lx':>10} {'(+ms)':>7} "
              f"{'min_rtt tv':>10} {'(+ms)':>7} | {'lx leaves SS':>18} | {'rounds vegas/reno':>17} "
              f"{'-1/+1 steps':>12} | {'restarts (last at s)':>20} | {'goodput tv / lx':>15} | "
              f"cwnd_end lx")
        for i, (f, b) in enumerate(zip(lx["flows"], bpf)):
            base = (b["base_rtt_us"] - 1) / 1e3 if b["base_rtt_us"] else None
            t = tvf[i] if i < len(tvf) else {}
            ss = "-"
            if b["ss_exit_cwnd"]:
                at = (f["connected_at_s"] or 0) + ((b["ss_exit_ms"] - b["init_ms"]) & 0xFFFFFFFF) / 1e3
                ss = f"{at:5.2f} s cwnd {b['ss_exit_cwnd']:4d}"
            tv_min = t.get("min_rtt_ms")
            dry = max(b["tx_starts"] - 1, 0) + b["cwnd_restarts"]
            rs = f"{dry:3d}"
            if dry:
                at = (f["connected_at_s"] or 0) + ((b["reinit_ms"] - b["init_ms"]) & 0xFFFFFFFF) / 1e3
                rs += f" ({at:6.2f})"
            print(f"{i:4d} {f['rtt_ms']:7.2f} {f['start_s']:7.3f} | {_f(base, '10.2f')} "
                  f"{_f(base - f['rtt_ms'] if base else None, '+7.2f')} {_f(tv_min, '10.2f')} "
                  f"{_f(tv_min - f['rtt_ms'] if tv_min else None, '+7.2f')} | {ss:>18} | "
                  f"{b['vegas_rounds']:8d}/{b['reno_rounds']:<8d} {b['dec']:5d}/{b['inc']:<6d} | "
                  f"{rs:>20} | {tv['per_flow_goodput_mbps'][i]:6.2f} / {lx['per_flow_goodput_mbps'][i]:6.2f} | "
                  f"{_f(f['cwnd_end'], 'd')}")
        print("(baseRTT lx: the port's base RTT (min of per-ACK samples since the start) minus 1 "
              "us; (+ms): above the configured RTT = queueing taken for propagation delay. "
              "min_rtt tv: tcpvideo's sender min RTT, which Vegas's base RTT equals in a bulk run. "
              "restarts: Vegas re-inits after the first send (CA_EVENT_TX_START with nothing in "
              "flight: the sending application ran dry; or CA_EVENT_CWND_RESTART), each forgetting "
              "baseRTT, and when the last one happened.)")
    else:
        print(f"{'flow':>4} {'RTT ms':>7} {'start s':>7} | {'losses':>6} {'RTO resets':>10} | "
              f"{'W_max':>6} | {'ACK ratio mean (last)':>21} {'mean cnt':>8} | {'segs/ACK':>8} | "
              f"{'retrans tv / lx':>15} | {'goodput tv / lx':>15}")
        for i, (f, b) in enumerate(zip(lx["flows"], bpf)):
            t = tvf[i] if i < len(tvf) else {}
            tv_rt = sum(t.get(k, 0) or 0 for k in ("retrans_fast", "retrans_timeout", "retrans_tlp"))
            n = b["ratio_n"]
            ratio = b["ratio_sum"] / n / 16 if n else None
            cnt = b["cnt_sum"] / n if n else None
            spa = b["pkts_open"] / b["acks_open"] if b["acks_open"] else None
            print(f"{i:4d} {f['rtt_ms']:7.2f} {f['start_s']:7.3f} | {b['losses']:6d} "
                  f"{b['resets']:10d} | {b['last_max_cwnd']:6d} | {_f(ratio, '13.2f')} "
                  f"({b['delayed_ack'] / 16:5.2f}) {_f(cnt, '8.1f')} | {_f(spa, '8.2f')} | "
                  f"{tv_rt:6d} / {_f(f['total_retrans'], '6d')} | "
                  f"{tv['per_flow_goodput_mbps'][i]:6.2f} / {lx['per_flow_goodput_mbps'][i]:6.2f}")
        print("(losses: the port's ssthresh calls (fast recovery or RTO). ACK ratio: Linux BIC's "
              "delayed_ack/16 (EWMA of segments per ACK in TCP_CA_Open, divides cnt), mean over "
              "the cnt recomputations above low_window, and its last value; mean cnt: the resulting cnt (segments "
              "ACKed per +1 cwnd); segs/ACK: segments per ACK in TCP_CA_Open over the whole run.)")


def tcpvideo_queue_series(cc: str, a) -> list[tuple[float, int, int]]:
    """tcpvideo's bottleneck queue over time: the cc_vs_ns3 scenario again (same seed, so the
    same run), with queue samples every --queue-interval (run_tcpvideo samples every second),
    and its retransmissions so far (= its drops: nothing else is lost) at each sample."""
    import tcpvideo

    sc = dumbbell_scenario(cc, a.flows, a.duration, a.seed, a.start_spread)
    sc["record"] = {"sample_interval": f"{a.queue_interval * 1e3:g}ms", "events": True}
    res = tcpvideo.simulate(sc, seed=a.seed)
    rtx = sorted(e["t_s"] for e in res.events.select(["t_s", "kind"]).to_pylist()
                 if e["kind"] == "retransmit")
    out, k = [], 0
    for r in res.queues.to_pylist():
        if r["link"] == "bottleneck" and r["from"] == "r1":
            while k < len(rtx) and rtx[k] <= r["t_s"]:
                k += 1
            out.append((r["t_s"], r["packets"], k))
    return out


WINDOWS = (0, 0.5, 1, 1.5, 2, 3, 5, 10, 20, 30, 40, 50, 60)


def window_means(series, edges) -> list[float | None]:
    out = []
    for lo, hi in zip(edges, edges[1:]):
        v = [x[1] for x in series if lo <= x[0] < hi]
        out.append(sum(v) / len(v) if v else None)
    return out


def window_increase(series, edges) -> list[int | None]:
    """Increase of the cumulative count (third item) over each window."""
    out = []
    for lo, hi in zip(edges, edges[1:]):
        before = [x[2] for x in series if x[0] < lo]
        inside = [x[2] for x in series if lo <= x[0] < hi]
        out.append(inside[-1] - (before[-1] if before else 0) if inside else None)
    return out


def print_queue_series(row: dict, duration: float) -> None:
    qs = row["queue_series"]
    edges = [e for e in WINDOWS if e < duration] + [duration]
    tv, lx = window_means(qs["tcpvideo"], edges), window_means(qs["linux"], edges)
    lx_max = [max((x[1] for x in qs["linux"] if lo <= x[0] < hi), default=None)
              for lo, hi in zip(edges, edges[1:])]
    lx_min = [min((x[1] for x in qs["linux"] if lo <= x[0] < hi), default=None)
              for lo, hi in zip(edges, edges[1:])]
    tv_min = [min((x[1] for x in qs["tcpvideo"] if lo <= x[0] < hi), default=None)
              for lo, hi in zip(edges, edges[1:])]
    tv_d, lx_d = window_increase(qs["tcpvideo"], edges), window_increase(qs["linux"], edges)
    print(f"\n{row['cc']}: bottleneck queue over time, packets (mean in the window; min..max), "
          "and drops in the window")
    print(f"{'window s':>11} | {'tcpvideo':>8} {'(min)':>6} | {'linux':>6} {'(min..max)':>12} | "
          f"{'drops tv / lx':>13}")
    for i, (lo, hi) in enumerate(zip(edges, edges[1:])):
        print(f"{lo:5g}-{hi:<5g} | {_f(tv[i], '8.0f')} {_f(tv_min[i], '6d')} | {_f(lx[i], '6.0f')} "
              f"{_f(lx_min[i], '5d'):>5}..{_f(lx_max[i], '<5d')} | "
              f"{_f(tv_d[i], '5d')} / {_f(lx_d[i], '5d')}")
    if not qs.get("linux_t0_found", True):
        print("  (linux: t0 not found, times are wrong)")
    print("(tcpvideo: its bottleneck queue sampled every --queue-interval, drops = its "
          "retransmissions, counted when retransmitted (about one RTT after the drop); linux: tbf backlog and drop counter polled with tc every "
          "--queue-interval from outside the run, t = 0 at the run's t0)")


def ss_summary(samples: list[dict]) -> dict:
    by_peer: dict[str, list[dict]] = {}
    for s in samples:
        by_peer.setdefault(s["peer"], []).append(s)
    out = {}
    for peer, ss in sorted(by_peer.items()):
        ccs = sorted({s["cc"] for s in ss if s["cc"]})
        cw = [s.get("cwnd") for s in ss if s.get("cwnd")]
        out[peer] = {"samples": len(ss), "cc": ccs, "cwnd_min": min(cw) if cw else None,
                     "cwnd_max": max(cw) if cw else None, "cwnd_last": cw[-1] if cw else None,
                     "trace": [(s["t_s"], s.get("cwnd"), s.get("ssthresh"), s.get("rtt_ms"),
                                   s.get("minrtt_ms")) for s in ss]}
    return out


def sanity(a) -> int:
    """One tv_vegas flow alone (real Linux only) at a given bottleneck rate: does the port settle
    at Vegas's alpha..beta segments queued once its slow-start overshoot has drained?"""
    from tcpvideo import linux_dumbbell as ld

    name = BPF_CC["vegas"]
    rtt = 55.0
    bdp = ld_rate_bps(a.sanity_rate) * rtt / 1e3 / (8 * ld.MSS_IP_PACKET)
    with Registered([name]):
        mon = Monitor(ld.PORT, a.ss_interval, a.queue_interval, a.duration - 0.2,
                      lambda: bpf_flow_stats(name, 1))
        mon.start()
        try:
            r = ld.run([ld.FlowSpec(rtt_ms=rtt, start_s=0.0)], name, a.duration,
                       warmup=a.duration * 0.75, rate=a.sanity_rate, rt_priority=a.rt_priority,
                       log=lambda m: print(m, flush=True))
        finally:
            samples = mon.stop().samples
        b = (mon.snapshot if isinstance(mon.snapshot, list) else bpf_flow_stats(name, 1))[0]
    print(f"\n{name} alone, {a.sanity_rate}, RTT {rtt:g} ms (BDP {bdp:.1f} packets), "
          f"{a.duration:g} s, load {r.load_1m[0]:.1f}:")
    print(f"  goodput {r.goodput_mbps:.2f} Mbit/s; queue mean {r.queue_mean_pkts:.1f} pkts over the "
          f"run, {r.queue_mean_after_warmup_pkts:.1f} over the last quarter; max {r.queue_max_pkts}; "
          f"drops {r.bottleneck_drops}; retransmissions {r.retransmissions}; cc {r.flows[0]['cc']}")
    print(f"  port: baseRTT {(b['base_rtt_us'] - 1) / 1e3:.2f} ms, left slow start at cwnd "
          f"{b['ss_exit_cwnd']} ({(b['ss_exit_ms'] - b['init_ms']) & 0xFFFFFFFF} ms after the "
          f"start), rounds vegas/reno {b['vegas_rounds']}/{b['reno_rounds']}, -1/+1 steps "
          f"{b['dec']}/{b['inc']}, last diff {b['last_diff']} (alpha 2, beta 4)")
    print("  ss -ti (t s, cc, cwnd, ssthresh, rtt ms):")
    last = -1e9
    for s in samples:
        if s["t_s"] - last >= 1.0:
            last = s["t_s"]
            print(f"    {s['t_s']:6.2f} {s['cc']} {s.get('cwnd')} {s.get('ssthresh')} {s.get('rtt_ms')}")
    return 0


def ld_rate_bps(rate: str) -> float:
    m = re.fullmatch(r"([0-9.]+)\s*([kmg]?)bit", rate.strip().lower())
    if not m:
        raise SystemExit(f"--sanity-rate {rate!r}: expected e.g. 10mbit")
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]


# --------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cc", action="append", choices=sorted(BPF_CC), help="only these; repeatable")
    p.add_argument("--flows", type=int, default=10)
    p.add_argument("--duration", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--warmup", type=float, default=5.0)
    p.add_argument("--start-spread", type=float, default=1.0)
    p.add_argument("--rt-priority", type=int, default=10,
                   help="SCHED_FIFO priority of the delay line (0: normal scheduling)")
    p.add_argument("--ns3-json", help="a cc_vs_ns3.py JSON of the same flows/duration/seed")
    p.add_argument("--ss-interval", type=float, default=0.5,
                   help="seconds between `ss -ti` polls of the server namespace")
    p.add_argument("--queue-interval", type=float, default=0.05,
                   help="seconds between polls of the bottleneck backlog (tc -s qdisc) for the "
                        "queue-over-time table (tcpvideo: its queue samples at the same interval)")
    p.add_argument("--ss-trace", action="store_true",
                   help="print each flow's cwnd/ssthresh/RTT samples from ss")
    p.add_argument("--json", default=str(ROOT / "bench" / "out" / "cc_bpf_vs_tcpvideo.json"))
    p.add_argument("--sanity-rate", metavar="RATE",
                   help="instead: one tv_vegas flow alone through a RATE (tc syntax, e.g. 10mbit) "
                        "bottleneck, real Linux only")
    a = p.parse_args(argv)

    from tcpvideo import linux_dumbbell as ld
    from tcpvideo import netns

    ok, why = netns.available()
    if not ok:
        print(f"cannot run real Linux here: {why}")
        return 2
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if a.sanity_rate:
        return sanity(a)
    if a.warmup >= a.duration:
        a.warmup = a.duration / 2
    ccs = a.cc or list(BPF_CC)
    ns3 = load_ns3(a.ns3_json, a)
    print(f"uptime: {os.popen('uptime').read().strip()}")
    print(f"{a.flows} flows, {a.duration:g} s, seed {a.seed}, warm-up {a.warmup:g} s")
    rows = []
    with Registered([BPF_CC[c] for c in ccs]):
        print(f"registered: {open('/proc/sys/net/ipv4/tcp_available_congestion_control').read().strip()}")
        for cc in ccs:
            name = BPF_CC[cc]
            tv = run_tcpvideo(cc, a.flows, a.duration, a.seed, a.start_spread, a.warmup)
            print(f"  tcpvideo {cc}: {tv['goodput_mbps']:.2f} Mbit/s ({tv['sim_wall_s']:.1f} s)",
                  flush=True)
            register_fresh(name)  # zeroed per-flow counters for this run
            mon = Monitor(ld.PORT, a.ss_interval, a.queue_interval, a.duration - 0.2,
                          lambda: bpf_flow_stats(name, a.flows))
            mon.start()
            try:
                lx = run_linux(name, tv["flows"], a.duration, a.warmup, a.rt_priority)
            finally:
                mon.stop()
            samples = mon.samples
            bpf = mon.snapshot
            if not isinstance(bpf, list):
                print(f"  no BPF counters at the end of the run ({bpf}); using the final ones")
                bpf = bpf_flow_stats(name, a.flows)
            used = sorted({f["cc"] for f in lx["flows"]})
            ss = ss_summary(samples)
            ss_ccs = sorted({c for v in ss.values() for c in v["cc"]})
            print(f"  linux {name}: {lx['goodput_mbps']:.2f} Mbit/s, load {lx['load_1m'][0]:.1f}; "
                  f"TCP_CONGESTION of the accepted sockets: {used}; ss -ti: {ss_ccs} "
                  f"({len(samples)} samples)", flush=True)
            if used != [name] or (ss and ss_ccs != [name]):
                print(f"  WARNING: not every connection ran {name}")
            rows.append({"cc": cc, "bpf_cc": name, "tcpvideo": tv, "linux": lx,
                         "ns3": ns3.get(cc), "bpf_flows": bpf, "ss": ss,
                         "queue_series": {"tcpvideo": tcpvideo_queue_series(cc, a),
                                          "linux": mon.queue, "linux_t0_found": mon.t0 is not None},
                         "accuracy": accuracy(lx), "load_1m": lx["load_1m"][0]})
            save(a, rows)
    print_table(rows)
    for row in rows:
        print_queue_series(row, a.duration)
        print_flows(row)
        if a.ss_trace:
            for peer, v in row["ss"].items():
                print(f"  ss {peer} ({', '.join(v['cc'])}): t_s, cwnd, ssthresh, rtt ms, minrtt ms")
                for s in v.get("trace", []):
                    print(f"    {s}")
    print(f"\nuptime: {os.popen('uptime').read().strip()}")
    print(f"JSON: {a.json}")
    return 0


def save(a, rows: list[dict]) -> None:
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    with open(a.json, "w") as fh:
        json.dump({"flows": a.flows, "duration_s": a.duration, "seed": a.seed,
                   "warmup_s": a.warmup, "ns3_json": a.ns3_json, "rows": rows}, fh, indent=1,
                  default=str)


if __name__ == "__main__":
    sys.exit(main())
