"""Packet captures of an emulated run: what ``record.pcap`` asks, on the real interfaces.

A scenario's tap ``{link, at}`` becomes dumpcap (Wireshark's capture engine) on interface
``l<link>`` inside the namespace of node ``at``, with the scenario's snaplen, writing classic
pcap to the output directory under the simulator's file name (``LINK@NODE.pcap``), so the same
``tcpvideo analyze`` command reads either run. A linkem link's end is a TUN device: its capture
is raw IP (no Ethernet header), which the analyzer reads too. Started before the applications,
stopped (SIGINT, so dumpcap flushes) after them. Without dumpcap the run goes on with a warning.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

from tcpvideo.netns import DUMPCAP_STOP_SETTLE_S, wait_until_dumpcap_captures


class Captures:
    def __init__(self, net, plan, out_dir: Path):
        self.net, self.plan, self.out_dir = net, plan, Path(out_dir)
        self.procs: list[subprocess.Popen] = []
        self.files: list[Path] = []
        self.warnings: list[str] = []

    def start(self, timeout: float = 10.0) -> None:
        pcaps = self.plan.topology["record"]["pcaps"]
        if not pcaps:
            return
        if shutil.which("dumpcap") is None:
            self.warnings.append("record.pcap: dumpcap not installed (apt-get install tshark); no captures")
            return
        self.out_dir.mkdir(parents=True, exist_ok=True)
        snap = self.plan.topology["record"]["snaplen"]
        for pc in pcaps:
            dev = f"l{pc['link']}"
            path = self.out_dir / pc["file"]
            p = self.net.popen(pc["at"], ["dumpcap", "-q", "-i", dev, "-s", str(snap), "-P", "-w", str(path)],
                               stderr=subprocess.PIPE)
            self.procs.append(p)
            self.files.append(path)
        # Each returns once its packet socket is bound with the ring live ("File:" line, see
        # netns.wait_until_dumpcap_captures): the applications' first SYN is in every file.
        end = time.monotonic() + timeout
        for p in self.procs:
            wait_until_dumpcap_captures(p, max(0.1, end - time.monotonic()))

    def stop(self) -> None:
        if self.procs:
            # the packets of the ring block dumpcap has not been handed yet (the last <= 250 ms)
            # are lost at SIGINT without this wait (netns.DUMPCAP_STOP_SETTLE_S says why)
            time.sleep(DUMPCAP_STOP_SETTLE_S)
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in self.procs:
            try:
                p.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                p.kill()
        self.procs = []
