"""``tcpvideo sweep``: run a scenario over a grid of values and seeds (local pool or Ray)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console


def register(app: typer.Typer) -> None:
    @app.command("sweep")
    def sweep_cmd(
        scenario: Path = typer.Argument(..., help="Scenario file (TOML or JSON); see docs/scenario.md."),
        set_: List[str] = typer.Option([], "--set", help="KEY=V1,V2,...: a dotted scenario key and its values "
                                       "(repeat for a grid), e.g. dumbbell.clients=50,100,150."),
        seeds: str = typer.Option("1", "--seeds", help="Seeds: 1-10, 1,3,5 or 1-3,7."),
        out: Optional[Path] = typer.Option(None, "--out", help="Output directory (default sweeps/NAME)."),
        jobs: Optional[int] = typer.Option(None, "--jobs", help="Local worker processes (default: CPUs)."),
        ray: Optional[str] = typer.Option(None, "--ray", help="Run on Ray: 'local' (a private local instance), "
                                          "'auto' or HOST:PORT of a running cluster (ray start --head)."),
        quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
    ) -> None:
        """Run SCENARIO for every combination of --set values and every seed; resumable.

        Each run is stored under a key of scenario + seed + code version, so rerunning the same
        command after an interruption runs only the points not yet stored. Writes
        results.parquet / results.csv (swept values joined with each run's summary).
        """
        from tcpvideo import sweep

        console = Console(stderr=True)
        try:
            if jobs is not None and jobs < 1:
                raise sweep.SweepInputError(f"--jobs {jobs}: must be at least 1")
            base = sweep.load_scenario(scenario)
            swept = [sweep.parse_set(s) for s in set_]
            pts = sweep.points(base, swept, sweep.parse_seeds(seeds))
            sweep.validate(pts)
            if ray:
                ok, why = sweep.ray_available()
                if not ok:
                    raise sweep.SweepInputError(f"--ray {ray}: {why}")
            out_dir = out if out is not None else Path("sweeps") / str(base.get("name", scenario.stem))
            res = sweep.run(pts, out_dir, jobs=jobs, ray_address=ray, progress=not quiet)
        except (sweep.SweepInputError, FileNotFoundError) as e:
            console.print(f"[red]error:[/red] {e}", soft_wrap=True)
            raise typer.Exit(2)
        except sweep.SweepInterrupted as e:
            console.print(f"[yellow]{e}[/yellow]", soft_wrap=True)
            raise typer.Exit(130)
        except RuntimeError as e:  # a worker died, or Ray could not start
            console.print(f"[red]error:[/red] {e}", soft_wrap=True)
            raise typer.Exit(1)
        Console().print(f"{len(res.keys)} points ({res.ran} run, {res.reused} reused) → "
                        f"{res.out / 'results.parquet'} and results.csv; code {res.code}", soft_wrap=True)
