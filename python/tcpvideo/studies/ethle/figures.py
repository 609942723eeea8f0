"""Fig. 9 (live latency stacks: initial delay + buffering + holding, for E2E and hold-0..4, per
stream and location) and a backhaul-throughput comparison (Table III, modeled vs simulated vs the
paper's actual)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from tcpvideo.studies.ethle.plan import LOCATIONS, SCHEMES, STREAMS, stream_label  # noqa: E402
from tcpvideo.studies.report import Figure, png_of  # noqa: E402

_SHORT = {"e2e": "E2E", **{f"hold{i}": f"H{i}" for i in range(5)}}


def fig9(agg: pd.DataFrame) -> Figure:
    fig, axes = plt.subplots(len(STREAMS), len(LOCATIONS), figsize=(14, 17), squeeze=False)
    for r, (bitrate, seg_s, _) in enumerate(STREAMS):
        stream = stream_label(bitrate, seg_s)
        for c, (location, _) in enumerate(LOCATIONS):
            ax = axes[r][c]
            cell = agg[(agg["stream"] == stream) & (agg["location"] == location)].set_index("scheme_name")
            names = [s for s in SCHEMES if s in cell.index]
            init = [cell.loc[s, "initial_delay_s"] for s in names]
            buf = [cell.loc[s, "buffering_s"] for s in names]
            hold = [cell.loc[s, "hold_latency_s"] for s in names]
            xs = range(len(names))
            ax.bar(xs, init, color="#4c72b0", label="initial delay")
            ax.bar(xs, buf, bottom=init, color="#dd8452", label="buffering")
            ax.bar(xs, hold, bottom=[a + b for a, b in zip(init, buf)], color="#55a868", label="holding")
            ax.set_xticks(list(xs), [_SHORT[s] for s in names], fontsize=8)
            ax.set_title(f"{location}, {stream}", fontsize=9)
            if c == 0:
                ax.set_ylabel("live latency (s)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return Figure("fig09_latency_stacks", "Fig 9: live stream latency after the session = initial delay + buffering "
                  "+ x·l_seg, E2E and hold-0..4 (simulated; mean over seeds)", png_of(fig))


def throughput_figure(cells: pd.DataFrame) -> Figure:
    fig, ax = plt.subplots(figsize=(12, 4))
    labels = [f"{r.location[:3]} {r.stream}" for r in cells.itertuples()]
    xs = range(len(cells))
    w = 0.27
    ax.bar([x - w for x in xs], cells["model_th_bh_mbps"], w, label="model (doubling from 1 MSS)")
    ax.bar(list(xs), cells["sim_th_bh_mbps"], w, label="simulated (transient BBR fetches)")
    ax.bar([x + w for x in xs], cells["paper_t3_actual_th_mbps"], w, label="paper, actual")
    ax.set_xticks(list(xs), labels, rotation=75, fontsize=7)
    ax.set_ylabel("backhaul throughput (Mbit/s)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return Figure("table3_backhaul_throughput", "Table III: backhaul throughput per cell — modeled, simulated, "
                  "and the paper's measured", png_of(fig))
