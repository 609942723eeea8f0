"""The demo's start-up timeline (python/tcpvideo/edge_demo/timeline.py) read from recorded logs.

The two logs in tests/data/ were recorded from the real `tcpvideo-edge --log-format json` of this
branch on loopback (upstream: a static server; cold: it answers each request 0.3 s late and the
player is the stream's first viewer; warm: another viewer came 1.1 s before the player), with
the player's loadSource instants noted beside them (the epochs below). Expected offsets are the
log timestamps minus those instants, worked out by hand.
"""

from datetime import datetime, timezone
from pathlib import Path

import pytest

from tcpvideo.edge_demo.player import PlayerReport
from tcpvideo.edge_demo.timeline import edge_marks, format_timelines, parse_edge_log, player_marks, row_timeline

DATA = Path(__file__).parent / "data"
COLD_T0 = datetime(2026, 11, 24, 17, 43, 13, 774161, tzinfo=timezone.utc).timestamp()
WARM_T0 = datetime(2026, 11, 24, 17, 42, 59, 433091, tzinfo=timezone.utc).timestamp()


def events(name):
    return parse_edge_log((DATA / name).read_text().splitlines())


def test_cold_edge_log_splits_into_request_backhaul_answer_fetch_first_byte_and_policy():
    m = edge_marks(events("edge_log_cold_start.jsonl"), COLD_T0)
    assert m["edge_playlist_request"] == pytest.approx(0.032939, abs=2e-6)
    assert m["edge_backhaul_measured"] == pytest.approx(0.338656, abs=2e-6)
    assert m["edge_playlist_answered"] == pytest.approx(0.338692, abs=2e-6)
    assert m["edge_segment_request"] == pytest.approx(0.349028, abs=2e-6)
    # seg22 was prefetched at the playlist's arrival, before the player asked for it.
    assert m["edge_fetch_started"] == pytest.approx(0.339054, abs=2e-6)
    assert m["edge_upstream_first_byte"] == pytest.approx(0.655190, abs=2e-6)
    assert m["edge_policy"] == pytest.approx(0.639616, abs=2e-6)
    assert m["x"] == 2
    # Answered (head) at 0.639684 before any body byte: the first byte leaves when it arrives.
    assert m["edge_segment_from"] == "fetch, before its first byte"
    assert m["edge_first_byte_out"] == pytest.approx(0.655190, abs=2e-6)
    assert m["edge_upstream_connection"] == "preconnected"


def test_warm_edge_picks_the_players_lines_not_the_earlier_viewers_and_stream_lines_come_before_start():
    m = edge_marks(events("edge_log_warm_start.jsonl"), WARM_T0)
    # The other viewer's first playlist request (1.12 s before loadSource) is not the player's.
    assert m["edge_playlist_request"] == pytest.approx(0.014979, abs=2e-6)
    assert m["edge_backhaul_measured"] == pytest.approx(-1.117529, abs=2e-6)
    assert m["edge_policy"] == pytest.approx(-1.114062, abs=2e-6)
    assert m["edge_playlist_answered"] == pytest.approx(0.016288, abs=2e-6)
    assert m["edge_segment_request"] == pytest.approx(0.031104, abs=2e-6)
    assert m["edge_fetch_started"] == pytest.approx(0.016351, abs=2e-6)
    assert m["edge_upstream_first_byte"] == pytest.approx(0.017982, abs=2e-6)
    assert m["edge_segment_from"] == "cache"
    assert m["edge_first_byte_out"] == pytest.approx(0.031133, abs=2e-6)


def test_log_lines_that_are_not_json_events_are_skipped_and_nothing_after_start_gives_no_marks():
    lines = ["\x1b[2m2026-11-24T13:55:09Z\x1b[0m INFO text line", "{broken", '{"timestamp": "x"}', ""]
    lines += (DATA / "edge_log_cold_start.jsonl").read_text().splitlines()
    parsed = parse_edge_log(lines)
    assert [e.message for e in parsed] == [e.message for e in events("edge_log_cold_start.jsonl")]
    assert edge_marks(parsed, COLD_T0 + 60) == {}


def player(**extra):
    rec = {"playingAt": 3.38, "t0EpochMs": COLD_T0 * 1000,
           "playlist": {"requested": 0.002, "first_byte": 0.31, "loaded": 0.312},
           "firstFragLoading": {"sn": 72, "at": 0.418},
           "fragments": [{"sn": 72, "requested_s": 0.4185, "first_byte_at_s": 0.7306, "load_s": 2.835},
                         {"sn": 73, "requested_s": 3.3, "first_byte_at_s": 3.6, "load_s": 0.9}]}
    rec.update(extra)
    return PlayerReport.from_page(rec)


def test_player_marks_come_from_hls_js_stats_of_the_playlist_and_the_first_fragment_it_asked_for():
    m = player_marks(player())
    assert m["playlist_requested"] == 0.002 and m["playlist_loaded"] == 0.312
    assert m["segment_requested"] == 0.418
    assert m["segment_first_byte"] == 0.7306
    assert m["segment_loaded"] == pytest.approx(3.2535)
    assert m["playing"] == 3.38


def test_e2e_row_has_only_player_milestones_and_the_table_shows_dashes_for_the_edge():
    e2e = row_timeline(player(), None)
    assert not any(k.startswith("edge_") for k in e2e)
    cold = row_timeline(player(), DATA / "edge_log_cold_start.jsonl")
    assert cold["edge_upstream_first_byte"] == pytest.approx(0.655190, abs=2e-6)
    table = format_timelines([("edge cold", cold), ("E2E", e2e)])
    line = next(ln for ln in table.splitlines() if ln.startswith("edge: its upstream first byte"))
    assert line.split()[-2:] == ["0.655", "-"]
    assert "edge cold: x=2" in table
