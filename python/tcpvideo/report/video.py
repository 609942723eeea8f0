"""Self-contained HTML report of a simulated video run: per-client QoE, every stall with its TCP
cause (from the simulator's ground-truth log), playout buffers over time, segment download times
and the bottleneck queue. Plots are matplotlib PNGs embedded as base64 (one file to mail)."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

#: Stalls shorter than this are listed in the tables but left out of the headline counts: with a
#: one-segment buffer a segment that arrives exactly as the previous one ends registers a stall of
#: a few nanoseconds.
MIN_STALL_S = 0.010


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return "<img src='data:image/png;base64," + base64.b64encode(buf.getvalue()).decode() + "'/>"


def _table(rows: list[list], header: list[str]) -> str:
    h = "".join(f"<th>{html.escape(str(x))}</th>" for x in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def _fmt(x, spec: str = ".2f") -> str:
    return "—" if x is None or (isinstance(x, float) and not np.isfinite(x)) else format(x, spec)


def stall_cause_counts(result, min_stall_s: float = MIN_STALL_S) -> dict[str, tuple[int, float]]:
    """cause → (number of stalls, total seconds), stalls of at least ``min_stall_s``."""
    out: dict[str, tuple[int, float]] = {}
    st = result.video_stalls.to_pydict()
    for cause, d in zip(st["cause"], st["duration_s"]):
        if d >= min_stall_s:
            n, s = out.get(cause, (0, 0.0))
            out[cause] = (n + 1, s + d)
    return dict(sorted(out.items(), key=lambda kv: -kv[1][0]))


def _plots(result) -> list[tuple[str, str]]:
    out = []
    buf = result.video_buffer.to_pydict()
    clients = result.video_clients.to_pydict()
    if buf["t_s"]:
        fig, ax = plt.subplots(figsize=(10, 3.4))
        t, f, b = np.array(buf["t_s"]), np.array(buf["flow"]), np.array(buf["buffer_s"])
        for flow in sorted(set(clients["flow"]))[:6]:
            m = f == flow
            ax.plot(t[m], b[m], lw=0.8, label=f"client {flow}")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("buffered media (s)")
        ax.legend(fontsize=7, ncol=3)
        out.append(("Playout buffer (first six clients)", _png(fig)))
    seg = result.video_segments.to_pydict()
    if seg["segment"]:
        fig, ax = plt.subplots(1, 2, figsize=(10, 3.4))
        dl = np.array([x if x is not None else np.nan for x in seg["download_s"]], dtype=float)
        req = np.array(seg["requested_s"])
        ax[0].scatter(req, dl, s=4)
        ax[0].set_xlabel("request time (s)")
        ax[0].set_ylabel("download time (s)")
        q = np.array(seg["quality"])
        ax[1].hist(q, bins=np.arange(q.max() + 2) - 0.5)
        ax[1].set_xlabel("quality index")
        ax[1].set_ylabel("segments")
        out.append(("Segment downloads", _png(fig)))
    causes = stall_cause_counts(result)
    if causes:
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.barh(list(causes), [v[1] for v in causes.values()])
        ax.set_xlabel("stall time (s)")
        out.append(("Stall time by TCP cause", _png(fig)))
    qs = result.queues.to_pydict()
    idx = [i for i, (l, fr) in enumerate(zip(qs["link"], qs["from"])) if l == "bottleneck" and fr == "r1"]
    if idx:
        fig, ax = plt.subplots(figsize=(10, 3))
        ax.plot([qs["t_s"][i] for i in idx], [qs["packets"][i] for i in idx], lw=0.7)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("queue (packets)")
        out.append(("Bottleneck queue (r1 → r2)", _png(fig)))
    return out


def write_video_report(result, path: str | Path, title: str = "tcpvideo video run") -> Path:
    """Write the report of a :class:`tcpvideo.SimResult` with video flows to ``path``."""
    path = Path(path)
    s = result.summary
    c = result.video_clients.to_pylist()
    client_rows = [[r["client"], _fmt(r["startup_s"]), r["stall_count"], _fmt(r["stall_total_s"]),
                    _fmt(r["liveness_s"]), _fmt(r["mean_bitrate_kbps"], ".0f"), r["switches"], r["bytes"]] for r in c]
    st = [r for r in result.video_stalls.to_pylist() if r["duration_s"] >= MIN_STALL_S]
    stall_rows = [[r["client"], _fmt(r["start_s"], ".3f"), _fmt(r["duration_s"], ".3f"), r["segment"], r["cause"],
                   r["rto_events"], r["retransmissions"], r["recovery_episodes"], r["restart_after_idle"],
                   _fmt(r["download_kbps"], ".0f"), _fmt(r["bitrate_kbps"], ".0f")] for r in st]
    causes = stall_cause_counts(result)
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{html.escape(str(s['scenario']))}, seed {s['seed']}: {s['duration_s']:g} s simulated, "
        f"{len(c)} video clients, {s['drops']} drops, {s['retransmissions']} retransmissions, {s['rto_count']} RTOs.</p>",
        "<h2>Stalls by TCP cause</h2>",
        "<p>Each stall is joined to the download it waited for and to the server's ground-truth TCP events in "
        "that download (crates/sim/src/app/stall_cause.rs: rto, loss_recovery, slow_start_after_idle, "
        f"queueing_delay, bottleneck_share, late_request). Stalls shorter than {MIN_STALL_S * 1e3:g} ms are left "
        "out here.</p>",
        _table([[k, v[0], f"{v[1]:.2f}"] for k, v in causes.items()], ["cause", "stalls", "total s"]),
        "<h2>Per-client QoE</h2>",
        _table(client_rows, ["client", "startup s", "stalls", "stall s", "liveness s", "mean kbit/s", "switches", "bytes"]),
    ]
    for name, img in _plots(result):
        parts += [f"<h2>{html.escape(name)}</h2>", img]
    parts += ["<h2>Every stall</h2>",
              _table(stall_rows, ["client", "start s", "duration s", "segment", "cause", "RTOs", "retransmissions",
                                  "recoveries", "idle restart", "download kbit/s", "bitrate kbit/s"])]
    style = ("body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse;font-size:12px}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}")
    path.write_text(f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
                    f"<style>{style}</style></head><body>{''.join(parts)}</body></html>\n")
    return path
