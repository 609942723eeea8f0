"""bench/acks_per_segment.py's receiver replay: each pure ACK is classified by what arrived since
the previous one (the numbers issue 15 compares between real Linux and the simulator)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from acks_per_segment import tally  # noqa: E402

SERVER, CLIENT, MSS = "10.0.0.1", "10.0.0.2", 1448


def data(t: float, k: int, psh: bool = False) -> tuple:
    return (t, SERVER, k * MSS, 1, MSS, psh)


def ack(t: float, k: int) -> tuple:
    return (t, CLIENT, 1, k * MSS, 0, False)


def test_each_ack_is_classified_by_the_segments_since_the_previous_ack():
    rows = [
        data(0.000, 0), ack(0.0001, 1),                      # one in-order segment: immediate
        data(0.010, 1, psh=True), ack(0.0101, 2),            # one PSH segment
        data(0.020, 2), data(0.0201, 3), ack(0.0202, 4),     # two: the every-second-segment ACK
        data(0.030, 5), ack(0.0301, 4),                      # above RCV.NXT: out of order
        data(0.040, 4), ack(0.0401, 6),                      # fills the hole
        data(0.050, 6), ack(0.0900, 7),                      # 40 ms later: the delayed-ACK timer
        ack(0.2000, 7),                                      # nothing new: a window update
    ]
    t = tally(rows)
    assert (t["segments"], t["acks"]) == (7, 7)
    assert dict(t["kinds"]) == {"1 in-order": 1, "1 in-order PSH": 1, "2+ in-order": 1, "ooo / hole / dup": 2,
                                "timer": 1, "no data": 1}


def test_a_duplicate_segment_counts_as_ooo_hole_or_dup_not_as_in_order():
    rows = [data(0.0, 0), data(0.0001, 1), ack(0.0002, 2), data(0.01, 1), ack(0.0101, 2)]
    assert tally(rows)["kinds"]["ooo / hole / dup"] == 1
