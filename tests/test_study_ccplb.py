"""`tcpvideo study ccplb`: seed 001's testbed (the server hands the client's playout buffer and the
video rate to its congestion control; the frame-deadline player counts discards and underflows),
the claim logic on hand-made numbers, and a tiny end-to-end study writing the report directory.
The CCs themselves are tested beside them (crates/model/src/cc/ccp*.rs), the frame player in
crates/model/src/video/frame_player.rs.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

import tcpvideo
from tcpvideo.studies import STUDIES
from tcpvideo.studies.ccplb import claims as claims_mod
from tcpvideo.studies.ccplb import run
from tcpvideo.studies.ccplb.metrics import reducer, window_use
from tcpvideo.studies.ccplb.scenario import (Scale, literal_ccplca_pob_rate, literal_vr_floor_segments, pob_seconds,
                                             scenario)

TINY = Scale("tiny", media_s=4.0, seeds=(1,), slack_s=2.0)


def test_table_one_playout_buffers_are_about_one_two_and_three_seconds_of_the_5_24_mbps_video():
    assert [round(pob_seconds(p), 2) for p in (448, 897, 1345)] == [1.09, 2.19, 3.29]


def test_ccplb_learns_the_client_s_playout_buffer_from_the_server_a_larger_buffer_a_larger_window():
    # No loss, 100 ms: CCPLB's window is CCP's law plus POB/POBRate. The scenarios differ only in
    # the client's buffer (its startup_threshold), so the window can differ only if the server
    # handed that buffer to the CC (AppInfo) — without it both would use the fixed 448.
    def max_cwnd(pob_packets: int) -> int:
        sc = scenario("ccplb", 100, TINY, pob_packets=pob_packets, wifi_loss=0.0)
        return tcpvideo.simulate(sc, seed=1).flows.to_pylist()[0]["max_cwnd_bytes"]

    assert max_cwnd(1345) > max_cwnd(448) + 500 * 1448


def test_the_frame_player_counts_underflows_when_the_path_is_slower_than_the_video():
    sc = scenario("cubic", 200, TINY, wifi_loss=0.0)
    sc["link"][2]["rate"] = "3Mbps"  # below the 5.24 Mbit/s video
    summary, _ = reducer(tcpvideo.simulate(sc, seed=1))
    assert summary["underflows"] >= 1
    fast, _ = reducer(tcpvideo.simulate(scenario("cubic", 3, TINY, wifi_loss=0.0), seed=1))
    assert fast["underflows"] == 0 and fast["picture_discards"] == 0 and fast["body_done"]


def test_a_path_shorter_than_its_edge_links_is_refused_naming_the_key():
    with pytest.raises(ValueError, match="^rtt_ms: must be at least"):
        scenario("ccplb", 1, TINY)


def test_the_pushback_client_closes_the_receive_window_so_a_large_cwnd_is_not_all_in_flight():
    # CCPLB's POB term gives a window far above the 3 ms path; the client that reads at once lets all
    # of it fly, the client whose frame player stops reading at POB leaves data in the receive
    # buffer, its advertised window closes and bounds what is in flight. 24 s of video: the playout
    # buffer must fill while the body is still arriving — with Linux's quick ACKs while the
    # window opens, a 6 s body is all in by 1.7 s, before the push-back buffer is ever full, and
    # since Linux 6.18's autotuning (session 12: the window grows by twice the reading's growth per
    # RTT) a 12 s one too (rwnd-limited share 0.0 in both clients).
    def run(client: str) -> dict:
        sc = scenario("ccplb", 3, Scale("t", 24.0, (1,), 2.0), wifi_loss=0.0, client=client)
        return reducer(tcpvideo.simulate(sc, seed=1))[0]

    pushed, at_once = run("pushback"), run("at_once")
    assert at_once["rwnd_limited_share"] <= 0.05
    assert pushed["rwnd_limited_share"] >= 0.2
    assert pushed["mean_inflight_segments"] < 0.7 * at_once["mean_inflight_segments"]


def test_the_literal_ccplca_floor_is_tens_of_times_our_video_rate_window_and_reaches_the_sender():
    # Seed 001's cwnd_vr = VR/rtt at 100 ms: 5.24 Mbit/s = 452.3 segments/s over 0.1 s = 4523
    # segments; ours, VR·rtt, is 45.2. The experiment runs it as CCPLB's POB term: the server's
    # window must reach it (CCPLCA's own window on the same path stays near the BDP).
    assert literal_vr_floor_segments(100) == pytest.approx(4523.5, abs=0.5)
    sc = scenario("ccplb", 100, TINY, wifi_loss=0.0, pob_rate=literal_ccplca_pob_rate(100))
    literal = reducer(tcpvideo.simulate(sc, seed=1))[0]
    ours = reducer(tcpvideo.simulate(scenario("ccplca", 100, TINY, wifi_loss=0.0), seed=1))[0]
    assert literal["max_cwnd_segments"] >= 0.95 * 4523
    assert ours["max_cwnd_segments"] < 0.25 * 4523


def test_the_smallest_lead_is_media_received_ahead_of_the_playout_clock():
    # 8 Mbit/s = 1 MB per media second; playback from 1 s. At 2 s 1.5 MB in: 0.5 s ahead; at 3 s
    # 1.8 MB in: 0.2 s behind. The sample before playback and the one after the body is in do not count.
    rows = [dict(t_s=t, flow=0, cwnd_bytes=100 * 1448, bytes_in_flight=f, peer_window_bytes=w, bytes_received=b)
            for t, f, w, b in [(0.5, 0, 0, 0), (2.0, 10 * 1448, 11 * 1448, 1_500_000),
                               (3.0, 50 * 1448, 200 * 1448, 1_800_000), (9.0, 0, 0, 0)]]
    u = window_use(rows, 8e6, 1.0, 5.0)
    assert u["min_lead_s"] == pytest.approx(-0.2)
    assert u["rwnd_limited_share"] == 0.5  # at 2 s in flight is one MSS short of the peer's window
    assert u["mean_inflight_segments"] == pytest.approx(30.0)


def test_an_unknown_client_is_refused_naming_the_key():
    with pytest.raises(ValueError, match="^client: must be one of"):
        scenario("ccplb", 100, TINY, client="greedy")


def _rows(values: dict) -> pd.DataFrame:
    """Runs for the variants at 3/100/200 ms from {(rtt, cc): (discards, underflows, retransmissions)}."""
    rows = []
    for (rtt, cc), (d, u, r) in values.items():
        rows.append(dict(group="variants", cc=cc, rtt_ms=rtt, pob_packets=448, pob_rate=1.0, config="", seed=1,
                         picture_discards=d, underflows=u, retransmissions=r, bytes_read=1, file_bytes=1))
    return pd.DataFrame(rows)


def test_ccplb_is_not_best_at_long_rtts_when_another_variant_has_fewer_underflows():
    base = {(rtt, cc): (0, 3, 10) for rtt in (3, 100, 200) for cc in ("cubic", "compound", "ccp", "ccplca", "ccplb")}
    base[(100, "ccplb")] = (0, 1, 10)
    base[(200, "ccplb")] = (0, 1, 10)
    c1 = {c.id: c for c in claims_mod.claims(_rows(base))}["C1"]
    assert c1.status == "reproduced"
    base[(200, "ccp")] = (0, 0, 10)
    c1 = {c.id: c for c in claims_mod.claims(_rows(base))}["C1"]
    assert c1.status == "partly"  # 100 ms still holds, 200 ms not


def test_discards_outrank_underflows_when_ranking_the_worst_variant():
    base = {(rtt, cc): (0, 1, 10) for rtt in (3, 100, 200) for cc in ("cubic", "compound", "ccp", "ccplca", "ccplb")}
    base[(3, "ccplca")] = (2, 0, 10)  # fewer underflows but more discards: still the worst
    c3 = {c.id: c for c in claims_mod.claims(_rows(base))}["C3"]
    assert c3.ours.startswith("worst at: 3 ms yes")
    tie = {(rtt, cc): (0, 0, 10) for rtt in (3, 100, 200) for cc in ("cubic", "compound", "ccp", "ccplca", "ccplb")}
    c3 = {c.id: c for c in claims_mod.claims(_rows(tie))}["C3"]
    assert c3.ours.startswith("worst at: 3 ms no") and c3.status == "not reproduced"  # a tie of all is not "worst"


def test_a_tiny_study_writes_figures_six_claims_and_the_report(tmp_path):
    assert "ccplb" in STUDIES
    res = run(out=tmp_path / "s", jobs=1, progress=False, scale=TINY, sensitivity_runs=False)
    rep = tmp_path / "s" / "report"
    doc = json.loads((rep / "report.json").read_text())
    assert [c["id"] for c in doc["claims"]] == ["C1", "C2", "C3", "C4", "C5", "C6"]
    assert len(list((rep / "figures").glob("*.png"))) == 6
    v = res["tables"]["figs4_6_variants"].to_pandas()
    assert len(v) == 15 and (v["trials"] == 1).all()
    assert "paper vs ours" in (rep / "report.html").read_text().lower()
    again = run(out=tmp_path / "s", jobs=1, progress=False, scale=TINY, sensitivity_runs=False)
    assert again["facts"]["ran_now"] == 0
    assert again["tables"]["runs"].equals(res["tables"]["runs"])  # same seeds => same numbers
