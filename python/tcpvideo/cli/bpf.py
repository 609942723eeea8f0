"""``tcpvideo bpf``: list, load and unload tcpvideo's kernel congestion controls (``bpf/``).

Errors are one line on stderr and exit status 2 (bad name, bad port, missing tools or
privileges); a load that fails part-way leaves nothing registered.
"""

from __future__ import annotations

from typing import List

import typer
from rich.console import Console
from rich.table import Table

sub = typer.Typer(help="Kernel congestion controls (BPF struct_ops ports of the model's): list, load, unload.",
                  no_args_is_help=True)


def _fail(e: Exception) -> None:
    typer.echo(f"error: {e}", err=True)  # one line, never wrapped
    raise typer.Exit(2)


@sub.command("list")
def list_cmd() -> None:
    """Every port, the model algorithm it mirrors, and whether it is registered."""
    from tcpvideo import bpf

    table = Table(title=f"BPF congestion controls ({bpf.source_dir()})")
    for col in ("name", "model twin", "registered", "what it is"):
        table.add_column(col)
    for p in bpf.catalog():
        table.add_row(p.name, p.twin or "-", "yes" if p.registered else "no", p.summary)
    Console().print(table)


@sub.command("load")
def load_cmd(names: List[str] = typer.Argument(..., help="Ports by kernel name (tv_ccplb) or model name (ccplb).")) -> None:
    """Build (if needed) and register the named ports; all or nothing."""
    from tcpvideo import bpf

    try:
        done = bpf.load(names)
    except bpf.BpfError as e:
        _fail(e)
    Console().print(f"registered: {' '.join(done)}")


@sub.command("unload")
def unload_cmd(names: List[str] = typer.Argument(..., help="Ports by kernel name or model name.")) -> None:
    """Unregister the named ports."""
    from tcpvideo import bpf

    try:
        gone = bpf.unload(names)
    except bpf.BpfError as e:
        _fail(e)
    Console().print(f"unregistered: {' '.join(gone) if gone else '(none was registered)'}")


def register(app: typer.Typer) -> None:
    app.add_typer(sub, name="bpf")
