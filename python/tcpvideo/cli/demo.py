"""``tcpvideo demo``: twenty live video clients sharing one bottleneck for 60 simulated seconds.

Seed 004's setting, scaled down so it runs in a couple of seconds: 20 players join a live HLS
stream (2-second segments, seed 004's six qualities 250–3000 kbit/s) within the first segment,
behind a 30 Mbit/s server-side bottleneck (base RTTs drawn from 55±5 ms, a 200-packet drop-tail
queue, CUBIC). Each player keeps a one-segment buffer and picks its quality with seed 004's
throughput rule (EWMA α = 0.1, a HEAD per quality for the sizes). The demo prints each client's
QoE and every stall's TCP cause, and writes the tables, summary.json and report.html.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from tcpvideo.cli.run import print_summary, run_with_progress
from tcpvideo.report.video import MIN_STALL_S, stall_cause_counts, write_video_report

DEMO_SCENARIO = {
    "name": "demo",
    "duration": "60s",
    "seed": 1,
    "video": {"segment_duration": "2s", "ladder_kbps": [250, 500, 750, 1000, 1500, 3000], "format": "hls"},
    "dumbbell": {
        "clients": 20, "bottleneck_rate": "30Mbps", "queue": 200, "rtt": "55ms", "rtt_std": "5ms",
        "flow": {
            "app": "live", "start_jitter": "2s", "tcp": {"cc": "cubic"},
            "player": {"abr": "throughput", "buffer_segments": 1},
        },
    },
    "record": {"sample_interval": "100ms"},
}


def print_video(res, console: Console, max_rows: int = 20) -> None:
    """Per-client QoE, stall causes, and the one-line video summary."""
    t = Table(title="per-client QoE", show_lines=False)
    for col in ("client", "startup s", f"stalls ≥{MIN_STALL_S * 1e3:g} ms", "stall s", "liveness s",
                "mean kbit/s", "switches"):
        t.add_column(col, justify="left" if col == "client" else "right")
    stalls = res.video_stalls.to_pylist()
    for c in res.video_clients.to_pylist()[:max_rows]:
        n = sum(1 for s in stalls if s["flow"] == c["flow"] and s["duration_s"] >= MIN_STALL_S)
        t.add_row(c["client"], "—" if c["startup_s"] is None else f"{c['startup_s']:.2f}", str(n),
                  f"{c['stall_total_s']:.2f}", "—" if c["liveness_s"] is None else f"{c['liveness_s']:.2f}",
                  f"{c['mean_bitrate_kbps']:.0f}", str(c["switches"]))
    console.print(t)
    causes = stall_cause_counts(res)
    ct = Table(title="stalls by TCP cause (ground truth)", show_lines=False)
    for col in ("cause", "stalls", "total s"):
        ct.add_column(col, justify="left" if col == "cause" else "right")
    for k, (n, sec) in causes.items():
        ct.add_row(k, str(n), f"{sec:.2f}")
    console.print(ct)


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo_cmd(
        seed: Optional[int] = typer.Option(None, "--seed", help="Override the demo's seed."),
        out: Path = typer.Option(Path("runs/demo"), "--out", help="Where tables, summary.json and report.html go."),
    ) -> None:
        """Simulate 20 live video clients behind one bottleneck; print QoE and each stall's TCP cause."""
        console = Console()
        res = run_with_progress(DEMO_SCENARIO, seed, out, console)
        print_summary(res, console, title="tcpvideo demo: 20 live clients, 30 Mbit/s bottleneck", max_rows=5)
        print_video(res, console)
        report = write_video_report(res, out / "report.html", title="tcpvideo demo: 20 live clients")
        s = res.summary
        causes = stall_cause_counts(res)
        n = sum(v[0] for v in causes.values())
        top = ", ".join(f"{k} {v[0]}" for k, v in list(causes.items())[:3]) or "none"
        console.print(
            f"video: {s['video_clients']} clients, mean startup {s['video_mean_startup_s']:.2f} s, "
            f"mean liveness {s['video_mean_liveness_s']:.2f} s, mean bitrate {s['video_mean_bitrate_kbps']:.0f} kbit/s, "
            f"{n} stalls ≥{MIN_STALL_S * 1e3:g} ms by cause: {top}; report {report}"
        )
