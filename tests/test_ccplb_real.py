"""Seed 001's real testbed (issue 15, build item 4): the real client's frame player is the model's,
bound through tcpvideo._core (checked here on the Rust tests' worked examples), the harness's parsers, and — as root
with the origin built — one short real run of the testbed next to its simulated twin."""

from __future__ import annotations

import pytest

from tcpvideo.studies.ccplb import real
from tcpvideo.studies.ccplb.frame_player import FramePlayer, progressive_frames, split_into_frames

MS = 1_000_000


def player(frames: int) -> FramePlayer:
    """10 fps, 100-byte frames: frame i ends at byte 100·(i+1) (frame_player.rs's test player)."""
    return FramePlayer([100] * frames, frame_rate=10)


def test_a_file_arriving_faster_than_playback_shows_every_frame_on_time():
    p = player(30)
    for i in range(30):
        p.on_bytes(10 * i * MS, 100)
    assert p.start_ns == 90 * MS
    assert (p.shown, p.discarded, len(p.underflows)) == (30, 0, 0)


def test_a_late_burst_gives_one_underflow_and_the_too_late_pictures_are_discarded():
    # the worked example of frame_player.rs: 4 discards, one underflow from 1.9 s to 2.8 s
    p = player(20)
    p.on_bytes(900 * MS, 1000)
    p.on_bytes(2450 * MS, 1000)
    assert p.start_ns == 900 * MS
    assert p.discarded == 4
    assert [(u.start_ns, u.end_ns, u.frame) for u in p.underflows] == [(1900 * MS, 2800 * MS, 10)]
    assert p.shown == 16


def test_the_real_clients_file_has_the_simulated_servers_frames():
    # Content::cbr at 5.24 Mbit/s in 1 s chunks: 655 000 B per chunk, 25 frames, I = 5 P
    f = progressive_frames(5_240_000, 2.5, 1.0)
    assert len(f) == 75 and sum(f) == 3 * 655_000
    p = 655_000 // 29
    assert f[:2] == [655_000 - 24 * p, p] and f[25] == f[0]
    assert split_into_frames(1000, 1) == [1000]


def test_a_zero_frame_rate_is_refused_with_the_field_named():
    with pytest.raises(ValueError, match="frame_rate"):
        FramePlayer([100], frame_rate=0)


def test_a_zero_chunk_or_a_negative_media_length_is_refused_with_the_field_named():
    with pytest.raises(ValueError, match="^chunk_s: "):
        progressive_frames(5_240_000, 2.5, 0.0)
    with pytest.raises(ValueError, match="^media_s: "):
        progressive_frames(5_240_000, -1.0, 1.0)


def test_ss_output_gives_the_connections_cwnd_and_retransmissions():
    line = ("ESTAB 0 0 10.0.0.1:8000 10.0.0.4:41234\n\t cubic wscale:7,7 rto:304 rtt:101.2/0.5 mss:1448 "
            "cwnd:37 ssthresh:20 bytes_sent:1 retrans:0/12 lost:0")
    assert real.parse_ss(line) == (37, 12)
    assert real.parse_ss("") is None
    assert real._SS_CC.findall(line) == ["cubic"]


def test_an_unknown_cc_name_is_refused_with_the_field_named():
    with pytest.raises(ValueError, match="cc: unknown congestion control 'reno2'"):
        real.kernel_cc("reno2")


@pytest.fixture(scope="module")
def why_not():
    return real.missing(("cubic", "ccplb"))


def test_the_real_testbed_streams_the_video_with_ccplb_in_the_kernel(tmp_path, why_not):
    if why_not:
        pytest.skip(why_not)
    rows = real.compare([real.Point("ccplb", 3)], media_s=4.0, seed=1, out=tmp_path, log=lambda s: None)
    r = rows[0]
    assert r["kernel_cc"] == "tv_ccplb" and r["real_ss_cc"] == ["tv_ccplb"], "the origin's socket ran the BPF twin"
    assert r["real_cwnd_samples"] >= 3, "ss saw the connection"
    # the whole 4 s file arrived (no frame missing) and was played by deadlines
    assert r["real_cwnd_median"] is not None and r["real_cwnd_median"] > 2
    assert (tmp_path / "sim_vs_real.md").read_text().count("tv_ccplb") == 1
