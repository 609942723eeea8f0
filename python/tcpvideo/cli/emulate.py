"""``tcpvideo emulate``: run a scenario on real Linux TCP and write the tables ``tcpvideo run`` writes.

``--compare`` also simulates it and writes a simulated-vs-real report; ``--cleanup`` removes what
killed runs left behind and exits. Errors are one line; exit status 2 for a bad scenario or
missing privileges (nothing was created), 1 when the run itself failed (everything torn down).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console


def register(app: typer.Typer) -> None:
    @app.command("emulate")
    def emulate_cmd(
        scenario: Optional[Path] = typer.Argument(None, help="Scenario file (TOML or JSON), as for `tcpvideo run`."),
        seed: Optional[int] = typer.Option(None, "--seed", help="Override the scenario's seed."),
        out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default runs/NAME-seedN-linux)."),
        compare: bool = typer.Option(False, "--compare", help="Also simulate; write a simulated-vs-real report."),
        cleanup: bool = typer.Option(False, "--cleanup", help="Remove what killed runs left, then exit."),
        rt_priority: int = typer.Option(0, "--rt-priority", help="SCHED_FIFO priority of the link emulators."),
    ) -> None:
        """Run SCENARIO on real Linux TCP in network namespaces (needs root)."""
        from tcpvideo.emulate import PrivilegeError, ScenarioRefused, cleanup as do_cleanup, emulate
        from tcpvideo.simulation import ScenarioError

        console = Console()
        if cleanup:
            try:
                removed = do_cleanup()
            except PermissionError as e:
                console.print(f"[red]error:[/red] {e}")
                raise typer.Exit(2)
            console.print(f"removed {len(removed)} namespaces of killed runs" + (f": {', '.join(removed)}" if removed else ""))
            return
        if scenario is None:
            console.print("[red]error:[/red] SCENARIO: missing (or use --cleanup)")
            raise typer.Exit(2)
        try:
            from tcpvideo.simulation import check

            info = check(scenario, seed)
            out_dir = out if out is not None else Path("runs") / f"{info['name']}-seed{info['seed']}-linux"
            real_dir = out_dir / "real" if compare else out_dir
            res = emulate(scenario, seed=seed, out=real_dir, rt_priority=rt_priority, log=lambda s: console.print(s))
        except (ScenarioError, ScenarioRefused) as e:
            console.print(f"[red]scenario error:[/red] {e}")
            raise typer.Exit(2)
        except PrivilegeError as e:
            console.print(f"[red]error:[/red] {e}")
            raise typer.Exit(2)
        except FileNotFoundError as e:
            console.print(f"[red]error:[/red] {e}")
            raise typer.Exit(2)
        except KeyboardInterrupt:
            console.print("interrupted: everything this run created was removed")
            raise typer.Exit(130)
        s = res.summary
        for e in s.get("errors", []):
            console.print(f"[yellow]flow error:[/yellow] {e}")
        console.print(f"[bold]{s['scenario']}[/bold] on Linux {s['kernel']}: {s['flows']} flows, aggregate goodput "
                      f"{s['aggregate_goodput_mbps']:.2f} Mbit/s, {s['retransmissions']} retransmissions, {s['drops']} drops "
                      f"({s['wall_s']:.1f} s wall: build {s['build_s']:.1f} s, teardown {s['teardown_s']:.1f} s; run {s['run_id']})")
        if compare:
            from tcpvideo.emulate.compare import compare as do_compare
            from tcpvideo.simulation import simulate

            sim = simulate(scenario, seed=seed, out=out_dir / "sim")
            rep = do_compare(sim, res, out_dir)
            for line in rep.headline:
                console.print(line)
            console.print(f"report: [bold]{rep.html}[/bold]")
        console.print(f"outputs in [bold]{out_dir}[/bold]")
