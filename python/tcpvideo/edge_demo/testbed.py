"""The demo's real network: a live source and origin far away, the ETHLE edge near the receiver.

    src ns [ffmpeg -> DIR, tcpvideo-origin :8000, BBR]
       tun0 10.71.0.1 ~~ delay line, RTT/2 each way; tbf BACKHAUL rate on src's egress ~~ tun0 10.71.0.2
    edge ns [tcpvideo-edge :8080 --upstream http://10.71.0.1:8000, IP forwarding]
       veth 10.72.0.1 == tbf RAN rate (edge -> receiver) == veth 10.72.0.2
    rx ns [hls.js in chromium]

The receiver reaches the origin through the edge namespace's forwarding, so the E2E row (player
pointed at the origin) and the edge row cross the same backhaul and the same RAN link. Pieces are
tcpvideo's own (python/tcpvideo/netns.py for namespaces and veth, delayline.py for the TUN delay
line of crates/linkem): this module only arranges them.

Settings and why: every socket may grow its buffers to 64 MiB (``tcp_rmem``/``tcp_wmem``), so
windows never cap a 302 ms path and BBR's STARTUP is what limits a fetch (the model's premise);
the origin's sockets are BBR (the paper's source); the backhaul has a rate (tbf, default
1 Gbit/s, queue one BDP) well above the stream, the RAN a rate the receiver declares to the edge
(``X-Ran-Throughput-Kbps``). Deviation: the RAN adds no latency (the paper's cell latency of
20-180 ms is in the simulated study, not here).

Hygiene: namespaces are ``ethle-<pid>-<n>-<role>`` (netns.Network with its tag renamed), the run
directory is ``ethle-*`` under the temp dir unless the caller gives one; ``close()`` (also on
exceptions and on Ctrl-C/SIGTERM, which ``demo.py`` turns into exceptions) stops the processes,
the delay line, and deletes the namespaces; ``sweep_stale`` removes what a killed run left.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from tcpvideo import netns
from tcpvideo.delayline import DelayLine, TunPair
from tcpvideo.edge_demo.live_source import PLAYLIST, ffmpeg_argv

PREFIX = "ethle"
_NAME_RE = re.compile(rf"^{PREFIX}-(\d+)-\d+-[a-z0-9]+$")
_tags = itertools.count()

SRC_IP, EDGE_TUN_IP = "10.71.0.1", "10.71.0.2"
RAN_SUBNET = "10.72.0.0/24"
ORIGIN_PORT, EDGE_PORT = 8000, 8080
LIVE_DIR = "live"
BUFFER_MAX_BYTES = 64 << 20


def sweep_stale() -> list[str]:
    """Delete ``ethle-<pid>-...`` namespaces whose creating process is gone (a killed run)."""
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    removed = []
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = _NAME_RE.match(name)
        if m and not netns._pid_alive(int(m.group(1))):
            netns._kill_pids_in(name)
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
            removed.append(name)
    return removed


@dataclass
class TestbedConfig:
    rtt_ms: float = 302.0
    backhaul_mbit: float = 1000.0
    ran_mbit: float = 100.0
    bitrate_kbps: int = 15000
    segment_s: int = 2
    list_size: int = 10
    max_x: int = 8


@dataclass
class EdgeFacts:
    """What the edge logged about the stream (its policy from the ETHLE model)."""

    backhaul_rtt_ms: Optional[float] = None
    x: Optional[int] = None
    th_bh_mbit: Optional[float] = None
    bitrate_mbit: Optional[float] = None
    upstream_fetches: Optional[int] = None
    prefetches: Optional[int] = None
    cache_hits: Optional[int] = None


@dataclass
class Testbed:
    """Build with ``Testbed(config, run_dir)``, then ``start_source``, ``start_origin``,
    ``start_edge``; always ``close()`` (or use ``with``)."""

    config: TestbedConfig
    run_dir: Path
    net: netns.Network = field(init=False)
    line: Optional[DelayLine] = field(default=None, init=False)
    pair: Optional[TunPair] = field(default=None, init=False)
    _ffmpeg: Optional[netns.Process] = field(default=None, init=False)

    def __post_init__(self) -> None:
        sweep_stale()
        self.net = netns.Network(sweep=False)
        self.net.tag = f"{PREFIX}-{os.getpid()}-{next(_tags)}"
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    # building ----------------------------------------------------------------------------------
    def _build(self) -> None:
        c = self.config
        self.src = self.net.add_namespace("src")
        self.edge = self.net.add_namespace("edge")
        self.rx = self.net.add_namespace("rx")
        ran = self.net.connect(self.edge, self.rx, subnet=RAN_SUBNET)
        self.edge_ran_ip, self.rx_ip = ran.a_ip, ran.b_ip
        for ns in (self.src, self.edge, self.rx):
            for key, value in (("net.ipv4.conf.all.rp_filter", 0),
                               ("net.ipv4.conf.default.rp_filter", 0),
                               ("net.ipv4.tcp_no_metrics_save", 1),
                               ("net.ipv4.tcp_rmem", f"4096 131072 {BUFFER_MAX_BYTES}"),
                               ("net.ipv4.tcp_wmem", f"4096 16384 {BUFFER_MAX_BYTES}"),
                               ("net.ipv4.tcp_congestion_control", "bbr")):
                ns.sysctl(key, value)
        self.edge.sysctl("net.ipv4.ip_forward", 1)
        self.pair = TunPair(self.net, self.src, self.edge, SRC_IP, EDGE_TUN_IP)
        self.src.run(["ip", "route", "add", RAN_SUBNET, "dev", self.pair.a_dev])
        self.rx.run(["ip", "route", "add", f"{SRC_IP}/32", "via", self.edge_ran_ip])
        # Backhaul rate on the source's egress, queue one BDP (>= 100 packets).
        bdp = max(int(c.backhaul_mbit * 1e6 / 8 * c.rtt_ms / 1e3), 100 * 1514)
        self.src.tbf(self.pair.a_dev, f"{c.backhaul_mbit:g}mbit", burst="256kb", limit=str(bdp))
        # RAN rate toward the receiver, queue 50 ms of it (>= 64 packets).
        ran_queue = max(int(c.ran_mbit * 1e6 / 8 * 0.05), 64 * 1514)
        self.edge.tbf(self.net.dev(self.edge, self.rx), f"{c.ran_mbit:g}mbit", burst="64kb",
                      limit=str(ran_queue))
        one_way = c.rtt_ms / 2e3
        self.line = DelayLine(self.pair, default_a_to_b=one_way, default_b_to_a=one_way,
                              rt_priority=10)
        self.line.start()

    def _spawn(self, ns: netns.Namespace, argv: list[str], log_name: str,
               env: Optional[dict] = None) -> netns.Process:
        """Start ``argv`` in ``ns`` with stdout+stderr to a log file (a pipe nobody reads would
        block a process that logs every request); ended by ``close()``."""
        log = open(self.run_dir / log_name, "wb")
        try:
            p = subprocess.Popen(ns.argv(argv), stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=env)
        finally:
            log.close()
        proc = netns.Process(argv, p, ns)
        self.net._procs.append(proc)
        return proc

    def _wait_log(self, proc: netns.Process, log_name: str, pattern: str, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        path = self.run_dir / log_name
        while not re.search(pattern, path.read_text(errors="replace")):
            if proc.popen.poll() is not None:
                tail = path.read_text(errors="replace").strip().splitlines()[-3:]
                raise RuntimeError(f"{proc.argv[0]} exited (rc={proc.popen.returncode}): {' | '.join(tail)}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{proc.argv[0]}: no {pattern!r} in {log_name} after {timeout_s:.0f} s")
            time.sleep(0.1)

    def start_source(self) -> Path:
        """Start ffmpeg writing the live stream; returns the playlist path."""
        c = self.config
        live = self.run_dir / "www" / LIVE_DIR
        live.mkdir(parents=True, exist_ok=True)
        self._ffmpeg = self._spawn(self.src, ffmpeg_argv(live, c.bitrate_kbps, c.segment_s, c.list_size),
                                   "ffmpeg.log")
        return live / PLAYLIST

    def source_alive(self) -> bool:
        return self._ffmpeg is not None and self._ffmpeg.popen.poll() is None

    def start_origin(self, binary: str) -> None:
        argv = [binary, str(self.run_dir / "www"), "--listen", f"{SRC_IP}:{ORIGIN_PORT}",
                "--mode", "bulk", "--congestion-control", "bbr", "--no-bpf"]
        proc = self._spawn(self.src, argv, "origin.log")
        self._wait_log(proc, "origin.log", "origin listening", 60)

    def start_edge(self, binary: str) -> None:
        argv = [binary, "--upstream", f"http://{SRC_IP}:{ORIGIN_PORT}",
                "--listen", f"{self.edge_ran_ip}:{EDGE_PORT}", "--max-x", str(self.config.max_x),
                "--log-format", "json"]
        proc = self._spawn(self.edge, argv, "edge.log")
        self._wait_log(proc, "edge.log", "edge listening", 60)

    def start_other_viewer(self, ran_kbps: int) -> netns.Process:
        """Another receiver of the stream in the same cell, so the edge already serves it when the
        measured player joins: fetches the edge's playlist every segment length (what a player
        does between segments), named apart from the player (``X-Receiver-Id``)."""
        url = self.edge_url()
        loop = (f"while :; do curl -s -o /dev/null -m 10 -H 'X-Receiver-Id: ethle-other-viewer' "
                f"-H 'X-Ran-Throughput-Kbps: {int(ran_kbps)}' {url}; sleep {self.config.segment_s}; done")
        return self._spawn(self.rx, ["sh", "-c", loop], "other_viewer.log")

    # addresses ---------------------------------------------------------------------------------
    def origin_url(self) -> str:
        return f"http://{SRC_IP}:{ORIGIN_PORT}/{LIVE_DIR}/{PLAYLIST}"

    def edge_url(self) -> str:
        return f"http://{self.edge_ran_ip}:{EDGE_PORT}/{LIVE_DIR}/{PLAYLIST}"

    def receiver_argv_prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.rx.name]

    # what the edge decided ---------------------------------------------------------------------
    def edge_facts(self) -> EdgeFacts:
        """The edge's backhaul RTT and policy from its JSON log, counters from its /metrics."""
        facts = EdgeFacts()
        path = self.run_dir / "edge.log"
        for line in path.read_text(errors="replace").splitlines() if path.exists() else []:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            f = rec.get("fields", {})
            if f.get("message") == "backhaul measured" and facts.backhaul_rtt_ms is None:
                facts.backhaul_rtt_ms = f["rtt_us"] / 1e3
            if f.get("message") == "stream policy" and facts.x is None:
                facts.x = int(f["x"])
                facts.th_bh_mbit = f["th_bh_bps"] / 1e6
                facts.bitrate_mbit = f["bitrate_bps"] / 1e6
        r = self.rx.run(["curl", "-s", "-m", "5", f"http://{self.edge_ran_ip}:{EDGE_PORT}/metrics"],
                        check=False)
        for name, attr in (("ethle_upstream_fetches_total", "upstream_fetches"),
                           ("ethle_prefetches_total", "prefetches"),
                           ("ethle_cache_hits_total", "cache_hits")):
            m = re.search(rf"^{name} (\d+)$", r.stdout, flags=re.M)
            if m:
                setattr(facts, attr, int(m.group(1)))
        return facts

    def receiver_min_rtt_ms(self, peer_ip: str) -> Optional[float]:
        """Smallest ``minrtt`` of the receiver's TCP connections to ``peer_ip`` now (``ss -ti``):
        the path RTT the player's own sockets see, for the E2E row."""
        r = self.rx.run(["ss", "-tinH", "dst", peer_ip], check=False)
        values = [float(v) for v in re.findall(r"\bminrtt:([\d.]+)", r.stdout)]
        return min(values) if values else None

    def delay_line_stats(self) -> dict:
        return self.line.stats() if self.line is not None else {}

    # teardown ----------------------------------------------------------------------------------
    def close(self) -> None:
        try:
            if self.line is not None:
                self.line.stop()
            if self.pair is not None:
                self.pair.close()
        finally:
            self.net.close()  # processes first, then namespaces (and their devices and qdiscs)

    def __enter__(self) -> "Testbed":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
