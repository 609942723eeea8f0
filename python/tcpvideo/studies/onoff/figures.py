"""The onoff study's figures, numbered as in seed 004, drawn from the aggregated runs table.

Every line plot shows the mean over seeds and, as error bars, the min and max of the per-run
means (the paper's "average value and the error bars the min and max value", §IV).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from tcpvideo.studies.report import Figure, png_of  # noqa: E402

COLOURS = {"cubic": "#d62728", "bic": "#ff7f0e", "reno": "#2ca02c", "vegas": "#1f77b4", "bbr": "#9467bd",
           "regular": "#d62728", "distributed": "#17becf", "cwnd 20": "#8c564b", "2 s": "#d62728", "10 s": "#7f7f7f"}

METRICS = {
    "liveness_mean_s": ("liveness (s)", "average liveness at the end of the stream"),
    "startup_mean_s": ("startup time (s)", "average startup time"),
    "drops": ("dropped packets", "packets dropped at the bottleneck (whole run)"),
    "quality_mean": ("mean quality (0–5)", "average segment quality (Table I index; Fig 9 coding)"),
}


def _series(ax, agg: pd.DataFrame, metric: str, label: str, colour: str) -> None:
    a = agg.sort_values("clients")
    mean, lo, hi = a[f"{metric}_mean"], a[f"{metric}_min"], a[f"{metric}_max"]
    ax.errorbar(a["clients"], mean, yerr=[mean - lo, hi - mean], marker="o", capsize=3, label=label, color=colour)


def _panel(ax, agg_by_label: dict, metric: str) -> None:
    for label, agg in agg_by_label.items():
        if len(agg):
            _series(ax, agg, metric, label, COLOURS.get(label, None))
    ax.set_xlabel("number of clients")
    ax.set_ylabel(METRICS[metric][0])
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def _queue(ax, q: pd.DataFrame, title: str, limit: int = 1375) -> None:
    if q is None or q.empty:
        ax.text(0.5, 0.5, "no queue sample", ha="center", transform=ax.transAxes)
        return
    ax.plot(q["t_s"], q["packets"], lw=0.6, color="#444")
    ax.axhline(limit, color="#d62728", lw=0.8, ls="--", label="queue limit")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("R1 queue (packets)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, loc="upper right")


def comparison_figure(name: str, caption: str, agg_by_label: dict, queues: dict[str, pd.DataFrame],
                      metrics=("liveness_mean_s", "startup_mean_s", "drops")) -> Figure:
    """Panels: each metric vs clients (one line per label), then the queue samples."""
    n = len(metrics) + len(queues)
    cols = 2 if n > 1 else 1
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 3.6 * rows), squeeze=False)
    flat = list(axes.ravel())
    for ax, m in zip(flat, metrics):
        _panel(ax, agg_by_label, m)
        ax.set_title(METRICS[m][1], fontsize=9)
    for ax, (title, q) in zip(flat[len(metrics):], queues.items()):
        _queue(ax, q, title)
    for ax in flat[n:]:
        ax.axis("off")
    fig.suptitle(caption, fontsize=10)
    fig.tight_layout()
    return Figure(name, caption, png_of(fig))


def combinations_figure(name: str, caption: str, combos: pd.DataFrame) -> Figure:
    """Fig 16: quality, liveness and drops of the 16 settings at one client count."""
    c = combos.sort_values("order")
    fig, axes = plt.subplots(1, 3, figsize=(17, 4))
    x = range(len(c))
    for ax, metric in zip(axes, ("quality_mean", "liveness_mean_s", "drops")):
        mean, lo, hi = c[f"{metric}_mean"], c[f"{metric}_min"], c[f"{metric}_max"]
        colours = ["#1f77b4" if "A" in k else "#d62728" for k in c["combination"]]
        ax.bar(x, mean, yerr=[mean - lo, hi - mean], color=colours, capsize=2)
        ax.set_xticks(list(x))
        ax.set_xticklabels(c["combination"], rotation=60, fontsize=8)
        ax.set_ylabel(METRICS[metric][0])
        ax.set_title(METRICS[metric][1] + " (blue: with vegas)", fontsize=9)
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle(caption, fontsize=10)
    fig.tight_layout()
    return Figure(name, caption, png_of(fig))


def timeline_figure(name: str, caption: str, timelines: dict, clients: int, labels: dict[str, str]) -> Figure:
    """Retransmissions per segment period (left) and cumulative (right), one line per setting."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
    for shown, cfg in labels.items():
        t = timelines.get((cfg, clients))
        if t is None:
            continue
        x = list(range(len(t)))
        axes[0].plot(x, t, marker=".", lw=1, label=shown, color=COLOURS.get(shown))
        cum, total = [], 0
        for v in t:
            total += v
            cum.append(total)
        axes[1].plot(x, cum, lw=1.2, label=shown, color=COLOURS.get(shown))
    axes[0].set_ylabel("retransmissions per period")
    axes[1].set_ylabel("cumulative retransmissions")
    for ax in axes:
        ax.set_xlabel("segment period")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(caption, fontsize=10)
    fig.tight_layout()
    return Figure(name, caption, png_of(fig))
