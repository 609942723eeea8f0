"""``tcpvideo edge demo``: the options, checks and printing around ``demo.run_demo``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer


def demo(
    play_s: float = typer.Option(180.0, help="Seconds of playback per row, from the first `playing`."),
    rtt_ms: float = typer.Option(302.0, help="Backhaul RTT (ms) of the delay line."),
    backhaul_mbit: float = typer.Option(1000.0, help="Backhaul rate (Mbit/s)."),
    ran_mbit: float = typer.Option(100.0, help="RAN rate (Mbit/s), also declared to the edge."),
    bitrate_kbps: int = typer.Option(15000, help="Live stream bitrate (kbit/s, CBR)."),
    segment_s: int = typer.Option(2, help="Segment length (s)."),
    max_x: int = typer.Option(8, help="Operator cap on x; 0 = none."),
    mode: List[str] = typer.Option(["edge", "edge-warm", "e2e"],
                                   help="Rows, in order: edge (first viewer of the stream), "
                                        "edge-warm (another viewer already watches), e2e."),
    out: Optional[Path] = typer.Option(None, help="Keep logs and results.json here."),
) -> None:
    """Play a live ffmpeg stream with hls.js through the edge and directly (E2E) over an
    emulated backhaul; print startup, stalls and live latency per row. Needs root."""
    from tcpvideo.cli.edge import find_edge_binary
    from tcpvideo.cli.origin import find_origin_binary
    from tcpvideo.edge_demo import DemoConfig, TestbedConfig, format_table, missing_requirements, run_demo
    from tcpvideo.edge_demo.demo import MODES

    checks = [(play_s > 0, "--play-s", f"must be positive, got {play_s}"),
              (rtt_ms > 0, "--rtt-ms", f"must be positive, got {rtt_ms}"),
              (backhaul_mbit > 0, "--backhaul-mbit", f"must be positive, got {backhaul_mbit}"),
              (ran_mbit > 0, "--ran-mbit", f"must be positive, got {ran_mbit}"),
              (bitrate_kbps > 0, "--bitrate-kbps", f"must be positive, got {bitrate_kbps}"),
              (1 <= segment_s <= 30, "--segment-s", f"expected 1..30, got {segment_s}"),
              (max_x >= 0, "--max-x", f"must be 0 or more, got {max_x}"),
              (bool(mode) and all(m in MODES for m in mode), "--mode",
               f"expected some of {', '.join(MODES)}, got {mode}")]
    for ok, hint, why in checks:
        if not ok:
            raise typer.BadParameter(why, param_hint=hint)
    why = missing_requirements()
    if why:
        typer.echo(f"tcpvideo edge demo: cannot run here: {why}", err=True)
        raise typer.Exit(2)
    origin_bin, edge_bin = find_origin_binary(), find_edge_binary()
    if origin_bin is None or (any(m.startswith("edge") for m in mode) and edge_bin is None):
        typer.echo("tcpvideo edge demo: build the binaries first: "
                   "cargo build -p tcpvideo-origin -p tcpvideo-edge --release", err=True)
        raise typer.Exit(2)
    config = DemoConfig(play_s=play_s, modes=tuple(mode),
                        testbed=TestbedConfig(rtt_ms=rtt_ms, backhaul_mbit=backhaul_mbit,
                                              ran_mbit=ran_mbit, bitrate_kbps=bitrate_kbps,
                                              segment_s=segment_s, max_x=max_x))
    try:
        result = run_demo(config, origin_bin, edge_bin or "", run_dir=out,
                          log=lambda s: typer.echo(s, err=True))
    except KeyboardInterrupt:
        typer.echo("tcpvideo edge demo: interrupted; namespaces and processes removed", err=True)
        raise typer.Exit(130)
    except (RuntimeError, TimeoutError) as e:
        typer.echo(f"tcpvideo edge demo: {e}", err=True)
        raise typer.Exit(1)
    typer.echo(format_table(result))
    from tcpvideo.edge_demo.timeline import format_timelines

    typer.echo("\nstart-up timeline per row (seconds since loadSource)")
    typer.echo(format_timelines([(r.mode, r.timeline) for r in result.rows]))
    if out is not None:
        (out / "results.json").write_text(json.dumps(result.as_dict(), indent=1, default=str))
