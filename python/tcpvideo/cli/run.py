"""``tcpvideo run``: simulate a scenario file and write its tables, summary and pcaps."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tcpvideo.simulation import ScenarioError, SimResult, check, simulate


def print_summary(res: SimResult, console: Console, title: str, max_rows: int = 12) -> None:
    """A short rich table: the flows (first rows), busiest links and the totals."""
    s = res.summary
    flows = res.flows.to_pylist()
    t = Table(title=title, show_lines=False)
    for col in ("flow", "cc", "base RTT ms", "goodput Mbit/s", "FCT s", "retx fast", "retx RTO", "RTOs", "srtt ms"):
        t.add_column(col, justify="right" if col not in ("flow", "cc") else "left")
    for f in flows[:max_rows]:
        t.add_row(
            f["name"], f["cc"], f"{f['base_rtt_ms']:.1f}", f"{f['goodput_mbps']:.2f}",
            "—" if f["fct_s"] is None else f"{f['fct_s']:.3f}",
            str(f["retrans_fast"]), str(f["retrans_timeout"]), str(f["rto_count"]),
            "—" if f["srtt_end_ms"] is None else f"{f['srtt_end_ms']:.1f}",
        )
    if len(flows) > max_rows:
        t.add_row(f"… {len(flows) - max_rows} more", "", "", "", "", "", "", "", "")
    console.print(t)
    links = sorted(res.links.to_pylist(), key=lambda l: -l["utilization"])[:3]
    lt = Table(title="busiest links", show_lines=False)
    for col in ("link", "direction", "Mbit/s", "utilization", "drops", "mean queue pkts", "max queue pkts"):
        lt.add_column(col, justify="left" if col in ("link", "direction") else "right")
    for l in links:
        lt.add_row(l["link"], f"{l['from']}→{l['to']}", f"{l['rate_mbps']:g}", f"{l['utilization']:.1%}",
                   str(l["queue_drops"] + l["loss_drops"]), f"{l['mean_queue_packets']:.1f}", str(l["max_queue_packets"]))
    console.print(lt)
    console.print(
        f"[bold]{s['scenario']}[/bold] seed {s['seed']}: {s['duration_s']:g} s simulated, "
        f"{s['flows']} flows, aggregate goodput {s['aggregate_goodput_mbps']:.2f} Mbit/s, "
        f"{s['retransmissions']} retransmissions, {s['rto_count']} RTOs, {s['drops']} drops; "
        f"{s['events_processed']:,} events in {res.wall_s:.2f} s wall "
        f"({s['events_processed'] / max(res.wall_s, 1e-9) / 1e6:.2f} M events/s)"
    )


def run_with_progress(scenario, seed: Optional[int], out: Optional[Path], console: Console) -> SimResult:
    """Simulate; show a progress bar once the run has taken more than a second of wall time."""
    start = time.perf_counter()
    state: dict = {"bar": None, "task": None}

    def progress(now_s: float, total_s: float) -> None:
        if state["bar"] is None:
            if time.perf_counter() - start < 1.0:
                return
            bar = Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.completed:.1f}/{task.total:g} s"),
                           TimeElapsedColumn(), console=console, transient=True)
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task("sim", total=total_s)
        state["bar"].update(state["task"], completed=now_s)

    try:
        return simulate(scenario, seed=seed, out=out, progress=progress)
    finally:
        if state["bar"] is not None:
            state["bar"].stop()


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run_cmd(
        scenario: Path = typer.Argument(..., help="Scenario file (TOML or JSON); see docs/scenario.md."),
        seed: Optional[int] = typer.Option(None, "--seed", help="Override the scenario's seed."),
        out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default runs/NAME-seedN)."),
    ) -> None:
        """Simulate SCENARIO; write tables (Parquet and CSV), summary.json and pcaps to --out."""
        console = Console()
        try:
            info = check(scenario, seed)
            out_dir = out if out is not None else Path("runs") / f"{info['name']}-seed{info['seed']}"
            res = run_with_progress(scenario, seed, out_dir, console)
        except ScenarioError as e:
            console.print(f"[red]scenario error:[/red] {e}")
            raise typer.Exit(2)
        except FileNotFoundError as e:
            console.print(f"[red]error:[/red] {e}")
            raise typer.Exit(2)
        print_summary(res, console, title=f"{info['name']} (seed {info['seed']})")
        console.print(f"outputs in [bold]{out_dir}[/bold]" + (f"; pcaps: {', '.join(p.name for p in res.pcaps)}" if res.pcaps else ""))
