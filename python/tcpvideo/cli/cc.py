"""``tcpvideo cc``: the congestion controls a scenario can pick per flow."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.table import Table

from tcpvideo.cc import cc_list

app = typer.Typer(help="Congestion controls: list them and their parameters.", no_args_is_help=True)


@app.command("list")
def list_cmd() -> None:
    """Print every congestion control with its parameters, defaults and units."""
    console = Console()
    table = Table(title="congestion controls", show_lines=True)
    table.add_column("name", style="bold")
    table.add_column("what it is")
    table.add_column("parameters (default, unit)")
    for algo in cc_list():
        params = "\n".join(
            f"{p['name']} = {p['default']:g} {p['unit']}  — {p['doc']}" for p in algo["params"]
        ) or "—"
        table.add_row(algo["name"], f"{algo['summary']}\n[dim]{algo['reference']}[/dim]", params)
    console.print(table)
