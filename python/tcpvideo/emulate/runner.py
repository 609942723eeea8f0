"""One emulated run: plan → network → real applications → the simulator's tables.

Order (each step only once the previous succeeded; teardown in every case):

1. read the scenario with the simulator's parser and refuse what the real stack cannot do
   (``plan.make_plan``) — nothing exists yet;
2. check privileges, remove what killed runs left (``network.cleanup``);
3. build the namespaces, links and emulators (``network.Network``), start captures;
4. start one application process per host (apps.py), wait until all listen, give them the
   common start ``t0``; sample queues while the run lasts;
5. collect: per-flow results and TCP_INFO series from the hosts, per-direction counters and
   queue samples from linkem, tbf counters and backlog samples from the kernel;
6. build the tables ``tcpvideo run`` writes (flows, links, events, series, queues, requests,
   summary.json) with the same columns, so ``--compare`` and users' notebooks treat them alike.

Real runs are not deterministic (the kernel's timing is real), but what tcpvideo controls is:
addresses, routes, start times, request schedules, and each link's loss draws (the simulator's
random streams for the same seed and channel).

What the tables cannot say on a real stack is null, not guessed: per-flow retransmission causes
(TCP_INFO gives the total, in the extra column ``retransmissions``), zero-window probes, the
ground-truth ``events`` table (empty).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import pyarrow as pa

from tcpvideo.emulate import network as netmod
from tcpvideo.emulate.anomalies import describe, window_anomalies
from tcpvideo.emulate.capture import Captures
from tcpvideo.emulate.plan import PORT_BASE, Plan, ScenarioRefused, make_plan, read_scenario
from tcpvideo._tables import table_like
from tcpvideo.simulation import TABLES, SimResult, empty_table

APPS = Path(__file__).with_name("apps.py")
READY_TIMEOUT_S = 30.0
# namespace TCP counters kept per host in summary.json (deltas over the run)
MIB_KEYS = ("Tcp.RetransSegs", "Tcp.OutSegs", "TcpExt.TCPTimeouts", "TcpExt.TCPLossProbes", "TcpExt.TCPFastRetrans",
            "TcpExt.TCPSlowStartRetrans", "TcpExt.TCPLostRetransmit", "TcpExt.TCPSackRecovery", "TcpExt.TCPSpuriousRTOs")


class Terminated(Exception):
    """SIGTERM/SIGHUP arrived: unwind like Ctrl-C so the network is torn down."""


def _on_signal(signum, _frame):
    raise Terminated(f"signal {signum}")


def _host_specs(plan: Plan, tmp: Path) -> dict[int, dict]:
    topo = plan.topology
    nodes = topo["nodes"]
    si = topo["record"]["sample_interval_ns"]
    specs: dict[int, dict] = {}

    def spec(n: int) -> dict:
        return specs.setdefault(n, {"servers": [], "clients": [], "duration_s": topo["duration_ns"] / 1e9,
                                    "sample_interval_s": None if si is None else si / 1e9,
                                    "result": str(tmp / f"host{n}.json")})

    for k, f in enumerate(topo["flows"]):
        app = f["app"]
        down = app["kind"] == "reqresp" or app.get("direction") == "down"
        common = {"flow": k, "app": app, "tcp": f["tcp"], "port": PORT_BASE + k}
        spec(f["server"])["servers"].append(dict(common, role="server", sender=down, bind=nodes[f["server"]]["ip"]))
        spec(f["client"])["clients"].append(dict(common, role="client", sender=not down, bind=nodes[f["client"]]["ip"],
                                                 server_ip=nodes[f["server"]]["ip"], start_s=f["start_ns"] / 1e9))
    return specs


def _mib(net: netmod.Network, node: int) -> dict[str, int]:
    """TcpExt and Tcp counters of a node's namespace (/proc/net/netstat, /proc/net/snmp)."""
    out = {}
    for path in ("/proc/net/netstat", "/proc/net/snmp"):
        lines = netmod._run(["ip", "netns", "exec", net.ns[node], "cat", path], check=False).stdout.splitlines()
        for hdr, val in zip(lines[0::2], lines[1::2]):
            k1, names = hdr.split(":", 1)
            _, vals = val.split(":", 1)
            if k1 in ("TcpExt", "Tcp"):
                for n, v in zip(names.split(), vals.split()):
                    out[f"{k1}.{n}"] = int(v)
    return out


def _linkem_snapshot(net: netmod.Network) -> dict[int, dict]:
    return {li: link.stats() for li, link in net.links.items()}


def _ip_link_stats(net: netmod.Network, node: int, dev: str) -> dict:
    r = netmod._run(["ip", "-n", net.ns[node], "-s", "-j", "link", "show", "dev", dev], check=False)
    try:
        st = json.loads(r.stdout)[0]["stats64"]
        return {"tx_bytes": st["tx"]["bytes"], "tx_packets": st["tx"]["packets"], "tx_dropped": st["tx"]["dropped"]}
    except (ValueError, KeyError, IndexError):
        return {"tx_bytes": 0, "tx_packets": 0, "tx_dropped": 0}


def _link_counters(net: netmod.Network) -> dict[tuple[int, int], dict]:
    """Cumulative counters per direction (link, sending node) of tbf and veth links."""
    out = {}
    for l in net.plan.links:
        if l.kind == "linkem":
            continue
        for side in (l.a, l.b):
            if (l.index, side) in net.samplers or l.kind == "tbf":
                try:
                    q = net.qdisc_counters(l.index, side)
                    out[(l.index, side)] = {"tx_bytes": q["bytes"], "tx_packets": q["packets"], "drops": q["drops"]}
                    continue
                except Exception:
                    pass
            s = _ip_link_stats(net, side, l.dev)
            # veth counts Ethernet frames: 14 bytes per packet more than the simulator's IP bytes
            out[(l.index, side)] = {"tx_bytes": s["tx_bytes"] - 14 * s["tx_packets"], "tx_packets": s["tx_packets"],
                                    "drops": s["tx_dropped"]}
    return out


def _time_weighted(ts: list[int], vals: list[int], t0: int, t1: int) -> tuple[float, int]:
    """Mean of a step function sampled at ``ts`` over [t0, t1] and its max there."""
    area, last_t, last_v, mx = 0.0, t0, None, 0
    for t, v in zip(ts, vals):
        if t < t0:
            last_v = v
            continue
        if t > t1:
            break
        if last_v is not None:
            area += last_v * (t - last_t)
        last_t, last_v = t, v
        mx = max(mx, v)
    if last_v is not None:
        area += last_v * (t1 - last_t)
    return area / max(t1 - t0, 1), mx


def emulate(
    scenario: Union[str, os.PathLike, Mapping[str, Any]],
    seed: Optional[int] = None,
    out: Optional[Union[str, os.PathLike]] = None,
    run_id: Optional[str] = None,
    rt_priority: int = 0,
    log=None,
) -> SimResult:
    """Run a scenario on real Linux TCP; returns the same tables as :func:`tcpvideo.simulate`.

    Raises ScenarioError/ScenarioRefused (one line naming the key) before creating anything,
    and PrivilegeError without root. ``log`` (a callable taking a string) receives progress.
    """
    log = log or (lambda s: None)
    text, fmt, raw = read_scenario(scenario)
    plan = make_plan(text, fmt, raw, seed)
    netmod.check_privileges()
    for w in plan.warnings:
        log(f"warning: {w}")
    stale = netmod.cleanup()
    if stale:
        log(f"removed {len(stale)} namespaces left by killed runs")
    old = {s: signal.signal(s, _on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    tmp = Path(tempfile.mkdtemp(prefix="tcpvideo-emulate-"))
    pcap_dir = Path(out) if out is not None else tmp
    t_wall = time.perf_counter()
    try:
        net = netmod.Network(plan, run_id=run_id, rt_priority=rt_priority)
        with net:
            build_s = time.perf_counter() - t_wall
            log(f"run {net.run}: {len(plan.nodes)} namespaces, {len(plan.links)} links "
                f"({sum(l.kind == 'linkem' for l in plan.links)} linkem, {sum(l.kind == 'tbf' for l in plan.links)} tbf) "
                f"in {build_s:.1f} s")
            res = _run_apps(net, plan, tmp, pcap_dir, log)
            for a in res.summary["kernel_window_anomalies"]:
                log(f"warning: {describe(a)}")
            t_down = time.perf_counter()
        res.summary["build_s"] = build_s
        res.summary["teardown_s"] = time.perf_counter() - t_down
        res.summary["wall_s"] = time.perf_counter() - t_wall
        res.summary["run_id"] = net.run
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        # the hosts' spec and result files are read by now; pcaps stay (when no --out, in tmp)
        for f in tmp.glob("host*.json"):
            f.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            tmp.rmdir()  # only if empty
    if out is not None:
        res.write(out)
    return res


def _run_apps(net: netmod.Network, plan: Plan, tmp: Path, pcap_dir: Path, log) -> SimResult:
    topo = plan.topology
    dur_s = topo["duration_ns"] / 1e9
    specs = _host_specs(plan, tmp)
    procs = {}
    caps = Captures(net, plan, pcap_dir)
    try:
        caps.start()
        for n, sp in specs.items():
            path = tmp / f"host{n}.spec.json"
            path.write_text(json.dumps(sp))
            procs[n] = net.popen(n, [sys.executable, str(APPS), str(path)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        deadline = time.time() + READY_TIMEOUT_S
        for n, p in procs.items():
            r, _, _ = select.select([p.stdout], [], [], max(0.0, deadline - time.time()))
            line = p.stdout.readline() if r else ""
            if line.strip() != "ready":
                raise RuntimeError(f"host {topo['nodes'][n]['name']!r}: its applications did not start "
                                   f"(exit {p.poll()}); see {tmp}")
        si = topo["record"]["sample_interval_ns"]
        net.start_qdisc_samplers(si / 1e9 if si else 0.01)
        t0 = time.time() + 0.2
        mono0 = time.monotonic_ns() + 200_000_000
        before_linkem = _linkem_snapshot(net)
        before_links = _link_counters(net)
        before_mib = {n: _mib(net, n) for n in specs}
        for p in procs.values():
            p.stdin.write(f"{t0!r}\n")
            p.stdin.flush()
        log(f"running {dur_s:g} s")
        time.sleep(max(0.0, t0 + dur_s - time.time()))
        after_linkem = _linkem_snapshot(net)
        after_links = _link_counters(net)
        after_mib = {n: _mib(net, n) for n in specs}
        for n, p in procs.items():
            try:
                p.wait(timeout=10.0)
            except Exception:
                p.kill()
        samples = {li: link.samples() for li, link in net.links.items()}
        qdisc = net.stop_qdisc_samplers()
        link_end = net.stop_links()
    finally:
        caps.stop()
    hosts = {}
    for n in specs:
        f = tmp / f"host{n}.json"
        hosts[n] = json.loads(f.read_text()) if f.exists() else {"endpoints": [], "error": "no result"}
    mib = {topo["nodes"][n]["name"]: {k: v - before_mib[n].get(k, 0) for k, v in after_mib[n].items()
                                      if k in MIB_KEYS} for n in specs}
    res = _tables(plan, hosts, t0, mono0, before_linkem, after_linkem, samples, before_links, after_links, qdisc,
                  link_end, caps.files)
    res.summary["host_tcp_counters"] = mib
    return res


def _tables(plan, hosts, t0, mono0, before_linkem, after_linkem, samples, before_links, after_links, qdisc,
            link_end, pcaps) -> SimResult:
    topo = plan.topology
    nodes = topo["nodes"]
    dur_s = topo["duration_ns"] / 1e9
    dur_ns = topo["duration_ns"]
    ep = {}
    errors = []
    for n, h in hosts.items():
        if h.get("error"):
            errors.append(f"{nodes[n]['name']}: {h['error']}")
        for e in h["endpoints"]:
            ep[(e["flow"], e["role"])] = e
            if e.get("error"):
                errors.append(f"flow {e['flow']} {e['role']}: {e['error']}")
    flows = {k: [] for k in ("flow", "name", "client", "server", "cc", "start_s", "base_rtt_ms", "bytes", "bytes_read",
                             "goodput_mbps", "fct_s", "retrans_fast", "retrans_timeout", "rto_count", "retrans_tlp",
                             "retrans_both_directions", "srtt_end_ms", "min_rtt_ms", "handshake_rtt_ms",
                             "max_cwnd_bytes", "cwnd_end_bytes", "zero_window_probes", "data_segments_sent",
                             "retransmissions")}
    series = {k: [] for k in ("t_s", "flow", "cwnd_bytes", "ssthresh_bytes", "srtt_ms", "bytes_in_flight", "bytes_acked",
                              "bytes_received", "peer_window_bytes")}
    requests = {k: [] for k in ("flow", "index", "scheduled_s", "sent_s", "completed_s", "response_bytes", "download_s")}
    total_retx = 0
    for k, f in enumerate(topo["flows"]):
        app = f["app"]
        down = app["kind"] == "reqresp" or app.get("direction") == "down"
        cli, srv = ep.get((k, "client"), {}), ep.get((k, "server"), {})
        snd, rcv = (srv, cli) if down else (cli, srv)
        info = snd.get("info") or {}
        other = (rcv.get("info") or {})
        got = rcv.get("bytes_received", 0)
        start = f["start_ns"] / 1e9
        fct = None
        if app["kind"] == "bulk" and app["bytes"] is not None and got >= app["bytes"] and rcv.get("done_s") is not None:
            fct = rcv["done_s"] - start
        until = start + fct if fct is not None else dur_s
        retx = info.get("total_retrans")
        total_retx += retx or 0
        mss = info.get("snd_mss") or 0
        row = {"flow": k, "name": f["name"], "client": nodes[f["client"]]["name"], "server": nodes[f["server"]]["name"],
               "cc": f["tcp"].get("cc"), "start_s": start, "base_rtt_ms": f["base_rtt_ns"] / 1e6, "bytes": got,
               "bytes_read": got, "goodput_mbps": got * 8 / max(until - start, 1e-9) / 1e6, "fct_s": fct,
               "retrans_fast": None, "retrans_timeout": None, "rto_count": None, "retrans_tlp": None,
               "retrans_both_directions": None if retx is None else retx + (other.get("total_retrans") or 0),
               "srtt_end_ms": info["rtt"] / 1e3 if info.get("rtt") else None,
               "min_rtt_ms": info["min_rtt"] / 1e3 if info.get("min_rtt") else None,
               "handshake_rtt_ms": cli.get("handshake_rtt_ms"),
               "max_cwnd_bytes": snd.get("max_cwnd_bytes", (info.get("snd_cwnd", 0) * mss)),
               "cwnd_end_bytes": info.get("snd_cwnd", 0) * mss, "zero_window_probes": None,
               "data_segments_sent": info.get("data_segs_out"), "retransmissions": retx}
        for c, v in row.items():
            flows[c].append(v)
        for s in snd.get("series", []):
            for c, v in zip(("t_s", "cwnd_bytes", "ssthresh_bytes", "srtt_ms", "bytes_in_flight", "bytes_acked",
                             "bytes_received"), s):
                series[c].append(v)
            series["flow"].append(k)
            series["peer_window_bytes"].append(None)
        for r in cli.get("requests", []) if app["kind"] == "reqresp" else []:
            i, sched, sent, done, resp = r
            for c, v in zip(("flow", "index", "scheduled_s", "sent_s", "completed_s", "response_bytes", "download_s"),
                            (k, i, sched, sent, done, resp, None if done is None or sent is None else done - sent)):
                requests[c].append(v)
    # links: one row per direction, in the simulator's channel order (a→b, b→a per link)
    links = {k: [] for k in ("link", "from", "to", "rate_mbps", "delay_ms", "tx_packets", "tx_bytes", "queue_drops",
                             "loss_drops", "mean_queue_packets", "mean_queue_bytes", "max_queue_packets",
                             "max_queue_bytes", "utilization", "emulated_by")}
    queues = {k: [] for k in ("t_s", "link", "from", "to", "packets", "bytes", "tx_bytes")}
    drops = 0
    t_end_mono = mono0 + dur_ns
    for l in plan.links:
        for side, other_side, d, key in ((l.a, l.b, l.ab, "a_to_b"), (l.b, l.a, l.ba, "b_to_a")):
            row = {"link": l.name, "from": nodes[side]["name"], "to": nodes[other_side]["name"],
                   "rate_mbps": d["rate_bps"] / 1e6, "delay_ms": d["delay_ns"] / 1e6, "emulated_by": l.kind}
            if l.kind == "linkem":
                a, b = before_linkem[l.index][key], after_linkem[l.index][key]
                adm = lambda s: s["packets_in"] - s["queue_drops"]  # noqa: E731
                row.update(tx_packets=adm(b) - adm(a), tx_bytes=b["tx_bytes"] - a["tx_bytes"],
                           queue_drops=b["queue_drops"] - a["queue_drops"], loss_drops=b["loss_drops"] - a["loss_drops"],
                           mean_queue_packets=(b["queue_packet_s"] - a["queue_packet_s"]) / dur_s,
                           mean_queue_bytes=(b["queue_byte_s"] - a["queue_byte_s"]) / dur_s,
                           max_queue_packets=b["max_queue_packets"], max_queue_bytes=b["max_queue_bytes"])
                sm = samples.get(l.index, {}).get(key, {})
                for t, p, by, tx in zip(sm.get("t_ns", []), sm.get("packets", []), sm.get("bytes", []), sm.get("tx_bytes", [])):
                    if mono0 <= t <= t_end_mono:
                        for c, v in zip(("t_s", "link", "from", "to", "packets", "bytes", "tx_bytes"),
                                        ((t - mono0) / 1e9, l.name, row["from"], row["to"], p, by, tx)):
                            queues[c].append(v)
            else:
                a, b = before_links.get((l.index, side), {}), after_links.get((l.index, side), {})
                row.update(tx_packets=b.get("tx_packets", 0) - a.get("tx_packets", 0),
                           tx_bytes=b.get("tx_bytes", 0) - a.get("tx_bytes", 0),
                           queue_drops=b.get("drops", 0) - a.get("drops", 0), loss_drops=0,
                           mean_queue_packets=0.0, mean_queue_bytes=0.0, max_queue_packets=0, max_queue_bytes=0)
                q = qdisc.get((l.index, side))
                if q and q.get("t_ns"):
                    mp, xp = _time_weighted(q["t_ns"], q["qlen"], mono0, t_end_mono)
                    mb, xb = _time_weighted(q["t_ns"], q["backlog"], mono0, t_end_mono)
                    row.update(mean_queue_packets=mp, mean_queue_bytes=mb, max_queue_packets=xp, max_queue_bytes=xb)
                    for t, p, by, tx in zip(q["t_ns"], q["qlen"], q["backlog"], q["bytes"]):
                        if mono0 <= t <= t_end_mono:
                            for c, v in zip(("t_s", "link", "from", "to", "packets", "bytes", "tx_bytes"),
                                            ((t - mono0) / 1e9, l.name, row["from"], row["to"], p, by, tx)):
                                queues[c].append(v)
            row["utilization"] = row["tx_bytes"] * 8 / (d["rate_bps"] * dur_s)
            drops += row["queue_drops"] + row["loss_drops"]
            for c, v in row.items():
                links[c].append(v)
    total_bytes = sum(flows["bytes"])
    summary = {"scenario": topo["name"], "seed": topo["seed"], "duration_s": dur_s, "flows": len(topo["flows"]),
               "runtime": "linux", "kernel": platform.release(), "total_bytes": total_bytes,
               "aggregate_goodput_mbps": total_bytes * 8 / dur_s / 1e6, "retransmissions": total_retx,
               "drops": drops, "warnings": plan.warnings, "errors": errors,
               "linkem_errors": [v.get("error") for v in link_end.values() if v.get("error")],
               "kernel_window_anomalies": window_anomalies(series)}
    # Every table takes the simulator's schema (declared once, by the Rust types); what only a
    # real run has (emulated_by, retransmissions) is added after it.
    def like(name, cols, extra_types={}):
        return table_like(empty_table(name).schema, cols, extra_types)

    tables = {
        "flows": like("flows", flows, {"retransmissions": pa.int64()}),
        "links": like("links", links),
        "series": like("series", series),
        "queues": like("queues", queues),
        "requests": like("requests", requests),
    }
    # Tables only the simulator fills (ground-truth events, video apps): empty, with their columns.
    for name in TABLES:
        if name not in tables:
            tables[name] = empty_table(name)
    tables = {name: tables[name] for name in TABLES}
    assert set(tables) == set(TABLES)
    return SimResult(summary=summary, pcaps=[Path(p) for p in pcaps], **tables)
