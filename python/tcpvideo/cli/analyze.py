"""``tcpvideo analyze CAPTURE... [--out DIR]``: per-flow TCP stalls and their causes from captures
taken anywhere on the path, with the seed's tables in the terminal and tables/report in DIR.

Output streams: the tables go to stdout; progress, warnings and errors to stderr. Exit status:
0 — analyzed, input intact; 3 — analyzed, but part of the input was damaged and skipped (the
count is on stderr and at the top of the report); 2 — error (unreadable file, bad option, or
damaged input with ``--strict``)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


def print_summary(summary: dict, console: Console) -> None:
    """The seed's tables from a summary dict (as in summary.json)."""
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
    out = []
    for it in items:
        if "=" not in it:
            raise typer.BadParameter(f"--channel-map expects PATTERN=CHANNEL, got {it!r}")
        k, v = it.split("=", 1)
        out.append((k, v))
    return out


def analyze_cmd(
    captures: List[Path] = typer.Argument(..., exists=True, dir_okay=False, help="pcap/pcapng files, optionally .gz/.zst"),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="write tables (Parquet+CSV), summary.json and report.html here"),
    server_port: List[int] = typer.Option([], "--server-port", help="port of the server side (repeatable)"),
    server_ip: List[str] = typer.Option([], "--server-ip", help="address of the server side (repeatable)"),
    tau: float = typer.Option(2.0, help="stall threshold factor: gap > min(tau*SRTT, RTO)"),
    stall_floor_ms: float = typer.Option(0.0, "--stall-floor-ms", help="a stall must also exceed this (0 = the seed's "
                                         "definition; try 200 on sub-millisecond paths such as veth)"),
    threads: int = typer.Option(0, help="worker threads (0 = all cores)"),
    rto_style: str = typer.Option("rfc6298", help="rfc6298 (RTO >= 200 ms) or linux (RTO >= SRTT + 200 ms)"),
    channel_map: List[str] = typer.Option([], "--channel-map", help="PATTERN=CHANNEL: URL/stream/client ip:port substring → channel"),
    no_app: bool = typer.Option(False, "--no-app", help="skip HTTP/FLV/RTMP parsing"),
    csv: bool = typer.Option(True, help="also write CSV next to Parquet"),
    report: bool = typer.Option(True, help="write report.html into --out"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bar and no tables (warnings still go to stderr)"),
    strict: bool = typer.Option(False, "--strict", help="damaged input (any skipped byte) is an error: exit 2, nothing written"),
) -> None:
    """Analyze captures (server side, client side or mid-path: told per flow from the handshake):
    FCT, RTT, stalls and their causes, timeout retransmission types, bursts, per-frame-type loss
    (seed 000 tables; Trickle metrics). Exit status 3 when damaged input was skipped."""
    from tcpvideo.analysis import CaptureDamaged, analyze, analyze_summary, damage_message

    console = Console(stderr=False)
    err = Console(stderr=True)
    formats = ("parquet", "csv") if csv else ("parquet",)
    with Progress(TextColumn("[bold]analyze[/bold] {task.description}"), BarColumn(), DownloadColumn(),
                  TimeElapsedColumn(), console=err, disable=quiet, transient=True) as bar:
        task = bar.add_task(captures[0].name, total=None)

        def progress(done, total, packets, fi, files):
            bar.update(task, completed=done, total=total,
                       description=f"{captures[fi].name} ({fi + 1}/{files}) {packets:,} pkts")

        options = dict(tau=tau, stall_floor_ms=stall_floor_ms, server_ports=server_port, server_ips=server_ip, threads=threads,
                       rto_style=rto_style, channel_map=_parse_map(channel_map), app_parse=not no_app,
                       progress=progress, strict=strict)
        try:
            if out is None:
                # Only the terminal tables: no Arrow tables, no numpy/pyarrow import.
                summary, r = analyze_summary(captures, **options), None
            else:
                r = analyze(captures, out=out, formats=formats, **options)
                summary = r.summary
        except CaptureDamaged as e:
            err.print(f"[red]error:[/red] {e}", highlight=False)
            raise typer.Exit(2)
        except (OSError, ValueError) as e:
            err.print(f"[red]error:[/red] {e}", highlight=False)
            raise typer.Exit(2)
    print_warnings(summary, err)
    if not quiet:
        print_summary(summary, console)
    if r is not None:
        if report:
            from tcpvideo.report import write_report

            write_report(r, Path(out) / "report.html", captures=[str(c) for c in captures])
        err.print(f"wrote tables, summary.json{' and report.html' if report else ''} to {out}", highlight=False)
    damage = damage_message(summary)
    if damage:
        err.print(f"[red]{damage}[/red] (exit status 3; --strict makes this an error)", highlight=False)
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    app.command("analyze")(analyze_cmd)
