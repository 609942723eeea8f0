#!/usr/bin/env python3
"""The whole `tcpvideo study onoff --full` (issue 10's bench: the study's wall time, goal ≤ 1 hour
on this 2-core machine), run for real in resumable pieces across sessions, with what every run
cost, and the full trend table (paper vs ours) from whatever is stored.

`bench/onoff_full_estimate.py` projects the wall time from a sample; this script measures it by
running every point of the plan (the study's own: `studies.onoff.plan_points`) through the
study's run store, so an interrupted piece loses nothing and `tcpvideo study onoff --full
--explain --out OUT` afterwards reuses every run. Order: the paper's groups (`--full`) seed by
seed — after seed 1 the whole trend table exists at one run per point, each further seed adds
error bars; within a seed the points of issue 10's must-show trends (cubic, vegas, distributed,
cwnd limit; 2-s segments) come first — then our explaining experiments (`--explain`), seed by
seed. Since session 10 the runs go to one sweep (one process pool) per kind and segment
duration, as in the study itself, so the 10-s-segment runs of every seed follow the 2-s ones
(30 pools and 30 half-idle tails cost ~3 % of the wall: `bench/onoff_full_packing.py`).

What is recorded (under OUT):

* `costs.jsonl` (written by `tcpvideo.sweep` for every run made): CPU and wall seconds in the
  worker, the worker's peak RSS, the 1-minute load average before and after the run;
* `pieces.jsonl`: one line per sitting of this script (start/end UTC, wall, runs made, build,
  load average at start and end, and the CPU of a fixed calibration run made at the start:
  150 clients × 150 segments, cubic, seed 1, in a fresh process);
* `report/`: the study's report over the stored runs (claims not decidable yet are "not run").

What is printed (`--report` prints it without running anything):

* the study's total CPU (measured runs; runs not made yet estimated from their group's measured
  CPU per client-second of simulated time) and wall (the pieces' wall summed);
* the wall on 2 idle cores: every run's CPU scaled to an idle machine by the calibration (idle
  CPU of the calibration run ÷ its CPU in the piece that made the run: CPU time on a loaded
  2-core machine is inflated by cache and SMT contention, 10 vs 18 CPU s for one full point
  between load 0.7 and 15), then packed on 2 workers longest-first (what a 2-process pool
  achieves at best) — separately for `--full` and for `--full --explain`. The idle calibration is
  the least CPU the calibration run took at a 1-minute load below 1.5 on this build; until one
  exists, the loaded CPU is used and the projection says so (pessimistic);
* the trend table: every claim's status and our numbers.

Across builds: run keys include the build (`tcpvideo.sweep.store.code_version`). If the build
changed since the stored runs were made, this script stops and says so; `--across-builds` reruns
the cheapest stored run with the current build and, if every file is byte-identical, keeps
keying runs by the old build (the simulator changed speed, not results); if not, nothing is
reused (`--new-build` then starts the plan over under the new build, the old runs stay on disk).

    nice -n 19 python bench/onoff_full_run.py --out studies/onoff_full        # run (resumes); Ctrl-C stops cleanly
    python bench/onoff_full_run.py --out studies/onoff_full --report          # totals + trend table only
    python bench/onoff_full_run.py --out studies/onoff_full --no-explain      # the paper's groups only
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

CALIBRATION = r"""
import json, time
from tcpvideo.simulation import simulate
from tcpvideo.studies.onoff.scenario import OnOffConfig, scenario
sc = scenario(OnOffConfig(150, segments=150), seed=1)
w0, c0 = time.perf_counter(), time.process_time()
simulate(sc, seed=1)
print(json.dumps({"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0}))
"""
IDLE_LOAD = 1.5  # a calibration at a lower 1-minute load average counts as idle
WORKERS = 2  # the machine's cores: the projection's pool size


def utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def load1() -> float:
    return round(os.getloadavg()[0], 2)


def read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a line torn by a kill while appending
            continue
    return rows


def append_jsonl(path: Path, row: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(row, sort_keys=True) + "\n")


def calibrate() -> dict:
    """CPU of the fixed calibration run in a fresh process (the current build), with the load."""
    l0 = load1()
    p = subprocess.run([sys.executable, "-c", CALIBRATION], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"calibration run failed: {(p.stderr.strip().splitlines() or ['?'])[-1]}")
    return {**json.loads(p.stdout.strip().splitlines()[-1]), "load_start": l0, "load_end": load1()}


# issue 10's must-show trends (cubic liveness 50 vs 175; vegas liveness across counts and drops vs
# cubic at ≥ 150; distributed requests and the cwnd limit cutting drops at 150) need these first
MUST_SHOW = ("cubic+2s", "vegas+2s", "cubic+2s+distributed", "cubic+2s+cwnd20")


def tier(p) -> int:
    return 0 if p.labels["config"] in MUST_SHOW and not p.labels.get("queue_sample") else 1


def plan(explain: bool):
    """[(point, cfg, kind)] in run order: paper groups seed by seed (the must-show trends' points
    first within a seed), then the explaining ones seed by seed."""
    from tcpvideo.studies.onoff import plan_points
    from tcpvideo.studies.onoff.plan import EXPLAIN_GROUPS, FULL

    planned = plan_points(replace(FULL, explain=explain))
    kind = lambda p: "explain" if p.labels["group"] in EXPLAIN_GROUPS else "paper"  # noqa: E731
    order = {"paper": 0, "explain": 1}
    planned = sorted(planned, key=lambda pc: (order[kind(pc[0])], pc[0].seed, tier(pc[0])))  # stable: plan order within
    return [(p, cfg, kind(p)) for p, cfg in planned]


def keys_of(planned, base: str) -> dict:
    """run key → (point, cfg, kind) under build ``base``."""
    from tcpvideo import sweep
    from tcpvideo.studies.onoff.metrics import reducer

    return {sweep.run_key(p.scenario, p.seed, sweep.sweep_code(reducer(cfg.segment_s), base=base)): (p, cfg, k)
            for p, cfg, k in planned}


def read_pieces(out: Path) -> list[dict]:
    """The sittings, oldest first: a piece is logged when it starts and again when it ends (the last
    line of a start time wins, so a SIGKILLed piece still has its start, build and calibration)."""
    last: dict = {}
    for p in read_jsonl(out / "pieces.jsonl"):
        last[p["start_utc"]] = p
    return [last[k] for k in sorted(last)]


def stored_base(out: Path) -> str | None:
    """The build the stored runs are keyed by (the last piece's), if any."""
    pieces = read_pieces(out)
    return pieces[-1]["base_code"] if pieces else None


def check_across_builds(out: Path, planned, old: str) -> bool:
    """Rerun the cheapest stored run of build ``old`` with the current build; True if every file
    is byte-identical."""
    from tcpvideo.studies.onoff.metrics import reducer
    from tcpvideo.sweep.runner import Task, run_task
    from tcpvideo.sweep.store import RunStore

    store = RunStore(out)
    done = [(k, v) for k, v in keys_of(planned, old).items() if store.is_done(k)]
    if not done:
        return True
    key, (p, cfg, _) = min(done, key=lambda kv: kv[1][1].clients * float(kv[1][0].scenario["duration"]))
    _, files, _ = run_task(Task(key, p.scenario, p.seed, reducer(cfg.segment_s)))
    same = all((store.path(key) / name).read_bytes() == data for name, data in files.items())
    print(f"across builds: reran {cfg.label()} × {cfg.clients} clients, seed {p.seed} with this build: "
          f"{'byte-identical' if same else 'DIFFERENT'} to the stored run of build {old}", flush=True)
    return same


def run_pieces(out: Path, planned, jobs: int, base: str, progress: bool) -> None:
    """Run every point not stored, one sweep per (kind, segment duration) — as the study itself
    does, one per segment duration — each in plan order (seed by seed, must-show points first).
    Raises SweepInterrupted on SIGINT (what finished is stored).

    Until session 9 there was one sweep per (kind, seed, tier, duration): 30 for `--full`, each
    starting its own pool (2 fresh workers importing tcpvideo, pyarrow, numpy) and ending with one
    core idle while the other finished the chunk's last run. Fewer sweeps, fewer of both."""
    from tcpvideo import sweep
    from tcpvideo.studies.onoff.metrics import reducer

    chunks: dict = defaultdict(list)
    for p, cfg, kind in planned:  # planned is in run order; a chunk keeps it
        chunks[(kind == "explain", cfg.segment_s)].append(p)
    for (explain, d), pts in sorted(chunks.items()):
        sweep.run(pts, out, jobs=jobs, reducer=reducer(d), progress=progress, base_code=base,
                  label=f"onoff --full{' --explain' if explain else ''}: {d:g}-s segments")


def lpt_makespan(jobs_cpu: list[float], workers: int) -> float:
    """Longest-processing-time-first packing of runs onto ``workers``: the pool's wall."""
    loads = [0.0] * workers
    heapq.heapify(loads)
    for c in sorted(jobs_cpu, reverse=True):
        heapq.heappush(loads, heapq.heappop(loads) + c)
    return max(loads) if loads else 0.0


def summarize(out: Path, planned, base: str) -> dict:
    """Totals over the plan: measured CPU, estimated CPU of the rest, wall, 2-idle-core wall."""
    from tcpvideo.sweep.store import RunStore

    store = RunStore(out)
    by_key = keys_of(planned, base)
    costs: dict = {}
    for c in read_jsonl(out / "costs.jsonl"):
        if c.get("key") in by_key:
            costs[c["key"]] = c  # the last line of a key (a rerun after a lost commit) wins
    pieces = [p for p in read_pieces(out) if p.get("base_code") == base]
    calib = [p["calibration"] for p in pieces if p.get("calibration")]
    idle = [c["cpu_s"] for c in calib if c["load_start"] < IDLE_LOAD and c["load_end"] < IDLE_LOAD]
    idle_ref = min(idle) if idle else None

    def factor(utc_finished: str) -> float:
        """Idle CPU / loaded CPU of the calibration in the piece that made this run."""
        if idle_ref is None:
            return 1.0
        piece = None
        for p in pieces:
            if p["start_utc"] <= utc_finished and (p.get("end_utc") or "9") >= utc_finished:
                piece = p
        c = (piece or {}).get("calibration")
        return min(1.0, idle_ref / c["cpu_s"]) if c else 1.0

    size = lambda p, cfg: cfg.clients * float(p.scenario["duration"])  # noqa: E731  (clients × simulated s)
    per_group: dict = defaultdict(lambda: {"cpu": 0.0, "idle_cpu": 0.0, "size": 0.0, "n": 0})
    measured, unmeasured, missing = [], [], []
    for k, (p, cfg, kind) in by_key.items():
        g = p.labels["group"]
        if k in costs:
            c = costs[k]
            idle_cpu = c["cpu_s"] * factor(c["finished_utc"])
            measured.append((k, kind, c["cpu_s"], idle_cpu, c["wall_s"], c.get("peak_rss_mb") or 0))
            per_group[g]["cpu"] += c["cpu_s"]
            per_group[g]["idle_cpu"] += idle_cpu
            per_group[g]["size"] += size(p, cfg)
            per_group[g]["n"] += 1
        elif store.is_done(k):
            unmeasured.append((k, p, cfg, kind))  # stored before costs were logged: estimated like the rest
        else:
            missing.append((k, p, cfg, kind))
    all_rate = sum(v["idle_cpu"] for v in per_group.values()) / max(sum(v["size"] for v in per_group.values()), 1e-9)
    estimated = []
    for k, p, cfg, kind in unmeasured + missing:
        g = per_group.get(p.labels["group"])
        own = bool(g and g["n"])  # from its own group's runs, or from all measured runs
        rate = g["idle_cpu"] / g["size"] if own else all_rate
        estimated.append((k, kind, rate * size(p, cfg), own))
    res = {"runs": len(by_key), "measured": len(measured), "stored_unmeasured": len(unmeasured),
           "not_run": len(missing), "idle_ref_cpu_s": idle_ref, "calibrations": calib,
           "wall_pieces_s": sum(p.get("wall_s", 0) for p in pieces), "pieces": len(pieces)}
    for name, kinds in (("full", {"paper"}), ("full_explain", {"paper", "explain"})):
        m = [x for x in measured if x[1] in kinds]
        e = [x for x in estimated if x[1] in kinds]
        runs_idle = [x[3] for x in m] + [x[2] for x in e]
        res[name] = {"runs": len(m) + len(e), "measured": len(m), "cpu_s": sum(x[2] for x in m),
                     "idle_cpu_s": sum(x[3] for x in m), "estimated_idle_cpu_s": sum(x[2] for x in e),
                     "estimated_from_own_group": sum(1 for x in e if x[3]),
                     "worker_wall_s": sum(x[4] for x in m), "peak_rss_mb": max((x[5] for x in m), default=0),
                     "idle_2core_wall_s": lpt_makespan(runs_idle, WORKERS) if runs_idle and (m or e) else 0.0}
    return res


def print_summary(s: dict) -> None:
    h = lambda x: f"{x / 3600:.2f} h"  # noqa: E731
    print(f"\nplan: {s['runs']} runs; measured {s['measured']}, stored before cost logging {s['stored_unmeasured']}, "
          f"not run yet {s['not_run']}; {s['pieces']} piece(s), {h(s['wall_pieces_s'])} wall so far")
    if s["idle_ref_cpu_s"] is None:
        print("idle calibration: none yet on this build (no piece started at load < 1.5): the 2-idle-core wall below "
              "uses the loaded CPU as measured (pessimistic)")
    else:
        cal = ", ".join(f"{c['cpu_s']:.2f} s@load {c['load_start']:.1f}" for c in s["calibrations"])
        print(f"idle calibration: {s['idle_ref_cpu_s']:.2f} CPU s (calibration runs: {cal})")
    for name, title in (("full", "--full (paper groups)"), ("full_explain", "--full --explain (paper + explaining)")):
        v = s[name]
        if not v["measured"]:
            print(f"{title}: {v['runs']} runs, none measured yet: nothing to project")
            continue
        total_idle = v["idle_cpu_s"] + v["estimated_idle_cpu_s"]
        print(f"{title}: {v['runs']} runs, {v['measured']} measured: {h(v['cpu_s'])} CPU as measured "
              f"({h(v['idle_cpu_s'])} idle-equivalent, workers' wall {h(v['worker_wall_s'])}, peak RSS "
              f"{v['peak_rss_mb']:.0f} MB); the {v['runs'] - v['measured']} others estimated at "
              f"{h(v['estimated_idle_cpu_s'])} idle CPU ({v['estimated_from_own_group']} from their own group's "
              f"CPU per client-second, the rest from all measured runs'); total {h(total_idle)} idle CPU → wall on "
              f"{WORKERS} idle "
              f"cores (longest-first packing) ≈ {h(v['idle_2core_wall_s'])} (goal ≤ 1 h: "
              f"{'met' if v['idle_2core_wall_s'] <= 3600 else 'not met'})")


def print_trends(out: Path, base: str) -> None:
    """The study's report over the stored runs, and its claims."""
    from tcpvideo.studies import onoff

    try:
        res = onoff.run(full=True, explain=True, out=out, progress=False, stored_only=True, base_code=base)
    except RuntimeError as e:
        print(f"trend table: {e}")
        return
    f = res["facts"]
    print(f"\ntrend table ({f['stored']} of {f['runs']} runs stored; report: {res['out'] / 'report.html'}):")
    for c in res["claims"]:
        print(f"  {c.figure:8} {c.status:15} {c.claim}\n{'':26}ours: {c.ours}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("studies/onoff_full"), help="the study's run store and report")
    ap.add_argument("--jobs", type=int, default=WORKERS)
    ap.add_argument("--explain", action=argparse.BooleanOptionalAction, default=True,
                    help="also the explaining experiments, after the paper's groups (default: yes)")
    ap.add_argument("--report", action="store_true", help="run nothing: totals and the trend table from OUT")
    ap.add_argument("--across-builds", action="store_true",
                    help="the build changed: reuse the stored runs if a rerun of one is byte-identical")
    ap.add_argument("--new-build", action="store_true", help="the build changed: start over under the new one")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    a = ap.parse_args()
    if a.jobs < 1:
        raise SystemExit(f"--jobs {a.jobs}: must be at least 1")
    from tcpvideo import sweep

    a.out.mkdir(parents=True, exist_ok=True)
    planned = plan(a.explain)
    current, stored = sweep.code_version(), stored_base(a.out)
    base = current
    if stored and stored != current:
        if a.across_builds:
            if not check_across_builds(a.out, planned, stored):
                raise SystemExit("--across-builds: this build's results differ from the stored ones; nothing reused "
                                 "(--new-build starts over under this build)")
            base = stored
        elif not a.new_build and not a.report:
            raise SystemExit(f"{a.out}: the stored runs are keyed by build {stored}, this build is {current}: "
                             "--across-builds (reuse them if a rerun is byte-identical) or --new-build (start over)")
        elif a.report:
            base = stored
    if a.report:
        print_summary(summarize(a.out, planned, base))
        print_trends(a.out, base)
        return
    # stop cleanly on SIGINT and SIGTERM (also when started in the background, where a
    # non-interactive shell leaves SIGINT ignored)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    piece = {"start_utc": utc(), "base_code": base, "build": current, "load_start": load1(), "jobs": a.jobs,
             "status": "running"}
    print(f"piece starts {piece['start_utc']} at load {piece['load_start']}; calibrating ...", flush=True)
    status = "finished"
    t0 = time.perf_counter()
    try:
        piece["calibration"] = calibrate()
        append_jsonl(a.out / "pieces.jsonl", piece)
        print(f"calibration: {piece['calibration']['cpu_s']:.2f} CPU s", flush=True)
        run_pieces(a.out, planned, a.jobs, base, progress=not a.quiet)
    except KeyboardInterrupt as e:  # SweepInterrupted is one
        status = f"interrupted ({e})"
    finally:
        made = sum(1 for c in read_jsonl(a.out / "costs.jsonl") if c.get("finished_utc", "") >= piece["start_utc"])
        piece.update(end_utc=utc(), wall_s=round(time.perf_counter() - t0, 1), load_end=load1(), status=status,
                     runs_made=made)
        append_jsonl(a.out / "pieces.jsonl", piece)
    print(f"piece {status}: {made} runs in {piece['wall_s']:.0f} s wall, load {piece['load_start']} → "
          f"{piece['load_end']}", flush=True)
    print_summary(summarize(a.out, planned, base))
    print_trends(a.out, base)


if __name__ == "__main__":
    main()
