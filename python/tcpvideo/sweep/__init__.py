"""Sweeps: run one scenario over a grid of values and seeds, on a local process pool or on Ray,
resumable, and join every run's summary with its swept values in one results table.

    from tcpvideo import sweep
    pts = sweep.points(sweep.load_scenario("scenarios/seed004_live.toml"),
                       [sweep.parse_set("dumbbell.clients=50,100,150")], sweep.parse_seeds("1-10"))
    res = sweep.run(pts, "sweeps/clients", jobs=2)          # or ray_address="auto"
    res.table.to_pandas()                                      # one row per point

Layout of the output directory:

- ``runs/<key>/``: one directory per run (``summary.json`` and Parquet tables), the key derived
  from the canonical scenario, the seed and the code version (:mod:`tcpvideo.sweep.store`);
- ``results.parquet`` / ``results.csv``: one row per point, in grid order — the swept values, the
  seed, the key, then the run's summary (files depend only on scenarios, seeds and code);
- ``sweep.json``: the grid and the code version;
- ``costs.jsonl``: one line per run made (appended, never rewritten): its key, labels, seed, code
  version and cost — CPU and wall seconds in the worker, the worker's peak RSS, the load average
  before and after. A measurement log for planning and benches, not a result: it differs between
  two runs of the same sweep, the results above do not.

Modules: :mod:`~tcpvideo.sweep.grid` (the grid and its parsing), :mod:`~tcpvideo.sweep.store`
(keys, atomic results), :mod:`~tcpvideo.sweep.runner` (workers, pool and Ray, progress bar).
"""

from __future__ import annotations

import json
import os
import time
try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib  # type: ignore[no-redef]
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional, Sequence

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from tcpvideo.sweep.grid import Point, SweepInputError, SweptKey, parse_seeds, parse_set, points, set_key
from tcpvideo.sweep.runner import ProgressBar, Reducer, Task, default_jobs, execute, keep_all_tables, ray_available
from tcpvideo.sweep.store import RunStore, code_version, reducer_identity, run_key

__all__ = ["Point", "SweepInputError", "SweptKey", "SweepResult", "SweepInterrupted", "load_scenario",
           "parse_seeds", "parse_set", "points", "set_key", "run", "validate", "ray_available", "default_jobs",
           "keep_all_tables", "code_version", "run_key", "sweep_code", "read_costs", "COSTS"]


COSTS = "costs.jsonl"  # per-run cost log of a sweep directory (see the module docstring)


def read_costs(out: os.PathLike | str) -> list[dict]:
    """The cost lines of a sweep directory, oldest first (a torn last line, from a kill while
    appending, is skipped)."""
    p = Path(out) / COSTS
    if not p.is_file():
        return []
    rows = []
    for line in p.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


class SweepInterrupted(KeyboardInterrupt):
    """The sweep was interrupted; ``done`` of ``total`` points are stored and will be reused."""

    def __init__(self, done: int, total: int, out: Path):
        super().__init__(f"interrupted: {done} of {total} points stored in {out}; rerun to resume")
        self.done, self.total, self.out = done, total, out


@dataclass
class SweepResult:
    """The results table (one row per point), where it was written, and what this call ran."""

    table: pa.Table
    out: Path
    keys: list[str]
    ran: int = 0
    reused: int = 0
    code: str = ""
    store: Optional[RunStore] = field(default=None, repr=False)


def load_scenario(path: os.PathLike | str) -> dict:
    """A scenario file (TOML or JSON) as a dict."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"scenario file not found: {p}")
    text = p.read_text()
    try:
        return json.loads(text) if p.suffix.lower() == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise SweepInputError(f"{p}: {e}") from None


def validate(pts: Sequence[Point]) -> None:
    """Check every distinct swept scenario before anything runs; one line naming the value."""
    from tcpvideo.simulation import ScenarioError, check

    seen = set()
    for p in pts:
        sig = json.dumps(p.scenario, sort_keys=True)
        if sig in seen:
            continue
        seen.add(sig)
        try:
            check(p.scenario, p.seed)
        except ScenarioError as e:
            what = ", ".join(f"{k}={v}" for k, v in p.params.items()) or "scenario"
            raise SweepInputError(f"--set {what}: {e}") from None


def _flat(prefix: str, value, out: dict) -> None:
    if isinstance(value, Mapping):
        for k in sorted(value):
            _flat(f"{prefix}.{k}" if prefix else str(k), value[k], out)
    else:
        out[prefix] = value


def results_table(pts: Sequence[Point], keys: Sequence[str], store: RunStore) -> pa.Table:
    """Swept values, labels, seed and key joined with each stored run's summary (grid order)."""
    rows = []
    for p, k in zip(pts, keys):
        if not store.is_done(k):
            continue
        row: dict = {}
        row.update(p.params)
        row.update(p.labels)
        row["seed"] = p.seed
        row["key"] = k
        summary: dict = {}
        _flat("", store.summary(k), summary)
        summary.pop("seed", None)
        for name, v in summary.items():
            row.setdefault(name if name not in row else f"summary.{name}", v)
        rows.append(row)
    if not rows:
        return pa.table({})
    columns: list[str] = []
    for r in rows:
        for c in r:
            if c not in columns:
                columns.append(c)
    return pa.table({c: [r.get(c) for r in rows] for c in columns})


def _write_atomic(path: Path, write) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(tmp)
    os.replace(tmp, path)


def write_results(table: pa.Table, out: Path) -> None:
    _write_atomic(out / "results.parquet", lambda p: pq.write_table(table, p))
    _write_atomic(out / "results.csv", lambda p: pacsv.write_csv(table, p))


def sweep_code(reducer: Reducer = keep_all_tables, runner=None, base: Optional[str] = None) -> str:
    """The code version in a sweep's run keys: the build's (:func:`code_version`, or ``base``),
    plus the identity of a custom reducer and runner (what is kept and what runs are part of the
    result: changing either reruns)."""
    code = base or code_version()
    if reducer is not keep_all_tables:
        code = f"{code}+reducer.{reducer_identity(reducer)}"
    if runner is not None:  # a study's own runner (not tcpvideo.simulate)
        code = f"{code}+runner.{reducer_identity(runner)}"
    return code


def run(pts: Sequence[Point], out: os.PathLike | str, jobs: Optional[int] = None,
        ray_address: Optional[str] = None, reducer: Reducer = keep_all_tables, progress: bool = True,
        label: str = "sweep", runner=None, stored_only: bool = False, base_code: Optional[str] = None) -> SweepResult:
    """Run every point not already stored under ``out``; return the results table.

    ``stored_only``: run nothing, return the points already stored (a partial table).
    ``base_code``: key the runs with this build's code version instead of the current one — only
    for resuming across a rebuild that was checked to give byte-identical results
    (``bench/onoff_full_run.py --across-builds`` checks it by rerunning a stored point).
    Raises :class:`SweepInterrupted` on Ctrl-C (what finished is kept; rerunning resumes).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    store = RunStore(out)
    store.remove_partials()
    code = sweep_code(reducer, runner, base_code)
    keys = [run_key(p.scenario, p.seed, code) for p in pts]
    if len(set(keys)) != len(keys):
        raise SweepInputError("--set/--seeds: two points give the same scenario and seed")
    todo = [] if stored_only else \
        [Task(k, p.scenario, p.seed, reducer, runner) for p, k in zip(pts, keys) if not store.is_done(k)]
    reused = len(pts) - len(todo)
    _write_atomic(out / "sweep.json", lambda p: p.write_text(json.dumps({
        "code_version": code, "points": [{"key": k, "seed": pt.seed, "params": pt.params, "labels": pt.labels}
                                         for pt, k in zip(pts, keys)]}, indent=1, sort_keys=True) + "\n"))
    bar = ProgressBar(len(pts), reused, label, enabled=progress and not stored_only)
    ran = 0
    point_of = {k: p for p, k in zip(pts, keys)}

    def commit(key: str, files: dict) -> None:
        nonlocal ran
        store.commit(key, files)
        ran += 1

    def log_cost(key: str, cost: dict) -> None:
        p = point_of[key]
        line = {"key": key, "code": code, "seed": p.seed, "params": p.params, "labels": p.labels,
                "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **cost}
        with open(out / COSTS, "a") as f:
            f.write(json.dumps(line, sort_keys=True, default=str) + "\n")

    try:
        execute(todo, commit, jobs=jobs or default_jobs(), ray_address=ray_address, on_done=bar.advance,
                on_cost=log_cost)
    except KeyboardInterrupt:
        bar.close()
        write_results(results_table(pts, keys, store), out)
        raise SweepInterrupted(sum(store.is_done(k) for k in keys), len(pts), out) from None
    bar.close()
    table = results_table(pts, keys, store)
    write_results(table, out)
    return SweepResult(table=table, out=out, keys=keys, ran=ran, reused=reused, code=code, store=store)
