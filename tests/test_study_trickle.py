"""`tcpvideo study trickle`: seed 003's A/B groups over the same drawn users, the reducer's join of
the simulator's progressive table with the analyzer's throttling-phase bursts, and a tiny
end-to-end study writing the report (tables, figures, paper-vs-ours). The progressive apps and the
population draws are tested beside their code (crates/sim/src/app/progressive*.rs, population.rs).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd

import tcpvideo
from tcpvideo.studies import STUDIES
from tcpvideo.studies.trickle import run
from tcpvideo.studies.trickle.claims import bucket_of, table2
from tcpvideo.studies.trickle.metrics import reducer
from tcpvideo.studies.trickle.scenario import Scale, scenario

TINY = Scale("tiny", users=4, duration_s=40.0, seeds=(1,))
CLI = [sys.executable, "-c", "from tcpvideo.cli import main; main()"]


def test_every_group_serves_the_same_users_and_only_the_delivery_mode_differs():
    a = tcpvideo.simulate(scenario("dc1", "baseline1", TINY, 1))
    b = tcpvideo.simulate(scenario("dc1", "trickle", TINY, 1))
    cols = ["flow", "client", "rate_kbps", "file_bytes"]
    assert a.progressive.select(cols).equals(b.progressive.select(cols))
    assert a.links.select(["link", "rate_mbps", "delay_ms"]).equals(b.links.select(["link", "rate_mbps", "delay_ms"]))
    assert set(a.progressive["mode"].to_pylist()) == {"baseline"} and set(b.progressive["mode"].to_pylist()) == {"trickle"}


def test_the_reducer_keeps_only_throttling_phase_download_bursts_and_knows_each_users_link():
    res = tcpvideo.simulate(scenario("dc1", "baseline1", TINY, 1))
    summary, tables = reducer(res)
    users, bursts = tables["users"].to_pandas(), tables["bursts"].to_pandas()
    assert (users["bandwidth_mbps"] > 0).all() and (users["base_rtt_ms"] > 0).all()
    start = users.set_index("flow")["throttle_start_s"]
    assert len(bursts) > 0
    assert (bursts["start_ns"] / 1e9 >= bursts["flow"].map(start)).all()
    # 64 kB writes leave the server as ~45-packet bursts
    assert bursts["packets"].max() >= 40
    assert summary["bursts"] == len(bursts)
    assert not any(p.exists() for p in res.pcaps)  # the worker's temporary captures are gone


def test_table2_buckets_by_startup_goodput_and_compares_trickle_with_baseline1():
    assert [bucket_of(x) for x in (0.3, 0.5, 1.9, 7.9, 8.0, 30.0)] == ["< 0.5", "0.5 - 1", "1 - 2", "4 - 8", ">= 8", ">= 8"]
    users = pd.DataFrame({"dc": ["dc1"] * 4, "group": ["baseline1", "trickle"] * 2,
                          "startup_goodput_kbps": [3000.0, 3000.0, 300.0, 300.0],
                          "throttle_retrans_rate": [0.02, 0.01, 0.04, 0.04]})
    t = table2(users).set_index("bucket")
    assert t.loc["2 - 4", "improvement_pct"] == 50.0
    assert t.loc["< 0.5", "improvement_pct"] == 0.0
    assert t.loc["2 - 4", "flows_pct"] == 50.0


def test_a_tiny_study_writes_the_report_with_every_must_show_claim(tmp_path):
    res = run(out=tmp_path, progress=False, scale=TINY, jobs=2)
    rep = tmp_path / "report"
    doc = json.loads((rep / "report.json").read_text())
    ids = {c["id"] for c in doc["claims"]}
    assert {"retx_high_bw", "retx_low_bw", "bursts", "goodput", "srtt", "rebuffering"} <= ids
    assert all(c["ours"] for c in doc["claims"])
    for fig in ("fig03_goodput", "fig04_retrans_rate", "fig05_burst_size", "fig07_loss_by_burst", "fig08_srtt"):
        assert (rep / "figures" / f"{fig}.png").stat().st_size > 1000
    for t in ("table1_controls", "table2_by_bandwidth", "table3_rebuffering", "bursts", "users"):
        assert (rep / "tables" / f"{t}.csv").exists()
    assert "Paper vs ours" in (rep / "report.html").read_text()
    # Trickle's bursts stay within its 10-packet floor; the baseline's 64 kB writes do not.
    bursts = res["tables"]["bursts"].to_pandas()
    share = bursts[bursts["dc"] == "dc1"].groupby("group")["packets"].apply(lambda p: (p <= 10).mean())
    assert share["trickle"] >= 0.9 and share["baseline1"] < 0.5
    # resumable: a second run reuses every stored run
    again = run(out=tmp_path, progress=False, scale=TINY, jobs=2)
    assert again["facts"]["ran_now"] == 0 and again["facts"]["reused"] == 14


def test_the_study_is_listed_and_has_a_command():
    assert "trickle" in STUDIES
    out = subprocess.run(CLI + ["study", "trickle", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and "--full" in out.stdout
