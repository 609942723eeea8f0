"""Real Linux TCP in network namespaces: topology, shaping, endpoints and packet capture.

This is the small library under tcpvideo's real-network work: the analyzer's validation against
tshark (tests/test_linux_capture.py), the analyzer benchmark (bench/analyze_speed.py) and the
later ``emulate`` runtime (DESIGN.md, "Real network"). It drives the same tools a person would,
so a failure can be reproduced by hand:

* ``ip netns`` / ``ip link ... type veth`` (iproute2): each host is a named network namespace,
  hosts are joined by veth pairs created *inside* the namespaces, so interface names never clash
  with the root namespace or with another test;
* ``ethtool -K DEV tso off gso off gro off``: offloads off, so a capture shows the MSS-sized
  segments the TCP stack really sent rather than 64 kB super-packets (machine notes);
* ``tc qdisc ... tbf rate R burst B limit L`` (tc-tbf(8)): a rate bottleneck whose byte-limited
  queue drops packets when full. This kernel has no netem/fq/fq_codel, so delay and random loss
  are not available here (the TUN link emulator provides them later);
* the kernel congestion control per namespace (sysctl ``net.ipv4.tcp_congestion_control``, which
  is per network namespace) or per socket (``setsockopt(TCP_CONGESTION)``, see ``set_socket_cc``);
* ``dumpcap`` (Wireshark's capture engine) on a namespace interface, with a configurable snaplen.

Everything needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN to create namespaces): ``available()``
says whether this machine can run it and why not. Every object is created by a ``Network``
context manager with names unique to the process (``tvt-<pid>-<n>-<role>``) and removed on exit,
even when the body raises: processes started in a namespace are ended first (by their pid, the
ones this library started and anything still living in a namespace this library created), then
the namespaces are deleted, which deletes their veth devices and qdiscs. Namespaces left behind
by a process that died (SIGKILL) are swept at the next ``Network()`` by ``sweep_stale``, which
only touches names of this library's pattern whose owning pid no longer exists.
"""

from __future__ import annotations

import ctypes
import ipaddress
import itertools
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

__all__ = [
    "available",
    "sweep_stale",
    "set_socket_cc",
    "Namespace",
    "Link",
    "Process",
    "Capture",
    "wait_until_dumpcap_captures",
    "DUMPCAP_STOP_SETTLE_S",
    "CaptureStats",
    "Network",
]

NS_PREFIX = "tvt"
_NAME_RE = re.compile(rf"^{NS_PREFIX}-(\d+)-\d+-[a-z0-9]+$")
_counter = itertools.count()


# --------------------------------------------------------------------------------------------
# capability checks
# --------------------------------------------------------------------------------------------
def available(need_capture: bool = False) -> tuple[bool, str]:
    """Whether namespaces can be used here; the second item is the reason when not."""
    if os.geteuid() != 0:
        return False, "needs root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)"
    for tool in ("ip", "tc", "ethtool") + (("dumpcap",) if need_capture else ()):
        if shutil.which(tool) is None:
            return False, f"`{tool}` not installed (apt-get install iproute2 ethtool tshark)"
    probe = f"{NS_PREFIX}-{os.getpid()}-{next(_counter)}-probe"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        return False, f"`ip netns add` failed: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return True, ""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> list[str]:
    """Delete namespaces of this library's naming pattern whose creating process is gone.

    Only names ``tvt-<pid>-<n>-<role>`` with a dead ``pid`` are touched, so namespaces of a
    running test (in this or another process) are never removed.
    """
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    removed = []
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = _NAME_RE.match(name)
        if m and not _pid_alive(int(m.group(1))):
            _kill_pids_in(name)
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
            removed.append(name)
    return removed


def set_socket_cc(sock: socket.socket, name: str) -> None:
    """Choose the kernel congestion control of one socket (``TCP_CONGESTION``, tcp(7))."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, name.encode())


CLONE_NEWNET = 0x40000000  # setns(2) nstype of a network namespace (linux/sched.h)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _run(argv: Sequence[str], check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(list(argv), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


def _kill_pids_in(ns: str) -> None:
    """End every process still running inside namespace ``ns`` (which this library created)."""
    r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    pids = [int(p) for p in r.stdout.split() if p.isdigit()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        live = []
        for pid in pids:
            try:
                os.kill(pid, sig)
                live.append(pid)
            except ProcessLookupError:
                pass
        if not live:
            return
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline and any(_pid_alive(p) for p in live):
            time.sleep(0.02)
        pids = [p for p in live if _pid_alive(p)]


# --------------------------------------------------------------------------------------------
# processes
# --------------------------------------------------------------------------------------------
class Process:
    """A process started inside a namespace, with line-oriented access to its stdout."""

    def __init__(self, argv: Sequence[str], popen: subprocess.Popen, ns: "Namespace"):
        self.argv = list(argv)
        self.popen = popen
        self.ns = ns
        self._buf = b""
        self.lines: list[str] = []  # stdout lines read so far (by wait_for / lines_until_exit)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def _read_some(self, timeout: float) -> bool:
        """Read what stdout has within ``timeout``; False on EOF."""
        out = self.popen.stdout
        if out is None:
            raise RuntimeError("process was started without stdout=PIPE")
        sel = selectors.DefaultSelector()
        sel.register(out, selectors.EVENT_READ)
        try:
            if not sel.select(timeout):
                return True
        finally:
            sel.close()
        chunk = os.read(out.fileno(), 65536)
        if not chunk:
            return False
        self._buf += chunk
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            self.lines.append(line.decode(errors="replace"))
        return True

    def wait_for(self, pattern: str, timeout: float = 10.0) -> re.Match:
        """Block until a stdout line matches ``pattern`` (a regex); return the match."""
        rx = re.compile(pattern)
        seen = 0
        deadline = time.monotonic() + timeout
        while True:
            for line in self.lines[seen:]:
                m = rx.search(line)
                if m:
                    return m
            seen = len(self.lines)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.argv}: no line matching {pattern!r} in {timeout} s; "
                                   f"stdout so far: {self.lines[-5:]}")
            if not self._read_some(min(left, 0.2)):
                err = self.popen.stderr.read().decode(errors="replace") if self.popen.stderr else ""
                raise RuntimeError(f"{self.argv} ended before printing {pattern!r}: "
                                   f"rc={self.popen.wait()} stderr={err[-2000:]}")

    def wait(self, timeout: float = 30.0) -> int:
        """Wait for exit (draining stdout into ``lines``); raise if it does not end in time."""
        deadline = time.monotonic() + timeout
        if self.popen.stdout is not None:
            while self._read_some(max(0.0, min(0.2, deadline - time.monotonic()))):
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"{self.argv} still running after {timeout} s")
        return self.popen.wait(timeout=max(0.1, deadline - time.monotonic()))

    def stderr_text(self) -> str:
        if self.popen.stderr is None or self.popen.poll() is None:
            return ""
        return self.popen.stderr.read().decode(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, grace: float = 2.0) -> None:
        """End the process: ``sig`` first, SIGKILL after ``grace`` seconds."""
        if self.popen.poll() is None:
            try:
                self.popen.send_signal(sig)
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        for f in (self.popen.stdout, self.popen.stderr):
            if f is not None:
                f.close()


# --------------------------------------------------------------------------------------------
# namespaces and links
# --------------------------------------------------------------------------------------------
@dataclass
class Namespace:
    """One host: a named network namespace. Create through ``Network.add_namespace``."""

    name: str
    role: str
    network: "Network" = field(repr=False)

    def argv(self, argv: Sequence[str]) -> list[str]:
        """``argv`` prefixed so that it runs inside this namespace."""
        return ["ip", "netns", "exec", self.name, *argv]

    def run(self, argv: Sequence[str], check: bool = True) -> subprocess.CompletedProcess:
        """Run a command to completion inside the namespace (stdout/stderr captured as text)."""
        return _run(self.argv(argv), check=check)

    def popen(self, argv: Sequence[str], env: Optional[dict] = None,
              cwd: Optional[str] = None, cpus: Optional[str] = None) -> Process:
        """Start a long-running command in the namespace; it is ended when the Network closes.

        ``cpus`` (a ``taskset -c`` list such as "0") pins the command to those CPUs. A veth
        transmit queues the packet on the *sending* CPU's backlog (``netif_rx``), so a sender
        that migrates between CPUs in the middle of a burst can deliver it out of order: pin
        both endpoints to one CPU where a scenario needs the path to keep order."""
        if cpus is not None:
            argv = ["taskset", "-c", cpus, *argv]
        p = subprocess.Popen(self.argv(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, env=env, cwd=cwd)
        proc = Process(argv, p, self)
        self.network._procs.append(proc)
        return proc

    def python(self, script: str | os.PathLike, args: Iterable[str] = (),
               env: Optional[dict] = None, cpus: Optional[str] = None) -> Process:
        """Start ``python3 -u script args...`` (this interpreter) inside the namespace, pinned to
        ``cpus`` if given (see ``popen``)."""
        import sys

        return self.popen([sys.executable, "-u", str(script), *map(str, args)], env=env,
                          cpus=cpus)

    def socket(self, family: int = socket.AF_INET,
               type: int = socket.SOCK_STREAM) -> socket.socket:
        """A socket of this namespace, made by this process: a short-lived thread enters the
        namespace (setns(2) changes only the calling thread's) and creates it; a socket keeps
        its namespace for life. Traffic then starts within microseconds, where a process started
        with ``ip netns exec`` takes tens of milliseconds to get going."""
        made: list = []

        def make() -> None:
            try:
                fd = os.open(f"/var/run/netns/{self.name}", os.O_RDONLY)
                try:
                    if _libc().setns(fd, CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), f"setns into {self.name} failed")
                finally:
                    os.close(fd)
                made.append(socket.socket(family, type))
            except BaseException as e:  # handed to the caller's thread
                made.append(e)

        t = threading.Thread(target=make, name=f"setns-{self.role}")
        t.start()
        t.join()
        if isinstance(made[0], BaseException):
            raise made[0]
        return made[0]

    def sysctl(self, key: str, value: str | int) -> None:
        self.run(["sysctl", "-q", "-w", f"{key}={value}"])

    def set_default_cc(self, name: str) -> None:
        """Default congestion control of every new socket in this namespace (per-netns sysctl)."""
        self.sysctl("net.ipv4.tcp_congestion_control", name)

    def offloads_off(self, dev: str) -> None:
        """``ethtool -K dev tso off gso off gro off``: MSS-sized packets on the wire."""
        self.run(["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"])

    def tbf(self, dev: str, rate: str, burst: str = "15kb", limit: str | int = "30kb") -> None:
        """Root tbf on ``dev``'s egress: ``rate`` (e.g. '20mbit'), bucket ``burst``, queue
        ``limit`` in bytes (e.g. 15000 or '15kb'); a full queue drops (tail drop)."""
        self.run(["tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate,
                  "burst", str(burst), "limit", str(limit)])

    def qdisc_stats(self, dev: str) -> dict:
        """Counters of the root qdisc of ``dev``: sent bytes/packets, dropped, overlimits."""
        out = self.run(["tc", "-s", "qdisc", "show", "dev", dev]).stdout
        m = re.search(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)", out)
        if not m:
            return {}
        return {"bytes": int(m[1]), "packets": int(m[2]), "dropped": int(m[3]),
                "overlimits": int(m[4])}

    def capture(self, dev: str, path: str | os.PathLike, snaplen: int = 262144,
                fmt: str = "pcap", buffer_mib: int = 64, bpf: Optional[str] = None,
                max_packets: Optional[int] = None) -> "Capture":
        """Start dumpcap on ``dev``; returns a Capture (use as a context manager or stop()).
        ``max_packets``: dumpcap stops by itself after that many (``-c``); see Capture.wait."""
        cap = Capture(self, dev, Path(path), snaplen, fmt, buffer_mib, bpf, max_packets)
        cap.start()
        return cap


@dataclass
class Link:
    """A veth pair: ``a_dev``@``a`` with ``a_ip`` and ``b_dev``@``b`` with ``b_ip``."""

    a: Namespace
    a_dev: str
    a_ip: str
    b: Namespace
    b_dev: str
    b_ip: str
    prefixlen: int


# --------------------------------------------------------------------------------------------
# capture
# --------------------------------------------------------------------------------------------
@dataclass
class CaptureStats:
    path: Path
    packets: int  # packets dumpcap wrote, from its closing report
    dropped: int  # packets the kernel dropped before dumpcap read them (capture loss)


# dumpcap's "File: PATH" line on stderr (dumpcap.c, report_new_capture_file), printed when it is
# not a Wireshark capture child (-Z): netns runs it standalone.
_DUMPCAP_FILE_LINE = re.compile(rb"^File: [^\n]*\n", re.M)


def wait_until_dumpcap_captures(p: subprocess.Popen, timeout: float = 10.0) -> bytes:
    """Block until dumpcap ``p`` (started with ``stderr=PIPE``, writing a file with ``-w``) can
    no longer miss a packet; return what it printed on stderr so far.

    The signal is its "File: PATH" line. dumpcap 4.0 (dumpcap.c; the order checked with strace
    on this machine's 4.0.17 and libpcap 1.10.3) starts like this:

    1. ``main`` prints "Capturing on 'DEV'" -- before it has opened anything;
    2. ``capture_loop_start`` -> ``capture_loop_open_input`` -> ``pcap_activate``; libpcap's
       ``pcap_activate_linux`` (pcap-linux.c) opens the packet socket with protocol 0 and binds
       it to the device (``setup_socket``: receives nothing yet), builds the TPACKET_V3 ring
       (``setup_mmapped``/``create_ring``; the ``-B`` size, which is what takes time: 20-60 ms
       at 64 MiB, 0.1-1.1 s at 512 MiB), then binds again with ETH_P_ALL -- from here every
       packet on the device lands in the ring;
    3. ``capture_loop_init_filter`` -> ``pcap_setfilter`` -> ``pcap_setfilter_linux``:
       ``set_kernel_filter`` attaches a reject-all filter, drains the socket's receive queue
       (empty: with a ring, packets go to the ring), attaches the real filter; the blocks
       already in the ring are then filtered in user space, so of the packets since step 2
       only those of the microseconds between the two filters are lost -- all before step 5;
    4. ``capture_loop_open_output`` creates the file (``O_CREAT|O_TRUNC``),
       ``capture_loop_init_output`` writes the pcap header or pcapng SHB+IDB, ``fflush``;
    5. ``report_new_capture_file`` prints "File: PATH".

    So "Capturing on" comes before the socket exists (the race sessions 13 and 18 hit: a SYN
    sent in the gap is never seen), while "File:" comes after the socket is bound, the ring
    live and the filter attached: a packet sent after it is captured. Waiting for the file to
    exist would be equally exact (step 4 follows step 3); the line needs no polling.
    """
    buf = b""
    deadline = time.monotonic() + timeout
    sel = selectors.DefaultSelector()
    sel.register(p.stderr, selectors.EVENT_READ)
    try:
        while not _DUMPCAP_FILE_LINE.search(buf):
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"dumpcap did not start within {timeout} s: "
                                   f"{buf.decode(errors='replace')}")
            if sel.select(min(left, 0.2)):
                chunk = os.read(p.stderr.fileno(), 4096)
                if not chunk:  # stderr closed: dumpcap has exited
                    p.wait()
                    raise RuntimeError(f"dumpcap did not start: {buf.decode(errors='replace')}")
                buf += chunk
    finally:
        sel.close()
    return buf


# Seconds to wait before stopping dumpcap so that the packets it has not yet read are written.
# dumpcap reads its TPACKET_V3 ring a block at a time, and the kernel hands a block over only
# when it is full or when its retire timer fires: every 250 ms (dumpcap's CAP_READ_TIMEOUT,
# which libpcap's create_ring passes as tp_retire_blk_tov). After SIGINT dumpcap reads nothing
# more (capture_loop_stop; packets of a block already handed over are counted "flushed", which
# CaptureStats.dropped includes). Measured: a SYN sent just before stop was missing from 20 of
# 20 files with a settle of 0 or 0.1 s, from 0 of 20 with 0.3 s (also beside two busy loops).
DUMPCAP_STOP_SETTLE_S = 0.3


class Capture:
    """dumpcap running on one namespace interface, writing ``path``.

    ``start`` returns once dumpcap's packet socket is bound with its filter attached (see
    ``wait_until_dumpcap_captures``), so every packet sent afterwards is in the file: no settle,
    no marker packet. ``stop`` waits ``settle`` seconds (``DUMPCAP_STOP_SETTLE_S``: the kernel
    hands dumpcap the ring's last block), then sends SIGINT: dumpcap writes what it holds, prints
    its counts and exits; only then is the file complete ("flushed").
    """

    def __init__(self, ns: Namespace, dev: str, path: Path, snaplen: int, fmt: str,
                 buffer_mib: int, bpf: Optional[str], max_packets: Optional[int] = None):
        if fmt not in ("pcap", "pcapng"):
            raise ValueError("fmt must be 'pcap' or 'pcapng'")
        self.ns, self.dev, self.path = ns, dev, path
        argv = ["dumpcap", "-q", "-i", dev, "-s", str(snaplen), "-B", str(buffer_mib),
                "-w", str(path)]
        if fmt == "pcap":
            argv.append("-P")
        if bpf:
            argv += ["-f", bpf]
        if max_packets:
            argv += ["-c", str(max_packets)]
        self.argv = argv
        self.proc: Optional[Process] = None
        self.stats: Optional[CaptureStats] = None

    def start(self, timeout: float = 10.0) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            self.path.unlink()
        p = subprocess.Popen(self.ns.argv(self.argv), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.proc = Process(self.argv, p, self.ns)
        self.ns.network._procs.append(self.proc)
        self._stderr_head = wait_until_dumpcap_captures(p, timeout)

    def wait(self, timeout: float) -> CaptureStats:
        """Wait for a capture started with ``max_packets`` to stop by itself."""
        return self._finish(timeout=timeout, interrupt=False)

    def stop(self, settle: float = DUMPCAP_STOP_SETTLE_S) -> CaptureStats:
        if self.stats is not None:
            return self.stats
        time.sleep(settle)
        return self._finish(timeout=30, interrupt=True)

    def _finish(self, timeout: float, interrupt: bool) -> CaptureStats:
        if self.stats is not None:
            return self.stats
        assert self.proc is not None
        p = self.proc.popen
        if interrupt and p.poll() is None:
            p.send_signal(signal.SIGINT)
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            if not interrupt:
                raise TimeoutError(f"dumpcap on {self.dev} still running after {timeout} s")
            p.kill()
            _, err = p.communicate()
        text = (self._stderr_head + (err or b"")).decode(errors="replace")
        m = re.search(r"Packets captured: (\d+)", text)
        d = re.search(r"Packets received/dropped on interface '[^']*': (\d+)/(\d+)", text)
        if not self.path.exists() or m is None:
            raise RuntimeError(f"dumpcap failed on {self.dev}: {text[-2000:]}")
        self.stats = CaptureStats(self.path, int(m[1]), int(d[2]) if d else 0)
        return self.stats

    def __enter__(self) -> "Capture":
        return self

    def __exit__(self, *exc) -> None:
        self.stop(settle=DUMPCAP_STOP_SETTLE_S if exc[0] is None else 0.0)


# --------------------------------------------------------------------------------------------
# the network
# --------------------------------------------------------------------------------------------
class Network:
    """A set of namespaces and veth links that exists for the ``with`` block.

    >>> with Network() as net:                          # doctest: +SKIP
    ...     srv, rtr, cli = net.chain(["srv", "rtr", "cli"])
    ...     rtr.tbf(net.dev(rtr, cli), rate="20mbit", limit=15000)
    ...     with srv.capture(net.dev(srv, rtr), "x.pcap", snaplen=96):
    ...         ...
    """

    def __init__(self, sweep: bool = True):
        self.tag = f"{NS_PREFIX}-{os.getpid()}-{next(_counter)}"
        self.namespaces: list[Namespace] = []
        self.links: list[Link] = []
        self._procs: list[Process] = []
        self._subnets = 0
        if sweep:
            sweep_stale()

    # life cycle ------------------------------------------------------------------------------
    def __enter__(self) -> "Network":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for proc in reversed(self._procs):
            try:
                proc.stop(grace=2.0)
            except Exception:  # pragma: no cover - best effort, keep cleaning
                pass
        self._procs.clear()
        for ns in reversed(self.namespaces):
            _kill_pids_in(ns.name)
            subprocess.run(["ip", "netns", "del", ns.name], capture_output=True)
        self.namespaces.clear()
        self.links.clear()

    # building --------------------------------------------------------------------------------
    def add_namespace(self, role: str) -> Namespace:
        role = re.sub(r"[^a-z0-9]", "", role.lower())[:8] or "h"
        name = f"{self.tag}-{role}"
        if any(ns.name == name for ns in self.namespaces):
            name = f"{name}{len(self.namespaces)}"
        _run(["ip", "netns", "add", name])
        ns = Namespace(name, role, self)
        self.namespaces.append(ns)
        ns.run(["ip", "link", "set", "lo", "up"])
        return ns

    def connect(self, a: Namespace, b: Namespace, subnet: Optional[str] = None,
                mtu: int = 1500, offloads: bool = False) -> Link:
        """Join ``a`` and ``b`` by a veth pair; addresses .1 (a) and .2 (b) of ``subnet``
        (default 10.<k>.0.0/24, private to these namespaces). Offloads off unless asked."""
        if subnet is None:
            self._subnets += 1
            subnet = f"10.{200 + self._subnets % 50}.0.0/24"
        net = ipaddress.ip_network(subnet)
        a_ip, b_ip = str(net[1]), str(net[2])
        a_dev = f"v{len(self.links)}{b.role}"[:15]
        b_dev = f"v{len(self.links)}{a.role}"[:15]
        _run(["ip", "-n", a.name, "link", "add", a_dev, "type", "veth", "peer", "name", b_dev,
              "netns", b.name])
        for ns, dev, ip in ((a, a_dev, a_ip), (b, b_dev, b_ip)):
            ns.run(["ip", "addr", "add", f"{ip}/{net.prefixlen}", "dev", dev])
            ns.run(["ip", "link", "set", dev, "mtu", str(mtu), "up"])
            if not offloads:
                ns.offloads_off(dev)
        link = Link(a, a_dev, a_ip, b, b_dev, b_ip, net.prefixlen)
        self.links.append(link)
        return link

    def chain(self, roles: Sequence[str], mtu: int = 1500) -> list[Namespace]:
        """Namespaces in a line, each joined to the next; middle ones forward (routers);
        every host gets routes to all the others through its neighbours."""
        nss = [self.add_namespace(r) for r in roles]
        links = [self.connect(nss[i], nss[i + 1], mtu=mtu) for i in range(len(nss) - 1)]
        for ns in nss[1:-1]:
            ns.sysctl("net.ipv4.ip_forward", 1)
        for i, ns in enumerate(nss):
            for j, link in enumerate(links):
                if j == i or j == i - 1:
                    continue  # directly attached
                # link j is to the right of ns if j > i, else to the left
                if j > i:
                    via, dev = links[i].b_ip, links[i].a_dev
                else:
                    via, dev = links[i - 1].a_ip, links[i - 1].b_dev
                dst = ipaddress.ip_interface(f"{link.a_ip}/{link.prefixlen}").network
                ns.run(["ip", "route", "add", str(dst), "via", via, "dev", dev])
        return nss

    # queries ---------------------------------------------------------------------------------
    def _link(self, a: Namespace, b: Namespace) -> tuple[Link, bool]:
        for link in self.links:
            if link.a is a and link.b is b:
                return link, True
            if link.a is b and link.b is a:
                return link, False
        raise KeyError(f"no link between {a.name} and {b.name}")

    def dev(self, ns: Namespace, toward: Namespace) -> str:
        """Name of ``ns``'s interface on its link to ``toward``."""
        link, fwd = self._link(ns, toward)
        return link.a_dev if fwd else link.b_dev

    def ip(self, ns: Namespace, toward: Namespace) -> str:
        """``ns``'s address on its link to ``toward``."""
        link, fwd = self._link(ns, toward)
        return link.a_ip if fwd else link.b_ip
