"""Why a viewer's single connection has no less-packet voice timeouts (seed 000 Table 5: 30.8 %
of voice timeouts are "less packet"), measured on the simulator's truth.

A timeout is less packet when fewer than 4 segments are out at the RTO (the seed's Eq. 1 /
Linux ``packets_out``, SND.UNA to SND.NXT; session 11 made this the analyzer's and the truth's
definition). The lost segment stays at SND.UNA, so every segment sent after it stays out: a voice segment can only time out "less packet" if at most 2 segments follow it before
the RTO fires (≥ the 200-ms minimum RTO). And 3 segments after it would bring 3 duplicate ACKs, a
fast retransmission instead. So the opportunity is measured directly: for every voice segment the
front-end sends on a download, how many data segments follow within ``WINDOW_S``. On one
connection per viewer the next 40-ms slot's P frame (2–7 segments) follows every voice frame
unless the whole stream stops (an upload stall or encoder pause reaching the viewer); on a
voice-only connection (the per-type variants) 25 voice segments a second follow instead.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

WINDOW_S = 0.2  # Linux's minimum RTO: nothing times out sooner


def followers(run_dir: Path, frame: str = "V") -> dict:
    """Voice (``frame``) first transmissions on downloads and how many data segments the
    front-end sent on the same connection within WINDOW_S after each: the share followed by at
    most 2 (where a lost one could time out less packet) and the median count."""
    p = pd.read_csv(run_dir / "truth_packets.csv")
    fl = pd.read_csv(run_dir / "truth_flows.csv").set_index("flow")
    p = p[(p["flow"].map(fl["role"]) == "subscribe") & ~p["retransmission"]]
    counts = []
    for _, g in p.groupby("flow"):
        ts = np.sort(g["ts_ns"].to_numpy())
        mine = np.sort(g.loc[g["frame"] == frame, "ts_ns"].to_numpy())
        if len(mine) == 0:
            continue
        after = np.searchsorted(ts, mine, side="right")
        until = np.searchsorted(ts, mine + int(WINDOW_S * 1e9), side="right")
        counts.append(until - after)
    if not counts:
        return {"segments": 0, "share_at_most_2": None, "median_followers": None}
    c = np.concatenate(counts)
    return {"segments": int(len(c)), "share_at_most_2": float((c <= 2).mean()), "median_followers": float(np.median(c))}


def describe(name: str, f: dict) -> str:
    if not f["segments"]:
        return f"{name}: no voice segments"
    return (f"{name}: {100 * f['share_at_most_2']:.2f} % of {f['segments']} voice segments had ≤ 2 segments after "
            f"them within {WINDOW_S * 1000:.0f} ms (median {f['median_followers']:.0f})")
