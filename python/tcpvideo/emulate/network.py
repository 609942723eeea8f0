"""Building, owning and tearing down the real network of one emulated run.

Hygiene rules (issue 11):

* every object carries the run id: namespaces are ``tve-<run>-n<node>``; interfaces live
  *inside* those namespaces (veth pairs are created with both ends in run namespaces, TUN
  devices in the run namespace), so nothing is ever created in, or removed from, the host's own
  network namespace;
* a manifest ``/run/tcpvideo-emulate/<run>.json`` (tmpfs: gone after a reboot, like the
  namespaces) records the owning pid and the namespaces before the first one is created;
* teardown (normal exit, Ctrl-C, an exception: a ``with`` block plus SIGTERM/SIGHUP turned into
  exceptions by the caller) kills the processes inside the run's namespaces, stops the link
  emulators, deletes the namespaces (which deletes their devices and qdiscs), then the manifest;
* :func:`cleanup` removes what runs killed with SIGKILL left: every manifest whose owner pid is
  gone, and only the namespaces that manifest names. ``tcpvideo emulate --cleanup`` calls it, and
  so does every start.

Commands are batched (``ip -n NS -batch -``) so a 100-host scenario builds in seconds.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Iterable, Optional, Sequence

from tcpvideo import _core
from tcpvideo.netns import _pid_alive
from tcpvideo.emulate.plan import Plan, linkem_settings

MANIFEST_DIR = Path("/run/tcpvideo-emulate")
NS_PREFIX = "tve"
NETNS_DIR = Path("/var/run/netns")


class PrivilegeError(RuntimeError):
    """The machine or user cannot run an emulation (one line saying why)."""


def check_privileges() -> None:
    """Raise PrivilegeError unless this process can create namespaces and links."""
    if os.geteuid() != 0:
        raise PrivilegeError("tcpvideo emulate needs root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)")
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise PrivilegeError(f"tcpvideo emulate needs `{tool}` (apt-get install iproute2)")
    if not Path("/dev/net/tun").exists():
        raise PrivilegeError("tcpvideo emulate needs /dev/net/tun (the link emulator's TUN devices)")


def _run(argv: Sequence[str], input: Optional[str] = None, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(list(argv), input=input, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv[:6])}{' …' if len(argv) > 6 else ''}` failed: {r.stderr.strip()}")
    return r


def _kill_in(ns: str) -> None:
    """SIGKILL every process living in namespace ``ns`` (ours: it is a run namespace)."""
    r = _run(["ip", "netns", "pids", ns], check=False)
    for p in r.stdout.split():
        try:
            os.kill(int(p), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def _delete_namespaces(names: Iterable[str]) -> list[str]:
    gone = []
    for ns in names:
        if not (NETNS_DIR / ns).exists():
            continue
        _kill_in(ns)
        _run(["ip", "netns", "del", ns], check=False)
        gone.append(ns)
    return gone


def cleanup(include_live: bool = False) -> list[str]:
    """Remove what dead runs left (namespaces named in their manifests); returns the names.

    Only manifests whose owner pid no longer exists are touched (``include_live`` also takes the
    live ones: for tests that own them). Nothing outside a manifest is ever deleted.
    """
    removed: list[str] = []
    if not MANIFEST_DIR.exists():
        return removed
    for m in sorted(MANIFEST_DIR.glob("*.json")):
        try:
            info = json.loads(m.read_text())
        except (OSError, ValueError):
            continue
        if _pid_alive(int(info.get("pid", 0))) and not include_live:
            continue
        names = [n for n in info.get("namespaces", []) if n.startswith(f"{NS_PREFIX}-{info.get('run')}-")]
        for pid in info.get("pids", []):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError, PermissionError):
                pass
        removed += _delete_namespaces(names)
        m.unlink(missing_ok=True)
    return removed


class Network:
    """The namespaces, links and emulators of one run (a context manager: teardown on exit)."""

    def __init__(self, plan: Plan, run_id: Optional[str] = None, rt_priority: int = 0):
        self.plan = plan
        self.run = run_id or secrets.token_hex(3)
        self.rt_priority = rt_priority
        self.ns = [f"{NS_PREFIX}-{self.run}-n{i}" for i in range(len(plan.nodes))]
        self.manifest = MANIFEST_DIR / f"{self.run}.json"
        self.links: dict[int, object] = {}  # link index -> _core.Link
        self.tun_fds: list[int] = []
        self.samplers: dict[tuple[int, int], object] = {}  # (link, node side) -> QdiscSampler
        self.pids: list[int] = []
        self.built = False

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "Network":
        try:
            self.build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _write_manifest(self) -> None:
        MANIFEST_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.manifest.with_suffix(".tmp")
        tmp.write_text(json.dumps({"run": self.run, "pid": os.getpid(), "started": time.time(),
                                   "namespaces": self.ns, "pids": self.pids}))
        tmp.replace(self.manifest)

    def add_pid(self, pid: int) -> None:
        self.pids.append(pid)
        self._write_manifest()

    def build(self) -> None:
        self._write_manifest()  # before anything exists, so a SIGKILL at any point is cleanable
        for ns in self.ns:
            _run(["ip", "netns", "add", ns])
        self._sysctls()  # before the devices exist, so they inherit "no IPv6" (no RS/DAD noise)
        p = self.plan
        per_ns: list[list[str]] = [["link set lo up"] for _ in self.ns]
        for i, node in enumerate(p.nodes):
            per_ns[i].append(f"addr add {node['ip']}/32 dev lo")
        # links: create, then configure
        for l in p.links:
            na, nb = self.ns[l.a], self.ns[l.b]
            if l.kind == "linkem":
                for side in (l.a, l.b):
                    per_ns[side].append(f"tuntap add dev {l.dev} mode tun")
            else:
                _run(["ip", "-n", na, "link", "add", "name", l.dev, "type", "veth", "peer", "name", l.dev, "netns", nb])
            for side in (l.a, l.b):
                per_ns[side].append(f"link set dev {l.dev} mtu 1500 up")
        for i, cmds in enumerate(per_ns):
            _run(["ip", "-n", self.ns[i], "-batch", "-"], input="\n".join(cmds) + "\n")
        for l in p.links:
            if l.kind == "tbf":
                self._tbf(l)
            if l.kind != "linkem":
                for side in (l.a, l.b):
                    if shutil.which("ethtool"):
                        _run(["ip", "netns", "exec", self.ns[side], "ethtool", "-K", l.dev, "tso", "off", "gso", "off",
                              "gro", "off"], check=False)
        self._routes()
        for l in p.links:
            if l.kind == "linkem":
                self._start_linkem(l)
        self.built = True

    def _sysctls(self) -> None:
        p = self.plan
        for i, node in enumerate(p.nodes):
            kv = {"net.ipv4.conf.all.rp_filter": 0, "net.ipv4.conf.default.rp_filter": 0,
                  "net.ipv6.conf.all.disable_ipv6": 1, "net.ipv6.conf.default.disable_ipv6": 1,
                  "net.ipv4.ip_forward": 1 if node["kind"] == "router" else 0}
            kv.update(p.sysctls.get(i, {}))
            args = [f"{k}={v}" for k, v in kv.items()]
            _run(["ip", "netns", "exec", self.ns[i], "sysctl", "-q", "-w", *args])

    def _tbf(self, l) -> None:
        for side, d in ((l.a, l.ab), (l.b, l.ba)):
            if d["rate_bps"] >= 10_000_000_000:
                continue
            ns = self.ns[side]
            # burst: 10 full packets or 1 ms at the rate, whichever is larger (linux_dumbbell's
            # reasoning: a late tbf watchdog then costs no capacity, bursts stay short)
            burst = max(15000, d["rate_bps"] // 8 // 1000)
            limit = d.get("queue_bytes") or d["queue_packets"] * 1500
            _run(["tc", "-n", ns, "qdisc", "add", "dev", l.dev, "root", "handle", "1:", "stab", "overhead", "-14",
                  "tbf", "rate", f"{d['rate_bps']}bit", "burst", str(burst), "limit", str(max(limit, 3000))])
            if "queue_packets" in d:
                _run(["tc", "-n", ns, "qdisc", "add", "dev", l.dev, "parent", "1:1", "handle", "10:", "pfifo", "limit",
                      str(d["queue_packets"])])

    def _routes(self) -> None:
        p = self.plan
        by_index = {l.index: l for l in p.links}
        for i, node in enumerate(p.nodes):
            cmds = []
            opts = " ".join(f"{k} {v}" for k, v in p.route_opts.get(i, {}).items())
            for r in p.routes_of(i):
                l = by_index[r["link"]]
                dst = p.nodes[r["dst"]]["ip"]
                nxt = p.nodes[r["next"]]["ip"]
                if l.kind == "linkem":
                    cmds.append(f"route add {dst}/32 dev {l.dev} src {node['ip']} {opts}".strip())
                else:
                    cmds.append(f"route add {dst}/32 via {nxt} dev {l.dev} src {node['ip']} onlink {opts}".strip())
            if cmds:
                _run(["ip", "-n", self.ns[i], "-batch", "-"], input="\n".join(cmds) + "\n")

    def _start_linkem(self, l) -> None:
        seed = self.plan.topology["seed"]
        fa = _core.open_tun(l.dev, str(NETNS_DIR / self.ns[l.a]))
        self.tun_fds.append(fa)
        fb = _core.open_tun(l.dev, str(NETNS_DIR / self.ns[l.b]))
        self.tun_fds.append(fb)
        si = self.plan.topology["record"]["sample_interval_ns"]
        link = _core.Link(fa, fb, ab=linkem_settings(l.ab), ba=linkem_settings(l.ba), seed=seed,
                          channel_ab=2 * l.index, channel_ba=2 * l.index + 1,
                          sample_interval=None if si is None else si / 1e9, rt_priority=self.rt_priority)
        link.start()
        self.links[l.index] = link

    # ------------------------------------------------------------------ queue sampling of tbf links
    def start_qdisc_samplers(self, interval_s: float) -> None:
        for l in self.plan.links:
            if l.kind != "tbf":
                continue
            for side, d in ((l.a, l.ab), (l.b, l.ba)):
                if d["rate_bps"] >= 10_000_000_000:
                    continue
                s = _core.QdiscSampler(l.dev, str(NETNS_DIR / self.ns[side]), max(interval_s, 1e-4))
                s.start()
                self.samplers[(l.index, side)] = s

    def stop_qdisc_samplers(self) -> dict:
        out = {}
        for k, s in self.samplers.items():
            try:
                out[k] = s.stop()
            except Exception as e:  # a sampler that failed is reported, not fatal
                out[k] = {"error": str(e)}
        self.samplers = {}
        return out

    def qdisc_counters(self, link: int, side: int) -> dict:
        """`tc -s`'s counters of a tbf link's root qdisc now (drops, bytes, packets)."""
        l = self.plan.links[link]
        return dict(_core.QdiscSampler(l.dev, str(NETNS_DIR / self.ns[side])).sample())

    # ------------------------------------------------------------------ processes
    def popen(self, node: int, argv: Sequence[str], **kw) -> subprocess.Popen:
        p = subprocess.Popen(["ip", "netns", "exec", self.ns[node], *argv], start_new_session=True, **kw)
        self.add_pid(p.pid)
        return p

    def stop_links(self) -> dict:
        out = {}
        for li, link in self.links.items():
            try:
                out[li] = link.stop()
            except Exception as e:
                out[li] = {"error": str(e)}
        self.links = {}
        return out

    def close(self) -> None:
        """Tear everything down; safe to call twice and after a partial build."""
        try:
            self.stop_qdisc_samplers()
        except Exception:
            pass
        for pid in self.pids:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.stop_links()
        except Exception:
            pass
        for fd in self.tun_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.tun_fds = []
        _delete_namespaces(self.ns)
        self.manifest.unlink(missing_ok=True)
