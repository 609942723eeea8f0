"""Tests of the ns-3 dumbbell driver (bench/ns3/dumbbell.py).

Not part of CI (pytest's testpaths is tests/; ns-3 takes ~10 s to import): run them with
``python -m pytest -q bench/ns3``. The pure-Python helpers are tested always; the ns-3 runs are
skipped when the ``ns3`` package is missing. The ns-3 runs check physical invariants that a
mis-built topology breaks (queue in the wrong place, drops counted in the wrong layer, delays
split wrongly), not values copied from a previous run.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dumbbell  # noqa: E402

HAVE_NS3 = importlib.util.find_spec("ns") is not None
needs_ns3 = pytest.mark.skipif(not HAVE_NS3, reason="pip package ns3 not installed")


def test_flow_draws_are_reproducible_per_seed_and_differ_across_seeds():
    a = dumbbell.draw_flows(50, seed=7, start_spread=1.0)
    b = dumbbell.draw_flows(50, seed=7, start_spread=1.0)
    c = dumbbell.draw_flows(50, seed=8, start_spread=1.0)
    assert a == b
    assert a != c


def test_rtt_draws_follow_seed_004_normal_55_5_ms():
    flows = dumbbell.draw_flows(4000, seed=1, start_spread=1.0)
    rtts = [f["rtt_ms"] for f in flows]
    assert abs(statistics.mean(rtts) - 55.0) < 0.5
    assert abs(statistics.stdev(rtts) - 5.0) < 0.5
    assert all(0.0 <= f["start_s"] < 1.0 for f in flows)


def test_rtt_draws_never_go_below_the_shared_links_delay():
    # A huge sigma forces many draws below 2*(bottleneck + server) delays: all must be redrawn.
    flows = dumbbell.draw_flows(500, seed=3, start_spread=0.0, rtt_mean_ms=25.0, rtt_sd_ms=20.0)
    floor = 2 * (dumbbell.BOTTLENECK_DELAY_MS + dumbbell.SERVER_LINK_DELAY_MS)
    assert min(f["rtt_ms"] for f in flows) > floor


def test_jain_index_is_one_for_equal_shares_and_one_over_n_for_a_single_winner():
    assert dumbbell.jain([5.0] * 8) == pytest.approx(1.0)
    assert dumbbell.jain([10.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)


def test_bytes_at_interpolates_between_snapshots_and_uses_exact_ones():
    ts = [1.0, 2.0, 3.0]
    snaps = [[100, 0], [300, 10], [600, 20]]
    assert dumbbell._bytes_at(2.0, ts, snaps, 2) == [300.0, 10.0]
    assert dumbbell._bytes_at(2.5, ts, snaps, 2) == [450.0, 15.0]
    assert dumbbell._bytes_at(0.5, ts, snaps, 2) == [50.0, 0.0]


def _run(tmp_path, *args):
    out = tmp_path / "r.json"
    return dumbbell.run_in_subprocess(json_out=str(out), timeout=600, **dict(args))


@needs_ns3
def test_small_queue_drops_at_the_bottleneck_only_and_never_exceeds_its_limit(tmp_path):
    r = _run(tmp_path, ("flows", 3), ("cc", "NewReno"), ("duration", 4.0), ("warmup", 1.0),
             ("extra_args", ["--queue", "20"]))
    res = r["results"]
    assert r["config"]["bottleneck_queue_pkts"] == 20
    assert res["queue_max_pkts"] <= 20
    assert res["bottleneck_drops"] > 0          # 3 NewReno flows must overflow 20 packets
    assert res["other_drops"] == 0              # nothing but the bottleneck may drop
    # Payload ceiling of a 100 Mbit/s PPP link with 1500-byte IP packets: 100 * 1448 / 1502.
    assert res["goodput_after_warmup_mbps"] <= 100 * 1448 / 1502 + 0.5
    assert res["goodput_after_warmup_mbps"] > 5  # a 20-packet buffer (0.04 BDP) wastes a lot


@needs_ns3
def test_explicit_flows_set_the_access_delay_to_half_rtt_minus_shared_links(tmp_path):
    flows = [{"rtt_ms": 40.0, "start_s": 0.0}, {"rtt_ms": 80.0, "start_s": 0.1}]
    r = _run(tmp_path, ("cc", "Vegas"), ("duration", 3.0), ("warmup", 1.0),
             ("flow_list", flows))
    det = r["config"]["flows_detail"]
    shared = dumbbell.BOTTLENECK_DELAY_MS + dumbbell.SERVER_LINK_DELAY_MS
    assert [d["access_delay_ms"] for d in det] == pytest.approx([20.0 - shared, 40.0 - shared])
    # Vegas keeps only a few packets per flow queued: far below the 1375-packet buffer.
    assert r["results"]["queue_mean_after_warmup_pkts"] < 50
    assert r["results"]["bottleneck_drops"] == 0


@needs_ns3
def test_trace_samples_each_sender_on_the_grid_with_rtts_no_smaller_than_the_path(tmp_path):
    flows = [{"rtt_ms": 40.0, "start_s": 0.0}, {"rtt_ms": 60.0, "start_s": 0.5}]
    r = _run(tmp_path, ("cc", "Vegas"), ("duration", 2.0), ("warmup", 1.0), ("flow_list", flows),
             ("extra_args", ["--trace-interval-ms", "50"]))
    tr = r["trace"]
    assert len(tr["t_s"]) == len(tr["queue_pkts"]) == 41  # 0, 0.05, ..., 2.0 s
    assert tr["t_s"][1] == pytest.approx(0.05)
    late = tr["flows"][1]
    before = [i for i, t in enumerate(tr["t_s"]) if t < 0.5]
    assert all(late["cwnd_segs"][i] == 0 for i in before)  # not started yet: nothing recorded
    for f, rtt in zip(tr["flows"], (40.0, 60.0)):
        assert f["cwnd_segs"][-1] >= 2
        # Timestamp RTTs are whole ms; the path adds serialization, so the minimum is >= the base
        # RTT rounded down, and SRTT's minimum is never below the smallest sample.
        assert f["min_last_rtt_ms"][-1] >= int(rtt) - 1
        assert f["min_srtt_ms"][-1] >= f["min_last_rtt_ms"][-1] - 1e-9
    # The queue column is the bottleneck's, bounded by its limit.
    assert max(tr["queue_pkts"]) <= dumbbell.BOTTLENECK_QUEUE_PKTS
