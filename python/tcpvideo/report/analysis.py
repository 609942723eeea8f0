"""Self-contained HTML report of a capture analysis: the seed's tables and plots — CDFs of flow
completion time and throughput (seed 000 Figs. 3–4), of burst size (Trickle Fig. 5, seed 000
Fig. 6), RTT/RTT_3WHS by in_flight (seed 000 Fig. 5), and stall-type shares (Table 2) — and a
sortable per-flow table. Plots are matplotlib PNGs embedded as base64, so the file can be mailed
or attached to a ticket.

Written to be read by a person (issue 12, checked with headless-Chromium screenshots of reports
on public captures): it opens with the capture names, the vantage point of the flows and every
warning; numbers are rounded to what they mean (ms with 1 decimal, kB, %); a missing value is
"—", never ``None`` or ``{}``; a chart with nothing to draw is replaced by a sentence; a CDF of
one flow is drawn as a step from 0 to 1; tick labels are rotated or thinned so they never
overlap, and legends sit outside the data."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Sequence

# Rows of the per-flow table (beyond that the table says how many were left out: the Parquet
# and CSV tables have them all).
MAX_FLOW_ROWS = 500


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return "<img src='data:image/png;base64," + base64.b64encode(buf.getvalue()).decode() + "'/>"


def _cdf(ax, values, label) -> bool:
    """Empirical CDF as a step that rises from 0 at the first value (visible for one value too)."""
    import numpy as np

    v = np.sort(np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=float))
    if len(v) == 0:
        return False
    x = np.concatenate([[v[0]], v])
    y = np.concatenate([[0.0], np.arange(1, len(v) + 1) / len(v)])
    ax.step(x, y, where="post", label=f"{label} (n={len(v)})")
    if len(v) == 1:
        ax.plot(v, [1.0], "o", color=ax.lines[-1].get_color())
    return True


def _finish_axes(ax, xlabel: str, ylabel: str = "CDF") -> None:
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.set_ylim(0, 1.05)
    # Few, non-overlapping ticks; long numbers rotate. On a log axis only the decades are
    # labelled (minor labels like 2×10¹ 3×10¹ ran into each other).
    from matplotlib.ticker import LogLocator, MaxNLocator, NullFormatter

    if ax.get_xscale() == "log":
        ax.xaxis.set_major_locator(LogLocator(base=10, numticks=8))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=6))
    ax.tick_params(axis="x", labelrotation=30)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="lower right", framealpha=0.9)


def _plots(result) -> list[tuple[str, str]]:
    """(title, <img> or a sentence) per chart."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    flows = result.flows.to_pydict()
    out = []
    dirs = flows.get("direction", [])
    with_bytes = [i for i, b in enumerate(flows.get("bytes", [])) if b]
    if with_bytes:
        fig, ax = plt.subplots(1, 2, figsize=(10, 3.6))
        for d in ("upload", "download"):
            idx = [i for i in with_bytes if dirs[i] == d]
            _cdf(ax[0], [flows["fct_ns"][i] / 1e9 for i in idx], d)
            _cdf(ax[1], [flows["throughput_bps"][i] / 8e3 for i in idx if flows["throughput_bps"][i]], d)
        tput = [flows["throughput_bps"][i] / 8e3 for i in with_bytes if flows["throughput_bps"][i]]
        if tput and max(tput) / min(tput) > 20:
            ax[1].set_xscale("log")  # as the seed's Fig. 4, when the spread calls for it
        fct = [flows["fct_ns"][i] / 1e9 for i in with_bytes]
        if fct and min(fct) > 0 and max(fct) / min(fct) > 100:
            ax[0].set_xscale("log")
        _finish_axes(ax[0], "flow completion time (s)")
        _finish_axes(ax[1], "throughput (kB/s)")
        fig.tight_layout()
        out.append(("Flow completion time and throughput (seed 000 Figs. 3–4)", _png(fig)))
    else:
        out.append(("Flow completion time and throughput (seed 000 Figs. 3–4)",
                    "<p>No flow carried payload: nothing to draw.</p>"))

    bursts = result.bursts.to_pydict()
    title = "Micro-burst sizes (≥4 packets ≤1 ms apart)"
    if bursts.get("packets"):
        fig, ax = plt.subplots(figsize=(6, 3.6))
        frames = bursts["frame"]
        kinds = sorted(set(frames))
        if len(kinds) > 1:
            for ft in kinds:
                _cdf(ax, [p for p, f in zip(bursts["packets"], frames) if f == ft], f"frame {ft}")
        _cdf(ax, bursts["packets"], "all")
        _finish_axes(ax, "burst size (packets)")
        fig.tight_layout()
        out.append((title, _png(fig)))
    else:
        out.append((title, "<p>No micro-burst in this capture.</p>"))

    rb = result.rtt_buckets.to_pydict()
    title = "RTT over handshake RTT by in_flight (seed 000 Fig. 5)"
    if any(rb.get("samples", [])):
        fig, ax = plt.subplots(figsize=(6, 3.6))
        labels = [f"{lo}–{'∞' if hi is None else hi}" for lo, hi in zip(rb["lo_kb"], rb["hi_kb"])]
        ratios = [r if r is not None else 0 for r in rb["mean_ratio"]]
        bars = ax.bar(labels, ratios)
        for b, n in zip(bars, rb["samples"]):
            if n:
                ax.annotate(f"n={n}", (b.get_x() + b.get_width() / 2, b.get_height()), ha="center",
                            va="bottom", fontsize=7)
        ax.set_xlabel("in_flight (kB)")
        ax.set_ylabel("RTT / RTT_3WHS")
        ax.tick_params(axis="x", labelrotation=30)
        ax.grid(alpha=0.3, axis="y")
        fig.tight_layout()
        out.append((title, _png(fig)))
    else:
        out.append((title, "<p>No RTT sample with a handshake RTT to compare it to.</p>"))

    s = result.summary
    title = "Stall types by time (seed 000 Table 2, §2.1)"
    dirs_with = [d for d in ("download", "upload") if s[d]["stalls"]]
    if dirs_with:
        fig, ax = plt.subplots(1, len(dirs_with), figsize=(5 * len(dirs_with), 3.8), squeeze=False)
        for a, d in zip(ax[0], dirs_with):
            st = s[d]["stall_types_by_time"]
            a.barh(list(st), [100 * v["share"] for v in st.values()])
            a.set_title(f"{d}: {s[d]['stalls']} stalls")
            a.set_xlabel("% of stall time")
            a.invert_yaxis()
            a.grid(alpha=0.3, axis="x")
        fig.tight_layout()
        out.append((title, _png(fig)))
    else:
        out.append((title, "<p>No stall in this capture.</p>"))
    return out


def _cell(v) -> str:
    if v is None or v == {} or v == []:
        return "—"
    if isinstance(v, dict):
        return ", ".join(f"{k} {x}" for k, x in v.items())
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _table(rows: list[list], header: list[str], sortable: bool = False) -> str:
    h = "".join(f"<th>{html.escape(str(c))}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(c))}</td>" for c in r) + "</tr>" for r in rows)
    cls = " class='sortable'" if sortable else ""
    return f"<table{cls}><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def _pct(x):
    return "—" if x is None else f"{100 * x:.1f}"


def _num(x: float) -> str:
    """A measured value with the digits it means: 3 significant digits below 100, none above
    (0.0312 ms of a LAN RTT stays visible; 281.9 kB/s is 282)."""
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:.0f}"
    return f"{x:.3g}"


def _ms(ns):
    return "—" if ns is None else _num(ns / 1e6)


def _flow_rows(result) -> tuple[list[list], int]:
    f = result.flows.to_pydict()
    n = len(f.get("flow_id", []))
    rows = []
    for i in range(min(n, MAX_FLOW_ROWS)):
        tput = f["throughput_bps"][i]
        rows.append([
            f["flow_id"][i],
            f"{f['client_ip'][i]}:{f['client_port'][i]}",
            f"{f['server_ip'][i]}:{f['server_port'][i]}",
            f["vantage"][i],
            f["direction"][i],
            f["app"][i],
            _num(f["bytes"][i] / 1e3),
            _num(f["fct_ns"][i] / 1e9) if f["bytes"][i] else "—",
            "—" if tput is None else _num(tput / 8e3),
            _ms(f["rtt_initial_ns"][i]),
            _ms(f["srtt_end_ns"][i]),
            f["retrans_packets"][i],
            f"{f['fast_retrans'][i]}/{f['timeout_retrans'][i]}/{f['recovery_retrans'][i]}/"
            f"{f['other_retrans'][i]}/{f['unclassified_retrans'][i]}",
            f["stall_count"][i],
            _pct(f["stall_share"][i]) if f["bytes"][i] else "—",
            f["zero_window_episodes"][i],
            f["keepalive_packets"][i],
            f["closed_by"][i],
        ])
    return rows, n


FLOW_HEADER = ["flow", "client", "server", "vantage", "direction", "app", "kB", "FCT s", "throughput kB/s",
               "initial RTT ms", "SRTT end ms", "retrans pkts", "by kind f/t/r/o/u",
               "stalls", "stall % of FCT", "zero-window episodes", "keep-alive pkts", "closed by"]

# Click a header to sort by it (numbers numerically, "—" last); click again to reverse.
_SORT_JS = """
document.querySelectorAll('table.sortable th').forEach((th, col) => {
  th.title = 'click to sort'; th.style.cursor = 'pointer';
  th.addEventListener('click', () => {
    const body = th.closest('table').tBodies[0];
    const asc = th.dataset.dir !== 'asc'; th.dataset.dir = asc ? 'asc' : 'desc';
    const key = tr => { const t = tr.cells[col].textContent.trim();
      const x = parseFloat(t); return t === '—' ? null : (isNaN(x) || /[:a-z]/i.test(t) ? t : x); };
    const rows = Array.from(body.rows);
    rows.sort((a, b) => { const x = key(a), y = key(b);
      if (x === null) return 1; if (y === null) return -1;
      const c = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x).localeCompare(String(y));
      return asc ? c : -c; });
    rows.forEach(r => body.appendChild(r));
  });
});
"""


def write_report(result, path: str | Path, captures: Sequence[str] = ()) -> Path:
    """Write the report of an AnalysisResult to ``path`` (HTML). ``captures``: the input files,
    named at the top."""
    s = result.summary
    names = ", ".join(Path(c).name for c in captures) or "(capture names not given)"
    parts = [f"<h1>tcpvideo analyze: {html.escape(names)}</h1>"]
    r, d = s["read"], s["decode"]
    vantage = s.get("vantage") or {}
    parts.append(
        "<p class='lead'>"
        f"{s['flows']} TCP flows from {r['records']} records ({d['tcp']} TCP). "
        "Vantage point of the flows (from each handshake): "
        + (", ".join(f"<b>{html.escape(k)}</b> {n}" for k, n in vantage.items()) or "—")
        + f". Exact duplicate frames dropped: {d.get('duplicates', 0)}. "
        f"Flows without payload (refused or empty, not counted in FCT/throughput): {s.get('refused_or_empty_flows', 0)}."
        "</p>")
    warnings = list(s.get("warnings", []))
    if vantage.get("unknown"):
        warnings.insert(0, {"file": "", "offset": 0, "message":
                            f"{vantage['unknown']} flows have no complete handshake: their vantage point is unknown "
                            "and their RTTs are taken as if captured at the server"})
    if warnings:
        parts.append("<div class='warn'><b>Warnings</b><ul>" + "".join(
            f"<li>{html.escape((w['file'] + ' @ ' + str(w['offset']) + ': ') if w['file'] else '')}"
            f"{html.escape(w['message'])}</li>" for w in warnings) + "</ul></div>")
    rows = []
    for dname in ("upload", "download"):
        x = s[dname]
        med = x.get("throughput_median_bps")
        rows.append([dname, x["flows"], "—" if x.get("fct_median_s") is None else f"{x['fct_median_s']:.2f}",
                     "—" if med is None else f"{med / 8e3:.1f}", _pct(x["stall_share_of_fct"]), x["stalls"],
                     _pct(x["retrans_rate"]), _pct(x["reordering_rate"])])
    parts.append("<h2>Flows and stall share of FCT</h2>" + _table(
        rows, ["direction", "flows with payload", "FCT median s", "throughput median kB/s", "stall % of FCT",
               "stalls", "retrans %", "reordering %"]))
    flow_rows, n = _flow_rows(result)
    more = f" (first {MAX_FLOW_ROWS} of {n}; flows.csv has all)" if n > MAX_FLOW_ROWS else ""
    parts.append(f"<h2>Flows{more}</h2><p class='hint'>Click a column header to sort. Retransmissions by kind: "
                 "fast / timeout / recovery (after a timeout) / other / unclassified (seen at the receiver).</p>"
                 "<div class='scroll'>" + _table(flow_rows, FLOW_HEADER, sortable=True) + "</div>")
    for dname in ("download", "upload"):
        st = s[dname]["stall_types_by_time"]
        if not s[dname]["stalls"]:
            parts.append(f"<h2>{dname} stall types</h2><p>No {dname} stall.</p>")
            continue
        parts.append(f"<h2>{dname} stall types</h2>" + _table(
            [[k, v["count"], f"{v['time_s']:.3f}", _pct(v["share"])] for k, v in st.items()],
            ["type", "count", "time s", "% of stall time"]))
    tt = s["timeout_types"]
    n_timeouts = sum(v["count"] for v in tt["all"].values())
    if n_timeouts:
        cols = [k for k in ("I", "P", "V", "meta", "unknown", "all") if k in tt]
        parts.append("<h2>Timeout retransmission types (Table 5)</h2>" + _table(
            [[ty] + [f"{_pct(tt[k][ty]['share'])} % ({tt[k][ty]['count']})" for k in cols] for ty in tt["all"]],
            ["type"] + cols))
    else:
        parts.append("<h2>Timeout retransmission types (Table 5)</h2><p>No timeout retransmission.</p>")
    frames = [f for f in s["frame_types"] if f["frames"] or f["packets"]]
    if any(f["frames"] for f in frames):
        parts.append("<h2>Frames (Table 4)</h2>" + _table(
            [[f["frame"], f["frames"], _pct(f["frames_share"]) if f["frame"] in ("I", "P", "V") else "—",
              "—" if f["mean_interval_s"] is None else f"{f['mean_interval_s']:.3f}",
              "—" if f["mean_size_bytes"] is None else f"{f['mean_size_bytes']:.0f}", f["packets"],
              _pct(f["loss_rate"]), _pct(f["timeout_per_loss"])] for f in frames],
            ["type", "frames", "share %", "interval s", "size B", "packets", "loss %", "timeout/loss %"]))
    else:
        parts.append("<h2>Frames (Table 4)</h2><p>No video frames recognised (no FLV/RTMP payload).</p>")
    p = s["pairing"]
    if p["channels"]:
        kinds = ", ".join(f"{k} {v}" for k, v in p["caused_kinds"].items()) or "—"
        parts.append(f"<h2>Upload → download (Table 3)</h2><p>{p['channels']} paired channels; "
                     f"{p['upload_stalls_causing']} of {p['upload_stalls']} upload stalls followed by a download stall "
                     f"within ±1 s ({_pct(p['share_causing'])} %). Caused kinds: {html.escape(kinds)}</p>")
    for title, img in _plots(result):
        parts.append(f"<h2>{html.escape(title)}</h2>{img}")
    counters = {**r, **d}
    parts.append("<h2>Input</h2>" + _table([[k.replace("_", " "), v] for k, v in counters.items()],
                                           ["counter", "value"]))
    style = ("body{font-family:sans-serif;max-width:1200px;margin:auto;padding:0 12px}"
             "table{border-collapse:collapse;margin:8px 0;font-size:13px}"
             "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#eee}"
             "td:first-child,th:first-child{text-align:left}"
             ".scroll{overflow:auto;max-height:480px;border:1px solid #ddd}.scroll th{position:sticky;top:0}"
             "th{font-size:12px;vertical-align:bottom}"
             ".warn{background:#fff4e5;border:1px solid #f0b37e;padding:4px 12px;margin:8px 0}"
             ".hint{color:#666;font-size:12px;margin:0}.lead{font-size:15px}img{max-width:100%}")
    doc = (f"<!doctype html><html><head><meta charset='utf-8'><title>tcpvideo analyze: {html.escape(names)}"
           f"</title><style>{style}</style></head><body>{''.join(parts)}<script>{_SORT_JS}</script></body></html>")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc)
    return path
