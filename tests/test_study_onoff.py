"""`tcpvideo study onoff`: the seed-004 scenario (arrivals, request timing, cwnd limit), the
liveness metric against hand computation, and a tiny end-to-end study writing the report
directory (tables, one PNG per figure, a self-contained HTML with the paper-vs-ours table, JSON).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pyarrow as pa
import pytest

import tcpvideo
from tcpvideo.studies import STUDIES
from tcpvideo.studies.onoff import plan_points, run
from tcpvideo.studies.onoff.metrics import client_metrics
from tcpvideo.studies.onoff.plan import Scale
from tcpvideo.studies.onoff.scenario import OnOffConfig, arrivals, scenario

CLI = [sys.executable, "-c", "from tcpvideo.cli import main; main()"]


def test_arrivals_fall_within_the_first_segment_and_depend_only_on_the_seed():
    a = arrivals(200, 2.0, seed=5)
    assert len(a) == 200 and a.min() >= 0.0 and a.max() < 2.0
    assert list(a) == sorted(a)
    assert (a == arrivals(200, 2.0, seed=5)).all()
    assert not (a == arrivals(200, 2.0, seed=6)).all()
    assert 0.8 < a.mean() < 1.2  # uniform on [0, 2): mean 1


def test_regular_requests_wait_for_each_segment_and_distributed_ones_keep_their_arrival_phase():
    d = 2.0
    reg = tcpvideo.simulate(scenario(OnOffConfig(3, segments=4), seed=1)).requests.to_pylist()
    dist = tcpvideo.simulate(scenario(OnOffConfig(3, segments=4, distributed=True), seed=1)).requests.to_pylist()
    arr = arrivals(3, d, 1)
    for r in reg:
        want = arr[r["flow"] - 3] if r["index"] == 0 else r["index"] * d  # flows 0–2 are the parked dumbbell ones
        assert r["scheduled_s"] == pytest.approx(want, abs=1e-6)
        assert r["sent_s"] >= want - 1e-9 and r["completed_s"] is not None
    for r in dist:
        assert r["scheduled_s"] == pytest.approx(arr[r["flow"] - 3] + r["index"] * d, abs=1e-6)
    assert {r["response_bytes"] for r in reg} == {125_000}


def test_cwnd_limit_clamps_every_video_flow_to_20_packets():
    res = tcpvideo.simulate(scenario(OnOffConfig(4, segments=3, cwnd_limit=True), seed=2))
    video = [f for f in res.flows.to_pylist() if f["name"].startswith("v")]
    assert len(video) == 4
    assert all(f["max_cwnd_bytes"] <= 20 * 1448 for f in video)
    free = tcpvideo.simulate(scenario(OnOffConfig(4, segments=3), seed=2))
    assert max(f["max_cwnd_bytes"] for f in free.flows.to_pylist()) > 20 * 1448  # the clamp is what holds it


def test_liveness_is_minus_the_worst_lag_of_a_segment_behind_its_availability():
    # one client arriving at 0.5 s; segments available at 0, 2, 4, 6, 8 complete at 0.9, 2.3, 5.5, 6.4, 8.9.
    # Playout by hand: 0.9; 2.9 (2.3 is early); 5.5 (0.6-s stall); 7.5; 9.5 (8.9 is early, after the stall
    # the clock runs 1.5 s behind). Liveness: 8.0 − 9.5 = −1.5 s; one stall of 0.6 s.
    flows = pa.table({"flow": [0], "name": ["v0"], "start_s": [0.5], "base_rtt_ms": [55.0], "retrans_fast": [0],
                      "retrans_timeout": [0], "retrans_tlp": [0]})
    requests = pa.table({"flow": [0] * 5, "index": [0, 1, 2, 3, 4], "completed_s": [0.9, 2.3, 5.5, 6.4, 8.9]})
    row = client_metrics(requests, flows, segment_s=2.0, end_s=20.0).to_pylist()[0]
    assert row["liveness_s"] == pytest.approx(-1.5)
    assert row["startup_s"] == pytest.approx(0.4)
    assert row["stall_s"] == pytest.approx(0.6)
    assert row["late_segments"] == 1


def test_an_unfinished_segment_counts_as_arriving_when_the_run_ends():
    flows = pa.table({"flow": [0], "name": ["v0"], "start_s": [0.0], "base_rtt_ms": [55.0], "retrans_fast": [0],
                      "retrans_timeout": [0], "retrans_tlp": [0]})
    requests = pa.table({"flow": [0, 0], "index": [0, 1], "completed_s": pa.array([0.4, None], pa.float64())})
    row = client_metrics(requests, flows, segment_s=2.0, end_s=10.0).to_pylist()[0]
    assert row["liveness_s"] == pytest.approx(-8.0) and row["unfinished_segments"] == 1


TINY = Scale("tiny", clients=(6, 12), seeds=(1, 2), segments_2s=4, segments_10s=2, combo_clients=8,
             queue_clients=12, queue_sample_s=4.0, long_segments=6)


def test_tiny_study_writes_tables_figures_self_contained_html_and_json(tmp_path):
    out = tmp_path / "study"
    res = run(out=out, jobs=1, progress=False, scale=TINY)
    rep = out / "report"
    doc = json.loads((rep / "report.json").read_text())
    assert doc["facts"]["runs"] == len(plan_points(TINY))
    statuses = {c["id"]: c["status"] for c in doc["claims"]}
    assert {"live175", "vegas_live", "vegas_drops", "cwnd_drops", "dist_drops", "adaptation"} <= set(statuses)
    assert statuses["adaptation"] == "not run"
    assert all(s in ("reproduced", "not reproduced", "partly", "not run") for s in statuses.values())
    # every decided claim shows our numbers, every one that does not reproduce says why
    for c in doc["claims"]:
        if c["status"] in ("reproduced", "not reproduced"):
            assert c["ours"]
        if c["status"] == "not reproduced":
            assert c["why"], c["id"]
    pngs = sorted(p.name for p in (rep / "figures").iterdir())
    assert {"fig03_cubic.png", "fig04_congestion_control.png", "fig05_segment_duration.png",
            "fig07_distributed_requests.png", "fig08_cwnd_limit.png", "fig16_combinations.png"} <= set(pngs)
    assert all((rep / "figures" / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    html = (rep / "report.html").read_text()
    assert "Paper vs ours" in html
    assert html.count("data:image/png;base64,") == len(pngs)
    assert not re.search(r"""src=['"](?!data:)""", html)  # nothing loaded from outside the file
    for t in ("runs", "points", "clients", "claims"):
        assert (rep / "tables" / f"{t}.parquet").is_file() and (rep / "tables" / f"{t}.csv").is_file()
    runs = res["facts"]["runs"]
    # a second run reuses every stored point and writes the same tables
    before = (rep / "tables" / "points.csv").read_bytes()
    again = run(out=out, jobs=1, progress=False, scale=TINY)
    assert again["facts"]["ran_now"] == 0 and again["facts"]["reused"] == runs
    assert (rep / "tables" / "points.csv").read_bytes() == before


def test_study_list_names_onoff_and_an_unknown_study_is_one_line():
    r = subprocess.run([*CLI, "study", "list"], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert r.returncode == 0 and "onoff" in r.stdout and "onoff" in STUDIES
    bad = subprocess.run([*CLI, "study", "onof"], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    bad = subprocess.run([*CLI, "study", "onoff", "--jobs", "0"], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "200"})
    assert bad.returncode == 2 and "--jobs 0" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
