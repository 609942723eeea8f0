"""A propagation delay between two network namespaces: TUN devices joined by a native delay line.

This kernel has no netem (shared/anchors/machine.md), so tcpvideo's real-Linux runs get their
base RTT from user space: a TUN device in each namespace (``ip tuntap add ... mode tun``), both
opened by one native thread (``tcpvideo._core.DelayLine``, crates/linkem, bound in crates/py/src/linkem.rs) that
moves every IP packet to the other side after a one-way delay chosen per address. Python only
builds the devices and starts/stops the thread; the packet path never touches the interpreter.

    with TunPair(net, rtr, cli, "10.98.0.1", "10.98.0.2") as pair:    # doctest: +SKIP
        line = DelayLine(pair, a_to_b={"10.99.0.1": 0.025}, b_to_a={"10.99.0.1": 0.025})
        with line:
            ...                       # traffic between rtr and cli sees 50 ms more RTT
        print(line.result)            # counters, lateness percentiles

Addressing: each TUN device is point-to-point (``ip addr add LOCAL peer PEER``); further
addresses and routes are the caller's (see linux_dumbbell.py). Offloads: a TUN device without
IFF_VNET_HDR never carries GSO packets, so every packet is at most one MTU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

from tcpvideo import netns

__all__ = ["TunPair", "DelayLine", "netns_path"]


def netns_path(ns: "netns.Namespace") -> str:
    """The file ``ip netns add`` made for ``ns`` (what setns(2) needs)."""
    return f"/var/run/netns/{ns.name}"


def _core():
    from tcpvideo import _core

    if not hasattr(_core, "DelayLine"):
        raise RuntimeError("this build of tcpvideo._core has no DelayLine (rebuild: pip install .)")
    return _core


@dataclass
class TunPair:
    """A TUN device in namespace ``a`` and one in ``b``, addressed point-to-point, with open fds.

    The devices are persistent (``ip tuntap add``) and disappear with their namespaces; the fds
    are closed by ``close()`` (also on ``with`` exit).
    """

    net: "netns.Network"
    a: "netns.Namespace"
    b: "netns.Namespace"
    a_ip: str
    b_ip: str
    a_dev: str = "tun0"
    b_dev: str = "tun0"
    mtu: int = 1500
    txqueuelen: int = 1000
    fd_a: int = field(default=-1, init=False)
    fd_b: int = field(default=-1, init=False)

    def __post_init__(self) -> None:
        try:
            for ns, dev, ip, peer in ((self.a, self.a_dev, self.a_ip, self.b_ip),
                                      (self.b, self.b_dev, self.b_ip, self.a_ip)):
                ns.run(["ip", "tuntap", "add", "dev", dev, "mode", "tun"])
                ns.run(["ip", "addr", "add", ip, "peer", peer, "dev", dev])
                ns.run(["ip", "link", "set", dev, "mtu", str(self.mtu), "txqueuelen",
                        str(self.txqueuelen), "up"])
                # nothing to offload on a plain TUN device, but say so explicitly (ethtool may
                # refuse some features on tun: not an error)
                ns.run(["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"],
                       check=False)
            core = _core()
            self.fd_a = core.open_tun(self.a_dev, netns_path(self.a))
            self.fd_b = core.open_tun(self.b_dev, netns_path(self.b))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        for attr in ("fd_a", "fd_b"):
            fd = getattr(self, attr)
            if fd >= 0:
                os.close(fd)
                setattr(self, attr, -1)

    def __enter__(self) -> "TunPair":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class DelayLine:
    """Forward between the two devices of a ``TunPair`` with per-address one-way delays (s).

    ``a_to_b`` is looked up by the packet's destination (packets from a to b), ``b_to_a`` by its
    source (packets from b back to a): keyed by b-side addresses, so a client behind b gets its
    own delay both ways. Other packets get ``default_a_to_b`` / ``default_b_to_a``.
    ``rt_priority`` > 0 runs the line SCHED_FIFO (root), so the simulators sharing the machine do
    not delay its wake-ups. ``result`` holds the counters after ``stop()``.
    """

    def __init__(self, pair: TunPair, a_to_b: Optional[dict[str, float]] = None,
                 b_to_a: Optional[dict[str, float]] = None, default_a_to_b: float = 0.0,
                 default_b_to_a: float = 0.0, rt_priority: int = 0):
        self.pair = pair
        self._line = _core().DelayLine(pair.fd_a, pair.fd_b, dict(a_to_b or {}),
                                       dict(b_to_a or {}), default_a_to_b, default_b_to_a,
                                       "dst", "src", rt_priority)
        self.result: Optional[dict] = None

    def start(self) -> "DelayLine":
        self._line.start()
        return self

    def running(self) -> bool:
        return self._line.running()

    def stats(self) -> dict:
        return self._line.stats()

    def stop(self) -> dict:
        if self.result is None:
            self.result = self._line.stop()
        return self.result

    def __enter__(self) -> "DelayLine":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
