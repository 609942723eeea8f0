"""`tcpvideo sweep`: the grid, resuming after SIGINT/SIGKILL without losing or rerunning a
point, Ray giving the same bytes as the local pool, and one-line errors for bad --set/--seeds.

Runs are counted through a side channel the sweep does not know about: a ``sitecustomize``
module on PYTHONPATH wraps ``tcpvideo._core.Simulation`` in every process (driver and workers)
and drops one marker file per simulation started.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from tcpvideo import sweep

CLI = [sys.executable, "-c", "from tcpvideo.cli import main; main()"]

# Each run: 30–60 live clients for 40 simulated seconds (a few tenths of a second of CPU).
SCENARIO = """
name = "sweep_test"
duration = "40s"
seed = 1

[dumbbell]
clients = 10
bottleneck_rate = "100Mbps"
queue = 1375
rtt = "55ms"
rtt_std = "5ms"

[dumbbell.flow]
app = "reqresp"
period = "2s"
count = 19
response_bytes = "125kB"
start_jitter = "2s"
"""

COUNTING_SITECUSTOMIZE = """
import json, os, uuid
_marks = os.environ.get("TCPVIDEO_TEST_MARK_DIR")
if _marks:
    import tcpvideo._core as _core
    _real = _core.Simulation
    def _counted(text, fmt, seed, pcap_dir):
        clients = json.loads(text)["dumbbell"]["clients"]
        open(os.path.join(_marks, f"{clients}-{seed}-{uuid.uuid4().hex}"), "w").close()
        return _real(text, fmt, seed, pcap_dir)
    _core.Simulation = _counted
"""


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "sc.toml").write_text(SCENARIO)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(textwrap.dedent(COUNTING_SITECUSTOMIZE))
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
           "TCPVIDEO_TEST_MARK_DIR": str(marks), "COLUMNS": "200"}
    return tmp_path, env, marks


def _sweep_args(tmp: Path, out: Path, *extra: str) -> list[str]:
    return [*CLI, "sweep", str(tmp / "sc.toml"), "--set", "dumbbell.clients=30,40,50,60", "--seeds", "1-4",
            "--out", str(out), "--quiet", *extra]


def _starts(marks: Path) -> Counter:
    return Counter("-".join(p.name.split("-")[:2]) for p in marks.iterdir())


def _point_names(out: Path) -> dict[str, str]:
    """key → "clients-seed" from the results table."""
    with open(out / "results.csv") as f:
        return {r["key"]: f"{r['dumbbell.clients']}-{r['seed']}" for r in csv.DictReader(f)}


def _interruptible():
    """Child setup: Ctrl-C's default action, whatever this test run inherited. A shell starts a
    background job with SIGINT ignored and children keep that, so the sweep would never see the
    SIGINT and the test would fail for the launcher's sake, not the sweep's."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_interrupted_sweep_rerun_finishes_every_point_and_never_reruns_a_stored_one(workspace, sig):
    tmp, env, marks = workspace
    out = tmp / "out"
    proc = subprocess.Popen(_sweep_args(tmp, out, "--jobs", "2"), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_interruptible)
    runs = out / "runs"
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline:
            done = [p for p in runs.iterdir() if not p.name.startswith(".")] if runs.exists() else []
            if len(done) >= 3 or proc.poll() is not None:
                break
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0, "the sweep finished before it could be interrupted; make its points longer"
    if sig == signal.SIGINT:
        assert proc.returncode == 130 and "rerun to resume" in err, err
    stored_before = {p.name for p in runs.iterdir() if not p.name.startswith(".")}
    assert 3 <= len(stored_before) < 16
    time.sleep(0.5)  # any orphaned worker would have started its next run by now
    starts_after_interrupt = _starts(marks)

    rerun = subprocess.run(_sweep_args(tmp, out, "--jobs", "2"), env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    names = _point_names(out)
    assert len(names) == 16  # every point of the grid has a row, each once
    assert set(names) == {p.name for p in runs.iterdir()}  # no partial directory left
    starts = _starts(marks)
    for key in stored_before:
        assert starts[names[key]] == 1, f"point {names[key]} was stored before the interrupt and ran again"
    for key, name in names.items():
        if key not in stored_before:
            assert starts[name] - starts_after_interrupt[name] == 1, f"point {name} ran {starts[name]} times after resuming"
    assert sum(starts.values()) - sum(starts_after_interrupt.values()) == 16 - len(stored_before)


def test_same_sweep_on_local_ray_gives_byte_identical_results_to_the_process_pool(workspace):
    ok, why = sweep.ray_available()
    if not ok:
        pytest.skip(why)
    tmp, env, _ = workspace
    probe = subprocess.run([sys.executable, "-c", "import ray; ray.init(num_cpus=1, include_dashboard=False); "
                            "ray.shutdown()"], capture_output=True, text=True, timeout=300)
    if probe.returncode != 0:
        pytest.skip("Ray cannot start here: " + (probe.stderr.strip().splitlines() or ["?"])[-1])
    args = [*CLI, "sweep", str(tmp / "sc.toml"), "--set", "dumbbell.clients=30,50", "--seeds", "1-2", "--quiet"]
    pool = subprocess.run([*args, "--out", str(tmp / "pool"), "--jobs", "2"], env=env, capture_output=True,
                          text=True, timeout=600)
    assert pool.returncode == 0, pool.stderr
    viaray = subprocess.run([*args, "--out", str(tmp / "ray"), "--jobs", "2", "--ray", "local"], env=env,
                            capture_output=True, text=True, timeout=600)
    assert viaray.returncode == 0, viaray.stderr
    a, b = tmp / "pool", tmp / "ray"
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert files_a == files_b
    assert any(p.name == "requests.parquet" for p in files_a)
    for rel in files_a:
        if rel == Path(sweep.COSTS):  # the cost log measures each run (CPU, wall, load): not a result
            assert len(sweep.read_costs(a)) == len(sweep.read_costs(b)) == 4
            continue
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), f"{rel} differs between the pool and Ray"


@pytest.mark.parametrize("args,names", [
    (["--set", "dumbbell.clients"], "--set dumbbell.clients"),
    (["--set", "dumbbell.clients=10,,20"], "--set dumbbell.clients"),
    (["--set", "dumbbell.clients=-5"], "dumbbell.clients"),
    (["--set", "dumbbell.clientz=5"], "dumbbell.clientz"),
    (["--set", "dumbbell..clients=5"], "--set"),
    (["--seeds", "5-2"], "--seeds 5-2"),
    (["--seeds", "one"], "--seeds one"),
    (["--seeds", "1,1"], "--seeds 1,1"),
    (["--jobs", "0"], "--jobs 0"),
])
def test_bad_set_or_seeds_gives_one_line_naming_it_and_runs_nothing(workspace, args, names):
    tmp, env, marks = workspace
    r = subprocess.run([*CLI, "sweep", str(tmp / "sc.toml"), "--out", str(tmp / "o"), *args], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    lines = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert names in lines[0] and "Traceback" not in lines[0]
    assert not any(marks.iterdir())


def test_grid_sets_nested_keys_and_lists_points_first_key_slowest_then_seeds():
    base = {"dumbbell": {"clients": 1, "flow": {"app": "reqresp"}}}
    pts = sweep.points(base, [sweep.parse_set("dumbbell.clients=50,100"),
                              sweep.parse_set("dumbbell.flow.tcp.cc=cubic,vegas")], [3, 4])
    assert [(p.params["dumbbell.clients"], p.params["dumbbell.flow.tcp.cc"], p.seed) for p in pts] == [
        (50, "cubic", 3), (50, "cubic", 4), (50, "vegas", 3), (50, "vegas", 4),
        (100, "cubic", 3), (100, "cubic", 4), (100, "vegas", 3), (100, "vegas", 4)]
    assert pts[2].scenario["dumbbell"]["flow"] == {"app": "reqresp", "tcp": {"cc": "vegas"}}
    assert base["dumbbell"] == {"clients": 1, "flow": {"app": "reqresp"}}  # the base is not modified
    assert sweep.parse_seeds("1-3,7") == [1, 2, 3, 7]
    assert sweep.parse_set("a.b=1.5,2Mbps,true").values == (1.5, "2Mbps", True)


def test_run_key_depends_on_every_value_seed_and_code_but_not_on_key_order():
    a = {"x": 1, "y": {"z": "2s"}}
    b = {"y": {"z": "2s"}, "x": 1}
    code = "0.1.0+core.abc"
    assert sweep.run_key(a, 1, code) == sweep.run_key(b, 1, code)
    assert sweep.run_key(a, 1, code) != sweep.run_key(a, 2, code)
    assert sweep.run_key(a, 1, code) != sweep.run_key({"x": 1, "y": {"z": "3s"}}, 1, code)
    assert sweep.run_key(a, 1, code) != sweep.run_key(a, 1, "0.1.0+core.abd")


def test_each_run_made_logs_its_cpu_wall_and_load_once_and_a_reused_or_stored_only_sweep_logs_nothing(tmp_path):
    (tmp_path / "sc.toml").write_text(SCENARIO)
    base = sweep.load_scenario(tmp_path / "sc.toml")
    pts = sweep.points(base, [sweep.parse_set("dumbbell.clients=5,8")], [1])
    out = tmp_path / "out"
    first = sweep.run(pts[:1], out, jobs=1, progress=False)
    costs = sweep.read_costs(out)
    assert [c["key"] for c in costs] == first.keys and first.ran == 1
    c = costs[0]
    assert c["cpu_s"] > 0 and c["wall_s"] > 0 and c["peak_rss_mb"] > 0 and c["load_start"] is not None
    assert c["params"] == {"dumbbell.clients": 5} and c["seed"] == 1 and c["code"] == first.code
    # stored_only runs nothing: the second point is missing from its table, and nothing is logged
    partial = sweep.run(pts, out, jobs=1, progress=False, stored_only=True)
    assert partial.ran == 0 and partial.table.num_rows == 1 and partial.table["key"].to_pylist() == first.keys
    again = sweep.run(pts, out, jobs=1, progress=False)
    assert again.ran == 1 and again.reused == 1
    assert [c["key"] for c in sweep.read_costs(out)] == [first.keys[0], again.keys[1]]  # the reused point: no line
    # a torn last line (a kill while appending) is skipped, not fatal
    with open(out / sweep.COSTS, "a") as f:
        f.write('{"key": "trunc')
    assert len(sweep.read_costs(out)) == 2


def test_a_base_code_keys_runs_by_that_build_and_a_changed_build_gives_new_keys(tmp_path):
    (tmp_path / "sc.toml").write_text(SCENARIO)
    pts = sweep.points(sweep.load_scenario(tmp_path / "sc.toml"), [sweep.parse_set("dumbbell.clients=5")], [1])
    out = tmp_path / "out"
    now = sweep.run(pts, out, jobs=1, progress=False)
    assert now.code == sweep.sweep_code() == sweep.code_version()
    old = sweep.run(pts, out, jobs=1, progress=False, base_code="0.0.9+core.0123456789abcdef", stored_only=True)
    assert old.keys != now.keys and old.table.num_rows == 0  # nothing stored under that build


def _env_runner(scenario, seed):
    """A sweep runner (module level: picklable for spawned workers) reporting the worker's environment."""
    return {k: os.environ.get(k) for k in scenario["names"]}


def _env_reducer(result):
    return result, {}


def test_pool_workers_run_math_libraries_single_threaded_unless_the_user_chose_and_the_driver_env_is_kept(
        monkeypatch):
    from tcpvideo.sweep.runner import SINGLE_THREAD_ENV, Task, run_local

    names = list(SINGLE_THREAD_ENV)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the user's choice wins
    for n in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(n, raising=False)
    tasks = [Task(f"k{i}", {"names": names}, i, _env_reducer, _env_runner) for i in range(2)]
    got = [files for _, files, _ in run_local(tasks, jobs=2)]
    import json as _json
    for files in got:
        env = _json.loads(files["summary.json"])
        assert env == {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "1"}
    # the driver's own environment is as before the pool
    assert "OPENBLAS_NUM_THREADS" not in os.environ and "MKL_NUM_THREADS" not in os.environ
    assert os.environ["OMP_NUM_THREADS"] == "3"


def _sleep_runner(scenario, seed):
    """A sweep runner (module level, picklable) that returns at once for seed 0 and sleeps otherwise."""
    if seed:
        time.sleep(scenario["sleep_s"])
    return {}


def test_an_interrupt_while_committing_a_result_stops_the_pool_workers_at_once():
    # The interrupt lands in the driver's commit, outside the result generator; the workers (busy
    # with 60-s points) must be gone at once, not after every queued point has run.
    from tcpvideo.sweep.runner import Task, execute

    tasks = [Task(f"k{i}", {"sleep_s": 60}, i, _env_reducer, _sleep_runner) for i in range(4)]

    def commit(key, files):
        raise KeyboardInterrupt

    def pool_workers() -> list[int]:  # this process's spawned children (ProcessPoolExecutor's workers)
        pids = []
        for d in Path("/proc").iterdir():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ppid == os.getpid() and b"multiprocessing-fork" in (d / "cmdline").read_bytes():
                    pids.append(int(d.name))
            except (ValueError, OSError, IndexError):
                continue
        return pids

    # Keep the exception (and so its traceback) alive, as the CLI does while it reports the
    # interrupt (SweepInterrupted's context, typer's Exit): nothing may rely on it being freed.
    with pytest.raises(KeyboardInterrupt) as interrupted:
        execute(tasks, commit, jobs=2)
    deadline = time.monotonic() + 10
    while pool_workers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pool_workers(), "pool workers outlived the interrupted sweep"
    assert interrupted.tb is not None
