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


def test_upload_stall_time_by_class_counts_only_the_stalls_inside_the_fct(tmp_path):
    # Seed 000 §1.2: an upload's FCT ends at its last data byte, and §2.1's class shares are of
    # the stall time in the FCT: a silent publisher's keep-alive gaps before the idle close are
    # outside it, counted apart.
    tcpvideo.simulate(_one_publisher("silence", [{"at": "3s", "duration": "1.5s"}]), out=tmp_path)
    s = tcpvideo.analyze(tmp_path / "fe.pcap").summary
    up = s["upload"]
    by_class = up["stall_types_by_time"]
    assert up["stalls_outside_fct"] >= 1 and up["stall_time_outside_fct_s"] >= 4.0
    assert by_class["keep_alive"]["time_s"] == 0.0
    assert by_class["normal"]["time_s"] > 1.0  # the encoder pause
    assert abs(sum(v["time_s"] for v in by_class.values()) - up["stall_time_s"]) < 1e-6


def test_one_connection_per_frame_type_carries_only_its_type(tmp_path):
    sc = scenario(publishers=1, subscribers=2, duration_s=12.0, seed=4, loss_p=0.0, reorder_p=0.0,
                  pause_every_s=0.0, per_type_connections=True)
    names = [f["name"] for f in sc["flow"]]
    assert len(names) == 9 and names[:3] == ["pub0_I", "pub0_P", "pub0_V"]
    tcpvideo.simulate(sc, out=tmp_path)
    p = pd.read_csv(tmp_path / "truth_packets.csv")
    frames = p[p["frame"] != "meta"].groupby("flow")["frame"].agg(set)
    for i, name in enumerate(names):
        want = name.rsplit("_", 1)[1]
        assert frames.get(i) == {want}, (name, frames.get(i))


def test_an_unknown_frame_letter_is_refused_naming_the_key(tmp_path):
    sc = _one_publisher("fin", [])
    next(f for f in sc["flow"] if f["app"] == "publish")["crowd"]["frames"] = "IB"
    with pytest.raises(Exception, match=r"crowd\.frames"):
        tcpvideo.simulate(sc, out=tmp_path)


def _viewer_links(sc: dict) -> list[dict]:
    return [lk for lk in sc["link"] if lk["name"].startswith("sub")]


def test_bdp_sized_viewer_queues_replace_only_the_queue_of_a_nested_share_of_viewers():
    from tcpvideo.studies.crowdlive.population import bdp_packets

    runs = {s: scenario(publishers=3, subscribers=40, seed=2, bdp_queue_share=s) for s in (0.0, 0.25, 0.5, 1.0)}
    drawn = _viewer_links(runs[0.0])
    bdp = [bdp_packets(float(lk["rate"].removesuffix("Mbps")), float(lk["delay"].removesuffix("ms"))) for lk in drawn]
    assert all(q >= 4 for q in bdp) and min(bdp) < 16 < max(bdp)  # some shorter than an I frame, some not
    assert [lk["ba"]["queue"] for lk in _viewer_links(runs[1.0])] == bdp
    chosen = {}
    for share, sc in runs.items():
        links = _viewer_links(sc)
        # Everything but the queue is the same population.
        strip = lambda lk: {**lk, "ba": {k: v for k, v in lk["ba"].items() if k != "queue"}}  # noqa: E731
        assert [strip(lk) for lk in links] == [strip(lk) for lk in drawn]
        assert sc["flow"] == runs[0.0]["flow"]
        chosen[share] = {i for i, (lk, d) in enumerate(zip(links, drawn)) if lk["ba"]["queue"] != d["ba"]["queue"]}
    assert chosen[0.25] <= chosen[0.5] <= chosen[1.0]
    assert 0 < len(chosen[0.5]) < 40


def test_viewer_random_loss_is_set_apart_from_the_publishers():
    a = scenario(publishers=2, subscribers=3, seed=4, loss_p=0.02)
    b = scenario(publishers=2, subscribers=3, seed=4, loss_p=0.02, viewer_loss_p=0.002)
    pub = lambda sc: [lk for lk in sc["link"] if lk["name"].startswith("pub")]  # noqa: E731
    assert pub(a) == pub(b)
    for la, lb in zip(_viewer_links(a), _viewer_links(b)):
        assert lb["ba"]["loss"]["p"] == pytest.approx(la["ba"]["loss"]["p"] * 0.1)


def _viewer_losses_with(**option) -> list[tuple[dict, dict]]:
    """(default, with `option`) loss of each viewer path, after checking that nothing else moved."""
    a = scenario(publishers=2, subscribers=4, seed=5)
    b = scenario(publishers=2, subscribers=4, seed=5, **option)
    assert a["flow"] == b["flow"]
    assert [lk for lk in a["link"] if lk["name"].startswith("pub")] == [lk for lk in b["link"] if lk["name"].startswith("pub")]
    for la, lb in zip(_viewer_links(a), _viewer_links(b)):
        assert {k: v for k, v in la["ba"].items() if k != "loss"} == {k: v for k, v in lb["ba"].items() if k != "loss"}
    return [(la["ba"]["loss"], lb["ba"]["loss"]) for la, lb in zip(_viewer_links(a), _viewer_links(b))]


def test_viewer_loss_in_time_keeps_the_share_of_time_in_bad_and_changes_nothing_else():
    for pa, la_ in _viewer_losses_with(viewer_bad_ms=120):
        assert la_["model"] == "gilbert_elliott_time" and la_["mean_bad"] == "120ms"
        assert la_["p"] == pytest.approx(pa["p"] / (pa["p"] + pa["r"]))


def test_uncorrelated_viewer_loss_keeps_the_chains_mean_loss_and_changes_nothing_else():
    losses = _viewer_losses_with(viewer_loss_independent=True)
    assert losses
    for chain, alone in losses:
        assert chain["model"] == "gilbert_elliott" and chain["loss_bad"] == 1.0 and chain["loss_good"] == 0.0
        assert alone == {"model": "bernoulli", "p": pytest.approx(chain["p"] / (chain["p"] + chain["r"]))}


def _assert_chain_in_time(chain: dict, timed: dict, rate_bps: float) -> None:
    """`timed` is the per-packet `chain` in time: its stationary share of time in Bad, every packet
    lost while Bad, each Bad period 1/r packets of 1500 bytes at `rate_bps` on average."""
    assert chain["model"] == "gilbert_elliott" and chain["loss_bad"] == 1.0 and chain["loss_good"] == 0.0
    assert timed["model"] == "gilbert_elliott_time" and timed["loss_bad"] == 1.0 and timed["loss_good"] == 0.0
    assert timed["p"] == pytest.approx(chain["p"] / (chain["p"] + chain["r"]))
    assert float(timed["mean_bad"].removesuffix("ms")) == pytest.approx(1 / chain["r"] * 1500 * 8 / rate_bps * 1e3, abs=1e-3)


def test_the_chain_in_time_lasts_two_full_packets_on_each_viewers_access_link():
    a = scenario(publishers=2, subscribers=4, seed=5)  # the scenario _viewer_losses_with compares
    losses = _viewer_losses_with(viewer_chain_in_time=True)
    assert losses
    for link, (chain, timed) in zip(_viewer_links(a), losses):
        rate_bps = float(link["ba"]["rate"].removesuffix("Mbps")) * 1e6
        _assert_chain_in_time(chain, timed, rate_bps)


def test_the_publishers_chain_in_time_changes_only_their_uplinks_loss():
    a = scenario(publishers=3, subscribers=4, seed=5)
    b = scenario(publishers=3, subscribers=4, seed=5, publisher_chain_in_time=True)
    assert a["flow"] == b["flow"] and _viewer_links(a) == _viewer_links(b)
    pubs = [(la, lb) for la, lb in zip(a["link"], b["link"]) if la["name"].startswith("pub")]
    assert len(pubs) == 3
    for la, lb in pubs:
        chain, timed = la["ab"].pop("loss"), lb["ab"].pop("loss")
        assert la == lb
        rate_bps = float(la["ab"]["rate"].removesuffix("Mbps")) * 1e6
        _assert_chain_in_time(chain, timed, rate_bps)


def test_cross_traffic_adds_web_fetches_to_the_viewers_own_links_after_the_crowdlive_flows():
    a = scenario(publishers=2, subscribers=4, seed=5)
    b = scenario(publishers=2, subscribers=4, seed=5, viewer_cross_every_s=3.0, viewer_cross_bytes=50_000)
    n = len(a["flow"])
    assert b["flow"][:n] == a["flow"] and a["link"] == b["link"][: len(a["link"])]
    web = b["flow"][n:]
    assert web and all(f["server"] == "web" and f["client"].startswith("sub") for f in web)
    viewers = {f["name"]: f for f in a["flow"] if f["app"] == "subscribe"}
    for f in web:
        v = viewers[f["client"]]
        assert f["start"] == v["start"]
        watch = float(v["crowd"]["stream_for"].rstrip("s"))
        assert all(0 < float(r["at"].rstrip("s")) < watch and r["bytes"] == 50_000 for r in f["requests"])


def _first_download_gaps_ms(run_dir, n: int = 40):
    """Gaps between the front-end's first `n` data segments to the one viewer (truth)."""
    p = pd.read_csv(run_dir / "truth_packets.csv")
    fl = pd.read_csv(run_dir / "truth_flows.csv").set_index("flow")
    d = p[(p["flow"].map(fl["role"]) == "subscribe") & ~p["retransmission"]].sort_values("ts_ns")
    return d["ts_ns"].head(n).diff().dropna() / 1e6


def test_fq_pacing_spreads_the_gop_cache_sent_at_a_viewers_join(tmp_path):
    # The viewer joins mid-GOP: the front-end writes the cached I frame and the P frames after it
    # at once. Unpaced (the default), slow start sends them in ACK-clocked back-to-back bursts on
    # the front-end's 1 Gbit/s link (the initial window at once); with crowd.pacing = "fq" every
    # GSO packet waits its turn at sk_pacing_rate, as fq paces skbs: at these rates a packet is
    # tcp_min_tso_segs = 2 segments (sim tcp/tso.rs), so no three segments leave back to back.
    runs = {}
    for pacing in ("none", "fq"):
        sc = scenario(publishers=1, subscribers=1, duration_s=10.0, seed=5, loss_p=0.0, reorder_p=0.0,
                      pause_every_s=0.0, viewer_pacing=pacing)
        tcpvideo.simulate(sc, out=tmp_path / pacing)
        runs[pacing] = _first_download_gaps_ms(tmp_path / pacing)
    def longest_burst(gaps) -> int:
        run = best = 0
        for g in gaps:
            run = run + 1 if g < 0.05 else 0
            best = max(best, run)
        return best + 1  # segments

    assert (runs["none"] < 0.05).sum() >= 10, runs["none"].describe()
    assert longest_burst(runs["none"]) >= 5, runs["none"].tolist()
    assert longest_burst(runs["fq"]) <= 2, runs["fq"].tolist()


def test_an_unknown_pacing_is_refused_naming_the_key(tmp_path):
    sc = scenario(publishers=1, subscribers=1, duration_s=5.0, seed=5, viewer_pacing="bbr")
    with pytest.raises(Exception, match=r"crowd\.pacing"):
        tcpvideo.simulate(sc, out=tmp_path)


def test_the_join_loss_episode_share_counts_join_resends_near_each_downloads_first(tmp_path):
    from tcpvideo.studies.crowdlive import _join_first_episode_share

    pd.DataFrame({"flow": [0, 1], "role": ["subscribe", "subscribe"]}).to_csv(tmp_path / "truth_flows.csv", index=False)
    s = 1_000_000_000
    rows = [(0, 0, False), (0, s // 2, True), (0, s // 2 + s // 10, True), (0, 2 * s, True),  # 2 of 3 near the first
            (1, 0, False), (1, s, True), (1, 5 * s, True)]  # the 5-s re-send is after the join
    pd.DataFrame([{"flow": f, "ts_ns": t, "offset": 0, "len": 1448, "retransmission": r, "frame": "P"}
                  for f, t, r in rows]).to_csv(tmp_path / "truth_packets.csv", index=False)
    assert _join_first_episode_share(tmp_path) == pytest.approx(3 / 4)


def _voice_segments(sc: dict, tmp_path) -> pd.DataFrame:
    tcpvideo.simulate(sc, out=tmp_path)
    p = pd.read_csv(tmp_path / "truth_packets.csv")
    fl = pd.read_csv(tmp_path / "truth_flows.csv").set_index("flow")
    p = p[(p["flow"].map(fl["role"]) == "subscribe") & ~p["retransmission"]]
    return p


def test_voice_frames_leave_in_small_segments_of_their_own_only_with_a_separate_write_and_nodelay(tmp_path):
    # Seed 000 §3.1: "Frame V experiences no burst packet as its size is less than one packet
    # size". In one write with the slot's video frame the voice tag rides in the video's last
    # segment; a separate write under Nagle waits behind the video's unacknowledged small last
    # segment and leaves with the next slot's video data.
    kw = dict(publishers=1, subscribers=2, duration_s=12.0, seed=4, loss_p=0.0, reorder_p=0.0, pause_every_s=0.0)
    small = {}
    for sep, nd in ((False, True), (True, False), (True, True)):
        p = _voice_segments(scenario(**kw, separate_audio=sep, nodelay=nd), tmp_path / f"{sep}{nd}")
        small[sep, nd] = int(((p["frame"] == "V") & (p["len"] < 300)).sum())
    assert small[True, True] > 100, small
    assert small[True, True] > 3 * max(small[False, True], small[True, False]), small


def test_an_audio_offset_of_a_whole_slot_is_refused_naming_the_key(tmp_path):
    sc = _one_publisher("fin", [])
    next(f for f in sc["flow"] if f["app"] == "publish")["crowd"]["audio_offset"] = "40ms"
    with pytest.raises(Exception, match=r"crowd\.audio_offset"):
        tcpvideo.simulate(sc, out=tmp_path)


def test_a_viewer_joining_with_wait_key_gets_no_gop_cache_and_no_p_frame_before_the_next_i(tmp_path):
    # GOP cache (default): the download opens with the cached I frame. crowd.join = "wait_key"
    # (nginx-rtmp): new frames only — voice at once, P frames only after the channel's next I.
    firsts = {}
    for join in ("gop_cache", "wait_key"):
        sc = scenario(publishers=1, subscribers=2, duration_s=12.0, seed=4, loss_p=0.0, reorder_p=0.0,
                      pause_every_s=0.0, viewer_join=join)
        p = _voice_segments(sc, tmp_path / join).sort_values("ts_ns")
        firsts[join] = {f: list(g.loc[g["frame"].isin(["I", "P", "V"]), "frame"]) for f, g in p.groupby("flow")}
    for frames in firsts["gop_cache"].values():
        assert frames[0] == "I", frames[:5]
    with_i = 0
    for frames in firsts["wait_key"].values():
        # A viewer joining after the stream's last I frame gets voice only.
        first_i = frames.index("I") if "I" in frames else len(frames)
        assert first_i > 0 and set(frames[:first_i]) == {"V"}, frames[: first_i + 1]
        if first_i < len(frames):
            with_i += 1
            assert "P" in frames[first_i:]
    assert with_i >= 1, firsts["wait_key"]


def test_an_unknown_join_is_refused_naming_the_key(tmp_path):
    sc = scenario(publishers=1, subscribers=1, duration_s=5.0, seed=5, viewer_join="gop")
    with pytest.raises(Exception, match=r"crowd\.join"):
        tcpvideo.simulate(sc, out=tmp_path)


def test_delay_spikes_on_the_viewers_ack_path_give_ack_delay_timeouts_and_lose_nothing(tmp_path):
    # A path with no loss at all: without spikes the download has no timeout; with ACKs held
    # 800 ms on average every ~2 s (far beyond the RTO of a ~60-ms path) the server times out
    # with every copy delivered — the seed's "ACK delay/loss" — and no link drops a packet.
    base = dict(publishers=1, subscribers=1, duration_s=20.0, seed=5, loss_p=0.0, reorder_p=0.0,
                pause_every_s=0.0, tcp={"rack_tlp": False})
    plain = scenario(**base)
    spiky = scenario(**base, viewer_spike_every_s=2.0, viewer_spike_ms=800)
    assert plain["flow"] == spiky["flow"]
    for a, b in zip(plain["link"], spiky["link"]):
        extra = {k: v for k, v in b.items() if a.get(k) != v}
        if b["name"].startswith("sub"):
            assert extra == {"ab": {"spikes": {"every": "2.0s", "length": "800ms"}}}
        else:
            assert extra == {}
    timeouts = {}
    for name, sc in (("plain", plain), ("spiky", spiky)):
        tcpvideo.simulate(sc, out=tmp_path / name)
        links = pd.read_csv(tmp_path / name / "links.csv")
        assert (links["queue_drops"] + links["loss_drops"]).sum() == 0
        timeouts[name] = pd.read_csv(tmp_path / name / "truth_timeouts.csv")
    assert timeouts["plain"].empty
    kinds = timeouts["spiky"]["timeout_type"].value_counts()
    assert kinds.get("ack_delay_loss", 0) >= 1, kinds
    # A spike longer than the backed-off RTO holds the retransmission's ACK too: typed double
    # (it had been re-sent before), the seed's rule order; never a loss type.
    assert set(kinds.index) <= {"ack_delay_loss", "double"}, kinds


def test_the_truth_gives_each_dropped_data_copy_its_cause(tmp_path, scored):
    # Queues alone (no random loss, 8-packet viewer queues): every drop is a full queue.
    sc = scenario(publishers=1, subscribers=2, duration_s=15.0, seed=4, loss_p=0.0, viewer_loss_p=0.0,
                  reorder_p=0.0, viewer_queue=8)
    tcpvideo.simulate(sc, out=tmp_path)
    drops, links = pd.read_csv(tmp_path / "truth_drops.csv"), pd.read_csv(tmp_path / "links.csv")
    assert len(drops) >= 1 and set(drops["cause"]) == {"queue"}
    assert links["loss_drops"].sum() == 0 and len(drops) <= links["queue_drops"].sum()
    # The lossy fixture run: random drops, no more than the links' loss draws (which count ACKs
    # and the other direction too), each on a frame the truth knows.
    run, _, _ = scored
    drops, links = pd.read_csv(run / "truth_drops.csv"), pd.read_csv(run / "links.csv")
    by = drops["cause"].value_counts()
    assert by.get("random", 0) >= 1 and set(by.index) <= {"random", "queue"}
    assert by.get("random", 0) <= links["loss_drops"].sum() and by.get("queue", 0) <= links["queue_drops"].sum()
    assert set(drops["frame"]) <= {"I", "P", "V", "meta"}


def test_a_failed_analysis_is_raised_with_the_analyzers_own_last_line_and_its_log_kept(tmp_path):
    from tcpvideo.studies.crowdlive import _analyze

    missing = tmp_path / "nothing.pcap"
    with pytest.raises(RuntimeError) as e:
        _analyze(missing, tmp_path / "ana")
    log = tmp_path / "ana" / "analyze.log"
    assert "does not exist" in log.read_text()  # the analyzer's own words, kept
    message = str(e.value)
    assert "\n" not in message and "does not exist" in message and str(log) in message


def test_uplink_counts_sum_the_publishers_rows_only(tmp_path):
    from tcpvideo.studies.crowdlive.uplink_loss import uplink_counts

    (tmp_path / "flows.csv").write_text(
        "flow,name,data_segments_sent,retrans_fast,retrans_timeout,retrans_tlp,rto_count\n"
        "0,pub0,100,3,1,0,1\n1,sub0,500,9,9,9,9\n2,pub1,50,0,2,1,2\n")
    assert uplink_counts(tmp_path) == {"segments": 150, "resends": 7, "rtos": 3}
