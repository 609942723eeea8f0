"""From a scenario to the real network that runs it: what to create, decided before anything is.

The scenario is read by the simulator's own parser (``_core.scenario_topology``,
crates/py/src/topology.rs): the same nodes, the same addresses (node i is 10.0.0.0 + i + 1, as
in crates/sim/src/network.rs), the same shortest-path routes, start times and request schedules.
This module turns that into a :class:`Plan`:

* one network namespace per node; the node's address on ``lo``; routers forward;
* one link per scenario link, both ends named ``l<index>`` inside their namespaces:
  - **linkem** (two TUN devices joined by the user-space emulator, crates/linkem) when a
    direction has a propagation delay or random loss: rate, queue, delay and loss all in linkem,
    with the simulator's loss streams (seed, channel 2·link / 2·link+1);
  - **veth + tbf** when only rate and queue are asked: tbf at the rate (a size table with
    overhead −14 so it counts IP bytes, as the simulator does, not Ethernet frames) with a
    pfifo (packets) or the tbf's own bfifo (bytes) as the drop-tail queue;
  - **plain veth** when the rate is ≥ 10 Gbit/s (faster than a veth on this machine: no
    shaping is the closest real thing);
* a host route per destination host: ``DST/32 via NEXT dev l<i> src SELF onlink`` (veth; ARP
  finds NEXT, whose address is on its ``lo``) or ``DST/32 dev l<i> src SELF`` (TUN);
* TCP settings where Linux has a knob: per socket (apps.py), per namespace (sysctls), per route
  (``initcwnd``, ``rto_min``); a warning for each key that has none.

What the real stack cannot do is refused here with one line naming the key (ScenarioRefused),
so nothing is created for a scenario that cannot run.

Deviations, written down: ``tcp.delayed_ack``, ``tcp.quickack_segments`` and
``tcp.initial_rto`` have no Linux knob (warning); video apps (``app`` other than bulk and reqresp),
``reader``, ``cwnd_clamp`` and ``tcp.tso = false`` are refused
(the real reader reads at once; the clamp needs the BPF sock_ops program of the Trickle work);
``tcp.cc_params`` are refused (kernel module parameters are global), except the per-socket facts
of the CCP family's BPF ports (``PER_SOCKET_CC_PARAMS``), which the server hands over per socket.
"""

from __future__ import annotations

import json
import os
import platform
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from tcpvideo import _core

ScenarioError = _core.ScenarioError

FAST_BPS = 10_000_000_000  # at or above: a plain veth
PORT_BASE = 20000


class ScenarioRefused(ValueError):
    """The scenario asks for something the real stack cannot do (one line naming the key)."""


def _kernel_cannot_turn_rack_off() -> bool:
    """Linux 6.17 and later ignore net.ipv4.tcp_recovery = 0 (RACK is the only loss recovery)."""
    try:
        major, minor = (int(x) for x in platform.release().split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (6, 17)


# tcp key -> namespace sysctl (per network namespace in Linux: net->ipv4.sysctl_*)
SYSCTL_KEYS = {
    "sack": ("net.ipv4.tcp_sack", lambda v: int(bool(v))),
    "timestamps": ("net.ipv4.tcp_timestamps", lambda v: int(bool(v))),
    "window_scaling": ("net.ipv4.tcp_window_scaling", lambda v: int(bool(v))),
    "slow_start_after_idle": ("net.ipv4.tcp_slow_start_after_idle", lambda v: int(bool(v))),
    "frto": ("net.ipv4.tcp_frto", lambda v: 2 if v else 0),
    "dupack_threshold": ("net.ipv4.tcp_reordering", int),
    "rack_tlp": ("net.ipv4.tcp_recovery", lambda v: 1 if v else 0),
    "tlp": ("net.ipv4.tcp_early_retrans", lambda v: 3 if v else 0),
    "max_rto_ns": ("net.ipv4.tcp_rto_max_ms", lambda v: max(1000, round(v / 1e6))),
}
ROUTE_KEYS = {"initial_cwnd": "initcwnd", "min_rto_ns": "rto_min"}
SOCKET_KEYS = {"cc", "mss", "nagle", "snd_buf", "rcv_buf", "keepalive_idle_ns", "keepalive_interval_ns",
               "keepalive_probes"}
NO_KNOB = {"delayed_ack_ns": "tcp.delayed_ack", "quickack_segments": "tcp.quickack_segments",
           "initial_rto_ns": "tcp.initial_rto"}


@dataclass
class LinkPlan:
    index: int
    name: str
    a: int
    b: int
    kind: str  # "linkem", "tbf", "veth"
    ab: dict
    ba: dict

    @property
    def dev(self) -> str:
        return f"l{self.index}"


@dataclass
class Plan:
    topology: dict
    links: list[LinkPlan]
    sysctls: dict[int, dict[str, int]]  # node -> sysctl -> value
    route_opts: dict[int, dict[str, str]]  # node -> {"initcwnd": "20", ...}
    warnings: list[str] = field(default_factory=list)

    @property
    def nodes(self) -> list[dict]:
        return self.topology["nodes"]

    def routes_of(self, node: int) -> list[dict]:
        return [r for r in self.topology["routes"] if r["node"] == node]


def read_scenario(scenario: Union[str, os.PathLike, Mapping[str, Any]]) -> tuple[str, str, dict]:
    """(text, format, raw dict) of a scenario file or dict."""
    if isinstance(scenario, Mapping):
        return json.dumps(scenario), "json", dict(scenario)
    path = Path(os.fspath(scenario))
    if not path.exists():
        raise FileNotFoundError(f"scenario file not found: {path}")
    text = path.read_text()
    if path.suffix.lower() == ".json":
        return text, "json", json.loads(text)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raw = {}  # the simulator's parser reports it with the line
    return text, "toml", raw


def _flow_paths(raw: dict) -> list[tuple[str, dict]]:
    """(key path, flow table) of every flow as written: the dumbbell template, then [[flow]]s."""
    out = []
    db = raw.get("dumbbell")
    if isinstance(db, dict) and isinstance(db.get("flow"), dict):
        out.append(("dumbbell.flow", db["flow"]))
    for i, f in enumerate(raw.get("flow", []) or []):
        if isinstance(f, dict):
            out.append((f"flow[{i}]", f))
    return out


# cc_params a real run hands to the kernel CC per socket (BPF socket storage, tcpvideo.bpf):
# the playout-buffer size and share of CCPLB and the video rate of CCPLCA (seed 001).
PER_SOCKET_CC_PARAMS = {"pob_segments", "pob_rate", "video_rate_mbps"}


def _refuse_cc_params(path: str, params) -> None:
    if not isinstance(params, dict):
        return
    other = sorted(set(params) - PER_SOCKET_CC_PARAMS)
    if other:
        raise ScenarioRefused(f"{path}.{other[0]}: simulator-only (kernel congestion-control parameters are "
                              f"global; per socket only {', '.join(sorted(PER_SOCKET_CC_PARAMS))})")


EMULATED_APPS = ("bulk", "reqresp")  # what emulate/apps.py runs for real


def _refuse_simulator_only(raw: dict) -> None:
    for path, f in _flow_paths(raw):
        app = f.get("app", "bulk")
        if isinstance(app, str) and app not in EMULATED_APPS:
            raise ScenarioRefused(f"{path}.app: {app!r} is simulator-only for now (the real video origin and player "
                                  f"are not written; emulate runs {' and '.join(EMULATED_APPS)})")
        if f.get("reader") is not None:
            raise ScenarioRefused(f"{path}.reader: simulator-only (the real applications read as data arrives)")
        for k in ("cwnd_clamp", "cwnd_clamp_schedule"):
            if f.get(k):
                raise ScenarioRefused(f"{path}.{k}: simulator-only for now (the real clamp needs the BPF sock_ops program)")
        tcp = f.get("tcp") or {}
        if isinstance(tcp, dict) and tcp.get("cc_params"):
            _refuse_cc_params(f"{path}.tcp.cc_params", tcp["cc_params"])
    tcp = raw.get("tcp") or {}
    if isinstance(tcp, dict) and tcp.get("cc_params"):
        _refuse_cc_params("tcp.cc_params", tcp["cc_params"])
    for i, link in enumerate(raw.get("link", []) or []):
        if not isinstance(link, dict):
            continue
        for where, table in (("", link), (".ab", link.get("ab")), (".ba", link.get("ba"))):
            for key in _SIMULATOR_ONLY_LINK_KEYS:
                if isinstance(table, dict) and table.get(key) is not None:
                    raise ScenarioRefused(f"link[{i}]{where}.{key}: simulator-only ({_SIMULATOR_ONLY_LINK_KEYS[key]}); "
                                          "remove it to emulate this scenario")


# Link keys the real path does not reproduce, and why. Refused rather than ignored: a run without
# them is a different experiment (session 18 found `emulate` silently dropping all three).
_SIMULATOR_ONLY_LINK_KEYS = {
    "reorder": "linkem does not reorder packets",
    "spikes": "linkem has no delay spikes",
    "jitter": "the real path brings its own per-packet timing noise, ~117 us per direction on this machine "
              "(bench/linkem_owd.py)",
}


def available_ccs() -> set[str]:
    try:
        return set(Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split())
    except OSError:
        return set()


def _default_cc() -> str:
    return "cubic"


def _link_kind(ab: dict, ba: dict) -> str:
    if any(d["delay_ns"] > 0 or d["loss"]["model"] != "none" for d in (ab, ba)):
        return "linkem"
    if all(d["rate_bps"] >= FAST_BPS for d in (ab, ba)):
        return "veth"
    return "tbf"


def make_plan(text: str, fmt: str, raw: dict, seed: Optional[int] = None,
              ccs: Optional[set[str]] = None) -> Plan:
    """Resolve and check a scenario; raises ScenarioError / ScenarioRefused with one line."""
    topo = _core.scenario_topology(text, fmt, seed)
    _refuse_simulator_only(raw)
    ccs = available_ccs() if ccs is None else ccs
    n_db = raw.get("dumbbell", {}).get("clients", 0) if isinstance(raw.get("dumbbell"), dict) else 0

    def flow_path(i: int) -> str:
        if i < n_db:
            return "dumbbell.flow"
        return f"flow[{i - n_db}]"

    warnings: list[str] = []
    sysctls: dict[int, dict[str, int]] = {}
    route_opts: dict[int, dict[str, str]] = {}
    warned = set()
    for i, f in enumerate(topo["flows"]):
        tcp = f["tcp"]
        cc = tcp.get("cc", _default_cc())
        if ccs and cc not in ccs and f"tv_{cc}" in ccs:
            cc = f"tv_{cc}"  # the model algorithm's BPF twin (bpf/tv_NAME.bpf.c), registered
        if ccs and cc not in ccs:
            raise ScenarioRefused(f"{flow_path(i)}.tcp.cc: {cc!r} is not a congestion control of this kernel "
                                  f"(available: {' '.join(sorted(ccs))}; `tcpvideo bpf load {cc}` registers "
                                  "tcpvideo's BPF twin if there is one)")
        tcp["cc"] = cc
        if tcp.get("rack_tlp") is False:
            # The simulator's rack_tlp = false turns the probes off too; Linux arms them with SACK
            # whatever tcp_recovery says, so tcp_early_retrans must say it as well.
            tcp.setdefault("tlp", False)
            if _kernel_cannot_turn_rack_off() and "rack_tlp" not in warned:
                warned.add("rack_tlp")
                warnings.append(f"{flow_path(i)}.tcp.rack_tlp: Linux {platform.release()} cannot turn RACK off "
                                "(6.17 removed the RFC 6675 recovery; tcp_recovery = 0 is ignored): the real run "
                                "has RACK on and TLP off, the simulator neither")
        sender = f["server"] if f["app"]["kind"] == "reqresp" or f["app"].get("direction") == "down" else f["client"]
        for key, (name, conv) in SYSCTL_KEYS.items():
            if key in tcp:
                for node in (f["client"], f["server"]):
                    have = sysctls.setdefault(node, {})
                    v = conv(tcp[key])
                    if have.get(name, v) != v:
                        raise ScenarioRefused(f"{flow_path(i)}.tcp.{key.removesuffix('_ns')}: Linux sets it per host "
                                              f"({name}); flows of {topo['nodes'][node]['name']!r} disagree")
                    have[name] = v
        for key, opt in ROUTE_KEYS.items():
            if key in tcp:
                v = str(tcp[key]) if key == "initial_cwnd" else f"{max(1, round(tcp[key] / 1e6))}ms"
                have = route_opts.setdefault(sender, {})
                if have.get(opt, v) != v:
                    raise ScenarioRefused(f"{flow_path(i)}.tcp.{key.removesuffix('_ns')}: Linux sets it per route "
                                          f"({opt}); flows sent by {topo['nodes'][sender]['name']!r} disagree")
                have[opt] = v
        if tcp.get("tso") is False:
            raise ScenarioRefused(f"{flow_path(i)}.tcp.tso: Linux's TCP always builds GSO packets (sk_setup_caps "
                                  "adds software GSO); only the simulator can send one segment at a time")
        for key, name in NO_KNOB.items():
            if key in tcp and name not in warned:
                warned.add(name)
                warnings.append(f"{flow_path(i)}.{name}: Linux has no knob for it; the kernel default applies")
    links = []
    for li, l in enumerate(topo["links"]):
        links.append(LinkPlan(li, l["name"], l["a"], l["b"], _link_kind(l["ab"], l["ba"]), l["ab"], l["ba"]))
    if any(len(p["file"]) == 0 for p in topo["record"]["pcaps"]):
        raise ScenarioRefused("record.pcap: empty file name")
    return Plan(topology=topo, links=links, sysctls=sysctls, route_opts=route_opts, warnings=warnings)


def linkem_settings(d: dict) -> dict:
    """A direction of a scenario link as linkem keys (crates/linkem/src/spec.rs)."""
    out: dict[str, str] = {"rate": f"{d['rate_bps']}bps", "delay": f"{d['delay_ns']}ns"}
    if "queue_packets" in d:
        out["queue"] = str(d["queue_packets"])
    else:
        out["queue_bytes"] = str(d["queue_bytes"])
    loss = d["loss"]
    if loss["model"] != "none":
        out["loss"] = loss["model"]
        out["loss_p"] = repr(loss["p"])
        if loss["model"] == "gilbert_elliott":
            out["loss_r"] = repr(loss["r"])
            out["loss_good"] = repr(loss["loss_good"])
            out["loss_bad"] = repr(loss["loss_bad"])
    return out
