"""The study's tables from the per-run results: per cell (stream × location) the means over seeds
of each scheme, the simulated optimal x (§V-B's criteria), Table II (E2E vs the optimal hold-x)
and Table III (modeled vs simulated x and backhaul throughput), each next to the paper's.

§V-B: the best scheme causes no buffering in the session; among those, the lowest live latency;
then the lowest initial delay. A cell where no hold-0..4 run is free of buffering has no optimal x
(reported as missing, never guessed).
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


def optimal(cell: pd.DataFrame) -> pd.Series | None:
    holds = cell[cell["scheme_name"] != "e2e"]
    ok = holds[holds["buffer_free"]]
    if ok.empty:
        return None
    return ok.sort_values(["total_latency_s", "initial_delay_s"], kind="stable").iloc[0]


def cells(agg: pd.DataFrame) -> pd.DataFrame:
    """One row per cell: E2E, the simulated optimal hold-x, the model's x, and the paper's numbers."""
    rows = []
    for bitrate, seg_s, size_mb in STREAMS:
        stream = stream_label(bitrate, seg_s)
        for location, rtt in LOCATIONS:
            cell = agg[(agg["stream"] == stream) & (agg["location"] == location)]
            if cell.empty:
                continue
            e2e = cell[cell["scheme_name"] == "e2e"].iloc[0]
            best = optimal(cell)
            holds = cell[cell["scheme_name"] != "e2e"]
            model_x = int(round(holds["model_x"].iloc[0]))
            model_run = holds[holds["scheme_name"] == f"hold{model_x}"]
            p2, p3 = paper.table2(stream, location), paper.table3(stream, location)
            row = {"stream": stream, "location": location, "rtt_ms": rtt, "segment_mb": size_mb,
                   "e2e_throughput_mbps": e2e["receiver_throughput_mbps"], "e2e_initial_s": e2e["initial_delay_s"],
                   "e2e_buffering_s": e2e["buffering_s"], "e2e_total_s": e2e["total_latency_s"],
                   "sim_optimal_x": None if best is None else int(best["scheme_name"][4:]),
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
