"""``tcpvideo analyze CAPTURE... [--out DIR]``: per-flow TCP stalls and their causes from captures
taken anywhere on the path, with the seed's tables in the terminal and tables/report in DIR.

Output streams: the tables go to stdout; progress, warnings and errors to stderr. Exit status:
0 — analyzed, input intact; 3 — analyzed, but part of the input was damaged and skipped (the
count is on stderr and at the top of the report); 2 — error (unreadable file, bad option, or
damaged input with ``--strict``)."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

from tcpvideo.cli.phases import PhaseClock

if TYPE_CHECKING:
    import typer
    from rich.console import Console

# Typer (with its click) is ~70 % of the command's start-up (issue 16 session 14: 45 of 62 ms,
# `python -X importtime`), so this module imports it only to build the command for the app.
# ``tcpvideo analyze FILE... [-q] [--timings]`` — the plain run bench/analyze_speed.py times —
# is parsed by :func:`plain_args` without it; anything else (another option, --help, a path
# that is not a readable file) goes through Typer, which parses, checks and reports as always.
# Defaults both paths use (the Typer options below name these):
TAU = 2.0  # stall threshold factor, the seed's min(2·SRTT, RTO)
STALL_FLOOR_MS = 0.0  # no floor: the seed's definition
THREADS = 0  # all cores
RTO_STYLE = "rfc6298"


class CommandExit(Exception):
    """End the command with exit status ``code`` (its message, if any, already printed)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code

# What the steps after the analysis need (rich for the terminal tables; with --out numpy and
# pyarrow for the tables, pyarrow's Parquet/CSV writers, matplotlib for report.html) is imported
# on a side thread while the Rust analysis runs (it releases the GIL): the imports then overlap
# the analysis instead of following it (issue 16: the CLI at >= 10 M packets/s; `--timings`
# prints the phases, bench/analyze_speed.py the line).


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


def print_summary(summary: dict, console: Console) -> None:
    """The seed's tables from a summary dict (as in summary.json)."""
    from rich.table import Table

    t = Table(title="Flows and stall share of FCT (seed §2.1–2.2)")
    for c in ("direction", "flows", "FCT median s", "tput median kB/s", "stall % of FCT", "stalls",
              "retrans %", "reorder %", "timeout-reorder % of reorder"):
        t.add_column(c, justify="right")
    for d in ("upload", "download"):
        s = summary[d]
        med = s.get("throughput_median_bps")
        t.add_row(d, str(s["flows"]),
                  "—" if s.get("fct_median_s") is None else f"{s['fct_median_s']:.2f}",
                  "—" if med is None else f"{med / 8e3:.1f}",
                  _pct(s["stall_share_of_fct"]), str(s["stalls"]), _pct(s["retrans_rate"]),
                  _pct(s["reordering_rate"]), _pct(s["timeout_reordering_share"]))
    console.print(t)
    for d, title in (("download", "Download stall types by time (Table 2)"), ("upload", "Upload stall types by time (§2.1)")):
        st = summary[d]["stall_types_by_time"]
        t = Table(title=title)
        for c in ("type", "% of stall time", "count", "time s"):
            t.add_column(c, justify="right")
        for k, v in st.items():
            t.add_row(k, _pct(v["share"]), str(v["count"]), f"{v['time_s']:.3f}")
        console.print(t)
    tt = summary["timeout_types"]
    t = Table(title="Timeout retransmission types, % (Table 5)")
    t.add_column("type")
    cols = [k for k in ("I", "P", "V", "meta", "unknown", "all") if k in tt]
    for k in cols:
        t.add_column(k, justify="right")
    for ty in tt["all"]:
        t.add_row(ty, *[f"{_pct(tt[k][ty]['share'])} ({tt[k][ty]['count']})" for k in cols])
    console.print(t)
    t = Table(title="Frames (Table 4): frames of each flow's data direction; packets and loss of download flows")
    for c in ("type", "share %", "interval s", "size B", "packets", "loss %", "timeout/loss %"):
        t.add_column(c, justify="right")
    for f in summary["frame_types"]:
        if f["frames"] == 0 and f["packets"] == 0:
            continue
        t.add_row(f["frame"], _pct(f["frames_share"]) if f["frame"] in ("I", "P", "V") else "—",
                  "—" if f["mean_interval_s"] is None else f"{f['mean_interval_s']:.3f}",
                  "—" if f["mean_size_bytes"] is None else f"{f['mean_size_bytes']:.0f}",
                  str(f["packets"]), _pct(f["loss_rate"]), _pct(f["timeout_per_loss"]))
    console.print(t)
    t = Table(title="Upload flows by reordering rate (Table 1)")
    for c in ("reordering", "flows", "throughput kB/s", "size MB", "FCT s"):
        t.add_column(c, justify="right")
    for r in summary.get("upload_by_reordering", []):
        f = lambda v, k: "—" if v is None else f"{v / k:.2f}"  # noqa: E731
        t.add_row(r["reordering_rate"], str(r["flows"]), f(r["mean_throughput_bps"], 8e3),
                  f(r["mean_bytes"], 1e6), f(r["mean_fct_s"], 1))
    console.print(t)
    t = Table(title="RTT / RTT_3WHS by in_flight (Fig. 5)")
    for c in ("in_flight kB", "samples", "mean RTT ms", "RTT/RTT_3WHS"):
        t.add_column(c, justify="right")
    for b in summary["rtt_by_in_flight"]:
        hi = "∞" if b["hi_kb"] is None else str(b["hi_kb"])
        t.add_row(f"{b['lo_kb']}–{hi}", str(b["samples"]),
                  "—" if b["mean_rtt_ms"] is None else f"{b['mean_rtt_ms']:.1f}",
                  "—" if b["mean_ratio"] is None else f"{b['mean_ratio']:.2f}")
    console.print(t)
    p = summary["pairing"]
    console.print(
        f"[bold]Upload→download (Table 3)[/bold]: {p['channels']} paired channels, "
        f"{p['upload_stalls_causing']}/{p['upload_stalls']} upload stalls followed by a download stall "
        f"within ±1 s ({_pct(p['share_causing'])}%); caused kinds: {p['caused_kinds'] or '—'}"
    )
    b = summary["bursts"]
    console.print(f"[bold]Micro-bursts[/bold] (≥4 pkts ≤1 ms): {b['count']}, median {b['median_packets']} pkts, "
                  f"p90 {b['p90_packets']}, with a retransmission {b['with_retransmission']}")
    r, d = summary["read"], summary["decode"]
    console.print(f"read {r['records']} records ({d['tcp']} TCP, {d.get('duplicates', 0)} exact duplicates dropped); "
                  f"damaged bytes skipped {r.get('skipped_bytes', 0)}; not analyzed: unknown blocks "
                  f"{r['unknown_blocks']}, non-IP {d['not_ip']}, non-TCP {d['not_tcp']}, fragments {d['fragments']}, "
                  f"bad headers {d['bad_header'] + d['truncated']}")
    v = summary.get("vantage") or {}
    if v:
        console.print("capture vantage (flows): " + ", ".join(f"{k} {n}" for k, n in v.items()))


def print_warnings(summary: dict, console: Console) -> None:
    """Every warning of the analysis, one line each (meant for stderr)."""
    for w in summary.get("warnings", []):
        where = f"{w['file']} @ {w['offset']}: " if w["file"] else ""
        console.print(f"[yellow]warning:[/yellow] {where}{w['message']}", highlight=False)


def _parse_map(items: List[str]) -> list[tuple[str, str]]:
    import typer

    out = []
    for it in items:
        if "=" not in it:
            raise typer.BadParameter(f"--channel-map expects PATTERN=CHANNEL, got {it!r}")
        k, v = it.split("=", 1)
        out.append((k, v))
    return out


def _bar_may_show() -> bool:
    """Whether rich could draw the (transient) progress bar on stderr: only on a terminal or in
    Jupyter — to a file or pipe a transient bar writes nothing (rich ``Live.refresh``/``stop``),
    so there it is not built at all (nor rich.progress imported). Any variable that makes rich
    treat a pipe as a terminal keeps the bar."""
    if any(v in os.environ for v in ("FORCE_TERMINAL", "TTY_COMPATIBLE", "FORCE_COLOR", "TTY_INTERACTIVE")):
        return True
    if "ipykernel" in sys.modules:
        return True
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError, OSError):
        return True


def _prefetch_imports(tables: bool, report: bool) -> None:
    """Import, in the order the main thread will ask for them (so neither thread waits on a
    module lock the other holds in reverse order), the modules the steps after the analysis
    use. Runs on a side thread; an import that fails here fails again, and is reported, where
    the main thread needs it."""
    names = ["numpy", "pyarrow"] if tables else []
    names += ["rich.console", "rich.table"]
    if tables:
        names += ["pyarrow.csv", "pyarrow.parquet"]
    if tables and report:
        names += ["matplotlib"]
    try:
        import importlib

        for name in names:
            importlib.import_module(name)
        if tables and report:
            import matplotlib

            matplotlib.use("Agg")  # as tcpvideo.report does before pyplot: no display needed
            importlib.import_module("matplotlib.pyplot")
    except Exception:  # noqa: BLE001 — the main thread's own import reports it
        pass


def _command():
    """The Typer command (Typer imported here, when the app is built)."""
    import typer

    def analyze_cmd(
        captures: List[Path] = typer.Argument(..., exists=True, dir_okay=False, help="pcap/pcapng files, optionally .gz/.zst"),
        out: Optional[Path] = typer.Option(None, "--out", "-o", help="write tables (Parquet+CSV), summary.json and report.html here"),
        server_port: List[int] = typer.Option([], "--server-port", help="port of the server side (repeatable)"),
        server_ip: List[str] = typer.Option([], "--server-ip", help="address of the server side (repeatable)"),
        tau: float = typer.Option(TAU, help="stall threshold factor: gap > min(tau*SRTT, RTO)"),
        stall_floor_ms: float = typer.Option(STALL_FLOOR_MS, "--stall-floor-ms", help="a stall must also exceed this (0 = the "
                                             "seed's definition; try 200 on sub-millisecond paths such as veth)"),
        threads: int = typer.Option(THREADS, help="worker threads (0 = all cores)"),
        rto_style: str = typer.Option(RTO_STYLE, help="rfc6298 (RTO >= 200 ms) or linux (RTO >= SRTT + 200 ms)"),
        channel_map: List[str] = typer.Option([], "--channel-map", help="PATTERN=CHANNEL: URL/stream/client ip:port substring → channel"),
        no_app: bool = typer.Option(False, "--no-app", help="skip HTTP/FLV/RTMP parsing"),
        csv: bool = typer.Option(True, help="also write CSV next to Parquet"),
        report: bool = typer.Option(True, help="write report.html into --out"),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bar and no tables (warnings still go to stderr)"),
        strict: bool = typer.Option(False, "--strict", help="damaged input (any skipped byte) is an error: exit 2, nothing written"),
        timings: bool = typer.Option(False, "--timings", help="print the wall and CPU seconds of each phase (start-up, "
                                     "analysis, printing, writing, report) on stderr"),
    ) -> None:
        """Analyze captures (server side, client side or mid-path: told per flow from the handshake):
        FCT, RTT, stalls and their causes, timeout retransmission types, bursts, per-frame-type loss
        (seed 000 tables; Trickle metrics). Exit status 3 when damaged input was skipped."""
        clock = PhaseClock() if timings else None
        options = analysis_options(tau=tau, stall_floor_ms=stall_floor_ms, server_ports=server_port,
                                   server_ips=server_ip, threads=threads, rto_style=rto_style,
                                   channel_map=_parse_map(channel_map), app_parse=not no_app, strict=strict)
        try:
            code = run(captures, out, options, csv=csv, report=report, quiet=quiet, clock=clock)
        except CommandExit as e:
            raise typer.Exit(e.code) from None
        if code:
            raise typer.Exit(code)

    return analyze_cmd


def analysis_options(*, tau: float = TAU, stall_floor_ms: float = STALL_FLOOR_MS, server_ports=(), server_ips=(),
                     threads: int = THREADS, rto_style: str = RTO_STYLE, channel_map=(), app_parse: bool = True,
                     strict: bool = False) -> dict:
    """The analysis options, each defaulting to what a command line that sets none gets (the
    Typer command passes what it parsed; the plain path passes nothing)."""
    return dict(tau=tau, stall_floor_ms=stall_floor_ms, server_ports=list(server_ports), server_ips=list(server_ips),
                threads=threads, rto_style=rto_style, channel_map=list(channel_map), app_parse=app_parse,
                strict=strict)


def plain_args(argv: List[str]) -> tuple[list[Path], bool, bool] | None:
    """(captures, quiet, timings) when ``argv`` (after ``analyze``) is only readable files and
    ``-q``/``--quiet``/``--timings``; None for anything else, which Typer then parses and checks."""
    files, quiet, timings = [], False, False
    for a in argv:
        if a in ("-q", "--quiet"):
            quiet = True
        elif a == "--timings":
            timings = True
        elif a.startswith("-"):
            return None
        else:
            p = Path(a)
            if not (p.is_file() and os.access(p, os.R_OK)):
                return None  # Typer's "does not exist" / "is a directory" message
            files.append(p)
    return (files, quiet, timings) if files else None


def run(captures: List[Path], out: Optional[Path], options: dict, *, csv: bool = True, report: bool = True,
        quiet: bool = False, clock: PhaseClock | None = None) -> int:
    """The command once its arguments are parsed: analyze, print, write. Returns the exit status
    (0, or 3 for damaged input skipped); raises :class:`CommandExit` (2) on an error, printed."""
    from tcpvideo.analysis import damage_message

    formats = ("parquet", "csv") if csv else ("parquet",)
    side = threading.Thread(target=_prefetch_imports, args=(out is not None, report), name="tcpvideo-imports",
                            daemon=True)
    side.start()
    if not quiet and _bar_may_show():
        summary, r = _analyze_with_bar(captures, out, options)
    else:
        summary, r = _analyze(captures, out, options)
    if clock:
        clock.mark("analysis")
    from rich.console import Console

    console = Console(stderr=False)
    err = Console(stderr=True)
    print_warnings(summary, err)
    if not quiet:
        print_summary(summary, console)
    if clock:
        clock.mark("printing")
    if r is not None:
        try:
            r.write(out, formats)
        except (OSError, ValueError) as e:
            raise _fail(e)
        if clock:
            clock.mark("writing")
        if report:
            from tcpvideo.report import write_report

            write_report(r, Path(out) / "report.html", captures=[str(c) for c in captures])
            if clock:
                clock.mark("report")
        err.print(f"wrote tables, summary.json{' and report.html' if report else ''} to {out}", highlight=False)
    side.join()
    if clock:
        err.print(clock.line(), highlight=False, soft_wrap=True)
    damage = damage_message(summary)
    if damage:
        err.print(f"[red]{damage}[/red] (exit status 3; --strict makes this an error)", highlight=False)
        return 3
    return 0


def _fail(e: Exception) -> CommandExit:
    """Print the error on stderr; the exit (status 2) to raise."""
    from rich.console import Console

    Console(stderr=True).print(f"[red]error:[/red] {e}", highlight=False)
    return CommandExit(2)


def _analyze(captures: List[Path], out: Optional[Path], options: dict):
    """(summary, result): without ``--out`` only the summary (no Arrow tables, so no numpy or
    pyarrow import) and result None; with it the tables too, written by the caller."""
    from tcpvideo.analysis import CaptureDamaged, analyze, analyze_summary

    try:
        if out is None:
            return analyze_summary(captures, **options), None
        r = analyze(captures, **options)
        return r.summary, r
    except (CaptureDamaged, OSError, ValueError) as e:
        raise _fail(e)


def _analyze_with_bar(captures: List[Path], out: Optional[Path], options: dict):
    """:func:`_analyze` with a transient progress bar on stderr."""
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]analyze[/bold] {task.description}"), BarColumn(), DownloadColumn(),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(captures[0].name, total=None)

        def progress(done, total, packets, fi, files):
            bar.update(task, completed=done, total=total,
                       description=f"{captures[fi].name} ({fi + 1}/{files}) {packets:,} pkts")

        return _analyze(captures, out, {**options, "progress": progress})


def run_and_exit(app: typer.Typer) -> None:
    """Run ``tcpvideo analyze`` as the process's command and end the process without the
    interpreter's teardown: once the tables are printed and the files written and closed, the
    teardown only frees what exit frees anyway — rich, typer, and with --out numpy, pyarrow and
    matplotlib — which cost 0.03 CPU s on a 2 k-packet capture and 0.1–0.2 s with --out
    (issue 16, `--timings`' "exit" in bench/analyze_speed.py). stdout and stderr are flushed
    first; the exit status is the command's. Only for the process entry (``main``): in a test
    (typer's CliRunner) the command returns as usual."""
    try:
        app()
        code = 0
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:  # as sys.exit("message") would: the message on stderr, status 1
            print(e.code, file=sys.stderr)
            code = 1
    except Exception:
        # Printed as the interpreter would (Typer's hook included), then the same exit without
        # teardown. Left to propagate, the traceback stays in sys.last_traceback until the
        # teardown frees it, and CPython 3.11's teardown can deadlock there when the traceback
        # holds import-lock callbacks (an exception raised inside an import): seen once as an
        # analyzer subprocess asleep on the import lock for minutes (issue 16, session 21).
        sys.excepthook(*sys.exc_info())
        code = 1
    _exit(code)


def run_plain_and_exit(captures: List[Path], quiet: bool, timings: bool) -> None:
    """``tcpvideo analyze FILE... [-q] [--timings]`` (see :func:`plain_args`) without Typer, ended
    as :func:`run_and_exit` ends the Typer command."""
    clock = PhaseClock() if timings else None
    try:
        code = run(captures, None, analysis_options(), quiet=quiet, clock=clock)
    except CommandExit as e:
        code = e.code
    _exit(code)


def _exit(code: int) -> None:
    """Flush stdout and stderr and end the process with ``code``, skipping the teardown."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`| head`): nothing more can reach it
            pass
    os._exit(code)


def register(app: typer.Typer) -> None:
    app.command("analyze")(_command())
