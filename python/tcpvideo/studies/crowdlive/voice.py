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


# Issue 16 session 14: what the sender had out and sent around each download RTO, from the
# truth's own counters (the context columns of truth_timeouts.csv), to test readings of the
# seed's "less packet" against each other. Each lost segment counts once (its first RTO); a
# backed-off RTO of the same segment is the same loss.
CONTEXT_COLUMNS = ("out_at_send", "in_flight_at_send", "cwnd_at_send", "sent_after", "lost_after", "next_send_ms",
                   "out_at_rto", "in_flight_at_rto", "sacked_at_rto", "cwnd_at_rto")


def download_timeouts(run_dirs) -> pd.DataFrame:
    """Every download RTO (TLP probes left out) of the runs, with its run, ``repeat`` (an earlier
    RTO re-sent the same segment) and the truth's context columns."""
    out = []
    for rd in run_dirs:
        rd = Path(rd)
        fl = pd.read_csv(rd / "truth_flows.csv").set_index("flow")
        t = pd.read_csv(rd / "truth_timeouts.csv")
        t = t[(t["flow"].map(fl["role"]) == "subscribe") & (t["timeout_type"] != "tlp_probe")].sort_values(["flow", "ts_ns"])
        out.append(t.assign(run=str(rd), repeat=t.duplicated(["flow", "offset"])))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def context_table(t: pd.DataFrame) -> pd.DataFrame:
    """Per frame, over first RTOs: how many, how many the truth calls less packet, and how many
    each other reading would call so — fewer than 4 out when the lost copy was sent
    (``out_at_send``), fewer than 4 in the network at the RTO (Eq. 1 ``in_flight``, SACKed
    left out), nothing sent after the lost copy, cwnd below 4 at the RTO (the seed's stated
    limiter) — and the medians of what was out and what followed."""
    f = t[~t["repeat"]]
    g = f.groupby("frame")
    return pd.DataFrame({
        "rtos": g.size(),
        "less_packet": g["timeout_type"].apply(lambda s: int((s == "less_packet").sum())),
        "out_at_send_lt4": g["out_at_send"].apply(lambda s: int((s < 4).sum())),
        "in_flight_at_rto_lt4": g["in_flight_at_rto"].apply(lambda s: int((s < 4).sum())),
        "nothing_sent_after": g["sent_after"].apply(lambda s: int((s == 0).sum())),
        "cwnd_at_rto_lt4": g["cwnd_at_rto"].apply(lambda s: int((s < 4).sum())),
        "median_out_at_send": g["out_at_send"].median(),
        "median_sent_after": g["sent_after"].median(),
        "median_cwnd_at_rto": g["cwnd_at_rto"].median(),
    })


def continuous_loss_causes(run_dirs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per frame, over first download RTOs the truth types continuous loss: what dropped the
    copies of the segments out at the RTO (``truth_drops.csv``, session 17: ``queue`` full or
    ``random`` loss) — how many RTOs had only queue drops, only random drops, or both — beside the
    causes of all download drops of the runs (the base rate). The seed gives voice no continuous
    loss because voice has no burst of its own; a drop run that a full queue makes (a burst
    overflowing the viewer's queue) and one the radio makes (a Gilbert–Elliott Bad run) say
    different things about that."""
    rows, base = [], []
    for rd in map(Path, run_dirs):
        drops_file = rd / "truth_drops.csv"
        if not drops_file.exists():
            raise FileNotFoundError(f"{drops_file}: runs older than session 17 have no drop causes")
        fl = pd.read_csv(rd / "truth_flows.csv").set_index("flow")
        drops = pd.read_csv(drops_file)
        drops = drops[drops["flow"].map(fl["role"]) == "subscribe"]
        base.append(drops)
        t = download_timeouts([rd])
        t = t[~t["repeat"] & (t["timeout_type"] == "continuous_loss")]
        for _, r in t.iterrows():
            d = drops[(drops["flow"] == r["flow"]) & (drops["offset"] >= r["offset"]) & (drops["ts_ns"] <= r["ts_ns"])]
            causes = set(d["cause"])
            rows.append({"frame": r["frame"], "causes": "+".join(sorted(causes)) or "none"})
    cl = pd.DataFrame(rows, columns=["frame", "causes"])
    table = cl.groupby(["frame", "causes"]).size().unstack(fill_value=0) if len(cl) else pd.DataFrame()
    allb = pd.concat(base, ignore_index=True) if base else pd.DataFrame(columns=["frame", "cause"])
    base_t = allb.groupby(["frame", "cause"]).size().unstack(fill_value=0) if len(allb) else pd.DataFrame()
    return table, base_t


def main(argv=None) -> None:
    """``python -m tcpvideo.studies.crowdlive.voice TRENDS_OUT [--run tlp_off]``: the context table
    over every cached trend run of that setting (``trends.py`` keeps the truth tables)."""
    import argparse

    ap = argparse.ArgumentParser(description="download RTO context per frame over trend runs")
    ap.add_argument("out", type=Path)
    ap.add_argument("--run", default="tlp_off")
    a = ap.parse_args(argv)
    runs = sorted(a.out.glob(f"{a.run}_s*/run"))
    if not runs:
        ap.error(f"no {a.run}_s*/run under {a.out}")
    t = download_timeouts(runs)
    missing = [c for c in CONTEXT_COLUMNS if c not in t.columns]
    if missing:
        ap.error(f"truth_timeouts.csv has no {', '.join(missing)}: runs older than session 14, delete them")
    print(f"{len(runs)} runs, {len(t)} download RTOs ({int(t['repeat'].sum())} repeats of a segment)")
    print(context_table(t).to_string())
    if all((r / "truth_drops.csv").exists() for r in runs):
        cl, base = continuous_loss_causes(runs)
        print("continuous-loss first RTOs by what dropped the outstanding copies (truth_drops.csv):")
        print(cl.to_string() if len(cl) else "  none")
        print("all download drops by cause:")
        print(base.to_string())


if __name__ == "__main__":
    main()
