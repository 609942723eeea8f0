#!/usr/bin/env python3
"""The wall time of `tcpvideo study onoff --full`, projected from measured runs (issue 10's bench:
goal ≤ 1 hour on this 2-core machine).

The full study is ~1 500 runs of a 20-minute stream; it cannot be run whole on a shared machine,
so this script times a sample of its *distinct* configurations at full length (first seed only)
and scales up:

* the plan is the study's own (`studies.onoff.plan_points(FULL)`), so a change to the plan
  changes the estimate; runs are grouped as the plan groups them (cc, segment10, adapt_buffers...);
* sampling is systematic within each group: `k = ceil(fraction × group size)` configurations
  evenly spaced through the group's list (which runs over client counts and algorithms), at least
  one per group (`--all`: every distinct configuration);
* each sampled configuration runs in a fresh process exactly as a sweep worker runs it
  (`tcpvideo.simulate`, then the study's reducer, then the Parquet encoding of the kept tables),
  each step timed in CPU seconds, plus wall and peak RSS;
* a group's CPU is a ratio estimate: CPU per client-second of simulated time (sampled runs' CPU
  over their clients × duration) × the group's total clients × duration over all its runs
  (configurations × seeds), because a run's work (packets) grows with clients × stream length and
  the groups mix client counts from 50 to 175; the plain mean × runs is printed beside it (with
  quality adaptation the clients fill the bottleneck and work stops growing with clients, so the
  truth lies between the two);
* the total CPU over 2 workers, plus the longest single run as the tail, is the projected wall
  time of the process pool on 2 idle cores. The driver's own work after the runs (reading the store, figures, report) is
  not included (it is printed by the study itself as `driver_cpu_s`).

CPU time, not wall, is the measured quantity: the machine is shared, and `uptime` is printed
before and after. CPU time on a loaded machine is still inflated by cache and SMT contention
(a few tens of per cent at load ~8), so the projection is pessimistic rather than optimistic.

    python bench/onoff_full_estimate.py                   # ~1/8 of each group, >= 1 per group
    python bench/onoff_full_estimate.py --fraction 0.25
    python bench/onoff_full_estimate.py --all             # every distinct configuration (~150 runs)
    python bench/onoff_full_estimate.py --json bench/out/onoff_full_estimate.json
    python bench/onoff_full_estimate.py --explain          # the plan of --full --explain

`bench/onoff_full_run.py` measures the same by running the whole plan in resumable pieces.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from tcpvideo.simulation import simulate
from tcpvideo.sweep.store import table_bytes
from tcpvideo.studies.onoff.metrics import reducer
sc, seed, seg = json.loads(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
w0, c0 = time.perf_counter(), time.process_time()
r = simulate(sc, seed=seed)
c1 = time.process_time()
summary, tables = reducer(seg)(r)
c2 = time.process_time()
n_bytes = sum(len(table_bytes(t)) for t in tables.values())
c3 = time.process_time()
print(json.dumps({"wall_s": time.perf_counter() - w0, "sim_cpu_s": c1 - c0, "reduce_cpu_s": c2 - c1,
                  "parquet_cpu_s": c3 - c2, "cpu_s": c3 - c0, "parquet_bytes": n_bytes,
                  "packets": int(r.summary["packets_sent"]), "events": int(r.summary["events_processed"]),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def loadavg() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def plan_groups(explain: bool) -> tuple[dict, int]:
    """group → [(cfg, scenario, seed, runs of this configuration)], and the plan's run count
    (`--full`: the paper's groups; with ``explain`` also the explaining experiments)."""
    from dataclasses import replace

    from tcpvideo.studies.onoff import plan_points
    from tcpvideo.studies.onoff.plan import FULL

    planned = plan_points(replace(FULL, explain=explain))
    runs_of: dict = defaultdict(int)
    first: dict = {}
    for p, cfg in planned:
        runs_of[cfg] += 1
        first.setdefault(cfg, p)
    groups: dict = defaultdict(list)
    for cfg, p in first.items():
        groups[p.labels["group"]].append((cfg, p.scenario, p.seed, runs_of[cfg]))
    return groups, len(planned)


def systematic(items: list, k: int) -> list:
    """k items evenly spaced through the list (the middle of each of k equal strata)."""
    n = len(items)
    return [items[min(n - 1, int((i + 0.5) * n / k))] for i in range(k)]


def measure(sc: dict, seed: int, segment_s: float) -> dict:
    p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(sc), str(seed), str(segment_s)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"run {sc.get('name')} failed: {p.stderr.strip().splitlines()[-1:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fraction", type=float, default=0.125, help="share of each group's configurations to time")
    ap.add_argument("--all", action="store_true", help="time every distinct configuration")
    ap.add_argument("--workers", type=int, default=2, help="process-pool size of the projection")
    ap.add_argument("--json", type=Path, default=Path("bench/out/onoff_full_estimate.json"))
    ap.add_argument("--explain", action="store_true", help="the plan of --full --explain (with our explaining runs)")
    a = ap.parse_args()
    if not 0 < a.fraction <= 1:
        raise SystemExit("--fraction: must be in (0, 1]")
    groups, n_runs = plan_groups(a.explain)
    print(f"onoff --full{' --explain' if a.explain else ''}: {n_runs} runs, {sum(len(v) for v in groups.values())} distinct configurations, "
          f"{len(groups)} groups; load before: {loadavg()}", flush=True)
    rows, per_group = [], {}
    for g, items in groups.items():
        k = len(items) if a.all else max(1, math.ceil(a.fraction * len(items)))
        measured = []
        for cfg, sc, seed, runs in systematic(items, k):
            m = measure(sc, seed, cfg.segment_s)
            m.update(group=g, config=cfg.label(), clients=cfg.clients, runs=runs, sim_s=float(sc["duration"]))
            measured.append(m)
            rows.append(m)
            print(f"  {g:16} {cfg.label():34} {cfg.clients:4} cl {m['sim_s']:6.0f} s sim: CPU {m['cpu_s']:6.2f} s "
                  f"(sim {m['sim_cpu_s']:.2f}, reduce {m['reduce_cpu_s']:.2f}, parquet {m['parquet_cpu_s']:.2f}), "
                  f"wall {m['wall_s']:6.2f} s, {m['packets'] / max(m['sim_cpu_s'], 1e-9) / 1e3:5.0f} kpkt/CPU s, "
                  f"RSS {m['peak_rss_mb']:4.0f} MB  [load {loadavg()}]", flush=True)
        group_runs = sum(r for *_, r in items)
        # the auxiliary variable of the ratio estimate: clients × simulated seconds
        size_all = sum(cfg.clients * float(sc["duration"]) * r for cfg, sc, _, r in items)
        size_sampled = sum(m["clients"] * m["sim_s"] for m in measured)
        est = {key: sum(m[key] for m in measured) / size_sampled * size_all
               for key in ("cpu_s", "sim_cpu_s", "reduce_cpu_s", "parquet_cpu_s")}
        per_group[g] = {"configs": len(items), "sampled": len(measured), "runs": group_runs,
                        "mean_cpu_s": sum(m["cpu_s"] for m in measured) / len(measured),
                        "cpu_s_plain": sum(m["cpu_s"] for m in measured) / len(measured) * group_runs,
                        **{f"est_{k}": v for k, v in est.items()}, "cpu_s": est["cpu_s"],
                        "longest_run_cpu_s": max(m["cpu_s"] for m in measured)}
    total = {k: sum(v[f"est_{k}"] for v in per_group.values())
             for k in ("cpu_s", "sim_cpu_s", "reduce_cpu_s", "parquet_cpu_s")}
    tail = max(v["longest_run_cpu_s"] for v in per_group.values())
    wall = total["cpu_s"] / a.workers + tail
    plain_cpu = sum(v["cpu_s_plain"] for v in per_group.values())
    wall_plain = plain_cpu / a.workers + tail
    print(f"\n{'group':16} {'configs':>7} {'timed':>5} {'runs':>5} {'mean CPU s/run':>15} {'group CPU s':>12} "
          f"{'(plain mean)':>12}")
    for g, v in per_group.items():
        print(f"{g:16} {v['configs']:7} {v['sampled']:5} {v['runs']:5} {v['mean_cpu_s']:15.2f} {v['cpu_s']:12.0f} "
              f"{v['cpu_s_plain']:12.0f}")
    print(f"{'total':16} {sum(v['configs'] for v in per_group.values()):7} {len(rows):5} {n_runs:5} "
          f"{'':15} {total['cpu_s']:12.0f} {sum(v['cpu_s_plain'] for v in per_group.values()):12.0f}")
    share = {k: total[k] / total["cpu_s"] for k in ("sim_cpu_s", "reduce_cpu_s", "parquet_cpu_s")}
    print(f"CPU split: simulate {share['sim_cpu_s']:.0%}, reducer {share['reduce_cpu_s']:.0%}, "
          f"Parquet {share['parquet_cpu_s']:.0%}")
    print(f"projected --full: {total['cpu_s'] / 3600:.2f} CPU hours; wall on {a.workers} idle cores with the "
          f"process pool ≈ {total['cpu_s']:.0f}/{a.workers} + longest run {tail:.0f} s = {wall / 3600:.2f} h "
          f"(goal ≤ 1 h: {'met' if wall <= 3600 else 'not met'})")
    # with quality adaptation the clients fill the bottleneck, so work stops growing with clients and
    # the ratio estimate can undershoot; the plain mean × runs bounds it from the other side
    print(f"  plain mean × runs instead of the ratio estimate: {plain_cpu / 3600:.2f} CPU hours, "
          f"wall ≈ {wall_plain / 3600:.2f} h")
    print(f"load after: {loadavg()}")
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps({"runs": rows, "groups": per_group, "total": total, "projected_wall_s": wall,
                                  "projected_wall_plain_s": wall_plain,
                                  "workers": a.workers, "plan_runs": n_runs}, indent=1))


if __name__ == "__main__":
    main()
