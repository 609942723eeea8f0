"""The study's tables from the per-run results: per cell (stream × location) the means over seeds
of each scheme, the simulated optimal x (§V-B's criteria), Table II (E2E vs the optimal hold-x)
and Table III (modeled vs simulated x and backhaul throughput), each next to the paper's.

§V-B: the best scheme causes no buffering in the session; among those, the lowest live latency;
then the lowest initial delay. A cell where no hold-0..4 run is free of buffering has no optimal x
(reported as missing, never guessed).

Several seeds (``--full``: 3): the paper ran each cell three times (9 AM, 2 PM, 8 PM) and reports one
session per cell (the morning's; "the observed results do not vary significantly"), so its x is
one session's optimum, and any stall counts (Table II lists stalls down to 0.4 s). Ours applies
§V-B to each seed's session and takes the median of the per-seed x (``sim_optimal_x``: what a
typical single session gives); ``sim_optimal_x_all_seeds`` is the stricter x that is free of
buffering in every seed (the worst of the sessions). With one seed both are the same.
"""

from __future__ import annotations

import pandas as pd

from tcpvideo.studies.ethle import paper
from tcpvideo.studies.ethle.plan import LOCATIONS, STREAMS, stream_label

METRICS = ("initial_delay_s", "buffering_s", "stalls", "total_latency_s", "hold_latency_s", "receiver_throughput_mbps",
           "backhaul_throughput_mbps", "predicted_backhaul_mbps", "model_x", "measured_backhaul_rtt_ms", "player_latency_s")


def per_scheme(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean over seeds per (stream, location, scheme); ``buffer_free`` = no run of it buffered."""
    g = runs.groupby(["stream", "location", "scheme_name"], sort=False)
    agg = g[list(METRICS)].mean(numeric_only=True)
    agg["buffer_free"] = g["buffering_s"].max() == 0
    agg["runs"] = g.size()
    return agg.reset_index()


def per_seed_optimal_x(runs: pd.DataFrame) -> pd.DataFrame:
    """§V-B's optimal x of each seed's session per cell (NaN where no hold is buffer-free)."""
    rows = []
    for (stream, location, seed), g in runs.groupby(["stream", "location", "seed"], sort=False):
        g = g.assign(buffer_free=g["buffering_s"] == 0)
        best = optimal(g)
        rows.append({"stream": stream, "location": location, "seed": seed,
                     "x": None if best is None else int(best["scheme_name"][4:])})
    return pd.DataFrame(rows, columns=["stream", "location", "seed", "x"])


def median_x(xs: pd.Series) -> int | None:
    """The per-seed optima's median (the lower middle one for an even count); None if any seed has
    no buffer-free hold (a missing x is never guessed)."""
    if xs.isna().any() or xs.empty:
        return None
    v = sorted(int(x) for x in xs)
    return v[(len(v) - 1) // 2]


def optimal(cell: pd.DataFrame) -> pd.Series | None:
    holds = cell[cell["scheme_name"] != "e2e"]
    ok = holds[holds["buffer_free"]]
    if ok.empty:
        return None
    return ok.sort_values(["total_latency_s", "initial_delay_s"], kind="stable").iloc[0]


def cells(agg: pd.DataFrame, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per cell: E2E, the simulated optimal hold-x (median over seeds of each seed's optimum
    when ``runs`` is given, else the x free of buffering in every seed), the model's x, and the
    paper's numbers."""
    seed_x = per_seed_optimal_x(runs) if runs is not None else None
    rows = []
    for bitrate, seg_s, size_mb in STREAMS:
        stream = stream_label(bitrate, seg_s)
        for location, rtt in LOCATIONS:
            cell = agg[(agg["stream"] == stream) & (agg["location"] == location)]
            if cell.empty:
                continue
            e2e = cell[cell["scheme_name"] == "e2e"].iloc[0]
            strict = optimal(cell)
            best = strict
            per_seed = []
            if seed_x is not None:
                xs = seed_x[(seed_x["stream"] == stream) & (seed_x["location"] == location)]["x"]
                per_seed = [None if pd.isna(x) else int(x) for x in xs]
                mx = median_x(xs)
                best = None if mx is None else cell[cell["scheme_name"] == f"hold{mx}"].iloc[0]
            holds = cell[cell["scheme_name"] != "e2e"]
            model_x = int(round(holds["model_x"].iloc[0]))
            model_run = holds[holds["scheme_name"] == f"hold{model_x}"]
            p2, p3 = paper.table2(stream, location), paper.table3(stream, location)
            row = {"stream": stream, "location": location, "rtt_ms": rtt, "segment_mb": size_mb,
                   "e2e_throughput_mbps": e2e["receiver_throughput_mbps"], "e2e_initial_s": e2e["initial_delay_s"],
                   "e2e_buffering_s": e2e["buffering_s"], "e2e_total_s": e2e["total_latency_s"],
                   "sim_optimal_x": None if best is None else int(best["scheme_name"][4:]),
                   "sim_optimal_x_all_seeds": None if strict is None else int(strict["scheme_name"][4:]),
                   "sim_optimal_x_per_seed": " ".join("-" if x is None else str(x) for x in per_seed),
                   "holdx_throughput_mbps": None if best is None else best["receiver_throughput_mbps"],
                   "holdx_initial_s": None if best is None else best["initial_delay_s"],
                   "holdx_buffering_s": None if best is None else best["buffering_s"],
                   "holdx_total_s": None if best is None else best["total_latency_s"],
                   "model_x": model_x,
                   "model_x_buffering_s": None if model_run.empty else model_run["buffering_s"].iloc[0],
                   "model_th_bh_mbps": holds["predicted_backhaul_mbps"].iloc[0],
                   "sim_th_bh_mbps": holds["backhaul_throughput_mbps"].mean(),
                   "measured_rtt_ms": holds["measured_backhaul_rtt_ms"].iloc[0]}
            row.update({f"paper_{k}": v for k, v in p2.items()})
            row.update({f"paper_t3_{k}": v for k, v in p3.items()})
            rows.append(row)
    return pd.DataFrame(rows)
