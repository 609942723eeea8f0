"""Simulated vs real: one scenario's two runs side by side, flow by flow and link by link.

Inputs are two ``SimResult``s with the same tables (``tcpvideo.simulate`` and
``tcpvideo.emulate``). Outputs, in ``out``: ``compare_flows.csv``, ``compare_links.csv``,
``compare.json`` (the headline numbers and every difference found), plots (queue over time per
shaped link, download-time CDFs, goodput per flow) and ``compare.html``.

What is compared and the bounds issue 11 sets (a difference beyond them is *named* in the
report, with the flow or link):

* goodput — aggregate and per flow, relative difference, bound 10 %;
* retransmissions — aggregate, relative difference, bound 25 % (simulator: fast + timeout + TLP
  retransmissions of the sender; Linux: ``tcpi_total_retrans``);
* per-request download times — the two-sample Kolmogorov–Smirnov distance D = sup |F_sim −
  F_real| of the pooled distributions (and per flow), reported, with the medians;
* per link direction — bytes sent, drops, mean queue.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

GOODPUT_BOUND = 0.10
RETRANS_BOUND = 0.25


def ks_distance(a, b) -> float | None:
    """Two-sample Kolmogorov–Smirnov statistic sup_x |F_a(x) − F_b(x)| (None if a side is empty)."""
    a = np.sort(np.asarray([x for x in a if x is not None], dtype=float))
    b = np.sort(np.asarray([x for x in b if x is not None], dtype=float))
    if len(a) == 0 or len(b) == 0:
        return None
    xs = np.concatenate([a, b])
    fa = np.searchsorted(a, xs, side="right") / len(a)
    fb = np.searchsorted(b, xs, side="right") / len(b)
    return float(np.max(np.abs(fa - fb)))


def rel_diff(real: float, sim: float) -> float | None:
    """(real − sim) / sim; None when the simulated value is 0 and the real one too."""
    if sim == 0:
        return None if real == 0 else float("inf")
    return (real - sim) / sim


@dataclass
class Comparison:
    headline: list[str]
    numbers: dict
    differences: list[str]
    html: Path
    files: list[Path] = field(default_factory=list)


def _sim_retx(row: dict) -> int:
    return (row["retrans_fast"] or 0) + (row["retrans_timeout"] or 0) + (row["retrans_tlp"] or 0)


def compare(sim, real, out) -> Comparison:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sf, rf = sim.flows.to_pylist(), real.flows.to_pylist()
    diffs: list[str] = []
    flow_rows = []
    for s, r in zip(sf, rf):
        g = rel_diff(r["goodput_mbps"], s["goodput_mbps"])
        row = {"flow": s["name"], "goodput_sim_mbps": s["goodput_mbps"], "goodput_real_mbps": r["goodput_mbps"],
               "goodput_diff": g, "retrans_sim": _sim_retx(s), "retrans_real": r.get("retransmissions"),
               "srtt_sim_ms": s["srtt_end_ms"], "srtt_real_ms": r["srtt_end_ms"],
               "min_rtt_sim_ms": s["min_rtt_ms"], "min_rtt_real_ms": r["min_rtt_ms"],
               "handshake_rtt_sim_ms": s["handshake_rtt_ms"], "handshake_rtt_real_ms": r["handshake_rtt_ms"]}
        flow_rows.append(row)
        if g is not None and abs(g) > GOODPUT_BOUND:
            diffs.append(f"flow {s['name']}: goodput {r['goodput_mbps']:.2f} real vs {s['goodput_mbps']:.2f} simulated "
                         f"Mbit/s ({g:+.0%})")
    agg_sim = sum(x["goodput_mbps"] for x in sf)
    agg_real = sum(x["goodput_mbps"] for x in rf)
    retx_sim = sum(_sim_retx(x) for x in sf)
    retx_real = sum(x.get("retransmissions") or 0 for x in rf)
    g_agg, r_agg = rel_diff(agg_real, agg_sim), rel_diff(retx_real, retx_sim)
    if g_agg is not None and abs(g_agg) > GOODPUT_BOUND:
        diffs.insert(0, f"aggregate goodput differs by {g_agg:+.1%} (bound {GOODPUT_BOUND:.0%})")
    if r_agg is not None and abs(r_agg) > RETRANS_BOUND:
        diffs.insert(0, f"retransmissions differ by {r_agg:+.1%}: {retx_real} real vs {retx_sim} simulated "
                        f"(bound {RETRANS_BOUND:.0%})")
    # requests
    sreq, rreq = sim.requests.to_pylist(), real.requests.to_pylist()
    ks_all = ks_distance([x["download_s"] for x in sreq], [x["download_s"] for x in rreq])
    per_flow_ks = {}
    for k, s in enumerate(sf):
        d = ks_distance([x["download_s"] for x in sreq if x["flow"] == k], [x["download_s"] for x in rreq if x["flow"] == k])
        if d is not None:
            per_flow_ks[s["name"]] = d
            flow_rows[k]["download_ks"] = d
    med = lambda v: float(np.median([x for x in v if x is not None])) if any(x is not None for x in v) else None  # noqa: E731
    med_sim, med_real = med([x["download_s"] for x in sreq]), med([x["download_s"] for x in rreq])
    if ks_all is not None and ks_all > 0.2:
        diffs.append(f"download times: KS distance {ks_all:.2f} (median {med_real:.3f} s real vs {med_sim:.3f} s simulated)")
    # links
    link_rows = []
    for s, r in zip(sim.links.to_pylist(), real.links.to_pylist()):
        row = {"link": s["link"], "direction": f"{s['from']}->{s['to']}", "emulated_by": r.get("emulated_by"),
               "tx_bytes_sim": s["tx_bytes"], "tx_bytes_real": r["tx_bytes"],
               "drops_sim": s["queue_drops"] + s["loss_drops"], "drops_real": r["queue_drops"] + r["loss_drops"],
               "mean_queue_sim": s["mean_queue_packets"], "mean_queue_real": r["mean_queue_packets"],
               "max_queue_sim": s["max_queue_packets"], "max_queue_real": r["max_queue_packets"]}
        link_rows.append(row)
        dr = rel_diff(row["drops_real"], row["drops_sim"])
        if row["drops_sim"] + row["drops_real"] >= 20 and dr is not None and abs(dr) > 0.5:
            diffs.append(f"link {row['link']} {row['direction']}: {row['drops_real']} drops real vs {row['drops_sim']} simulated")
        mq = rel_diff(row["mean_queue_real"], row["mean_queue_sim"])
        if max(row["mean_queue_sim"], row["mean_queue_real"]) >= 5 and mq is not None and abs(mq) > 0.5:
            diffs.append(f"link {row['link']} {row['direction']}: mean queue {row['mean_queue_real']:.1f} real vs "
                         f"{row['mean_queue_sim']:.1f} simulated packets")
    numbers = {"aggregate_goodput_sim_mbps": agg_sim, "aggregate_goodput_real_mbps": agg_real, "goodput_diff": g_agg,
               "goodput_within_bound": g_agg is not None and abs(g_agg) <= GOODPUT_BOUND,
               "retransmissions_sim": retx_sim, "retransmissions_real": retx_real, "retransmissions_diff": r_agg,
               "retransmissions_within_bound": r_agg is not None and abs(r_agg) <= RETRANS_BOUND,
               "download_ks": ks_all, "download_median_sim_s": med_sim, "download_median_real_s": med_real,
               "download_ks_per_flow": per_flow_ks, "requests_sim": len(sreq), "requests_real": len(rreq),
               "real_errors": real.summary.get("errors", []), "real_warnings": real.summary.get("warnings", [])}
    headline = [
        f"goodput: {agg_real:.2f} real vs {agg_sim:.2f} simulated Mbit/s ({_pct(g_agg)}, bound ±{GOODPUT_BOUND:.0%})",
        f"retransmissions: {retx_real} real vs {retx_sim} simulated ({_pct(r_agg)}, bound ±{RETRANS_BOUND:.0%})",
    ]
    if ks_all is not None:
        headline.append(f"download times: KS distance {ks_all:.3f} over {len(rreq)} real / {len(sreq)} simulated requests "
                        f"(median {med_real:.3f} vs {med_sim:.3f} s)")
    headline.append(f"{len(diffs)} differences named in the report")
    files = _write(out, flow_rows, link_rows, numbers, diffs)
    files += _plots(sim, real, out)
    page = _html(out, sim, headline, flow_rows, link_rows, diffs, [f for f in files if f.suffix == ".png"])
    return Comparison(headline=headline, numbers=numbers, differences=diffs, html=page, files=files)


def _pct(x) -> str:
    return "—" if x is None else f"{x:+.1%}"


def _write(out: Path, flow_rows, link_rows, numbers, diffs) -> list[Path]:
    import csv

    files = []
    for name, rows in (("compare_flows.csv", flow_rows), ("compare_links.csv", link_rows)):
        p = out / name
        keys = sorted({k for r in rows for k in r}, key=lambda k: list(rows[0]).index(k) if rows and k in rows[0] else 99)
        with p.open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=keys)
            w.writeheader()
            w.writerows(rows)
        files.append(p)
    p = out / "compare.json"
    p.write_text(json.dumps({"numbers": numbers, "differences": diffs}, indent=2, sort_keys=True, default=str) + "\n")
    files.append(p)
    return files


def _plots(sim, real, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    sq, rq = sim.queues.to_pandas(), real.queues.to_pandas()
    shaped = [(l["link"], l["from"], l["to"]) for l in real.links.to_pylist()
              if l.get("emulated_by") in ("tbf", "linkem") and l["max_queue_packets"] > 0]
    for link, a, b in shaped[:6]:
        fig, ax = plt.subplots(figsize=(7, 3))
        for df, label in ((sq, "simulated"), (rq, "real")):
            d = df[(df["link"] == link) & (df["from"] == a) & (df["to"] == b)]
            ax.plot(d["t_s"], d["packets"], label=label, lw=0.8)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("queue (packets)")
        ax.set_title(f"{link} {a}→{b}")
        ax.legend()
        p = out / f"queue_{link}_{a}_{b}.png".replace("/", "_")
        fig.tight_layout()
        fig.savefig(p, dpi=90)
        plt.close(fig)
        files.append(p)
    sreq, rreq = sim.requests.to_pandas(), real.requests.to_pandas()
    if len(sreq) and len(rreq):
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for df, label in ((sreq, "simulated"), (rreq, "real")):
            v = np.sort(df["download_s"].dropna().to_numpy())
            ax.step(v, np.arange(1, len(v) + 1) / max(len(v), 1), where="post", label=label)
        ax.set_xlabel("download time (s)")
        ax.set_ylabel("CDF")
        ax.legend()
        p = out / "download_cdf.png"
        fig.tight_layout()
        fig.savefig(p, dpi=90)
        plt.close(fig)
        files.append(p)
    sf, rf = sim.flows.to_pandas(), real.flows.to_pandas()
    fig, ax = plt.subplots(figsize=(7, 3))
    x = np.arange(len(sf))
    ax.bar(x - 0.2, sf["goodput_mbps"], 0.4, label="simulated")
    ax.bar(x + 0.2, rf["goodput_mbps"], 0.4, label="real")
    ax.set_xticks(x, sf["name"], rotation=90 if len(sf) > 12 else 0, fontsize=7)
    ax.set_ylabel("goodput (Mbit/s)")
    ax.legend()
    p = out / "goodput_per_flow.png"
    fig.tight_layout()
    fig.savefig(p, dpi=90)
    plt.close(fig)
    files.append(p)
    return files


def _table_html(rows: list[dict]) -> str:
    if not rows:
        return "<p>none</p>"
    keys = list(rows[0])

    def cell(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return html.escape("—" if v is None else str(v))

    head = "".join(f"<th>{html.escape(k)}</th>" for k in keys)
    body = "".join("<tr>" + "".join(f"<td>{cell(r.get(k))}</td>" for k in keys) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _html(out: Path, sim, headline, flow_rows, link_rows, diffs, pngs) -> Path:
    name = html.escape(str(sim.summary.get("scenario")))
    parts = [f"<html><head><meta charset='utf-8'><title>{name}: simulated vs real</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse;font-size:12px}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}</style></head><body>",
             f"<h1>{name}: simulated vs real Linux TCP</h1><ul>"]
    parts += [f"<li>{html.escape(h)}</li>" for h in headline]
    parts.append("</ul><h2>Where they differ</h2><ul>")
    parts += [f"<li>{html.escape(d)}</li>" for d in diffs] or ["<li>nowhere beyond the bounds</li>"]
    parts.append("</ul>")
    parts += [f"<img src='{p.name}'>" for p in pngs]
    parts += ["<h2>Flows</h2>", _table_html(flow_rows), "<h2>Links</h2>", _table_html(link_rows), "</body></html>"]
    p = out / "compare.html"
    p.write_text("\n".join(parts))
    return p
