"""``tcpvideo origin serve DIR``: start the video origin (seed 003), the Rust binary ``tcpvideo-origin``.

This module only finds the binary and hands it the options (it replaces the Python process, so
SIGTERM and Ctrl-C reach the origin, which shuts down cleanly and removes its BPF program). The
binary is looked up in ``$TCPVIDEO_ORIGIN_BIN``, then on ``PATH``, then in this checkout's
``target/release``; build it with ``cargo build -p tcpvideo-origin --release``. docs/origin.md
describes the modes and query keys.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional

import typer

from tcpvideo.cli.binaries import binary_or_exit, find_binary

app = typer.Typer(help="The video origin: progressive, HLS and DASH with ustreamer / Trickle delivery modes.",
                  no_args_is_help=True)

BINARY = "tcpvideo-origin"
BINARY_ENV = "TCPVIDEO_ORIGIN_BIN"
MODES = ("bulk", "baseline", "shrunk-block", "trickle", "pacing-cap", "bbr", "cwnd-limit")


def find_origin_binary() -> Optional[str]:
    """Path of the ``tcpvideo-origin`` binary, or None."""
    return find_binary(BINARY, BINARY_ENV)


def origin_arguments(directory: str, listen: str, mode: str, path_mode: List[str],
                     rate_kbps: Optional[int], startup_s: float, cwnd: int, max_connections: int,
                     congestion_control: Optional[str], no_bpf: bool, log_format: str) -> List[str]:
    """The binary's command line for these options (checked here so errors name the option)."""
    if not Path(directory).is_dir():
        raise typer.BadParameter(f"not a directory: {directory!r}", param_hint="DIR")
    for name, hint in [(mode, "--mode")] + [(r.partition("=")[2], "--path-mode") for r in path_mode]:
        if name not in MODES:
            raise typer.BadParameter(f"unknown mode {name!r} (known: {', '.join(MODES)})", param_hint=hint)
    for r in path_mode:
        if not r.startswith("/") or "=" not in r:
            raise typer.BadParameter(f"expected /PREFIX=MODE, got {r!r}", param_hint="--path-mode")
    if rate_kbps is not None and rate_kbps <= 0:
        raise typer.BadParameter(f"must be positive, got {rate_kbps}", param_hint="--rate-kbps")
    if not 0 <= startup_s <= 86400:
        raise typer.BadParameter(f"expected seconds in 0..86400, got {startup_s}", param_hint="--startup-s")
    if cwnd < 1:
        raise typer.BadParameter(f"must be >= 1, got {cwnd}", param_hint="--cwnd")
    if max_connections < 1:
        raise typer.BadParameter(f"must be >= 1, got {max_connections}", param_hint="--max-connections")
    if log_format not in ("text", "json"):
        raise typer.BadParameter(f"expected text or json, got {log_format!r}", param_hint="--log-format")
    args = [directory, "--listen", listen, "--mode", mode, "--startup-s", str(startup_s),
            "--cwnd", str(cwnd), "--max-connections", str(max_connections), "--log-format", log_format]
    for r in path_mode:
        args += ["--path-mode", r]
    if rate_kbps is not None:
        args += ["--rate-kbps", str(rate_kbps)]
    if congestion_control:
        args += ["--congestion-control", congestion_control]
    if no_bpf:
        args.append("--no-bpf")
    return args


@app.command()
def serve(
    directory: str = typer.Argument(..., metavar="DIR", help="Directory to serve (nothing outside it is read)."),
    listen: str = typer.Option("127.0.0.1:8000", help="Address clients connect to."),
    mode: str = typer.Option("bulk", help=f"Default delivery mode: {', '.join(MODES)}."),
    path_mode: List[str] = typer.Option([], help="/PREFIX=MODE for paths under PREFIX (repeatable)."),
    rate_kbps: Optional[int] = typer.Option(None, help="Encoding rate R (kbit/s) when a request gives no rate_kbps."),
    startup_s: float = typer.Option(30.0, help="Media seconds in the startup burst (paper: 30)."),
    cwnd: int = typer.Option(10, help="Packets for cwnd-limit when the request gives no cwnd."),
    max_connections: int = typer.Option(4096, help="Connections served at once."),
    congestion_control: Optional[str] = typer.Option(None, help="Congestion control for every socket."),
    no_bpf: bool = typer.Option(False, help="Do not load the BPF cwnd clamp (use SO_MAX_PACING_RATE)."),
    log_format: str = typer.Option("text", help="text or json."),
) -> None:
    """Serve DIR until SIGTERM or Ctrl-C. Per request: ?mode=trickle&rate_kbps=1000&startup_s=30
    (also block=BYTES, cwnd=PACKETS). /metrics is Prometheus."""
    args = origin_arguments(directory, listen, mode, path_mode, rate_kbps, startup_s, cwnd,
                            max_connections, congestion_control, no_bpf, log_format)
    binary = binary_or_exit("tcpvideo origin serve", BINARY, BINARY_ENV)
    os.execv(binary, [binary, *args])


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="origin")
