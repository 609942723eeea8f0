"""tcpvideo's simulator vs ns-3 on the seed-004 dumbbell: same flows, goodput and wall clock.

What: the dumbbell of bench/ns3/dumbbell.py (N bulk CUBIC flows, server —1 Gbit/s, 1 ms— R1
==100 Mbit/s, 10 ms, 1375-packet drop-tail== R2 —1 Gbit/s— client i, base RTT_i ~ Normal(55 ms,
5 ms), starts uniform in [0, 1 s)) run in both simulators with exactly the same per-flow RTTs and
start times (drawn once by ``dumbbell.draw_flows`` and given to ns-3 with ``--flows-json`` and to
tcpvideo as an explicit graph). Prints per N: aggregate goodput of each and whether they agree
within 5 %, Jain's index of each, bottleneck drops, and the wall-clock (and CPU) ratio
ns-3 / tcpvideo of the simulation proper (ns-3's import/JIT time excluded). Goal: ratio ≥ 30× at
N = 100. Raw numbers go to ``bench/out/sim_vs_ns3.json``.

Usage: ``python bench/sim_vs_ns3.py`` (N = 10 and 100, 60 s; several minutes because of ns-3);
``--clients 10 --duration 20`` for a quick look. The machine is shared: quote ``uptime`` too.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import tcpvideo

sys.path.insert(0, str(Path(__file__).parent / "ns3"))
import dumbbell as ns3_dumbbell  # noqa: E402  (bench/ns3/dumbbell.py, the ns-3 half)


def scenario(flow_list: list[dict], duration: float, seed: int, cc: str = "cubic") -> dict:
    """An explicit-graph tcpvideo scenario with ns-3's exact flows and delay split."""
    d_s, d_b = ns3_dumbbell.SERVER_LINK_DELAY_MS, ns3_dumbbell.BOTTLENECK_DELAY_MS
    nodes = [{"name": "server"}, {"name": "r1", "kind": "router"}, {"name": "r2", "kind": "router"}]
    links = [
        {"name": "server", "a": "server", "b": "r1", "rate": ns3_dumbbell.ACCESS_RATE, "delay": f"{d_s}ms",
         "queue": ns3_dumbbell.OTHER_QUEUE_PKTS},
        {"name": "bottleneck", "a": "r1", "b": "r2", "rate": ns3_dumbbell.BOTTLENECK_RATE, "delay": f"{d_b}ms",
         "queue": ns3_dumbbell.BOTTLENECK_QUEUE_PKTS},
    ]
    flows = []
    for i, f in enumerate(flow_list):
        nodes.append({"name": f"c{i}"})
        access_ms = f["rtt_ms"] / 2 - d_s - d_b
        links.append({"name": f"c{i}", "a": "r2", "b": f"c{i}", "rate": ns3_dumbbell.ACCESS_RATE,
                      "delay": f"{access_ms:.6f}ms", "queue": ns3_dumbbell.OTHER_QUEUE_PKTS})
        flows.append({"name": f"c{i}", "client": f"c{i}", "server": "server", "app": "bulk",
                      "start": f"{f['start_s']:.9f}s"})
    buf = ns3_dumbbell.BUF_BYTES
    return {"name": f"sim-vs-ns3-{len(flow_list)}", "duration": f"{duration}s", "seed": seed,
            "tcp": {"cc": cc, "rcv_buf": buf, "snd_buf": buf}, "node": nodes, "link": links, "flow": flows}


def run_tcpvideo(flow_list: list[dict], duration: float, seed: int) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    res = tcpvideo.simulate(scenario(flow_list, duration, seed), seed=seed)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    x = [b * 8 / duration / 1e6 for b in res.flows.column("bytes").to_pylist()]
    links = res.links.to_pylist()
    drops = sum(l["queue_drops"] for l in links if l["link"] == "bottleneck")
    return {"goodput_mbps": sum(x), "jain": ns3_dumbbell.jain(x), "drops": drops, "wall_s": wall, "cpu_s": cpu,
            "events": res.summary["events_processed"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, nargs="*", default=[10, 100])
    p.add_argument("--duration", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default=str(Path(__file__).parent / "out" / "sim_vs_ns3.json"))
    a = p.parse_args(argv)
    rows = []
    for n in a.clients:
        flow_list = ns3_dumbbell.draw_flows(n, a.seed, 1.0)
        tv = run_tcpvideo(flow_list, a.duration, a.seed)
        ns = ns3_dumbbell.run_in_subprocess(flows=n, cc="Cubic", duration=a.duration, seed=a.seed,
                                            flow_list=flow_list)
        nr, nc = ns["results"], ns["cost"]
        rel = abs(tv["goodput_mbps"] - nr["goodput_mbps"]) / nr["goodput_mbps"]
        rows.append({"clients": n, "duration_s": a.duration, "tcpvideo": tv,
                     "ns3": {"goodput_mbps": nr["goodput_mbps"], "jain": nr["jain_index"],
                             "drops": nr["bottleneck_drops"], "wall_s": nc["wall_run_s"], "cpu_s": nc["cpu_run_s"],
                             "events": nc["events"]},
                     "goodput_rel_diff": rel, "goodput_within_5pct": rel <= 0.05,
                     "wall_ratio": nc["wall_run_s"] / tv["wall_s"], "cpu_ratio": nc["cpu_run_s"] / max(tv["cpu_s"], 1e-9)})
    print(f"{'N':>4} {'tcpvideo Mbit/s':>15} {'ns-3 Mbit/s':>12} {'diff':>6} {'≤5%':>4} {'Jain tv/ns3':>12} "
          f"{'drops tv/ns3':>14} {'wall tv s':>9} {'wall ns3 s':>10} {'wall ×':>7} {'cpu ×':>7}")
    for r in rows:
        tv, ns = r["tcpvideo"], r["ns3"]
        print(f"{r['clients']:>4} {tv['goodput_mbps']:>15.2f} {ns['goodput_mbps']:>12.2f} {r['goodput_rel_diff']:>6.1%} "
              f"{'yes' if r['goodput_within_5pct'] else 'NO':>4} {tv['jain']:>5.3f}/{ns['jain']:<6.3f} "
              f"{tv['drops']:>6}/{ns['drops']:<7} {tv['wall_s']:>9.2f} {ns['wall_s']:>10.2f} "
              f"{r['wall_ratio']:>6.1f}× {r['cpu_ratio']:>6.1f}×")
    print(f"(load average {os.getloadavg()[0]:.2f}; 2 shared cores; goal: wall × ≥ 30 at N = 100)")
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
