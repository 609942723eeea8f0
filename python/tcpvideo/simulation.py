"""Packet-level simulation: a scenario (TOML file, JSON file or dict) → tables and pcaps.

The Rust crate ``tcpvideo-sim`` (crates/sim) does the work: a deterministic discrete-event
simulator with a Linux-like TCP. This module reads the scenario, runs it in chunks of simulated
time (so callers can show progress), and turns the result into pyarrow Tables. The scenario format
is documented key by key in docs/scenario.md.

Example::

    import tcpvideo
    r = tcpvideo.simulate("scenarios/one_flow.toml", seed=7)
    r.flows.to_pandas()[["name", "goodput_mbps", "retrans_fast", "rto_count"]]
    r.write("out/")        # every table as .parquet and .csv + summary.json
    r.video_clients, r.video_segments, r.video_stalls, r.video_buffer   # video apps (app = "live"/"vod")

Same scenario and seed ⇒ byte-identical tables and pcaps. A bad scenario raises
:class:`ScenarioError` (a ``ValueError``) with one line naming the field, e.g.
``link[2].b: unknown node "r9"``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import pyarrow as pa

from tcpvideo import _core
from tcpvideo._tables import FORMATS, table_from_columns, write_tables

ScenarioError = _core.ScenarioError

TABLES = ("flows", "links", "events", "series", "queues", "requests",
          "video_clients", "video_segments", "video_stalls", "video_buffer", "progressive")

ScenarioLike = Union[str, os.PathLike, Mapping[str, Any]]
Progress = Callable[[float, float], None]


def empty_table(name: str) -> pa.Table:
    """The simulator's table ``name`` with no rows: its schema as the Rust side declares it."""
    return table_from_columns(_core.simulation_empty_tables()[name])


@dataclass
class SimResult:
    """Tables of one run (pyarrow Tables: ``.to_pandas()`` for pandas) and the summary dict."""

    summary: dict
    flows: pa.Table
    links: pa.Table
    events: pa.Table
    series: pa.Table
    queues: pa.Table
    requests: pa.Table
    #: Per-client QoE (startup, stalls, seed 004 liveness, bitrate, switches, bytes); empty without video flows.
    video_clients: pa.Table
    #: One row per segment download (quality, bytes, requested/first byte/done, download time, deadline met).
    video_segments: pa.Table
    #: One row per stall with the TCP cause from the ground-truth log (rto, loss_recovery, ...).
    video_stalls: pa.Table
    #: Each client's playout buffer at every sample tick (``record.sample_interval``).
    video_buffer: pa.Table
    #: One row per progressive download (``app = "progressive"``): phase statistics of seed 003
    #: (RTT_startup, BW, throttling-phase goodput / retransmission rate / srtt) and rebuffering.
    progressive: pa.Table
    pcaps: list[Path] = field(default_factory=list)
    wall_s: float = 0.0

    def write(self, out_dir: Union[str, os.PathLike], formats: Sequence[str] = FORMATS) -> list[Path]:
        """Write every table as ``NAME.parquet`` / ``NAME.csv`` and ``summary.json`` into
        ``out_dir``; return the paths written.

        The files depend only on the scenario and seed (no wall-clock time), so two runs of the
        same scenario and seed write identical files.
        """
        tables = {name: getattr(self, name) for name in TABLES}
        return write_tables(out_dir, tables, self.summary, formats, sort_summary_keys=True)


def _read_scenario(scenario: ScenarioLike) -> tuple[str, str]:
    if isinstance(scenario, Mapping):
        return json.dumps(scenario), "json"
    path = Path(os.fspath(scenario))
    if not path.exists():
        raise FileNotFoundError(f"scenario file not found: {path}")
    text = path.read_text()
    return text, ("json" if path.suffix.lower() == ".json" else "toml")


def check(scenario: ScenarioLike, seed: Optional[int] = None) -> dict:
    """Validate a scenario without running it (raises :class:`ScenarioError`)."""
    text, fmt = _read_scenario(scenario)
    return _core.scenario_check(text, fmt, seed)


def simulate(
    scenario: ScenarioLike,
    seed: Optional[int] = None,
    out: Optional[Union[str, os.PathLike]] = None,
    progress: Optional[Progress] = None,
    chunks: int = 200,
) -> SimResult:
    """Run a scenario and return its tables.

    Args:
        scenario: path of a TOML/JSON scenario, or a dict with the same structure.
        seed: overrides the scenario's ``seed`` (ISNs, RTT draws, loss, start jitter depend on it).
        out: directory for pcaps and, if given, for the written tables (``SimResult.write``).
            Without it, pcaps the scenario asks for go to a fresh temporary directory.
        progress: called as ``progress(simulated_s, total_s)`` after each chunk of simulated time.
        chunks: number of chunks the run is cut into when ``progress`` is given.
    """
    text, fmt = _read_scenario(scenario)
    info = _core.scenario_check(text, fmt, seed)
    pcap_dir = Path(out) if out is not None else None
    if pcap_dir is None and info["pcaps"]:
        pcap_dir = Path(tempfile.mkdtemp(prefix="tcpvideo-pcap-"))
    t0 = time.perf_counter()
    sim = _core.Simulation(text, fmt, seed, str(pcap_dir) if pcap_dir is not None else None)
    end = sim.end_ns
    if progress is not None:
        step = max(end // max(chunks, 1), 1)
        t = 0
        while True:
            t = min(t + step, end)
            done = sim.run_until(t)
            progress(sim.now_ns / 1e9, end / 1e9)
            if done:
                break
    raw = sim.finish()
    wall = time.perf_counter() - t0
    tables = {name: table_from_columns(raw[name]) for name in TABLES}
    res = SimResult(summary=dict(raw["summary"]), pcaps=[Path(p) for p in raw["pcaps"]], wall_s=wall, **tables)
    if out is not None:
        res.write(out)
    return res
