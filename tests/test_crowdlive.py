"""Crowdlive (seed 000) in the simulator: real HTTP-FLV bytes on the front-end's capture, ground
truth written by the run, and the analyzer scored against it (issue 16)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

import tcpvideo
from tcpvideo.score import score
from tcpvideo.studies.crowdlive.population import scenario


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    run = tmp_path_factory.mktemp("run")
    ana = tmp_path_factory.mktemp("ana")
    tcpvideo.simulate(scenario(publishers=2, subscribers=4, duration_s=25.0, seed=3, loss_p=0.02), out=run)
    subprocess.run([sys.executable, "-m", "tcpvideo.cli", "analyze", str(run / "fe.pcap"), "--out", str(ana)],
                   check=True, stdout=subprocess.DEVNULL)
    return run, ana, score(ana, run)


def test_the_truth_knows_the_frame_of_every_data_packet_and_the_seeds_three_frame_types_occur(scored):
    run, _, _ = scored
    p = pd.read_csv(run / "truth_packets.csv")
    assert len(p) > 1000
    assert set(p["frame"]) >= {"I", "P", "V"}
    assert not (p["frame"] == "unknown").any()


def test_the_analyzer_attributes_simulated_flv_packets_to_i_p_and_voice_frames(scored):
    _, ana, s = scored
    ft = pd.read_csv(ana / "frame_types.csv").set_index("frame")
    assert (ft.loc[["I", "P", "V"], "packets"] > 0).all()
    # Per download frame type, analyzer and truth count the same packets within 15 %.
    side = s.frame_packets
    for f in ("I", "P"):
        t, a = side.loc[f, "truth_packets"], side.loc[f, "analyzer_packets"]
        assert abs(t - a) <= 0.15 * t, (f, t, a)


def test_stall_classes_mostly_agree_and_each_disagreement_has_an_example(scored):
    _, _, s = scored
    assert s.summary()["stall_pairs"] > 5
    assert s.stalls.agreement() >= 0.8
    d = s.stalls.disagreements()
    assert d["example"].str.contains("tcp.port==").all()


def test_same_scenario_and_seed_give_identical_truth(tmp_path, scored):
    run, _, _ = scored
    tcpvideo.simulate(scenario(publishers=2, subscribers=4, duration_s=25.0, seed=3, loss_p=0.02), out=tmp_path)
    for name in ("truth_stalls.csv", "truth_timeouts.csv", "truth_packets.csv"):
        assert (tmp_path / name).read_bytes() == (run / name).read_bytes(), name


def test_a_reorder_probability_outside_zero_one_is_refused_naming_the_key():
    sc = scenario(publishers=1, subscribers=1, duration_s=5.0)
    sc["link"][1]["ab"]["reorder"]["p"] = 1.5
    with pytest.raises(tcpvideo.ScenarioError, match=r"reorder\.p"):
        tcpvideo.simulate(sc)


def test_a_stall_floor_drops_the_gaps_shorter_than_it(scored):
    run, _, _ = scored
    plain = tcpvideo.analyze(run / "fe.pcap").stalls.to_pandas()
    floored = tcpvideo.analyze(run / "fe.pcap", stall_floor_ms=1000.0).stalls.to_pandas()
    assert (plain["duration_ns"] <= 1e9).any(), "the scenario has short stalls to drop"
    assert len(floored) == (plain["duration_ns"] > 1e9).sum()
    assert (floored["threshold_ns"] >= 1e9).all()


def _one_publisher(end: str, pauses: list) -> dict:
    sc = scenario(publishers=1, subscribers=1, duration_s=20.0, seed=5, loss_p=0.0, reorder_p=0.0,
                  pause_every_s=0.0)
    pub = next(f for f in sc["flow"] if f["app"] == "publish")
    pub["crowd"].update({"stream_for": "8s", "end": end, "pauses": pauses})
    return sc


def test_an_encoder_pause_is_a_normal_upload_stall_and_a_fin_end_leaves_no_keepalive_gaps(tmp_path):
    sc = _one_publisher("fin", [{"at": "3s", "duration": "1.5s"}])
    start = float(next(f for f in sc["flow"] if f["app"] == "publish")["start"].rstrip("s"))
    tcpvideo.simulate(sc, out=tmp_path)
    flows = pd.read_csv(tmp_path / "truth_flows.csv").set_index("flow")
    st = pd.read_csv(tmp_path / "truth_stalls.csv")
    up = st[st["flow"].map(flows["role"]) == "publish"]
    # The pause [start+3, start+4.5) s is one normal stall of about its length.
    in_pause = up[(up["start_ns"] >= (start + 2.9) * 1e9) & (up["end_ns"] <= (start + 4.7) * 1e9)]
    assert list(in_pause["kind"]) == ["normal"], up
    assert 1.3e9 < in_pause["duration_ns"].iloc[0] < 1.7e9
    # Ending with FIN: no keep-alive gaps before a 20-s idle close.
    assert not (up["kind"] == "keep_alive").any(), up
    silent = tmp_path / "silent"
    tcpvideo.simulate(_one_publisher("silence", []), out=silent)
    st2 = pd.read_csv(silent / "truth_stalls.csv")
    assert (st2["kind"] == "keep_alive").sum() >= 1  # the same run ending in silence has them


def test_an_unknown_publisher_end_is_refused_naming_the_key(tmp_path):
    with pytest.raises(Exception, match=r"crowd\.end"):
        tcpvideo.simulate(_one_publisher("vanish", []), out=tmp_path)
