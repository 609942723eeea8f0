"""The ``tcpvideo`` command. Each sub-command lives in its own module of this package."""

from __future__ import annotations

import typer

from tcpvideo.cli import cc as _cc

app = typer.Typer(
    name="tcpvideo",
    help="Diagnose, predict and fix the TCP behaviour of video delivery.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.add_typer(_cc.app, name="cc")

# Sub-commands that exist only when their module is present register themselves here.
for _name in ("run", "analyze", "demo", "sweep", "study"):
    try:
        _mod = __import__(f"tcpvideo.cli.{_name}", fromlist=["register"])
    except ModuleNotFoundError as exc:  # module not written yet
        if exc.name != f"tcpvideo.cli.{_name}":
            raise
        continue
    _mod.register(app)


def main() -> None:
    app()
