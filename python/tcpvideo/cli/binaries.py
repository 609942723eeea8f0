"""Finding the Rust server binaries the CLI starts (``tcpvideo-origin``, ``tcpvideo-edge``).

The servers are Rust binaries of this workspace, not part of the Python extension: a user either
installs them on ``PATH`` or builds them in this checkout. Looked up in this order: the binary's
environment variable (``$TCPVIDEO_ORIGIN_BIN``: an explicit choice, so an unusable one is not
silently replaced), ``PATH``, then this checkout's ``target/release``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Optional

import typer


def find_binary(name: str, env_var: str) -> Optional[str]:
    """Path of the executable ``name`` (a crate's binary, e.g. ``tcpvideo-origin``), or None."""
    explicit = os.environ.get(env_var)
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    on_path = shutil.which(name)
    if on_path:
        return on_path
    checkout = Path(__file__).resolve().parents[3] / "target" / "release" / name
    return str(checkout) if os.access(checkout, os.X_OK) else None


def binary_or_exit(command: str, name: str, env_var: str) -> str:
    """``find_binary``, or one line saying how to get the binary and exit status 2."""
    binary = find_binary(name, env_var)
    if binary is None:
        typer.echo(f"{command}: the {name} binary was not found; build it with "
                   f"`cargo build -p {name} --release` or set {env_var}", err=True)
        raise typer.Exit(2)
    return binary
