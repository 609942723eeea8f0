#!/usr/bin/env python3
"""How the `--full` onoff run is cut into sweeps changes its wall on 2 cores (issue 10, session 10).

Each `sweep.run` starts its own process pool (each worker imports tcpvideo, pyarrow and numpy
before its first run: POOL_START CPU s, measured below) and ends with one core idle while the
other finishes the sweep's last run. `bench/onoff_full_run.py` made one sweep per (seed, tier,
segment duration) until session 9 (30 for `--full`), and makes one per segment duration since
session 10 (2, as `tcpvideo study onoff --full` does). This replays both on the plan's runs in
run order (a 2-worker pool takes the next run when a worker is free), with each run's CPU from
its group's CPU per client-second (`--costs OUT/costs.jsonl` of a stored full run: each run's
own measured CPU instead), and prints the walls and their ratio.

    python bench/onoff_full_packing.py                       # group model (session 7's per-group CPU)
    python bench/onoff_full_packing.py --costs studies/onoff_full/costs.jsonl
"""
from __future__ import annotations

import argparse
import heapq
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Session 7's measured CPU s per group over the 1 185 runs (bench/README.md "onoff_full_run.py"),
# scaled to session 9's total (2.05 CPU h) below; only the shares between groups matter here.
GROUP_CPU_S7 = {"adapt_buffers": 2806, "cc": 1764, "combinations": 1503, "adapt_cc": 1102, "adapt_segment10": 522,
                "adapt_cwnd_limit": 494, "cwnd_limit": 325, "segment10": 320, "distributed": 262, "queue_samples": 7}
TOTAL_CPU_S9 = 2.05 * 3600
POOL_START_S = 1.2  # CPU s per worker before its first run (bench/README.md "Session 10": 2.4 s for 2 workers)


def replay(chunks: list[list[float]], workers: int = 2, pool_start: float = POOL_START_S) -> float:
    """Wall of running the chunks one after the other, each on a fresh ``workers``-process pool
    taking runs in order."""
    wall = 0.0
    for runs in chunks:
        free = [pool_start] * workers
        heapq.heapify(free)
        for c in runs:
            heapq.heappush(free, heapq.heappop(free) + c)
        wall += max(free)
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--costs", type=Path, help="costs.jsonl of a stored --full run (its keys must be this build's)")
    a = ap.parse_args()
    import onoff_full_run as ofr
    from tcpvideo import sweep
    from tcpvideo.studies.onoff.metrics import reducer

    planned = [x for x in ofr.plan(explain=False) if x[2] == "paper"]
    size = lambda p, cfg: cfg.clients * float(p.scenario["duration"])  # noqa: E731
    group_size: dict = defaultdict(float)
    for p, cfg, _ in planned:
        group_size[p.labels["group"]] += size(p, cfg)
    scale = TOTAL_CPU_S9 / sum(GROUP_CPU_S7.values())
    cpu = [GROUP_CPU_S7[p.labels["group"]] * scale * size(p, cfg) / group_size[p.labels["group"]]
           for p, cfg, _ in planned]
    if a.costs:
        measured = {}
        for line in a.costs.read_text().splitlines():
            try:
                c = json.loads(line)
            except json.JSONDecodeError:
                continue
            measured[c["key"]] = c["cpu_s"]
        base = sweep.code_version()
        keys = [sweep.run_key(p.scenario, p.seed, sweep.sweep_code(reducer(cfg.segment_s), base=base))
                for p, cfg, _ in planned]
        hit = sum(k in measured for k in keys)
        cpu = [measured.get(k, c) for k, c in zip(keys, cpu)]
        print(f"{hit} of {len(keys)} runs' CPU from {a.costs}, the rest from the group model")
    old: dict = defaultdict(list)
    new: dict = defaultdict(list)
    for (p, cfg, _), c in zip(planned, cpu):
        old[(p.seed, ofr.tier(p), cfg.segment_s)].append(c)
        new[cfg.segment_s].append(c)
    old_chunks = [old[k] for k in sorted(old)]
    new_chunks = [new[k] for k in sorted(new)]
    total = sum(cpu)
    w_old, w_new = replay(old_chunks), replay(new_chunks)
    print(f"{len(planned)} runs, {total / 3600:.3f} CPU h; perfect packing on 2 cores {total / 2:.0f} s")
    print(f"one sweep per (seed, tier, segment duration): {len(old_chunks)} sweeps, wall {w_old:.0f} s "
          f"({w_old / (total / 2) - 1:+.1%} over perfect)")
    print(f"one sweep per segment duration:               {len(new_chunks)} sweeps, wall {w_new:.0f} s "
          f"({w_new / (total / 2) - 1:+.1%} over perfect)")
    print(f"ratio new / old: {w_new / w_old:.4f}")


if __name__ == "__main__":
    main()
