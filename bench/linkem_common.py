"""Shared set-up of the linkem benches: two namespaces joined either by a linkem link (two TUN
devices, crates/linkem, driven through ``tcpvideo._core.Link``) or, as the peer measured in the
same run, by a plain veth pair (the kernel's own path, no emulator).

Namespaces are named ``tvb-<pid>-a/b`` and removed on exit (even on an exception). Root only.
A (10.9.0.1) -> B (10.9.0.2).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from typing import Iterator, Optional

A_IP, B_IP = "10.9.0.1", "10.9.0.2"


def sh(*argv: str, input: Optional[str] = None) -> str:
    r = subprocess.run(list(argv), capture_output=True, text=True, input=input)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip()}")
    return r.stdout


@contextlib.contextmanager
def pair(kind: str, ab: Optional[dict] = None, ba: Optional[dict] = None, seed: int = 1,
         rt_priority: int = 0) -> Iterator[dict]:
    """Yield {"a": ns, "b": ns, "link": _core.Link or None} for kind "linkem" or "veth"."""
    if os.geteuid() != 0:
        sys.exit("needs root (network namespaces)")
    from tcpvideo import _core

    a, b = f"tvb-{os.getpid()}-a", f"tvb-{os.getpid()}-b"
    fds, link = [], None
    try:
        for ns in (a, b):
            sh("ip", "netns", "add", ns)
            sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1",
               "net.ipv6.conf.default.disable_ipv6=1", "net.core.rmem_max=67108864", "net.core.wmem_max=67108864")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        if kind == "linkem":
            for ns, me, peer in ((a, A_IP, B_IP), (b, B_IP, A_IP)):
                sh("ip", "-n", ns, "-batch", "-", input=f"tuntap add dev t0 mode tun\naddr add {me} peer {peer} dev t0\n"
                                                       "link set t0 up\n")
            fds = [_core.open_tun("t0", f"/var/run/netns/{a}"), _core.open_tun("t0", f"/var/run/netns/{b}")]
            link = _core.Link(fds[0], fds[1], ab=ab or {}, ba=ba or {}, seed=seed, rt_priority=rt_priority)
            link.start()
        else:
            sh("ip", "-n", a, "link", "add", "name", "v0", "type", "veth", "peer", "name", "v0", "netns", b)
            for ns, me, peer in ((a, A_IP, B_IP), (b, B_IP, A_IP)):
                sh("ip", "-n", ns, "-batch", "-", input=f"addr add {me} peer {peer} dev v0\nlink set v0 up\n")
                subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", "v0", "tso", "off", "gso", "off", "gro", "off"],
                               capture_output=True)
        yield {"a": a, "b": b, "link": link}
    finally:
        if link is not None:
            with contextlib.suppress(Exception):
                link.stop()
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        for ns in (a, b):
            subprocess.run(["ip", "netns", "pids", ns], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def in_ns(ns: str, code: str, *args: str, timeout: float = 120.0) -> str:
    """Run Python ``code`` inside namespace ``ns``; returns its stdout."""
    r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", code, *args], capture_output=True, text=True,
                       timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip())
    return r.stdout


def start_in_ns(ns: str, code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
