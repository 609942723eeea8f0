"""The simulator's video apps end to end: live players and an origin speaking real HTTP/1.1 over the
simulated TCP, checked against the capture analyzer (crates/trace) and tshark reading the
simulator's own pcap, plus the video tables and their bad-input errors."""

from __future__ import annotations

import shutil
import subprocess

import pytest

import tcpvideo
from tcpvideo.simulation import check as check_scenario


def onoff(clients: int = 6, duration: str = "17s", **player) -> dict:
    """Seed 004's on-off setting, small: live 2 s segments at 500 kbit/s, one-segment buffers."""
    return {
        "name": "onoff-small",
        "duration": duration,
        "seed": 3,
        "video": {"segment_duration": "2s"},
        "dumbbell": {
            "clients": clients, "bottleneck_rate": "100Mbps", "queue": 1375, "rtt": "55ms", "rtt_std": "5ms",
            "flow": {"app": "live", "start_jitter": "2s", "tcp": {"cc": "cubic"},
                     "player": {"abr": "fixed", "abr_params": {"quality": 1}, "buffer_segments": 1, **player}},
        },
        "record": {"pcap": [{"link": "bottleneck", "at": "r1"}], "snaplen": 1600, "pcap_timestamps": "ns",
                   "sample_interval": "100ms"},
    }


def client_flow_of(flows, clients: int):
    """Analyzer flow id → simulated flow (client) index: a client's first connection has port
    32768 + its flow index, and all its connections share its IP."""
    first = flows[flows["client_port"] < 32768 + clients]
    ip_flow = dict(zip(first["client_ip"], first["client_port"] - 32768))
    return flows["client_ip"].map(ip_flow)


@pytest.mark.parametrize("connection", ["persistent", "per_segment"])
def test_analyzer_finds_every_http_request_and_response_and_on_periods_match_the_simulator(tmp_path, connection):
    r = tcpvideo.simulate(onoff(connection=connection), out=tmp_path)
    seg = r.video_segments.to_pandas()
    assert len(seg) >= 6 * 6, "every client fetched several segments"
    a = tcpvideo.analyze(r.pcaps[0])
    flows = a.flows.to_pandas().set_index("flow_id")
    http = a.http.to_pandas()
    http["flow"] = http["flow_id"].map(client_flow_of(flows, 6))
    media = http[http["path"].str.endswith(".ts")].copy()
    media["segment"] = media["path"].str.extract(r"/q\d+/(\d+)\.ts")[0].astype(int)
    # Every GET of a segment the simulator made is in the capture, and nothing else is.
    assert len(media) == len(seg)
    assert sorted(zip(media["flow"], media["segment"])) == sorted(zip(seg["flow"], seg["segment"]))
    assert (http[~http["path"].str.endswith(".ts")]["path"] == "/q0/index.m3u8").all()
    assert (media["method"] == "GET").all() and (media["status"] == 200).all()
    # Every completed download is a complete response of the segment's size whose on period (first
    # to last response byte at the bottleneck) equals the player's (first to last byte read) within 1 ms.
    j = seg.merge(media, on=["flow", "segment"])
    done = j[j["done_s"].notna()]
    assert len(done) >= len(seg) - 6
    assert (done["response_bytes"] == done["bytes"]).all()
    sim_on = done["done_s"] - done["first_byte_s"]
    ana_on = done["on_period_ns"] / 1e9
    assert (sim_on - ana_on).abs().max() < 1e-3, (sim_on - ana_on).abs().max()
    per_conn = media.groupby("flow_id").size()
    if connection == "persistent":
        assert len(flows) == 6 and (per_conn > 1).all()
    else:
        # One connection per segment, each with its own handshake and ephemeral port, closed
        # after its response (the first also carries the playlist).
        assert len(flows) == len(seg) and (per_conn == 1).all()
        assert flows["client_port"].is_unique
        assert flows["handshake"].all() and flows["rtt_3whs_ns"].notna().all()
        assert (flows["closed_by"] == "fin").all()


def test_per_segment_connections_wait_a_handshake_more_for_each_first_byte(tmp_path):
    # A new connection per segment costs the SYN round trip before the GET can go out: the first
    # byte comes ~2 RTTs after the request instead of ~1 on the warm persistent connection.
    delay = {}
    for connection in ("persistent", "per_segment"):
        seg = tcpvideo.simulate(onoff(clients=2, duration="11s", connection=connection)).video_segments.to_pandas()
        later = seg[seg["segment"] > 0]
        delay[connection] = (later["first_byte_s"] - later["requested_s"]).median()
    assert 0.045 < delay["persistent"] < 0.08, delay
    assert 0.045 < delay["per_segment"] - delay["persistent"] < 0.08, delay


def test_analyzer_pairs_pipelined_head_probes_with_bodyless_responses_under_the_throughput_rule(tmp_path):
    # Seed 004's throughput rule sends a HEAD per quality (pipelined) before each GET. A HEAD
    # response carries the Content-Length of the GET it describes but no body (RFC 9110 §9.3.2);
    # reading it as a body would swallow the next responses and lose the segment GETs' timing.
    r = tcpvideo.simulate(onoff(clients=2, duration="9s", abr="throughput", abr_params={"head": 1}), out=tmp_path)
    seg = r.video_segments.to_pandas()
    a = tcpvideo.analyze(r.pcaps[0])
    flows = a.flows.to_pandas().set_index("flow_id")
    http = a.http.to_pandas()
    http["flow"] = http["flow_id"].map(flows["client_port"]) - 32768
    heads = http[http["method"] == "HEAD"]
    answered = heads[heads["status"] == 200]
    assert len(heads) >= 6 * len(seg)
    assert (answered["response_bytes"] == 0).all(), answered["response_bytes"].unique()
    media = http[(http["method"] == "GET") & http["path"].str.endswith(".ts")].copy()
    media["segment"] = media["path"].str.extract(r"/q\d+/(\d+)\.ts")[0].astype(int)
    j = seg.merge(media, on=["flow", "segment"])
    done = j[j["done_s"].notna()]
    assert len(j) == len(seg) and len(done) >= len(seg) - 2
    assert (done["response_bytes"] == done["bytes"]).all()
    assert ((done["done_s"] - done["first_byte_s"]) - done["on_period_ns"] / 1e9).abs().max() < 1e-3


def test_same_seed_gives_identical_video_tables_and_pcap(tmp_path):
    a = tcpvideo.simulate(onoff(clients=3, duration="8s"), out=tmp_path / "a")
    b = tcpvideo.simulate(onoff(clients=3, duration="8s"), out=tmp_path / "b")
    for t in ("video_clients", "video_segments", "video_stalls", "video_buffer"):
        assert getattr(a, t).equals(getattr(b, t)), t
    assert a.pcaps[0].read_bytes() == b.pcaps[0].read_bytes()


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_tshark_reads_real_http_with_valid_checksums_and_a_head_per_quality_for_the_throughput_rule(tmp_path):
    r = tcpvideo.simulate(onoff(clients=2, duration="9s", abr="throughput", abr_params={"head": 1}), out=tmp_path)
    pcap = str(r.pcaps[0])

    def count(display_filter: str, field: str = "frame.number") -> int:
        """Messages matching the filter (pipelined requests share a frame: count field values)."""
        out = subprocess.run(["tshark", "-r", pcap, "-o", "tcp.check_checksum:TRUE", "-Y", display_filter,
                              "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,", "-e", field],
                             capture_output=True, text=True, check=True).stdout
        return sum(len(line.split(",")) for line in out.splitlines() if line)

    seg = r.video_segments.to_pandas()
    assert count('http.request.method == "GET" && http.request.uri contains ".ts"') == len(seg)
    # Seed 004 §V: the sizes of each segment by HEAD, one per quality (6), before its GET; a probe
    # may be in flight at the end of the run.
    heads = count('http.request.method == "HEAD"', "http.request.method")
    assert heads % 6 == 0 and len(seg) * 6 <= heads <= (len(seg) + 2) * 6, (heads, len(seg))
    # (Responses are not counted: tshark reads the pipelined HEAD responses' Content-Length as a
    # body — RFC 9110 §9.3.2 says a HEAD response has none; crates/trace pairs them, see above.)
    assert count("tcp.checksum.status == 0") == 0, "no bad TCP checksum"


@pytest.mark.parametrize("patch,key", [
    ({"dumbbell": {"flow": {"player": {"abr": "magic"}}}}, "dumbbell.flow[0].player.abr"),
    ({"dumbbell": {"flow": {"player": {"buffer_segments": 0}}}}, "dumbbell.flow[0].player.buffer_segments"),
    ({"video": {"ladder_kbps": [250, -500]}}, "video.ladder_kbps"),
    ({"video": {"format": "rtmp"}}, "video.format"),
    ({"dumbbell": {"flow": {"player": {"abr_params": {"speed": 2}}}}}, "dumbbell.flow[0].player.abr_params.speed"),
])
def test_bad_video_input_is_one_line_naming_the_key(patch, key):
    sc = onoff(clients=1, duration="2s")
    for top, v in patch.items():
        if top == "dumbbell":
            sc["dumbbell"]["flow"]["player"].update(v["flow"]["player"])
        else:
            sc[top].update(v)
    with pytest.raises(tcpvideo.ScenarioError) as e:
        check_scenario(sc)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(key), msg


def test_a_video_app_without_a_video_table_names_the_app_key():
    sc = onoff(clients=1, duration="2s")
    del sc["video"]
    with pytest.raises(tcpvideo.ScenarioError, match=r"^dumbbell.flow.app: a video app needs a \[video\] table"):
        check_scenario(sc)


def test_on_demand_dash_clients_fetch_the_mpd_then_fmp4_segments_from_zero_until_the_buffer_target(tmp_path):
    sc = onoff(clients=2, duration="12s", buffer_segments=3)
    sc["video"].update({"format": "dash", "segments": 30})
    sc["dumbbell"]["flow"]["app"] = "vod"
    r = tcpvideo.simulate(sc, out=tmp_path)
    seg = r.video_segments.to_pandas()
    for _, g in seg.groupby("flow"):
        # On demand: from segment 0, one after the other, without waiting for availability.
        assert list(g["segment"]) == list(range(len(g)))
        assert (g["available_s"] == 0).all()
    a = tcpvideo.analyze(r.pcaps[0])
    http = a.http.to_pandas()
    assert (http[~http["path"].str.endswith(".m4s")]["path"] == "/manifest.mpd").all()
    assert (http["path"] == "/manifest.mpd").sum() == 2
    assert http["path"].str.endswith(".m4s").sum() == len(seg)
    # Each client plays 2 s per segment and keeps 3 segments buffered: after startup it fetches
    # about one segment per 2 s, not as fast as the path allows.
    c = r.video_clients.to_pandas()
    assert (c["stall_count"] == 0).all()
    assert (c["segments"] <= 12 / 2 + 3 + 1).all()
    if shutil.which("tshark"):
        out = subprocess.run(["tshark", "-r", str(r.pcaps[0]), "-Y", 'http.content_type == "video/iso.segment"',
                              "-T", "fields", "-e", "frame.number"], capture_output=True, text=True, check=True).stdout
        assert len(out.splitlines()) == len(seg)


def test_distributed_clients_request_each_segment_at_their_arrival_phase():
    # Seed 004 §IV-C: "upon arrival, the clients make a request every segment duration".
    r = tcpvideo.simulate(onoff(clients=4, duration="15s", request_timing="distributed"))
    seg = r.video_segments.to_pandas()
    joined = r.video_clients.to_pandas().set_index("flow")["joined_s"]
    for flow, g in seg.groupby("flow"):
        phase = joined[flow] % 2.0
        later = g.iloc[1:]
        assert len(later) >= 4
        assert ((later["requested_s"] % 2.0 - phase).abs() < 1e-6).all(), (flow, phase, list(later["requested_s"]))
        assert (later["requested_s"] >= later["available_s"]).all()


def test_clocked_clients_behind_the_live_edge_request_once_per_period_whatever_their_buffer():
    # A 3-segment buffer, joining 2 segments behind the live edge: under "distributed" (a not-before
    # slot) the client fills its buffer with back-to-back requests (every segment it wants already
    # exists); under "clocked" (§IV-C as written) it asks once per period at its arrival phase.
    def requests(timing):
        sc = onoff(clients=3, duration="20s", request_timing=timing, buffer_segments=3, live_start_behind=2)
        sc["dumbbell"]["flow"]["start"] = "6s"  # segments 0-2 exist (segment k appears at (k+1)·2 s)
        r = tcpvideo.simulate(sc)
        return r.video_segments.to_pandas(), r.video_clients.to_pandas().set_index("flow")["joined_s"]

    seg, _ = requests("distributed")
    gaps = seg.groupby("flow")["requested_s"].apply(lambda s: s.diff().iloc[1:3].max())
    assert (gaps < 1.0).all(), gaps
    seg, joined = requests("clocked")
    for flow, g in seg.groupby("flow"):
        assert len(g) >= 6
        phase = joined[flow] % 2.0
        # (the first request leaves when the connection is up; from the second on, one per period)
        assert ((g["requested_s"].diff().iloc[2:] - 2.0).abs() < 1e-6).all(), list(g["requested_s"])
        assert ((g["requested_s"].iloc[1:] % 2.0 - phase).abs() < 1e-6).all()
