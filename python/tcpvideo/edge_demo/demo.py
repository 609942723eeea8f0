"""``tcpvideo edge demo``: ETHLE end to end on real Linux TCP with a real player (seed 002 §V).

One live stream (ffmpeg, 15 Mbit/s, 2 s segments) behind a 302 ms backhaul is played by hls.js
in chromium twice on the same path (testbed.py): once through ``tcpvideo-edge``, which measures
the backhaul RTT with TCP_INFO and holds back x segments chosen by the ETHLE model
(crates/model/src/ethle), and once pointed at the origin directly (E2E, the paper's baseline).
Each row: startup delay, stalls (count / total seconds) and live latency, from the player's own
events (player.py). The paper's claim (Table II): with the optimal hold-x the player never
buffers, while E2E buffers or starts later.

The receiver declares its RAN throughput to the edge (``X-Ran-Throughput-Kbps``, the RAN tbf
rate), the stand-in for the operator's RNIS.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional

from tcpvideo.edge_demo.live_source import wait_for_segments
from tcpvideo.edge_demo.player import PlayerReport, missing_player_parts, play
from tcpvideo.edge_demo.testbed import EdgeFacts, Testbed, TestbedConfig
from tcpvideo.edge_demo.timeline import row_timeline

MODES = ("edge", "edge-warm", "e2e")
MODE_LABELS = {"edge": "edge cold", "edge-warm": "edge warm", "e2e": "E2E"}


def missing_requirements() -> Optional[str]:
    """None when the demo can run on this machine, else one line saying why not."""
    from tcpvideo import netns

    if os.geteuid() != 0:
        return "needs root (network namespaces, TUN devices)"
    if not Path("/dev/net/tun").exists():
        return "needs /dev/net/tun (the backhaul delay line)"
    for tool in ("ffmpeg", "curl", "ip", "tc", "ethtool"):
        if shutil.which(tool) is None:
            return f"`{tool}` not installed (apt-get install {tool if tool != 'ip' else 'iproute2'})"
    from tcpvideo import _core

    if not hasattr(_core, "DelayLine"):
        return "this build of tcpvideo._core has no DelayLine (pip install -e .)"
    player = missing_player_parts()
    if player:
        return player
    ok, why = netns.available()
    return None if ok else why


@dataclass
class DemoConfig:
    play_s: float = 180.0
    warm_segments: int = 6  # live window before the first player joins (x + 3 at least)
    other_viewer_s: float = 10.0  # edge-warm: another viewer joins this long before the player
    startup_timeout_s: float = 60.0
    modes: tuple[str, ...] = MODES
    testbed: TestbedConfig = field(default_factory=TestbedConfig)


@dataclass
class DemoRow:
    mode: str  # MODE_LABELS
    x: Optional[int]
    backhaul_rtt_ms: Optional[float]
    player: PlayerReport
    edge: Optional[EdgeFacts] = None
    # Start-up milestones, seconds since loadSource (timeline.py; edge ones for edge rows).
    timeline: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["player"].pop("fragments", None)
        d["stall_count"] = self.player.stall_count
        d["starved_stall_count"] = self.player.starved_stall_count
        d["buffer_min_s"] = self.player.buffer_min_s
        d["stall_total_s"] = self.player.stall_total_s
        d["latency_median_s"] = self.player.latency_median_s
        return d


@dataclass
class DemoResult:
    config: DemoConfig
    rows: list[DemoRow]
    load_average: tuple[float, float, float]
    run_dir: Path

    def as_dict(self) -> dict:
        return {"config": asdict(self.config), "rows": [r.as_dict() for r in self.rows],
                "load_average": list(self.load_average)}


def _fmt(v: Optional[float], spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def format_table(result: DemoResult) -> str:
    """The table the demo prints (one line per mode)."""
    c = result.config
    head = (f"ETHLE end to end: {c.testbed.bitrate_kbps / 1000:g} Mbit/s, {c.testbed.segment_s} s "
            f"segments, backhaul {c.testbed.rtt_ms:g} ms / {c.testbed.backhaul_mbit:g} Mbit/s, RAN "
            f"{c.testbed.ran_mbit:g} Mbit/s, {c.play_s:g} s of playback per row "
            f"(load {result.load_average[0]:.1f})")
    cols = (f"{'mode':12s} {'x':>3s} {'backhaul RTT ms':>15s} {'startup s':>9s} "
            f"{'stalls':>6s} {'starved':>7s} {'stalled s':>9s} {'min buffer s':>12s} {'live latency s':>14s} "
            f"{'played s':>8s}")
    lines = [head, cols]
    for r in result.rows:
        p = r.player
        lines.append(f"{r.mode:12s} {_fmt(r.x, 'd') if r.x is not None else '-':>3s} "
                     f"{_fmt(r.backhaul_rtt_ms, '.1f'):>15s} {_fmt(p.startup_s):>9s} "
                     f"{p.stall_count:>6d} {p.starved_stall_count:>7d} {p.stall_total_s:>9.2f} "
                     f"{_fmt(p.buffer_min_s):>12s} "
                     f"{_fmt(p.latency_median_s):>14s} {p.played_s:>8.1f}"
                     + (f"  FATAL {p.fatal}" if p.fatal else ""))
    lines.append("x and backhaul RTT: the edge's model and TCP_INFO on its upstream connection; E2E "
                 "RTT: ss minrtt of the player's sockets. Startup: loadSource to `playing`; stalls: "
                 "`waiting` after `playing`, starved = began with < 0.5 s buffered; min buffer: "
                 "least media ahead of the playhead (1 s samples); live latency: median of "
                 "hls.latency.")
    return "\n".join(lines)


class _Terminated(KeyboardInterrupt):
    """SIGTERM/SIGHUP during the demo: unwinds exactly like Ctrl-C, so everything is cleaned up
    and callers handle one kind of interruption."""


def run_demo(config: DemoConfig, origin_bin: str, edge_bin: str, run_dir: Optional[Path] = None,
             log: Callable[[str], None] = print) -> DemoResult:
    """Build the testbed, play each mode in turn, tear everything down (also on Ctrl-C, SIGTERM
    or an error). ``run_dir`` keeps the logs; by default a temporary ``ethle-*`` directory is
    used and removed."""
    for m in config.modes:
        if m not in MODES:
            raise ValueError(f"modes: unknown mode {m!r} (known: {', '.join(MODES)})")
    keep = run_dir is not None
    run_dir = Path(run_dir) if keep else Path(tempfile.mkdtemp(prefix="ethle-"))
    run_dir.mkdir(parents=True, exist_ok=True)

    def terminate(signum, _frame):
        raise _Terminated(f"signal {signum}")

    in_main = threading.current_thread() is threading.main_thread()  # signal() works only there
    previous = {s: signal.signal(s, terminate) for s in (signal.SIGTERM, signal.SIGHUP)} if in_main else {}
    rows: list[DemoRow] = []
    try:
        with Testbed(config.testbed, run_dir) as bed:
            playlist = bed.start_source()
            bed.start_origin(origin_bin)
            if any(m.startswith("edge") for m in config.modes):
                bed.start_edge(edge_bin)
            t = time.monotonic()
            wait_for_segments(playlist, config.warm_segments,
                              timeout_s=config.warm_segments * config.testbed.segment_s * 3 + 20,
                              alive=bed.source_alive)
            log(f"live source: {config.warm_segments} segments after {time.monotonic() - t:.1f} s")
            ran_kbps = int(config.testbed.ran_mbit * 1000)
            for mode in config.modes:
                url = bed.origin_url() if mode == "e2e" else bed.edge_url()
                viewer = None
                if mode == "edge-warm":
                    viewer = bed.start_other_viewer(ran_kbps)
                    time.sleep(config.other_viewer_s)
                log(f"playing {url} ({mode}) for {config.play_s:g} s ...")
                peer = url.split("/")[2].split(":")[0]
                rtts: list[float] = []
                stop = threading.Event()

                def sample_rtt() -> None:  # the player's sockets, while it plays
                    while not stop.wait(2.0):
                        v = bed.receiver_min_rtt_ms(peer)
                        if v is not None:
                            rtts.append(v)

                sampler = threading.Thread(target=sample_rtt, daemon=True)
                if mode == "e2e":  # through the edge the player's sockets end at the edge
                    sampler.start()
                try:
                    report = play(bed.receiver_argv_prefix(), url, config.play_s, ran_kbps,
                                  config.startup_timeout_s, log_path=run_dir / f"player_{mode}.log")
                finally:
                    stop.set()
                    if sampler.is_alive():
                        sampler.join()
                    if viewer is not None:
                        viewer.stop()
                timeline = row_timeline(report, run_dir / "edge.log" if mode != "e2e" else None)
                if mode != "e2e":
                    facts = bed.edge_facts()
                    rows.append(DemoRow(MODE_LABELS[mode], facts.x, facts.backhaul_rtt_ms, report, facts, timeline))
                else:
                    rows.append(DemoRow("E2E", None, min(rtts) if rtts else None, report, None, timeline))
                (run_dir / f"fragments_{mode}.json").write_text(json.dumps(report.fragments))
                if not bed.source_alive():
                    raise RuntimeError("ffmpeg (live source) stopped during playback; see ffmpeg.log")
            line = bed.delay_line_stats()
            log("delay line: " + ", ".join(
                f"{d} {v.get('packets', 0)} packets, {v.get('queue_drops', 0)} queue drops, "
                f"lateness p99 {v.get('late_p99_us', 0):.0f} us"
                for d, v in line.items() if isinstance(v, dict)))
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        if not keep:
            shutil.rmtree(run_dir, ignore_errors=True)
    return DemoResult(config, rows, os.getloadavg(), run_dir)
