"""tcpvideo.simulate / `tcpvideo run` / `tcpvideo demo`: the Python face of the simulator.

The simulator's behaviour is tested in Rust (crates/sim/tests/must_show.rs); these tests pin the
Python contract: paths and dicts are accepted, tables are pyarrow with the documented columns,
outputs are written as Parquet + CSV + summary.json, runs are reproducible, and bad scenarios
raise ScenarioError (a ValueError) with one line naming the field — never a panic.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import pyarrow.parquet as pq

import tcpvideo
from tcpvideo import ScenarioError
from tcpvideo.simulation import check

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-c", "from tcpvideo.cli import main; main()"]
ENV = {**os.environ, "COLUMNS": "200"}


def small(**over) -> dict:
    sc = {
        "name": "small",
        "duration": "2s",
        "seed": 3,
        "node": [{"name": "s"}, {"name": "r", "kind": "router"}, {"name": "c"}],
        "link": [
            {"a": "s", "b": "r", "rate": "1Gbps", "delay": "1ms"},
            {"name": "wan", "a": "r", "b": "c", "rate": "20Mbps", "delay": "9ms", "queue": 50},
        ],
        "flow": [{"client": "c", "server": "s", "bytes": "1MB"}],
        "record": {"sample_interval": "100ms"},
    }
    sc.update(over)
    return sc


def test_dict_scenario_returns_arrow_tables_with_documented_columns():
    r = tcpvideo.simulate(small())
    for name in ("flows", "links", "events", "series", "queues", "requests"):
        assert isinstance(getattr(r, name), pa.Table)
    f = r.flows.to_pylist()[0]
    assert f["bytes"] == 1_000_000
    assert f["fct_s"] is not None and 0.4 < f["fct_s"] < 2.0  # 1 MB at 20 Mbit/s = 0.4 s + slow start
    assert abs(f["base_rtt_ms"] - 20.0) < 1e-9
    assert abs(f["handshake_rtt_ms"] - 20.0) < 0.5
    assert {"retrans_fast", "retrans_timeout", "rto_count", "srtt_end_ms"} <= set(r.flows.column_names)
    assert r.series.num_rows == 20  # 2 s / 100 ms, one flow
    assert r.links.num_rows == 4  # two links, two directions each
    assert r.summary["total_bytes"] == 1_000_000


def test_write_produces_parquet_csv_and_summary(tmp_path):
    r = tcpvideo.simulate(small(), out=tmp_path)
    for name in ("flows", "links", "events", "series", "queues", "requests"):
        assert (tmp_path / f"{name}.parquet").exists()
        assert (tmp_path / f"{name}.csv").exists()
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["scenario"] == "small" and s["seed"] == 3


def test_same_seed_writes_identical_files_and_another_seed_differs(tmp_path):
    sc = small(record={"pcap": [{"link": "wan", "at": "r"}]}, flow=[{"client": "c", "server": "s", "start_jitter": "50ms"}])
    a = tcpvideo.simulate(sc, seed=5, out=tmp_path / "a")
    b = tcpvideo.simulate(sc, seed=5, out=tmp_path / "b")
    c = tcpvideo.simulate(sc, seed=6, out=tmp_path / "c")
    for f in ("flows.csv", "events.csv", "series.csv", "summary.json", "wan@r.pcap"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    assert (tmp_path / "a" / "wan@r.pcap").read_bytes() != (tmp_path / "c" / "wan@r.pcap").read_bytes()
    assert a.flows.column("start_s").to_pylist() != c.flows.column("start_s").to_pylist()


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda s: s["link"][1].update(colour="red"), "link[1].colour: unknown field `colour`"),
        (lambda s: s["link"][1].update(rate="-5Mbps"), "link[1].rate: negative rate"),
        (lambda s: s["link"][1].update(b="r9"), 'link[1].b: unknown node "r9"'),
        (lambda s: (s["node"].append({"name": "island"}), s["flow"][0].update(server="island")),
         'flow[0].server: no route from "c" to "island"'),
        (lambda s: s.update(duration="ten seconds"), "duration: cannot read duration"),
    ],
)
def test_bad_scenarios_raise_one_line_scenario_error(mutate, message):
    sc = small()
    mutate(sc)
    with pytest.raises(ScenarioError) as e:
        tcpvideo.simulate(sc)
    assert isinstance(e.value, ValueError)
    assert str(e.value).startswith(message), str(e.value)
    assert "\n" not in str(e.value)


def test_cli_run_reports_bad_input_in_one_line_and_exit_code_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('duration = "1s"\n[[node]]\nname = "a"\n[[link]]\na = "a"\nb = "r9"\nrate = "1Mbps"\n')
    p = subprocess.run(CLI + [ "run", str(bad)], capture_output=True, text=True,
                       env=ENV)
    assert p.returncode == 2, p.stdout + p.stderr
    assert 'link[0].b: unknown node "r9"' in p.stdout
    assert "Traceback" not in p.stdout + p.stderr


def test_cli_run_writes_outputs(tmp_path):
    sc = tmp_path / "one.json"
    sc.write_text(json.dumps(small(record={"pcap": [{"link": "wan"}]})))
    p = subprocess.run(CLI + [ "run", str(sc), "--seed", "9", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, env=ENV)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "o" / "flows.parquet").exists() and (tmp_path / "o" / "wan@r.pcap").exists()
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["seed"] == 9


def test_demo_runs_twenty_live_clients_and_writes_qoe_stall_causes_and_a_report(tmp_path):
    p = subprocess.run(CLI + ["demo", "--out", str(tmp_path)], capture_output=True, text=True, env=ENV)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "bottleneck" in p.stdout and "aggregate goodput" in p.stdout
    assert "video: 20 clients" in p.stdout and "stalls by TCP cause" in p.stdout
    report = (tmp_path / "report.html").read_text()
    assert "Stalls by TCP cause" in report and "data:image/png;base64" in report
    clients = pq.read_table(tmp_path / "video_clients.parquet")
    assert clients.num_rows == 20
    stalls = pq.read_table(tmp_path / "video_stalls.parquet").to_pydict()
    known = {"rto", "loss_recovery", "slow_start_after_idle", "queueing_delay", "bottleneck_share", "late_request",
             "request_not_sent"}
    assert set(stalls["cause"]) <= known


def test_shipped_scenarios_validate():
    for f in sorted((ROOT / "scenarios").glob("*.toml")):
        info = check(f)
        assert info["flows"] >= 1, f


def test_infinite_ssthresh_is_null_not_an_overflow():
    # Before its first loss a flow's ssthresh is "infinite" (u64::MAX in Rust); BBR never sets one.
    names = [a["name"] for a in tcpvideo.cc_list()]
    cc = "bbr" if "bbr" in names else "reno"
    sc = small(tcp={"cc": cc}, link=[
        {"a": "s", "b": "r", "rate": "1Gbps", "delay": "1ms"},
        {"name": "wan", "a": "r", "b": "c", "rate": "20Mbps", "delay": "9ms", "queue": 50,
         "ab": {"loss": {"model": "bernoulli", "p": 0.02}}},
    ])
    r = tcpvideo.simulate(sc)
    first = r.series.column("ssthresh_bytes").to_pylist()[0]
    assert first is None or first > 0
    assert r.events.num_rows > 0


def test_rcv_buf_auto_grows_the_window_past_64kb_and_a_fixed_size_stays_fixed():
    # 20 Mbit/s × 20 ms is 50 kB, so use a fatter pipe where 64 KB limits: 200 Mbit/s × 20 ms = 500 kB.
    link = [{"a": "s", "b": "r", "rate": "1Gbps", "delay": "1ms"},
            {"name": "wan", "a": "r", "b": "c", "rate": "200Mbps", "delay": "9ms", "queue": 500}]
    flow = [{"client": "c", "server": "s", "bytes": "20MB"}]
    series = {}
    for rcv in ("auto", "64KiB"):
        r = tcpvideo.simulate(small(link=link, flow=[{**flow[0], "tcp": {"rcv_buf": rcv}}],
                                    record={"sample_interval": "10ms"}))
        series[rcv] = max(r.series.to_pydict()["peer_window_bytes"])
    assert series["auto"] > 4 * 65536, series
    assert series["64KiB"] <= 65536, series
    with pytest.raises(ScenarioError, match=r"^flow\[0\]\.tcp\.rcv_buf: .*\(or \"auto\"\)$"):
        tcpvideo.simulate(small(flow=[{**flow[0], "tcp": {"rcv_buf": "lots"}}]))
