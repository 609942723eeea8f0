"""``tcpvideo edge serve``: start the ETHLE edge proxy (seed 002), the Rust binary ``tcpvideo-edge``.

This module only finds the binary and hands it the options (it replaces the Python process, so
signals such as SIGTERM and Ctrl-C reach the edge, which shuts down cleanly). The binary is looked
up in ``$TCPVIDEO_EDGE_BIN``, then on ``PATH``, then in this checkout's ``target/release``; build
it with ``cargo build -p tcpvideo-edge --release``.
"""

from __future__ import annotations

import os
from typing import List, Optional

import typer

from tcpvideo.cli.binaries import binary_or_exit, find_binary
from tcpvideo.edge_demo.cli import demo as edge_demo_command

app = typer.Typer(help="The ETHLE edge proxy: holds back live HLS segments near the receivers.",
                  no_args_is_help=True)

BINARY = "tcpvideo-edge"
BINARY_ENV = "TCPVIDEO_EDGE_BIN"


def find_edge_binary() -> Optional[str]:
    """Path of the ``tcpvideo-edge`` binary, or None."""
    return find_binary(BINARY, BINARY_ENV)


def edge_arguments(upstream: str, listen: str, cache_mib: int, max_x: int,
                   default_ran_kbps: Optional[int], backhaul_rtt_ms: Optional[float],
                   log_format: str) -> List[str]:
    """The binary's command line for these options (checked here so errors name the option)."""
    if not upstream.startswith("http://"):
        raise typer.BadParameter(f"expected an http:// URL, got {upstream!r}", param_hint="--upstream")
    if cache_mib <= 0:
        raise typer.BadParameter(f"must be positive, got {cache_mib}", param_hint="--cache-mib")
    if max_x < 0:
        raise typer.BadParameter(f"must be 0 (no cap) or more, got {max_x}", param_hint="--max-x")
    if log_format not in ("text", "json"):
        raise typer.BadParameter(f"expected text or json, got {log_format!r}", param_hint="--log-format")
    args = ["--upstream", upstream, "--listen", listen, "--cache-mib", str(cache_mib),
            "--max-x", str(max_x), "--log-format", log_format]
    if default_ran_kbps is not None:
        args += ["--default-ran-kbps", str(default_ran_kbps)]
    if backhaul_rtt_ms is not None:
        if backhaul_rtt_ms <= 0:
            raise typer.BadParameter(f"must be positive, got {backhaul_rtt_ms}", param_hint="--backhaul-rtt-ms")
        args += ["--backhaul-rtt-ms", str(backhaul_rtt_ms)]
    return args


@app.command()
def serve(
    upstream: str = typer.Option(..., help="The live source, e.g. http://10.0.0.2:8000/live"),
    listen: str = typer.Option("127.0.0.1:8080", help="Address receivers connect to."),
    cache_mib: int = typer.Option(512, help="Bound on cached segment bytes (MiB)."),
    max_x: int = typer.Option(8, help="Operator cap on x (parallel upstream connections); 0 = none."),
    default_ran_kbps: Optional[int] = typer.Option(
        None, help="th_ran for receivers that send none (kbit/s); unset = unlimited."),
    backhaul_rtt_ms: Optional[float] = typer.Option(
        None, help="Use this backhaul RTT instead of measuring it with TCP_INFO."),
    log_format: str = typer.Option("text", help="text or json."),
) -> None:
    """Run the edge until SIGTERM or Ctrl-C. Receivers send th_ran in the X-Ran-Throughput-Kbps
    header, the ran_kbps query parameter, or via PUT /ethle/context/receivers/<id>."""
    args = edge_arguments(upstream, listen, cache_mib, max_x, default_ran_kbps, backhaul_rtt_ms,
                          log_format)
    binary = binary_or_exit("tcpvideo edge serve", BINARY, BINARY_ENV)
    os.execv(binary, [binary, *args])


app.command(name="demo")(edge_demo_command)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="edge")
