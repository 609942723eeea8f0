"""Simulator speed on the seed-004 dumbbell (issue 2's benchmark).

What: N bulk CUBIC flows from one server to N clients through a 100 Mbit/s bottleneck with a
1375-packet drop-tail queue, 1 Gbit/s access links, per-client base RTT ~ Normal(55 ms, 5 ms)
(Kupka et al., seeds/004, Section III), 60 simulated seconds, run through ``tcpvideo.simulate``
for N = 10 and N = 100. Prints wall time, aggregate goodput, packets simulated per wall second
(packets emitted by TCP endpoints) and events per wall second, and writes the numbers to
``bench/out/sim_speed.json``. Compare with ns-3 on the same flows with ``bench/sim_vs_ns3.py``.

Usage: ``python bench/sim_speed.py`` (``--clients 10 --duration 20`` for a quick look).
The machine is shared: note ``uptime`` next to any number you quote.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

import tcpvideo


def dumbbell(clients: int, duration: float, seed: int, cc: str = "cubic") -> dict:
    """The seed-004 dumbbell as a tcpvideo scenario dict (docs/scenario.md)."""
    return {
        "name": f"seed004-dumbbell-{clients}",
        "duration": f"{duration}s",
        "seed": seed,
        "tcp": {"cc": cc},
        "dumbbell": {
            "clients": clients,
            "bottleneck_rate": "100Mbps",
            "bottleneck_delay": "10ms",
            "queue": 1375,
            "access_rate": "1Gbps",
            "server_rate": "1Gbps",
            "server_delay": "1ms",
            "rtt": "55ms",
            "rtt_std": "5ms",
            "flow": {"app": "bulk", "start_jitter": "1s"},
        },
    }


def run(clients: int, duration: float, seed: int) -> dict:
    t0 = time.perf_counter()
    c0 = time.process_time()
    res = tcpvideo.simulate(dumbbell(clients, duration, seed), seed=seed)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    s = res.summary
    flows = res.flows.to_pandas()
    x = flows["bytes"].astype(float)
    return {
        "clients": clients,
        "duration_s": duration,
        "wall_s": wall,
        "cpu_s": cpu,
        "aggregate_goodput_mbps": s["aggregate_goodput_mbps"],
        "jain": float(x.sum() ** 2 / (len(x) * (x**2).sum())),
        "packets_sent": s["packets_sent"],
        "packets_per_wall_s": s["packets_sent"] / wall,
        "events": s["events_processed"],
        "events_per_wall_s": s["events_processed"] / wall,
        "drops": s["drops"],
        "retransmissions": s["retransmissions"],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "load_avg_1min": os.getloadavg()[0],
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, nargs="*", default=[10, 100])
    p.add_argument("--duration", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default=str(Path(__file__).parent / "out" / "sim_speed.json"))
    a = p.parse_args(argv)
    rows = [run(n, a.duration, a.seed) for n in a.clients]
    print(f"{'N':>4} {'sim s':>6} {'wall s':>7} {'cpu s':>6} {'goodput Mbit/s':>15} {'Jain':>5} "
          f"{'pkts/wall s':>12} {'events/s':>11} {'drops':>7}")
    for r in rows:
        print(f"{r['clients']:>4} {r['duration_s']:>6g} {r['wall_s']:>7.2f} {r['cpu_s']:>6.2f} "
              f"{r['aggregate_goodput_mbps']:>15.2f} {r['jain']:>5.3f} {r['packets_per_wall_s']:>12,.0f} "
              f"{r['events_per_wall_s']:>11,.0f} {r['drops']:>7}")
    print(f"(load average {os.getloadavg()[0]:.2f}; 2 shared cores)")
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
