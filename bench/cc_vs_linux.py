#!/usr/bin/env python3
"""Congestion controls, tcpvideo vs real Linux TCP, on the seed-004 dumbbell (issue 3's evidence).

bench/cc_vs_ns3.py compares tcpvideo with ns-3 and, where they differ, says tcpvideo follows
Linux 6.x. This bench checks that claim against the kernel: for reno, cubic and bbr (the kernel
congestion controls of this machine) the same 10 bulk flows run for 60 s

* in tcpvideo's simulator: the scenario of ``cc_vs_ns3.dumbbell_scenario`` (imported, not
  copied), which draws each client's base RTT ~ Normal(55 ms, 5 ms) and start time in [0, 1) s
  from the seed;
* on real Linux (``tcpvideo.linux_dumbbell``): network namespaces, the same per-flow RTTs from a
  native TUN delay line, the same start times, a tbf bottleneck of 100 Mbit/s with a 1375-packet
  drop-tail queue, the kernel's reno/cubic/bbr per socket.

The table: aggregate goodput (and after the warm-up), time-weighted mean bottleneck queue (Linux:
the tbf qlen sampled every 1 ms over rtnetlink), max queue, bottleneck drops, retransmitted
segments (tcpvideo: fast + timeout + TLP retransmissions; Linux: the senders' tcpi_total_retrans),
recovery episodes / RTOs (Linux: the server namespace's TCPSackRecovery+TCPRenoRecovery and
TCPTimeouts MIB counters), Jain's fairness index, each as tcpvideo / Linux with tcpvideo's relative
difference from Linux. A second table gives the accuracy of the emulated path: ICMP echo RTT per
client address through the delay line (idle, before the flows) against the configured RTT, the
delay line's release lateness over the run, and the queue sampler's spacing.

Real runs take real time (duration + ~8 s each) and share the machine with whatever else runs:
the 1-minute load average is printed with every row; timing noise shows up as delay-line
lateness and sampler gaps, which are reported, not hidden. Needs root (namespaces, tc, TUN).

    python bench/cc_vs_linux.py                             # reno, cubic, bbr; 10 flows, 60 s
    python bench/cc_vs_linux.py --duration 20 --cc cubic    # quick
    python bench/cc_vs_linux.py --json bench/out/cc_vs_linux.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))

from cc_vs_ns3 import dumbbell_scenario, jain, rel, summarize_tcpvideo  # noqa: E402

LINUX_CCS = ("reno", "cubic", "bbr")


def run_tcpvideo(cc: str, flows: int, duration: float, seed: int, start_spread: float,
                 warmup: float) -> dict:
    """cc_vs_ns3's scenario and summary, plus the retransmission count."""
    import tcpvideo

    sc = dumbbell_scenario(cc, flows, duration, seed, start_spread)
    t0 = time.perf_counter()
    try:
        res = tcpvideo.simulate(sc, seed=seed)
    except OverflowError:
        sc["record"]["events"] = False  # see cc_vs_ns3.run_tcpvideo (BBR event log)
        res = tcpvideo.simulate(sc, seed=seed)
    out = summarize_tcpvideo(res, duration, warmup, time.perf_counter() - t0)
    if not sc["record"]["events"]:
        out["recovery_episodes"] = None
    fl = res.flows.to_pylist()
    out["retransmissions"] = sum(f["retrans_fast"] + f["retrans_timeout"] + f["retrans_tlp"]
                                 for f in fl)
    out["per_flow"] = [{k: f.get(k) for k in ("flow", "base_rtt_ms", "start_s", "bytes_read",
                                              "retrans_fast", "retrans_timeout", "retrans_tlp",
                                              "rto_count", "min_rtt_ms", "srtt_end_ms")}
                       for f in fl]
    return out


def run_linux(cc: str, flow_list: list[dict], duration: float, warmup: float,
              rt_priority: int) -> dict:
    from tcpvideo import linux_dumbbell as ld

    specs = [ld.FlowSpec(rtt_ms=f["rtt_ms"], start_s=f["start_s"]) for f in flow_list]
    r = ld.run(specs, cc, duration, warmup=warmup, rt_priority=rt_priority,
               log=lambda m: print(m, flush=True)).to_json()
    r["recovery_episodes"] = r["mib"]["recovery_episodes"]
    r["rto_episodes"] = r["mib"]["TCPTimeouts"]
    return r


def accuracy(lx: dict) -> dict:
    """Delay-line accuracy of one Linux run: ping error per address, lateness, sampler gaps."""
    errs = [p["min_ms"] - p["configured_ms"] for p in lx["ping"].values() if p["min_ms"]]
    med = [p["median_ms"] - p["configured_ms"] for p in lx["ping"].values() if p["median_ms"]]
    dl = lx["delay_line"]
    # Senders' min RTT (tcpi_min_rtt, the kernel's own samples) of the flows that ever saw an
    # empty queue (within 2 ms of the configured RTT). No serialization to subtract: with tokens
    # in its bucket tbf passes a packet at once, and a TUN device has no line rate.
    mins = [f["min_rtt_ms"] - f["rtt_ms"] for f in lx["flows"]
            if f["min_rtt_ms"] is not None and f["min_rtt_ms"] - f["rtt_ms"] < 2.0]
    return {
        "min_rtt_err_ms_mean": sum(mins) / len(mins) if mins else None,
        "min_rtt_err_ms_max": max(mins) if mins else None,
        "min_rtt_flows": len(mins),
        "ping_min_err_ms_mean": sum(errs) / len(errs) if errs else None,
        "ping_min_err_ms_max": max(errs) if errs else None,
        "ping_median_err_ms_mean": sum(med) / len(med) if med else None,
        "ping_lost": sum(p_["received"] == 0 for p_ in lx["ping"].values()),
        "late_data": {k: dl["a_to_b"][k] for k in ("late_p50_us", "late_p99_us", "late_p999_us",
                                                   "late_max_us", "late_mean_us", "packets")},
        "late_acks": {k: dl["b_to_a"][k] for k in ("late_p50_us", "late_p99_us", "late_p999_us",
                                                   "late_max_us", "late_mean_us", "packets")},
        "line_errors": dl["a_to_b"]["write_errors"] + dl["b_to_a"]["write_errors"],
        "line_error": dl.get("error"),
        "sampler": {k: lx["queue_sampling"][k] for k in ("samples", "gap_median_ms",
                                                          "gap_p99_ms", "gap_max_ms")},
        "bottleneck_rate_mbps": lx["bottleneck_rate_mbps"],
        "bottleneck_rate_after_warmup_mbps": lx["bottleneck_rate_after_warmup_mbps"],
    }


def _f(x, spec):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def _r(a, b):
    if a is None or b is None:
        return "     -"
    x = rel(a, b)
    return "   inf" if math.isinf(x) else f"{x:+6.0%}"


def print_table(rows: list[dict]) -> None:
    hdr = (f"{'cc':5} | {'goodput Mbit/s tv / linux':>25} | {'after warm-up':>13} | "
           f"{'mean queue pkts tv / linux':>27} | {'max q':>11} | {'drops tv / linux':>22} | "
           f"{'retrans tv / linux':>22} | {'recov/RTO tv | linux':>21} | {'Jain tv/lx':>11} | load")
    print()
    print(hdr)
    print("-" * len(hdr))
    for row in rows:
        tv, lx = row["tcpvideo"], row["linux"]
        print(f"{row['cc']:5} | {tv['goodput_mbps']:6.2f} / {lx['goodput_mbps']:6.2f} "
              f"({_r(tv['goodput_mbps'], lx['goodput_mbps'])}) | "
              f"{_f(tv['goodput_after_warmup_mbps'], '5.1f')} / "
              f"{lx['goodput_after_warmup_mbps']:5.1f} | "
              f"{tv['queue_mean_pkts']:6.0f} / {lx['queue_mean_pkts']:6.0f} "
              f"({_r(tv['queue_mean_pkts'], lx['queue_mean_pkts'])}) | "
              f"{tv['queue_max_pkts']:5.0f}/{lx['queue_max_pkts']:5d} | "
              f"{tv['bottleneck_drops']:5d} / {lx['bottleneck_drops']:5d} "
              f"({_r(tv['bottleneck_drops'], lx['bottleneck_drops'])}) | "
              f"{tv['retransmissions']:5d} / {lx['retransmissions']:5d} "
              f"({_r(tv['retransmissions'], lx['retransmissions'])}) | "
              f"{_f(tv['recovery_episodes'], '4d')}/{tv['rto_episodes']:<3d} | "
              f"{lx['recovery_episodes']:4d}/{lx['rto_episodes']:<3d} | "
              f"{jain(tv['per_flow_goodput_mbps']):4.2f}/{jain(lx['per_flow_goodput_mbps']):4.2f} | "
              f"{row['load_1m']:.1f}")
    print("\n(tv = tcpvideo; (x%) = tcpvideo relative to Linux. Linux queue: tbf qlen sampled every "
          "1 ms; max q: largest sample. Retrans: segments. Recov/RTO: fast-recovery episodes / "
          "retransmission timeouts. load: 1-min load average when the Linux run ended.)")
    print("\nDelay line and sampler accuracy (Linux runs):")
    print(f"{'cc':5} | {'ping-configured ms (min, mean/max)':>34} | {'median':>7} | "
          f"{'min_rtt-configured ms mean/max (n)':>34} | "
          f"{'lateness data us p50/p99/p99.9/max':>36} | {'lateness ACKs us p50/p99/p99.9/max':>36}"
          f" | {'sampler gap ms med/p99/max':>27} | tbf Mbit/s")
    for row in rows:
        a = accuracy(row["linux"])
        ld_, la = a["late_data"], a["late_acks"]
        print(f"{row['cc']:5} | {_f(a['ping_min_err_ms_mean'], '+.3f'):>22} / {_f(a['ping_min_err_ms_max'], '+.3f'):>9} | "
              f"{_f(a['ping_median_err_ms_mean'], '+.3f'):>7} | "
              f"{_f(a['min_rtt_err_ms_mean'], '+.3f'):>22} / {_f(a['min_rtt_err_ms_max'], '+.3f')}"
              f" ({a['min_rtt_flows']:2d}) | "
              f"{ld_['late_p50_us']:6.0f}/{ld_['late_p99_us']:6.0f}/{ld_['late_p999_us']:6.0f}/"
              f"{ld_['late_max_us']:8.0f}       | "
              f"{la['late_p50_us']:6.0f}/{la['late_p99_us']:6.0f}/{la['late_p999_us']:6.0f}/"
              f"{la['late_max_us']:8.0f}       | "
              f"{a['sampler']['gap_median_ms']:6.3f}/{a['sampler']['gap_p99_ms']:6.3f}/"
              f"{a['sampler']['gap_max_ms']:7.2f}   | {a['bottleneck_rate_mbps']:6.2f} "
              f"({a['bottleneck_rate_after_warmup_mbps']:6.2f})")
    print("(tbf Mbit/s: IP bytes the bottleneck sent over the run (after the warm-up); 100 is "
          "the configured rate.)")
    print("(ping: ICMP echo from each client address through the idle path, 5 per address "
          "(reply time = kernel receive timestamp), minus the configured RTT; min_rtt: the "
          "senders' tcpi_min_rtt minus configured RTT, flows that saw an empty queue (n); a min RTT "
          "of a flow that never ran with an empty queue still includes queueing; lateness: delay-line release time minus due time, 10 us "
          "histogram buckets, upper edges.)")


def save(path: str, a, rows: list[dict]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        json.dump({"flows": a.flows, "duration_s": a.duration, "seed": a.seed,
                   "warmup_s": a.warmup, "rows": rows}, fh, indent=1, default=str)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cc", action="append", choices=LINUX_CCS, help="only these; repeatable")
    p.add_argument("--flows", type=int, default=10)
    p.add_argument("--duration", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--warmup", type=float, default=5.0)
    p.add_argument("--start-spread", type=float, default=1.0)
    p.add_argument("--rt-priority", type=int, default=10,
                   help="SCHED_FIFO priority of the delay line (0: normal scheduling)")
    p.add_argument("--json", default=str(ROOT / "bench" / "out" / "cc_vs_linux.json"))
    a = p.parse_args(argv)

    from tcpvideo import netns

    ok, why = netns.available()
    if not ok:
        print(f"cannot run real Linux here: {why}")
        return 2
    # SIGTERM -> SystemExit, so the namespaces are removed by the `with` blocks
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if a.warmup >= a.duration:
        a.warmup = a.duration / 2
    ccs = a.cc or list(LINUX_CCS)
    print(f"uptime: {os.popen('uptime').read().strip()}")
    print(f"{a.flows} flows, {a.duration:g} s, seed {a.seed}, warm-up {a.warmup:g} s")
    rows = []
    for cc in ccs:
        tv = run_tcpvideo(cc, a.flows, a.duration, a.seed, a.start_spread, a.warmup)
        print(f"  tcpvideo {cc}: {tv['goodput_mbps']:.2f} Mbit/s ({tv['sim_wall_s']:.1f} s)",
              flush=True)
        lx = run_linux(cc, tv["flows"], a.duration, a.warmup, a.rt_priority)
        print(f"  linux {cc}: {lx['goodput_mbps']:.2f} Mbit/s, load {lx['load_1m'][0]:.1f}",
              flush=True)
        rows.append({"cc": cc, "tcpvideo": tv, "linux": lx, "accuracy": accuracy(lx),
                     "load_1m": lx["load_1m"][0]})
        save(a.json, a, rows)
    print_table(rows)
    print(f"\nuptime: {os.popen('uptime').read().strip()}")
    print(f"JSON: {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
