"""Self-contained HTML report of a capture analysis: the seed's tables and plots — CDFs of flow
completion time and throughput (seed 000 Figs. 3–4), of burst size (Trickle Fig. 5, seed 000
Fig. 6), RTT/RTT_3WHS by in_flight (seed 000 Fig. 5), and stall-type shares (Table 2). Plots are
matplotlib PNGs embedded as base64, so the file can be mailed or attached to a ticket."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return "<img src='data:image/png;base64," + base64.b64encode(buf.getvalue()).decode() + "'/>"


def _cdf(ax, values, label):
    v = np.sort(np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float))
    if len(v) == 0:
        return
    ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=f"{label} (n={len(v)})")


def _plots(result) -> list[tuple[str, str]]:
    flows = result.flows.to_pydict()
    out = []
    dirs = flows.get("direction", [])
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    for d in ("upload", "download"):
        idx = [i for i, x in enumerate(dirs) if x == d]
        _cdf(ax[0], [flows["fct_ns"][i] / 1e9 for i in idx], d)
        _cdf(ax[1], [flows["throughput_bps"][i] / 8e3 for i in idx], d)
    ax[0].set_xlabel("flow completion time (s)")
    ax[1].set_xlabel("throughput (kB/s)")
    tput = [x for x in flows.get("throughput_bps", []) if x and x > 0]
    if tput and max(tput) / min(tput) > 20:
        ax[1].set_xscale("log")  # as the seed's Fig. 4, when the spread calls for it
    for a in ax:
        a.set_ylabel("CDF")
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    out.append(("Flow completion time and throughput (seed 000 Figs. 3–4)", _png(fig)))

    bursts = result.bursts.to_pydict()
    if bursts.get("packets"):
        fig, ax = plt.subplots(figsize=(5, 3.6))
        frames = bursts["frame"]
        for ft in sorted(set(frames)):
            _cdf(ax, [p for p, f in zip(bursts["packets"], frames) if f == ft], f"frame {ft}")
        _cdf(ax, bursts["packets"], "all")
        ax.set_xlabel("burst size (packets)")
        ax.set_ylabel("CDF")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        out.append(("Micro-burst sizes (≥4 packets ≤1 ms apart)", _png(fig)))

    rb = result.rtt_buckets.to_pydict()
    if any(rb.get("samples", [])):
        fig, ax = plt.subplots(figsize=(5, 3.6))
        labels = [f"{lo}-{'∞' if hi is None else hi}" for lo, hi in zip(rb["lo_kb"], rb["hi_kb"])]
        ratios = [r if r is not None else 0 for r in rb["mean_ratio"]]
        ax.bar(labels, ratios)
        ax.set_xlabel("in_flight (kB)")
        ax.set_ylabel("RTT / RTT_3WHS")
        ax.grid(alpha=0.3, axis="y")
        out.append(("RTT over handshake RTT by in_flight (seed 000 Fig. 5)", _png(fig)))

    s = result.summary
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
    for a, d in zip(ax, ("download", "upload")):
        st = s[d]["stall_types_by_time"]
        a.bar(list(st), [100 * v["share"] for v in st.values()])
        a.set_title(f"{d} stalls ({s[d]['stalls']})")
        a.set_ylabel("% of stall time")
        a.tick_params(axis="x", rotation=30)
    out.append(("Stall types by time (seed 000 Table 2, §2.1)", _png(fig)))
    return out


def _table(rows: list[list], header: list[str]) -> str:
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def _pct(x):
    return "—" if x is None else f"{100 * x:.1f}"


def write_report(result, path: str | Path) -> Path:
    """Write the report of an AnalysisResult to ``path`` (HTML)."""
    s = result.summary
    parts = ["<h1>tcpvideo analyze</h1>"]
    rows = []
    for d in ("upload", "download"):
        x = s[d]
        rows.append([d, x["flows"], _pct(x["stall_share_of_fct"]), x["stalls"], _pct(x["retrans_rate"]),
                     _pct(x["reordering_rate"])])
    parts.append("<h2>Stall share of FCT</h2>" + _table(rows, ["direction", "flows", "stall % of FCT", "stalls",
                                                               "retrans %", "reordering %"]))
    for d in ("download", "upload"):
        st = s[d]["stall_types_by_time"]
        parts.append(f"<h2>{d} stall types</h2>" + _table(
            [[k, v["count"], f"{v['time_s']:.3f}", _pct(v["share"])] for k, v in st.items()],
            ["type", "count", "time s", "% of stall time"]))
    tt = s["timeout_types"]
    cols = [k for k in ("I", "P", "V", "meta", "unknown", "all") if k in tt]
    parts.append("<h2>Timeout retransmission types (Table 5)</h2>" + _table(
        [[ty] + [f"{_pct(tt[k][ty]['share'])} ({tt[k][ty]['count']})" for k in cols] for ty in tt["all"]],
        ["type"] + cols))
    parts.append("<h2>Frames (Table 4)</h2>" + _table(
        [[f["frame"], f["frames"], _pct(f["frames_share"]), f["mean_interval_s"], f["mean_size_bytes"], f["packets"],
          _pct(f["loss_rate"]), _pct(f["timeout_per_loss"])] for f in s["frame_types"]],
        ["type", "frames", "share %", "interval s", "size B", "packets", "loss %", "timeout/loss %"]))
    p = s["pairing"]
    parts.append(f"<h2>Upload → download (Table 3)</h2><p>{p['channels']} paired channels; "
                 f"{p['upload_stalls_causing']} of {p['upload_stalls']} upload stalls followed by a download stall "
                 f"within ±1 s ({_pct(p['share_causing'])}%). Caused kinds: {html.escape(str(p['caused_kinds']))}</p>")
    for title, img in _plots(result):
        parts.append(f"<h2>{html.escape(title)}</h2>{img}")
    r, d = s["read"], s["decode"]
    parts.append("<h2>Input</h2>" + _table([[k, v] for k, v in {**r, **d}.items()], ["counter", "value"]))
    if s.get("warnings"):
        parts.append("<h2>Warnings</h2><ul>" + "".join(
            f"<li>{html.escape(w['file'])} @ {w['offset']}: {html.escape(w['message'])}</li>" for w in s["warnings"]) + "</ul>")
    style = ("body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse;margin:8px 0}"
             "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#eee}")
    doc = f"<!doctype html><html><head><meta charset='utf-8'><title>tcpvideo analyze</title><style>{style}</style></head><body>{''.join(parts)}</body></html>"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc)
    return path
