"""The ``tcpvideo`` command. Each sub-command lives in its own module of this package."""

from __future__ import annotations

import typer

from tcpvideo.cli import analyze as _analyze
from tcpvideo.cli import cc as _cc
from tcpvideo.cli import demo as _demo
from tcpvideo.cli import edge as _edge
from tcpvideo.cli import emulate as _emulate
from tcpvideo.cli import run as _run
from tcpvideo.cli import study as _study
from tcpvideo.cli import sweep as _sweep

app = typer.Typer(
    name="tcpvideo",
    help="Diagnose, predict and fix the TCP behaviour of video delivery.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(_cc.app, name="cc")

for _module in (_run, _analyze, _demo, _emulate, _edge, _sweep, _study):
    _module.register(app)


def main() -> None:
    app()
