"""``tcpvideo study``: list the seed studies and run one (``tcpvideo study onoff [--full]``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

study_app = typer.Typer(help="Reproduce a seed paper: runs, figures, paper-vs-ours report.", no_args_is_help=True)

# The options every swept study (onoff, trickle, ethle, ccplb) takes, defined once. A study gives
# --out its own default (`out: OutDir = Path("studies/NAME")`); --full's help is each study's own.
OutDir = Annotated[Path, typer.Option("--out", help="Output directory (runs are reused from it).")]
Jobs = Annotated[Optional[int], typer.Option("--jobs", help="Local worker processes (default: CPUs).")]
RayAddress = Annotated[Optional[str], typer.Option("--ray", help="Run on Ray: 'local', 'auto' or a cluster address.")]
Quiet = Annotated[bool, typer.Option("--quiet", help="No progress bar.")]


@study_app.command("list")
def list_cmd() -> None:
    """Every study with what it reproduces."""
    from tcpvideo.studies import STUDIES

    t = Table(show_lines=False)
    t.add_column("study")
    t.add_column("reproduces")
    for name, (_, summary) in STUDIES.items():
        t.add_row(name, summary)
    Console().print(t)


@study_app.command("onoff")
def onoff_cmd(
    full: bool = typer.Option(False, "--full", help="The paper's scale: 20-minute stream, 10 runs per point "
                              "(hours on 2 cores); default: a 1-minute stream, 2 runs, 4 client counts."),
    out: OutDir = Path("studies/onoff"),
    jobs: Jobs = None,
    ray: RayAddress = None,
    quiet: Quiet = False,
    seeds: Optional[int] = typer.Option(None, "--seeds", help="Runs per point: the first N of the scale's seeds "
                                        "(a reduced --full, e.g. --full --seeds 1)."),
    groups: Optional[str] = typer.Option(None, "--groups", help="Comma-separated run groups only (e.g. "
                                         "cc,distributed,cwnd_limit): a reduced run; other claims are 'not run'."),
    clients: Optional[str] = typer.Option(None, "--clients", help="Comma-separated client counts instead of the "
                                          "scale's (a reduced run, e.g. 50,150,175)."),
    explain: Optional[bool] = typer.Option(None, "--explain/--no-explain", help="Add our explaining experiments "
                                           "(why a claim does not reproduce: 602 more runs at --full). Default: on at the "
                                           "default scale, off with --full (the paper's runs only)."),
) -> None:
    """Seed 004's Figs 3–8 and 16 and the paper-vs-ours table → OUT/report/report.html."""
    from tcpvideo import sweep
    from tcpvideo.studies import onoff

    console = Console()
    if jobs is not None and jobs < 1:
        Console(stderr=True).print(f"[red]error:[/red] --jobs {jobs}: must be at least 1")
        raise typer.Exit(2)
    if seeds is not None and seeds < 1:
        Console(stderr=True).print(f"[red]error:[/red] --seeds {seeds}: must be at least 1")
        raise typer.Exit(2)
    only = tuple(g.strip() for g in groups.split(",") if g.strip()) if groups else ()
    try:
        counts = tuple(sorted(int(c) for c in clients.split(",") if c.strip())) if clients else ()
    except ValueError:
        counts = (0,)
    if clients is not None and (not counts or min(counts) < 1):
        Console(stderr=True).print(f"[red]error:[/red] --clients {clients!r}: comma-separated client counts ≥ 1")
        raise typer.Exit(2)
    if only:
        from dataclasses import replace

        from tcpvideo.studies.onoff.plan import DEFAULT, configs

        try:
            configs(replace(DEFAULT, groups=only))
        except ValueError as e:
            Console(stderr=True).print(f"[red]error:[/red] --groups: {e}", soft_wrap=True)
            raise typer.Exit(2)
    try:
        res = onoff.run(full=full, out=out, jobs=jobs, ray_address=ray, progress=not quiet, seeds=seeds, groups=only,
                        clients=counts, explain=explain)
    except sweep.SweepInterrupted as e:
        Console(stderr=True).print(f"[yellow]{e}[/yellow]", soft_wrap=True)
        raise typer.Exit(130)
    except RuntimeError as e:  # a worker died, or Ray could not start
        Console(stderr=True).print(f"[red]error:[/red] {e}", soft_wrap=True)
        raise typer.Exit(1)
    console.print(_claims_table("seed 004: paper vs ours", res))
    f = res["facts"]
    console.print(f"{f['runs']} runs ({f['ran_now']} now, {f['reused']} reused) in {f['wall_s']} s wall, "
                  f"{f['driver_cpu_s'] + f['workers_cpu_s']:.1f} s CPU → {res['out'] / 'report.html'}", soft_wrap=True)


def _run_swept(run, full: bool, out: Path, jobs: Optional[int], ray: Optional[str], quiet: bool) -> dict:
    """Run a study on the sweep engine with the options every swept study shares; a bad option,
    an interrupted sweep or a failed run ends the command with one line and its exit status."""
    from tcpvideo import sweep

    if jobs is not None and jobs < 1:
        Console(stderr=True).print(f"[red]error:[/red] --jobs {jobs}: must be at least 1")
        raise typer.Exit(2)
    try:
        return run(full=full, out=out, jobs=jobs, ray_address=ray, progress=not quiet)
    except sweep.SweepInterrupted as e:
        Console(stderr=True).print(f"[yellow]{e}[/yellow]", soft_wrap=True)
        raise typer.Exit(130)
    except RuntimeError as e:
        Console(stderr=True).print(f"[red]error:[/red] {e}", soft_wrap=True)
        raise typer.Exit(1)


@study_app.command("trickle")
def trickle_cmd(
    full: bool = typer.Option(False, "--full", help="300 users per data centre, 3 populations, 180 s runs (tens of "
                              "minutes on 2 cores); default: 48 users, one population, 90 s runs (about a minute)."),
    out: OutDir = Path("studies/trickle"),
    jobs: Jobs = None,
    ray: RayAddress = None,
    quiet: Quiet = False,
) -> None:
    """Seed 003's Figs 3–5, 7, 8, Tables 1–3 and the paper-vs-ours table → OUT/report/report.html."""
    from tcpvideo.studies import trickle

    res = _run_swept(trickle.run, full, out, jobs, ray, quiet)
    _print_claims("seed 003: paper vs ours", res)


def _claims_table(title: str, res: dict) -> Table:
    """A swept study's paper-vs-ours claims, the status coloured."""
    t = Table(title=title, show_lines=False)
    for col in ("fig", "claim", "ours", "status"):
        t.add_column(col, overflow="fold")
    for c in res["claims"]:
        colour = {"reproduced": "green", "not reproduced": "red"}.get(c.status, "yellow")
        t.add_row(c.figure, c.claim, c.ours, f"[{colour}]{c.status}[/{colour}]")
    return t


def _print_claims(title: str, res: dict) -> None:
    console = Console()
    console.print(_claims_table(title, res))
    f = res["facts"]
    console.print(f"{f['runs']} runs ({f['ran_now']} now, {f['reused']} reused) in {f['wall_s']} s wall "
                  f"→ {res['out'] / 'report.html'}", soft_wrap=True)


@study_app.command("crowdlive")
def crowdlive_cmd(
    full: bool = typer.Option(False, "--full", help="30 publishers, 120 viewers, 5 minutes (default: 8, 20, 1 minute)."),
    out: Path = typer.Option(Path("studies/crowdlive"), "--out", help="Output directory."),
    seed: int = typer.Option(1, "--seed", help="Run seed."),
    seeds: Optional[str] = typer.Option(None, "--seeds", help="e.g. 1-20: also the frame-type trends (Tables 4-5) "
                                        "pooled over these seeds: per seed TLP off / on, wait_key, ACK spikes and three "
                                        "other viewer-loss processes (~10 s a run with --full on 2 cores); the study "
                                        "itself runs on the first. Default: one seed, no trends."),
    jobs: int = typer.Option(1, "--jobs", help="Trend runs at a time (each one simulation + one analysis)."),
) -> None:
    """Seed 000: the front-end's captures through the analyzer, scored against the simulator's
    ground truth, with TLP / aggressive-RTO variants → OUT/report/report.html."""
    from tcpvideo.studies import crowdlive
    from tcpvideo.sweep.grid import SweepInputError, parse_seeds

    seed_list = None
    if seeds is not None:
        try:
            seed_list = parse_seeds(seeds)
        except SweepInputError as e:
            Console(stderr=True).print(f"[red]error:[/red] {e}")
            raise typer.Exit(2)
        seed = seed_list[0]
    res = crowdlive.run(full=full, out=out, seed=seed, seeds=seed_list, jobs=max(jobs, 1))
    t = Table(title="seed 000: paper vs ours", show_lines=False)
    for col in ("where", "claim", "paper", "ours", "status"):
        t.add_column(col, overflow="fold")
    for c in res["claims"]:
        colour = {"reproduced": "green", "not reproduced": "red"}.get(c.status, "yellow")
        t.add_row(c.figure, c.claim, c.paper, c.ours, f"[{colour}]{c.status}[/{colour}]")
    Console().print(t)
    Console().print(f"{res['facts']['wall_s']} s wall → {Path(out) / 'report' / 'report.html'}")


@study_app.command("ethle")
def ethle_cmd(
    full: bool = typer.Option(False, "--full", help="The paper's scale: 5-minute sessions, 3 seeds per point "
                              "(432 runs); default: 75-s sessions, one seed (144 runs)."),
    out: OutDir = Path("studies/ethle"),
    jobs: Jobs = None,
    ray: RayAddress = None,
    quiet: Quiet = False,
) -> None:
    """Seed 002's Tables II and III, Fig 9 and the paper-vs-ours table → OUT/report/report.html."""
    from tcpvideo.studies import ethle

    console = Console()
    res = _run_swept(ethle.run, full, out, jobs, ray, quiet)
    t3 = Table(title="Table III (simulated): x and backhaul throughput", show_lines=False)
    for col in ("stream", "location", "x model", "x paper mod.", "x sim", "x paper act.", "th model", "th sim",
                "th paper act."):
        t3.add_column(col)
    for r in res["cells"].itertuples():
        opt = "-" if r.sim_optimal_x != r.sim_optimal_x or r.sim_optimal_x is None else str(int(r.sim_optimal_x))
        pm = "-" if r.paper_t3_modeled_x != r.paper_t3_modeled_x or r.paper_t3_modeled_x is None else str(int(r.paper_t3_modeled_x))
        t3.add_row(r.stream, r.location, str(r.model_x), pm, opt, str(r.paper_t3_actual_x),
                   f"{r.model_th_bh_mbps:.1f}", f"{r.sim_th_bh_mbps:.1f}", f"{r.paper_t3_actual_th_mbps:.1f}")
    console.print(t3)
    _print_claims("seed 002: paper vs ours", res)


@study_app.command("ccplb")
def ccplb_cmd(
    full: bool = typer.Option(False, "--full", help="The paper's scale: a 624 s video, 5 trials per point (hours on 2 "
                              "cores); default: a 40 s video, 3 trials (about a minute)."),
    out: OutDir = Path("studies/ccplb"),
    jobs: Jobs = None,
    ray: RayAddress = None,
    quiet: Quiet = False,
    real: bool = typer.Option(False, "--real", help="Instead: the testbed on real Linux TCP next to the simulator "
                              "(root; every variant at 3/100/200 ms, --real-media s of video) → OUT/sim_vs_real.md."),
    real_media: float = typer.Option(8.0, "--real-media", help="Video length of each --real run, s."),
) -> None:
    """Seed 001's Figs 4–9, the CCP sensitivity table and the paper-vs-ours table → OUT/report/report.html."""
    from tcpvideo.studies import ccplb

    if real:
        from tcpvideo.studies.ccplb import real as real_mod

        why = real_mod.missing()
        if why:
            raise typer.BadParameter(why, param_hint="--real")
        real_mod.compare(real_mod.default_points(), real_media, 1, out, log=print)
        print(f"table: {out / 'sim_vs_real.md'}")
        return
    res = _run_swept(ccplb.run, full, out, jobs, ray, quiet)
    _print_claims("seed 001: paper vs ours", res)


def register(app: typer.Typer) -> None:
    app.add_typer(study_app, name="study")
