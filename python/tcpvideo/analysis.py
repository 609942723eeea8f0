"""Capture analysis: pcap/pcapng (optionally .gz/.zst) → per-flow TCP stalls, their causes,
timeout-retransmission types, micro-bursts and video-frame attribution.

The work is done by the Rust crate ``tcpvideo-trace`` (crates/trace); this module checks
arguments, turns its columns into pyarrow Tables (``_tables.table_from_columns``) and writes them (Parquet and CSV) with a summary
JSON. Definitions follow seed 000 (Zhou et al., TCP stalls of crowdsourced live streaming) and the
Trickle metrics of seed 003; see crates/trace/src/stall.rs and retrans.rs for the exact rules.

Example::

    import tcpvideo
    r = tcpvideo.analyze(["server.pcap.zst"], server_ports=[80, 1935])
    r.flows.to_pandas().groupby("direction").stall_share.mean()
    r.write("out/")          # flows/stalls/... .parquet and .csv, summary.json
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from tcpvideo import _core
from tcpvideo._tables import FORMATS, table_from_columns, write_tables

if TYPE_CHECKING:
    import pyarrow as pa

# numpy and pyarrow are imported where tables are built, not at import time: together they
# cost ~0.8 s, and `tcpvideo analyze` without --out needs neither (issue 12: start-up).

TABLES = ("flows", "stalls", "retransmissions", "bursts", "http", "frame_types", "rtt_buckets")


@dataclass
class AnalysisResult:
    """Tables of one analysis (pyarrow), and the summary (the seed's tables, counters)."""

    flows: pa.Table
    stalls: pa.Table
    retransmissions: pa.Table
    bursts: pa.Table
    http: pa.Table
    frame_types: pa.Table
    rtt_buckets: pa.Table
    summary: dict = field(default_factory=dict)

    def table(self, name: str) -> pa.Table:
        if name not in TABLES:
            raise KeyError(f"no table {name!r}; tables: {', '.join(TABLES)}")
        return getattr(self, name)

    def write(self, out_dir: str | Path, formats: Sequence[str] = FORMATS) -> list[Path]:
        """Write every table as ``<name>.parquet`` / ``<name>.csv`` and ``summary.json``; return
        the paths written."""
        return write_tables(out_dir, {name: self.table(name) for name in TABLES}, self.summary, formats)


def analyze(
    captures: str | Path | Iterable[str | Path],
    *,
    out: str | Path | None = None,
    tau: float = 2.0,
    stall_floor_ms: float = 0.0,
    server_ports: Sequence[int] = (),
    server_ips: Sequence[str] = (),
    threads: int = 0,
    rto_style: str = "rfc6298",
    min_rto_ms: float = 200.0,
    burst_gap_ms: float = 1.0,
    burst_min_packets: int = 4,
    timeout_reordering_ms: float = 200.0,
    pairing_window_s: float = 1.0,
    idle_timeout_s: float = 300.0,
    channel_map: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
    app_parse: bool = True,
    keep_bursts: bool = True,
    formats: Sequence[str] = FORMATS,
    progress: Callable[[int, int | None, int, int, int], None] | None = None,
    strict: bool = False,
) -> AnalysisResult:
    """Analyze packet captures (read in order, as one capture), taken anywhere on the path:
    each flow's vantage point (server, client, mid-path) comes from its handshake.

    ``tau``: stall threshold factor in min(tau·SRTT, RTO) (seed: 2); ``stall_floor_ms``: a gap
    must also exceed this to be a stall (0 = the seed's definition; e.g. 200 on sub-millisecond
    paths, where every application pause would otherwise count). ``server_ports`` /
    ``server_ips`` say which side is the server (else the SYN direction, else well-known ports).
    ``channel_map``: substring of a flow's URL path / RTMP stream name / "client_ip:port" →
    channel, to pair uploads with downloads (seed Table 3). ``out``: also write the tables there.
    ``progress(bytes_done, bytes_total, packets, file_index, files)`` is called every 64 MiB.
    Damaged input (bytes that are no record) is skipped, counted in ``summary["read"]`` and
    warned about; ``strict=True`` raises :class:`CaptureDamaged` instead.
    """
    raw = _analyze_raw(captures, {k: v for k, v in locals().items() if k not in ("captures", "out", "formats")})
    result = AnalysisResult(
        **{name: table_from_columns(raw[name]) for name in TABLES},
        summary=json.loads(raw["summary"]),
    )
    if out is not None:
        result.write(out, formats)
    return result


class CaptureDamaged(ValueError):
    """Part of the input was not a readable record (raised with ``strict=True``)."""


def analyze_summary(captures: str | Path | Iterable[str | Path], **options) -> dict:
    """Only the summary of :func:`analyze` (same options, without ``out``/``formats``): no
    tables are built, so neither numpy nor pyarrow is imported."""
    # analyze's signature is the one list of the options and their defaults.
    defaults = {k: v for k, v in analyze.__kwdefaults__.items() if k not in ("out", "formats")}
    for name in options:
        if name not in defaults:
            raise TypeError(f"analyze_summary() got an unexpected keyword argument {name!r}")
    return json.loads(_analyze_raw(captures, {**defaults, **options}, summary_only=True)["summary"])


def damage_message(summary: dict) -> str | None:
    """One line saying what part of the input was lost to damage, or None."""
    r = summary["read"]
    if not (r.get("skipped_bytes") or r.get("corrupt_records") or r.get("truncated_records")):
        return None
    return (f"damaged input: {r.get('skipped_bytes', 0)} bytes skipped ({r['corrupt_records']} corrupt and "
            f"{r['truncated_records']} truncated records); {r['records']} records read")


def _analyze_raw(captures, options: dict, summary_only: bool = False) -> dict:
    """Check the captures and :func:`analyze`'s options (every one given, by name) and run the
    Rust analyzer: its raw columns and summary JSON (only the summary with ``summary_only``)."""
    if isinstance(captures, (str, Path)):
        captures = [captures]
    paths = [str(Path(c)) for c in captures]
    if not paths:
        raise ValueError("no capture given")
    for p in paths:
        if not Path(p).is_file():
            raise FileNotFoundError(p)
    if options["tau"] <= 0:
        raise ValueError("tau must be > 0")
    if not options["stall_floor_ms"] >= 0:
        raise ValueError("stall_floor_ms must be >= 0")
    if options["rto_style"] not in ("rfc6298", "linux"):
        raise ValueError("rto_style must be 'rfc6298' or 'linux'")
    cmap: list[tuple[str, str]] = []
    if options["channel_map"]:
        channel_map = options["channel_map"]
        items = channel_map.items() if isinstance(channel_map, Mapping) else channel_map
        cmap = [(str(k), str(v)) for k, v in items]
    opts = {
        "tau": float(options["tau"]),
        "stall_floor_ms": float(options["stall_floor_ms"]),
        "server_ports": [int(p) for p in options["server_ports"]],
        "server_ips": [str(i) for i in options["server_ips"]],
        "threads": int(options["threads"]),
        "rto_style": options["rto_style"],
        "min_rto_ms": float(options["min_rto_ms"]),
        "burst_gap_ms": float(options["burst_gap_ms"]),
        "burst_min_packets": int(options["burst_min_packets"]),
        "timeout_reordering_ms": float(options["timeout_reordering_ms"]),
        "pairing_window_s": float(options["pairing_window_s"]),
        "idle_timeout_s": float(options["idle_timeout_s"]),
        "channel_map": cmap,
        "app_parse": bool(options["app_parse"]),
        "keep_bursts": bool(options["keep_bursts"]),
    }
    raw = _core.analyze_captures(paths, opts, options["progress"], summary_only)
    if options["strict"]:
        msg = damage_message(json.loads(raw["summary"]))
        if msg:
            raise CaptureDamaged(f"{msg} (strict)")
    return raw
