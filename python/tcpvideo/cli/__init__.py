"""The ``tcpvideo`` command. Each sub-command lives in its own module of this package.

``main`` registers only the sub-command named on the command line (all of them for ``--help``):
each module imports what its command needs (the simulator's pyarrow, the report's matplotlib),
and ``tcpvideo analyze`` must not wait for the others' imports (issue 12: start-up).
``tcpvideo.cli.app`` (used by tests and by ``python -m``) has every sub-command.
"""

from __future__ import annotations

import sys

# Sub-commands in modules of this package; each module has ``register(app)``.
# One per line, so commands added on different branches merge without conflict.
COMMANDS = (
    "cc",
    "run",
    "analyze",
    "demo",
    "emulate",
    "edge",
    "origin",
    "sweep",
    "study",
    "bpf",
    "score",
)


def build_app(commands=COMMANDS):
    """A Typer app with the given sub-commands."""
    import importlib

    import typer

    app = typer.Typer(
        name="tcpvideo",
        help="Diagnose, predict and fix the TCP behaviour of video delivery.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    for name in commands:
        mod = importlib.import_module(f"tcpvideo.cli.{name}")
        if name == "cc":
            app.add_typer(mod.app, name="cc")
        else:
            mod.register(app)
    if len(commands) == 1:
        # Typer runs a lone command without its name; a group keeps ``tcpvideo NAME ...``.
        @app.callback()
        def _group() -> None:
            """Diagnose, predict and fix the TCP behaviour of video delivery."""
    return app


def __getattr__(name: str):
    if name == "app":
        app = build_app()
        globals()["app"] = app
        return app
    raise AttributeError(f"module 'tcpvideo.cli' has no attribute {name!r}")


def main() -> None:
    wanted = [a for a in sys.argv[1:2] if a in COMMANDS]
    if wanted == ["analyze"]:
        from tcpvideo.cli import analyze

        plain = analyze.plain_args(sys.argv[2:])
        if plain is not None:  # files and -q/--timings only: no Typer to import (start-up)
            analyze.run_plain_and_exit(*plain)
        analyze.run_and_exit(build_app(("analyze",)))
    build_app(tuple(wanted) or COMMANDS)()
