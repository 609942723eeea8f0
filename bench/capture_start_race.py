"""Does a capture hold the SYN of a connection opened the moment ``Capture.start`` returns?

The race of Issue 16 (sessions 13 and 18): netns.Capture used to return after dumpcap's
"Capturing on" line plus a fixed settle, but dumpcap prints that line before it opens its packet
socket (netns.wait_until_dumpcap_captures has the order, from dumpcap.c and pcap-linux.c), so a
SYN sent in the gap was missing from the file. This script measures how often, for the current
start ("File:" line, no settle) and for the old one ("Capturing on" + ``--settle`` seconds),
optionally with ``--load`` busy loops (``yes > /dev/null``) competing for the CPUs as on a CI
runner:

    python bench/capture_start_race.py --start announced --settle 0 --rounds 5 --load 2
    python bench/capture_start_race.py --start file --rounds 5 --load 2

One round: two namespaces joined by a veth pair, a listening socket in one; ``--loops`` times,
start a capture on the other's veth and at once (no sleep, no process start: the socket is
made in the namespace by this process) connect; after the last, wait 0.3 s and stop every
capture; a capture "misses" when its file lacks its own connection's SYN. The captures run
side by side (each sees the later connections too, which is harmless), so a round takes about
``loops`` dumpcap start-ups, not ``loops`` stop settles. tests/test_linux_capture.py runs one
round of the current start and requires no miss.
"""

from __future__ import annotations

import argparse
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from tcpvideo import netns  # noqa: E402

PORT = 5001  # the listener's port in the far namespace


class AnnouncedStart(netns.Capture):
    """The start this repository used before session 19, kept to measure the race: return
    ``settle`` seconds after dumpcap's "Capturing on" line (printed before its socket exists)."""

    settle = 0.0

    def start(self, timeout: float = 10.0) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        p = subprocess.Popen(self.ns.argv(self.argv), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.proc = netns.Process(self.argv, p, self.ns)
        self.ns.network._procs.append(self.proc)
        buf = b""
        deadline = time.monotonic() + timeout
        while b"Capturing on" not in buf:
            if time.monotonic() > deadline or p.poll() is not None:
                raise RuntimeError(f"dumpcap did not start: {buf!r}")
            buf += p.stderr.read1(4096)
        self._stderr_head = buf
        time.sleep(self.settle)


def tcp_syn_sources(pcap: Path) -> set[int]:
    """Source ports of the TCP SYNs (without ACK) in a classic-pcap file of Ethernet frames."""
    data = pcap.read_bytes()
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    ports, off = set(), 24
    while off + 16 <= len(data):
        incl = struct.unpack_from(endian + "I", data, off + 8)[0]
        frame = data[off + 16: off + 16 + incl]
        off += 16 + incl
        if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00" or frame[14 + 9] != 6:
            continue  # not Ethernet + IPv4 + TCP
        tcp = 14 + (frame[14] & 0x0F) * 4
        if len(frame) >= tcp + 14 and frame[tcp + 13] & 0x12 == 0x02:
            ports.add(struct.unpack_from("!H", frame, tcp)[0])
    return ports


def captures_missing_their_syn(out_dir: Path, loops: int, capture_cls=netns.Capture,
                               buffer_mib: int = 4) -> list[int]:
    """One round (see the module doc); returns the loop indices whose capture lacks its SYN."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with netns.Network() as net:
        a, b = net.add_namespace("a"), net.add_namespace("b")
        link = net.connect(a, b)
        listener = b.socket()
        listener.bind((link.b_ip, PORT))
        listener.listen(loops + 8)
        caps, clients, ports = [], [], []
        try:
            for i in range(loops):
                cap = capture_cls(a, link.a_dev, out_dir / f"start{i}.pcap", snaplen=96,
                                  fmt="pcap", buffer_mib=buffer_mib, bpf=None)
                caps.append(cap)
                cap.start()
                c = a.socket()
                clients.append(c)
                c.connect((link.b_ip, PORT))  # the SYN leaves now, microseconds after start
                ports.append(c.getsockname()[1])
            time.sleep(netns.DUMPCAP_STOP_SETTLE_S)  # the last SYN's ring block retires
            for cap in caps:
                cap.stop(settle=0.0)
        finally:
            for s in clients + [listener]:
                s.close()
    return [i for i, (cap, port) in enumerate(zip(caps, ports))
            if port not in tcp_syn_sources(cap.path)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--start", choices=["file", "announced"], default="file",
                    help="file: the library's start; announced: 'Capturing on' + --settle")
    ap.add_argument("--settle", type=float, default=0.0, help="seconds, for --start announced")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--loops", type=int, default=20, help="captures per round")
    ap.add_argument("--buffer-mib", type=int, default=4, help="dumpcap -B (ring size)")
    ap.add_argument("--load", type=int, default=0, help="busy loops (yes > /dev/null) meanwhile")
    ap.add_argument("--out", type=Path, default=Path("/tmp/capture_start_race"))
    a = ap.parse_args()
    ok, why = netns.available(need_capture=True)
    if not ok:
        sys.exit(why)
    cls = netns.Capture
    if a.start == "announced":
        cls = type("Announced", (AnnouncedStart,), {"settle": a.settle})
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(a.load)]
    try:
        missed = total = 0
        t0 = time.monotonic()
        for r in range(a.rounds):
            m = captures_missing_their_syn(a.out / f"r{r}", a.loops, cls, a.buffer_mib)
            missed += len(m)
            total += a.loops
            print(f"round {r}: {len(m)}/{a.loops} captures lack their SYN {m}", flush=True)
    finally:
        for h in hogs:
            h.send_signal(signal.SIGTERM)
            h.wait()
    label = a.start + (f" settle {a.settle} s" if a.start == "announced" else "")
    print(f"{label}, -B {a.buffer_mib} MiB, load {a.load}: {missed}/{total} captures lack their "
          f"SYN ({100 * missed / total:.0f}%), {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
