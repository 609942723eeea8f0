"""Running the points of a sweep: one worker function, two executors (a local process pool, or a
Ray cluster), one driver that commits results and draws the progress bar.

Workers only simulate and return the result as bytes (``summary.json`` and Parquet tables); the
driver alone writes to the store (:mod:`tcpvideo.sweep.store`). So a Ray cluster needs no shared
filesystem, both executors produce the same bytes from the same function, and an interrupted
sweep never leaves a half-written result.

Interruption: on SIGINT (Ctrl-C) the driver stops the workers and returns what it committed; a
SIGKILL of the driver takes the local workers with it (they ask the kernel for SIGKILL when
their parent dies, ``PR_SET_PDEATHSIG``), so no orphan keeps simulating. Either way the next run
of the same sweep skips every committed point and reruns only the others.
"""

from __future__ import annotations

import ctypes
import json
import multiprocessing
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Sequence

import pyarrow as pa

from tcpvideo.sweep.store import table_bytes

# A reducer turns one SimResult into what is kept: (summary dict, {table name: Table}).
Reducer = Callable[[object], "tuple[dict, dict[str, pa.Table]]"]


def keep_all_tables(result) -> tuple[dict, dict]:
    """Default reducer: the run's summary and every table of :func:`tcpvideo.simulate`."""
    from tcpvideo.simulation import TABLES

    return dict(result.summary), {name: getattr(result, name) for name in TABLES}


@dataclass(frozen=True)
class Task:
    """What a worker needs for one point (picklable: plain data and a module-level function)."""

    key: str
    scenario: dict
    seed: int
    reducer: Reducer = keep_all_tables
    # What runs a point: ``runner(scenario, seed)`` (module-level, picklable); None = tcpvideo.simulate.
    # Studies whose runs are not scenario files (the ETHLE testbed) bring their own.
    runner: Optional[Callable] = None


def run_task(task: Task) -> tuple[str, dict[str, bytes], dict]:
    """Simulate one point; return its key, its files (name → bytes) and what it cost (``cost``:
    CPU and wall seconds in the worker, peak RSS of the worker process, load average before and
    after). The cost is measured, not stored with the result: the files stay a function of the
    scenario, the seed and the code alone."""
    from tcpvideo.simulation import simulate

    load0, w0, c0 = _loadavg(), time.perf_counter(), time.process_time()
    result = (task.runner or (lambda sc, seed: simulate(sc, seed=seed)))(task.scenario, task.seed)
    summary, tables = task.reducer(result)
    files = {"summary.json": (json.dumps(summary, indent=2, sort_keys=True) + "\n").encode()}
    for name, table in sorted(tables.items()):
        files[f"{name}.parquet"] = table_bytes(table)
    cost = {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0,
            "peak_rss_mb": _peak_rss_mb(), "load_start": load0, "load_end": _loadavg()}
    return task.key, files, cost


def _loadavg() -> Optional[float]:
    """The 1-minute load average (None where the platform has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _peak_rss_mb() -> Optional[float]:
    """Peak RSS of this process so far (a pool worker's peak covers its earlier runs too)."""
    try:
        import resource

        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        return round(kb / 1024, 1)
    except (ImportError, OSError):
        return None


def _die_with_parent() -> None:
    """Local workers: ignore SIGINT (the driver decides) and die when the driver dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            PR_SET_PDEATHSIG = 1
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except OSError:
            pass


# Math libraries' thread pools, one thread each in a sweep worker: the pool already has one worker
# per core and a run uses numpy only for a few small reductions, so OpenBLAS's idle threads (1.6 %
# of a worker's perf samples in session 9) are pure overhead. Read when numpy loads, i.e. at the
# worker's first import, so they are set in the environment the workers are spawned with.
SINGLE_THREAD_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _single_threaded_math() -> dict:
    """Set the math-library thread counts to 1 unless the user set them; return what to restore."""
    saved = {}
    for name in SINGLE_THREAD_ENV:
        if name not in os.environ:
            saved[name] = None
            os.environ[name] = "1"
    return saved


def _restore_env(saved: dict) -> None:
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def run_local(tasks: Sequence[Task], jobs: int) -> Iterator[tuple[str, dict[str, bytes], dict]]:
    """Yield (key, files, cost) as local worker processes finish them (``jobs`` = 1: in this process).

    A worker that dies (or cannot even start) stops the sweep with an error instead of hanging:
    ``concurrent.futures`` marks the pool broken, unlike ``multiprocessing.Pool``, which would
    respawn it forever.
    """
    if jobs <= 1:
        for t in tasks:
            yield run_task(t)
        return
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)) or 1, mp_context=ctx, initializer=_die_with_parent)
    finished = False
    saved = _single_threaded_math()  # before the first submit: workers are spawned then, with this environment
    try:
        futures = [pool.submit(run_task, t) for t in tasks]
        for fut in as_completed(futures):
            try:
                yield fut.result()
            except BrokenProcessPool as e:
                raise RuntimeError(f"a sweep worker process died ({e}); stored results are kept, rerun to resume") \
                    from None
        finished = True
    finally:
        if not finished:  # interrupted or failed: stop the workers now, not after their current run
            for proc in list(getattr(pool, "_processes", {}).values()):
                proc.kill()
        pool.shutdown(wait=True, cancel_futures=True)
        _restore_env(saved)


def ray_available() -> tuple[bool, str]:
    try:
        import ray  # noqa: F401
    except ImportError as e:
        return False, f"ray is not installed ({e}); pip install 'tcpvideo[ray]'"
    return True, ""


def run_ray(tasks: Sequence[Task], address: str, jobs: int) -> Iterator[tuple[str, dict[str, bytes], dict]]:
    """Yield (key, files, cost) as Ray tasks finish. ``address``: ``local`` starts a private local
    Ray instance with ``jobs`` CPUs; anything else (``auto``, ``HOST:PORT``, ``ray://...``) is
    passed to ``ray.init`` to join that cluster."""
    ok, why = ray_available()
    if not ok:
        raise RuntimeError(why)
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        kwargs = dict(include_dashboard=False, log_to_driver=False, configure_logging=False)
        if address == "local":
            ray.init(num_cpus=max(jobs, 1), **kwargs)
        else:
            ray.init(address=address, **kwargs)
    remote = ray.remote(num_cpus=1, max_retries=2)(run_task)
    pending = [remote.remote(t) for t in tasks]
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        if started_here:
            ray.shutdown()


class ProgressBar:
    """A rich progress bar with counts, elapsed time and ETA; silent when ``enabled`` is false."""

    def __init__(self, total: int, done: int, label: str, enabled: bool = True):
        self.enabled = enabled and total > 0
        self.t0 = time.monotonic()
        if not self.enabled:
            return
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                            transient=False)
        self.bar.start()
        self.task = self.bar.add_task(label, total=total, completed=done)

    def advance(self) -> None:
        if self.enabled:
            self.bar.advance(self.task)

    def close(self) -> None:
        if self.enabled:
            self.bar.stop()


def execute(tasks: Sequence[Task], commit: Callable[[str, dict], None], jobs: int = 1,
            ray_address: Optional[str] = None, on_done: Optional[Callable[[], None]] = None,
            on_cost: Optional[Callable[[str, dict], None]] = None) -> None:
    """Run ``tasks``; ``commit(key, files)`` each result as it arrives (in the driver), then
    ``on_cost(key, cost)`` with what the run cost (see :func:`run_task`)."""
    if not tasks:
        return
    stream = run_ray(tasks, ray_address, jobs) if ray_address else run_local(tasks, jobs)
    try:
        for key, files, cost in stream:
            commit(key, files)
            if on_cost is not None:
                on_cost(key, cost)
            if on_done is not None:
                on_done()
    finally:
        # An interrupt that lands here (in commit, not inside the generator's wait) leaves the
        # generator suspended; the exception's traceback keeps it alive, so its clean-up (kill the
        # workers, cancel the queued points) would wait for the interpreter's exit, where
        # concurrent.futures joins the pool after every queued point has run (a SIGINT'd sweep
        # then took minutes to exit: CI, session 11). Close it now.
        stream.close()


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))
