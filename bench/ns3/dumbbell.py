"""ns-3 reference run of the seed-004 dumbbell (bulk TCP flows through one 100 Mbit/s bottleneck).

What and why: tcpvideo's own packet simulator (crates/sim) is only credible if it agrees with an
established simulator on a scenario both can run. This script builds the dumbbell of
Kupka, Halvorsen, Griwodz, "Performance of On-Off Traffic Stemming From Live Adaptive Segmented
HTTP Video Streaming" (seeds/004, Section III, Fig. 1) in ns-3 3.44 (pip package ``ns3``, Python
bindings through cppyy) with bulk transfers instead of the video on-off pattern, and measures the
quantities tcpvideo's benches compare: aggregate and per-flow goodput, bottleneck queue, drops,
and the cost of the run (wall clock of Simulator::Run, events executed, peak RSS).

Topology (server -> clients is the data direction)::

    client_0 --1 Gbit/s, d_0--+                                   
    client_1 --1 Gbit/s, d_1--+-- R1 ==100 Mbit/s, d_b== R2 --1 Gbit/s, d_s-- server
    ...                       |     (bottleneck queue:                 
    client_N-1 ---------------+      R2's device towards R1)           

* Base RTT of client i: rtt_i ~ Normal(55 ms, 5 ms) (seed 004, Section III), truncated below at
  2*(d_b + d_s) + 1 ms so every link delay is positive. The one-way propagation delays are fixed on
  the shared links, d_s = 1 ms (server link) and d_b = 10 ms (bottleneck), and the access link gets
  the rest: d_i = rtt_i/2 - d_b - d_s. (Serialization adds ~0.14 ms per data packet to the RTT.)
  ``--flows-json`` replaces the draws with explicit (rtt_ms, start_s) pairs so another simulator
  can be fed exactly the same flows.
* Bottleneck queue: 1375 packets drop-tail (seed 004: "the router queue is limited by 1375
  packets"). In ns-3 a packet leaving IP first enters the TrafficControl layer (a pfifo_fast
  queue disc of 1000 packets on every device by default) and only then the NetDevice's own
  DropTailQueue (100 packets by default), with flow control between the two. We UNINSTALL the
  traffic-control layer on every device and give each PointToPointNetDevice a DropTailQueue:
  the bottleneck device (R2 -> R1) gets exactly 1375 packets; every other device gets 100000
  packets so that nothing but the bottleneck can drop. The queue length we report is that device
  queue's ``PacketsInQueue`` (the packet being serialized has already left the queue, as a Linux
  qdisc backlog would count it). Where the drops happen: with no queue disc, ns-3's
  NetDeviceQueue flow control *stops* the device queue once it cannot take one more MTU packet
  (i.e. at 1375 packets) and R2's TrafficControlLayer drops arriving packets while it is stopped
  (trace ``TcDrop``); the queue's own ``Drop`` trace is counted too (it stays 0). The net effect
  is drop-tail at 1375 packets. (The wake-up after a dequeue is scheduled with ScheduleNow, so a
  packet arriving in the same nanosecond as a dequeue from a full queue is dropped: negligible.)
* TCP (TcpSocketBase, one BulkSendApplication per client on the server, a PacketSink on each
  client), set like Linux: SegmentSize 1448 (payload; with the 12-byte timestamp option the IP
  packet is 1500 bytes), Timestamp on, Sack on, WindowScaling on, InitialCwnd 10, MinRto 200 ms
  (ns-3 default 1 s), ClockGranularity 1 ms, DelAckCount 2 and DelAckTimeout 40 ms (Linux
  TCP_DELACK_MIN; ns-3 default 200 ms), PRR recovery (ns-3 default, as Linux), send and receive
  buffers 32 MiB (RcvBufSize sets the window-scale shift) so that windows never limit a flow.
  Linux quick-ack mode and its adaptive ATO are not modelled by ns-3.
* Congestion controls: NewReno -> ns3::TcpLinuxReno (ns-3's port of Linux's Reno counting; plain
  ns3::TcpNewReno grows cwnd per ACK differently, available as ``NewRenoNs3``), Cubic ->
  ns3::TcpCubic, Bic -> ns3::TcpBic, Vegas -> ns3::TcpVegas, Bbr -> ns3::TcpBbr with pacing
  enabled (TcpSocketState::EnablePacing), as ns-3's own BBR examples do. All attributes of the
  chosen algorithm are written to the JSON output.
* Flow starts: uniform in [0, --start-spread) seconds (default 1 s), so handshakes do not
  synchronise; goodput "after warm-up" excludes the first --warmup seconds (default 5 s).

Measured: aggregate goodput (application bytes received by all sinks) over the whole run and
after the warm-up, per-flow goodput and Jain's fairness index, time-weighted mean and max of the
bottleneck queue (packets; over the whole run and after the warm-up) from its PacketsInQueue
trace, bottleneck drops (total and cumulative per second) and drops anywhere else (must be 0),
entries into fast recovery and into RTO loss per flow (each sender socket's CongState trace), wall
clock and CPU time of
Simulator::Run, Simulator::GetEventCount(), peak RSS (getrusage, includes the cppyy/Cling JIT,
which is ~0.4 GB before the simulation starts; reported separately).

Optional, for debugging one algorithm (``--trace-interval-ms``, result key ``trace``): the
bottleneck queue and every sender's cwnd, ssthresh, SRTT, last RTT sample, the minima of both and
its congestion state, sampled on a fixed grid (C++ callbacks keep each socket's latest value).
ns-3's TcpVegas keeps baseRTT/minRTT private, but in 3.44 its RTT input is the SRTT that
TcpSocketBase hands PktsAcked, so the SRTT minimum is its base RTT.

Usage:
    python bench/ns3/dumbbell.py --flows 10 --cc Cubic --duration 60 --seed 1 --json out.json

Import ``run_dumbbell`` to call it from Python; it must run once per process (ns-3 keeps global
state), so the benches run it in a subprocess (see ``run_in_subprocess``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from typing import Optional

CC_TYPES = {
    "NewReno": "ns3::TcpLinuxReno",
    "NewRenoNs3": "ns3::TcpNewReno",
    "Cubic": "ns3::TcpCubic",
    "Bic": "ns3::TcpBic",
    "Vegas": "ns3::TcpVegas",
    "Bbr": "ns3::TcpBbr",
}

# Fixed one-way delays of the shared links (ms); access links get the rest of each RTT.
SERVER_LINK_DELAY_MS = 1.0
BOTTLENECK_DELAY_MS = 10.0

ACCESS_RATE = "1Gbps"
BOTTLENECK_RATE = "100Mbps"
BOTTLENECK_QUEUE_PKTS = 1375
OTHER_QUEUE_PKTS = 100000
MSS = 1448
BUF_BYTES = 32 * 1024 * 1024
PORT = 50000

# C++ helpers JIT-compiled by cppyy: per-packet trace callbacks must not cross into Python.
_CPP_HELPERS = r"""
#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/applications-module.h"
#include "ns3/traffic-control-module.h"
#include "ns3/internet-module.h"
namespace tvbench {
using namespace ns3;
// Time-weighted queue statistics of the bottleneck device queue.
struct QStat {
    double lastT = 0.0;       // seconds
    uint32_t len = 0;         // current length, packets
    uint32_t maxLen = 0;
    uint32_t maxLenAfterWarm = 0;
    double area = 0.0;        // integral of len dt over [0, now]
    double areaAtWarm = 0.0;  // integral up to the warm-up instant
    double warm = 0.0;
    bool warmed = false;
    uint64_t drops = 0;       // dropped by the bottleneck device queue itself (stays 0)
    uint64_t tcDrops = 0;     // dropped by R2's traffic-control layer: device queue stopped
    uint64_t otherDrops = 0;
    uint64_t enq = 0;
};
static QStat q;
static std::vector<Ptr<PacketSink>> sinks;
static std::vector<std::vector<uint64_t>> snaps;  // per snapshot: rx bytes of every sink
static std::vector<double> snapTimes;
static std::vector<uint64_t> snapDrops;  // cumulative bottleneck drops at each snapshot

inline void Advance() {
    double t = Simulator::Now().GetSeconds();
    q.area += q.len * (t - q.lastT);
    q.lastT = t;
}
void OnPacketsInQueue(uint32_t, uint32_t v) {
    Advance();
    if (v > q.len) { q.enq++; }
    q.len = v;
    if (v > q.maxLen) q.maxLen = v;
    if (q.warmed && v > q.maxLenAfterWarm) q.maxLenAfterWarm = v;
}
void OnDrop(Ptr<const Packet>) { q.drops++; }
void OnTcDrop(Ptr<const Packet>) { q.tcDrops++; }
void OnOtherDrop(Ptr<const Packet>) { q.otherDrops++; }
void Warm() { Advance(); q.areaAtWarm = q.area; q.warmed = true; q.maxLenAfterWarm = q.len; }
void Finish() { Advance(); }
void Snapshot() {
    std::vector<uint64_t> v;
    v.reserve(sinks.size());
    for (auto& s : sinks) v.push_back(s->GetTotalRx());
    snaps.push_back(v);
    snapTimes.push_back(Simulator::Now().GetSeconds());
    snapDrops.push_back(q.drops + q.tcDrops);
}
void ScheduleSnapshots(double interval, double duration, double warm) {
    q.warm = warm;
    for (double t = interval; t <= duration + 1e-9; t += interval) {
        Simulator::Schedule(Seconds(t), &Snapshot);
    }
    Simulator::Schedule(Seconds(warm), &Warm);
}
void AddSink(Ptr<Application> a) { sinks.push_back(DynamicCast<PacketSink>(a)); }
void AttachBottleneck(Ptr<NetDevice> d) {
    Ptr<Queue<Packet>> qq = DynamicCast<PointToPointNetDevice>(d)->GetQueue();
    NS_ABORT_UNLESS(qq->TraceConnectWithoutContext("PacketsInQueue", MakeCallback(&OnPacketsInQueue)));
    NS_ABORT_UNLESS(qq->TraceConnectWithoutContext("Drop", MakeCallback(&OnDrop)));
    // With no queue disc, a full device queue is *stopped* (NetDeviceQueue flow control) and the
    // TrafficControlLayer of the node drops the packet before it reaches the device: that is
    // where drop-tail drops of the bottleneck happen. R2's other device never stops.
    Ptr<TrafficControlLayer> tc = d->GetNode()->GetObject<TrafficControlLayer>();
    NS_ABORT_UNLESS(tc->TraceConnectWithoutContext("TcDrop", MakeCallback(&OnTcDrop)));
}
void AttachOther(Ptr<NetDevice> d) {
    Ptr<Queue<Packet>> qq = DynamicCast<PointToPointNetDevice>(d)->GetQueue();
    NS_ABORT_UNLESS(qq->TraceConnectWithoutContext("Drop", MakeCallback(&OnOtherDrop)));
}
void AttachOtherNode(Ptr<Node> n) {
    Ptr<TrafficControlLayer> tc = n->GetObject<TrafficControlLayer>();
    NS_ABORT_UNLESS(tc->TraceConnectWithoutContext("TcDrop", MakeCallback(&OnOtherDrop)));
}
// Per flow: entries into fast recovery and into RTO loss state, from the sender socket's
// CongState trace (the socket exists once BulkSendApplication has started).
static std::vector<uint64_t> recoveries, rtoLosses;
void OnCongState(uint64_t f, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t v) {
    if (v == TcpSocketState::CA_RECOVERY) recoveries[f]++;
    if (v == TcpSocketState::CA_LOSS) rtoLosses[f]++;
}
void HookSocket(Ptr<Application> a, uint64_t f) {
    Ptr<Socket> so = DynamicCast<BulkSendApplication>(a)->GetSocket();
    NS_ABORT_UNLESS(so);
    NS_ABORT_UNLESS(so->TraceConnectWithoutContext("CongState",
        MakeBoundCallback(&OnCongState, f)));
}
// Optional per-flow sender trace (--trace-interval-ms): the latest value of each socket trace
// source, sampled on a fixed grid together with the bottleneck queue. ns-3's TcpVegas keeps its
// baseRTT/minRTT private; its RTT input is whatever TcpSocketBase hands PktsAcked (3.44: the
// smoothed RTT), so the min of the "RTT" (SRTT) trace is what its baseRTT can be.
struct FlowNow {
    double cwnd = 0, ssthresh = 0, srtt = 0, minSrtt = 0, lastRtt = 0, minLastRtt = 0;
    uint32_t state = 0;
};
static std::vector<FlowNow> fnow;
static std::vector<double> trT;
static std::vector<uint32_t> trQ;
static std::vector<std::vector<FlowNow>> trF;
static bool tracing = false;
void OnCwnd(uint64_t f, uint32_t, uint32_t v) { fnow[f].cwnd = v; }
void OnSsth(uint64_t f, uint32_t, uint32_t v) { fnow[f].ssthresh = v; }
void OnSrtt(uint64_t f, Time, Time v) {
    double ms = v.GetSeconds() * 1e3;
    fnow[f].srtt = ms;
    if (ms > 0 && (fnow[f].minSrtt == 0 || ms < fnow[f].minSrtt)) fnow[f].minSrtt = ms;
}
void OnLastRtt(uint64_t f, Time, Time v) {
    double ms = v.GetSeconds() * 1e3;
    fnow[f].lastRtt = ms;
    if (ms > 0 && (fnow[f].minLastRtt == 0 || ms < fnow[f].minLastRtt)) fnow[f].minLastRtt = ms;
}
void OnState(uint64_t f, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t v) {
    fnow[f].state = v;
}
void TraceSample() {
    trT.push_back(Simulator::Now().GetSeconds());
    trQ.push_back(q.len);
    trF.push_back(fnow);
}
void StartTracing(double interval, double duration) {
    // Scheduled up front (before Simulator::Stop), so the sample at t = duration runs too.
    tracing = true;
    uint64_t n = (uint64_t)(duration / interval + 1e-9);
    for (uint64_t i = 0; i <= n; i++) {
        Simulator::Schedule(NanoSeconds(std::llround(i * interval * 1e9)), &TraceSample);
    }
}
void HookTrace(Ptr<Application> a, uint64_t f) {
    Ptr<Socket> so = DynamicCast<BulkSendApplication>(a)->GetSocket();
    NS_ABORT_UNLESS(so);
    NS_ABORT_UNLESS(so->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&OnCwnd, f)));
    NS_ABORT_UNLESS(so->TraceConnectWithoutContext("SlowStartThreshold", MakeBoundCallback(&OnSsth, f)));
    NS_ABORT_UNLESS(so->TraceConnectWithoutContext("RTT", MakeBoundCallback(&OnSrtt, f)));
    NS_ABORT_UNLESS(so->TraceConnectWithoutContext("LastRTT", MakeBoundCallback(&OnLastRtt, f)));
    NS_ABORT_UNLESS(so->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnState, f)));
}
void AddBulk(Ptr<Application> a, double start) {
    uint64_t f = recoveries.size();
    recoveries.push_back(0);
    rtoLosses.push_back(0);
    fnow.push_back(FlowNow());
    Simulator::Schedule(Seconds(start) + NanoSeconds(1), &HookSocket, a, f);
    if (tracing) Simulator::Schedule(Seconds(start) + NanoSeconds(1), &HookTrace, a, f);
}
uint64_t TraceCount() { return trT.size(); }
double TraceT(uint64_t i) { return trT[i]; }
uint64_t TraceQ(uint64_t i) { return trQ[i]; }
FlowNow& TraceF(uint64_t i, uint64_t f) { return trF[i][f]; }
uint64_t Recoveries(uint64_t f) { return recoveries[f]; }
uint64_t RtoLosses(uint64_t f) { return rtoLosses[f]; }
uint64_t SnapCount() { return snaps.size(); }
double SnapTime(uint64_t i) { return snapTimes[i]; }
uint64_t SnapValue(uint64_t i, uint64_t f) { return snaps[i][f]; }
uint64_t SnapDrops(uint64_t i) { return snapDrops[i]; }
uint64_t SinkRx(uint64_t f) { return sinks[f]->GetTotalRx(); }
QStat& Stats() { return q; }
}  // namespace tvbench
"""


def draw_flows(n: int, seed: int, start_spread: float,
               rtt_mean_ms: float = 55.0, rtt_sd_ms: float = 5.0,
               bottleneck_delay_ms: float = BOTTLENECK_DELAY_MS,
               server_delay_ms: float = SERVER_LINK_DELAY_MS) -> list[dict]:
    """Per-flow base RTT (ms) ~ Normal(55, 5) truncated at the shared links' minimum, and a start
    time ~ Uniform[0, start_spread) s, from Python's Mersenne Twister seeded with ``seed``."""
    rng = random.Random(seed)
    floor = 2 * (server_delay_ms + bottleneck_delay_ms) + 1.0
    flows = []
    for _ in range(n):
        rtt = rng.gauss(rtt_mean_ms, rtt_sd_ms)
        while rtt < floor:
            rtt = rng.gauss(rtt_mean_ms, rtt_sd_ms)
        flows.append({"rtt_ms": rtt, "start_s": rng.random() * start_spread})
    return flows


def jain(xs: list[float]) -> float:
    s = sum(xs)
    s2 = sum(x * x for x in xs)
    return (s * s) / (len(xs) * s2) if s2 > 0 else float("nan")


def _attributes(ns, type_name: str) -> dict:
    tid = ns.TypeId.LookupByName(type_name)
    out = {}
    for i in range(tid.GetAttributeN()):
        a = tid.GetAttribute(i)
        out[str(a.name)] = str(a.initialValue.SerializeToString(a.checker))
    return out


def run_dumbbell(flows: int = 10, cc: str = "Cubic", duration: float = 60.0, seed: int = 1,
                 warmup: float = 5.0, start_spread: float = 1.0,
                 flow_list: Optional[list[dict]] = None,
                 snapshot_interval: float = 1.0,
                 bottleneck_delay_ms: float = BOTTLENECK_DELAY_MS,
                 server_delay_ms: float = SERVER_LINK_DELAY_MS,
                 bottleneck_rate: str = BOTTLENECK_RATE,
                 access_rate: str = ACCESS_RATE,
                 server_rate: str = ACCESS_RATE,
                 queue_pkts: int = BOTTLENECK_QUEUE_PKTS,
                 trace_interval_ms: Optional[float] = None) -> dict:
    """Build and run the dumbbell in this process; return the result dictionary.

    ``flow_list`` (list of {"rtt_ms", "start_s"}) replaces the seeded draws; rates are ns-3
    DataRate strings ("100Mbps"). ``trace_interval_ms`` adds a "trace" result: the bottleneck
    queue and each sender's cwnd, ssthresh, SRTT, last RTT sample, their minima and the
    congestion state, sampled every that many ms (for debugging one algorithm; large output)."""
    if cc not in CC_TYPES:
        raise ValueError(f"unknown cc {cc!r}; choose from {sorted(CC_TYPES)}")
    if flow_list is None:
        flow_list = draw_flows(flows, seed, start_spread, bottleneck_delay_ms=bottleneck_delay_ms,
                               server_delay_ms=server_delay_ms)
    n = len(flow_list)
    if warmup >= duration:
        raise ValueError("warm-up must be shorter than the run")

    t_import0 = time.perf_counter()
    from ns import ns  # noqa: E402  (slow: Cling JIT; prints harmless "Failed to materialize")
    ns.cppyy.cppdef(_CPP_HELPERS)
    tv = ns.cppyy.gbl.tvbench
    t_import = time.perf_counter() - t_import0

    ns.RngSeedManager.SetSeed(max(1, seed))
    ns.RngSeedManager.SetRun(1)

    cc_type = CC_TYPES[cc]
    C = ns.Config.SetDefault
    C("ns3::TcpL4Protocol::SocketType", ns.TypeIdValue(ns.TypeId.LookupByName(cc_type)))
    C("ns3::TcpSocket::SegmentSize", ns.UintegerValue(MSS))
    C("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    C("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2))
    C("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.MilliSeconds(40)))
    C("ns3::TcpSocket::SndBufSize", ns.UintegerValue(BUF_BYTES))
    C("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(BUF_BYTES))
    C("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))
    C("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(True))
    C("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(True))
    C("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(200)))
    C("ns3::TcpSocketBase::ClockGranularity", ns.TimeValue(ns.MilliSeconds(1)))
    if cc == "Bbr":
        C("ns3::TcpSocketState::EnablePacing", ns.BooleanValue(True))

    clients = ns.NodeContainer()
    clients.Create(n)
    routers = ns.NodeContainer()
    routers.Create(2)
    server = ns.NodeContainer()
    server.Create(1)
    r1, r2, srv = routers.Get(0), routers.Get(1), server.Get(0)

    stack = ns.InternetStackHelper()
    stack.Install(clients)
    stack.Install(routers)
    stack.Install(server)

    p2p = ns.PointToPointHelper()
    tch = ns.TrafficControlHelper()
    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.252"))

    def link(a, b, rate, delay_ms, qa, qb):
        p2p.SetDeviceAttribute("DataRate", ns.StringValue(rate))
        p2p.SetChannelAttribute("Delay", ns.TimeValue(ns.NanoSeconds(int(round(delay_ms * 1e6)))))
        nodes = ns.NodeContainer()
        nodes.Add(a)
        nodes.Add(b)
        devs = p2p.Install(nodes)
        for i, size in ((0, qa), (1, qb)):
            qu = devs.Get(i).GetObject[ns.PointToPointNetDevice]().GetQueue()
            qu.SetAttribute("MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{size}p")))
        ifs = addr.Assign(devs)  # Assign installs the default pfifo_fast root queue disc ...
        tch.Uninstall(devs)  # ... which we remove: the device DropTailQueue is the only queue
        addr.NewNetwork()
        return devs, ifs

    # server <-> R2
    sdevs, sifs = link(srv, r2, server_rate, server_delay_ms, OTHER_QUEUE_PKTS, OTHER_QUEUE_PKTS)
    # R2 <-> R1: R2's device (index 0) carries server->client data: the bottleneck queue.
    bdevs, _ = link(r2, r1, bottleneck_rate, bottleneck_delay_ms, queue_pkts, OTHER_QUEUE_PKTS)
    tv.AttachBottleneck(bdevs.Get(0))
    tv.AttachOther(bdevs.Get(1))
    tv.AttachOther(sdevs.Get(0))
    tv.AttachOther(sdevs.Get(1))
    tv.AttachOtherNode(srv)
    tv.AttachOtherNode(r1)
    client_addrs = []
    access_delays = []
    for i, f in enumerate(flow_list):
        d = f["rtt_ms"] / 2.0 - bottleneck_delay_ms - server_delay_ms
        if d < 0:
            raise ValueError(f"flow {i}: rtt {f['rtt_ms']} ms too small for the shared links")
        access_delays.append(d)
        cdevs, cifs = link(r1, clients.Get(i), access_rate, d, OTHER_QUEUE_PKTS, OTHER_QUEUE_PKTS)
        tv.AttachOther(cdevs.Get(0))
        tv.AttachOther(cdevs.Get(1))
        tv.AttachOtherNode(clients.Get(i))
        client_addrs.append(cifs.GetAddress(1))
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    stop = ns.Seconds(duration)
    if trace_interval_ms:
        tv.StartTracing(trace_interval_ms / 1e3, duration)
    for i, f in enumerate(flow_list):
        sink_helper = ns.PacketSinkHelper(
            "ns3::TcpSocketFactory",
            ns.InetSocketAddress(ns.Ipv4Address.GetAny(), PORT).ConvertTo())
        sapps = sink_helper.Install(clients.Get(i))
        sapps.Start(ns.Seconds(0.0))
        sapps.Stop(stop)
        tv.AddSink(sapps.Get(0))
        bulk = ns.BulkSendHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(client_addrs[i], PORT).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(MSS))
        apps = bulk.Install(srv)
        start_ns = int(round(f["start_s"] * 1e9))
        apps.Start(ns.NanoSeconds(start_ns))
        apps.Stop(stop)
        tv.AddBulk(apps.Get(0), start_ns / 1e9)

    tv.ScheduleSnapshots(snapshot_interval, duration, warmup)
    ns.Simulator.Stop(stop)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    w0, c0 = time.perf_counter(), time.process_time()
    ns.Simulator.Run()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    rss_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tv.Finish()
    events = int(ns.Simulator.GetEventCount())

    st = tv.Stats()
    rx_end = [int(tv.SinkRx(i)) for i in range(n)]
    snaps_t = [float(tv.SnapTime(k)) for k in range(int(tv.SnapCount()))]
    snaps = [[int(tv.SnapValue(k, i)) for i in range(n)] for k in range(len(snaps_t))]
    # bytes received by the warm-up instant: the snapshot at t == warmup (if on the grid) or
    # linear interpolation between the surrounding snapshots.
    rx_warm = _bytes_at(warmup, snaps_t, snaps, n)
    after = duration - warmup
    per_flow = [8.0 * b / duration / 1e6 for b in rx_end]
    per_flow_after = [8.0 * (b - w) / after / 1e6 for b, w in zip(rx_end, rx_warm)]
    q_mean = st.area / duration
    q_mean_after = (st.area - st.areaAtWarm) / after
    attrs = _attributes(ns, cc_type)
    trace = _collect_trace(tv, n) if trace_interval_ms else None
    ns.Simulator.Destroy()

    return {
        "tool": "ns-3",
        "ns3_version": "3.44",
        "scenario": "seed-004 dumbbell, bulk flows",
        "config": {
            "flows": n,
            "cc": cc,
            "ns3_cc_type": cc_type,
            "ns3_cc_attributes": attrs,
            "duration_s": duration,
            "warmup_s": warmup,
            "seed": seed,
            "start_spread_s": start_spread,
            "bottleneck_rate": bottleneck_rate,
            "bottleneck_delay_ms": bottleneck_delay_ms,
            "bottleneck_queue_pkts": queue_pkts,
            "bottleneck_queue_location": "PointToPointNetDevice TxQueue (DropTailQueue<Packet>) "
                                         "of R2 towards R1; TrafficControl layer uninstalled on "
                                         "all devices",
            "other_queues_pkts": OTHER_QUEUE_PKTS,
            "access_rate": access_rate,
            "server_link_rate": server_rate,
            "server_link_delay_ms": server_delay_ms,
            "mtu_bytes": 1500,
            "tcp": {
                "segment_size": MSS, "timestamps": True, "sack": True, "window_scaling": True,
                "initial_cwnd": 10, "min_rto_ms": 200, "clock_granularity_ms": 1,
                "del_ack_count": 2, "del_ack_timeout_ms": 40, "snd_buf": BUF_BYTES,
                "rcv_buf": BUF_BYTES, "recovery": "ns3::TcpPrrRecovery",
                "pacing": cc == "Bbr",
            },
            "app": "BulkSendApplication (server -> client, SendSize 1448) + PacketSink",
            "flows_detail": [
                {"rtt_ms": f["rtt_ms"], "start_s": f["start_s"], "access_delay_ms": d}
                for f, d in zip(flow_list, access_delays)
            ],
        },
        "results": {
            "goodput_mbps": sum(per_flow),
            "goodput_after_warmup_mbps": sum(per_flow_after),
            "per_flow_goodput_mbps": per_flow,
            "per_flow_goodput_after_warmup_mbps": per_flow_after,
            "jain_index": jain(per_flow),
            "jain_index_after_warmup": jain(per_flow_after),
            "queue_mean_pkts": q_mean,
            "queue_mean_after_warmup_pkts": q_mean_after,
            "queue_max_pkts": int(st.maxLen),
            "queue_max_after_warmup_pkts": int(st.maxLenAfterWarm),
            "bottleneck_drops": int(st.drops + st.tcDrops),
            "bottleneck_drops_tc_layer": int(st.tcDrops),
            "bottleneck_drops_device_queue": int(st.drops),
            "bottleneck_enqueues": int(st.enq),
            "other_drops": int(st.otherDrops),
            "bytes_received": sum(rx_end),
            "recovery_episodes": sum(int(tv.Recoveries(i)) for i in range(n)),
            "rto_episodes": sum(int(tv.RtoLosses(i)) for i in range(n)),
            "per_flow_recovery_episodes": [int(tv.Recoveries(i)) for i in range(n)],
            "per_flow_rto_episodes": [int(tv.RtoLosses(i)) for i in range(n)],
            "goodput_timeseries": {
                "t_s": snaps_t,
                "aggregate_mbps": [
                    8.0 * (sum(snaps[k]) - (sum(snaps[k - 1]) if k else 0))
                    / (snaps_t[k] - (snaps_t[k - 1] if k else 0.0)) / 1e6
                    for k in range(len(snaps_t))
                ],
                "cumulative_drops": [int(tv.SnapDrops(k)) for k in range(len(snaps_t))],
            },
        },
        **({"trace": trace} if trace else {}),
        "cost": {
            "wall_run_s": wall,
            "cpu_run_s": cpu,  # process CPU time of Run: less sensitive to a shared machine
            "wall_import_and_jit_s": t_import,
            "events": events,
            "events_per_wall_s": events / wall if wall > 0 else None,
            "peak_rss_mb": rss_peak / 1024.0,
            "rss_before_run_mb": rss_before / 1024.0,
            "load_avg_1m_at_end": os.getloadavg()[0],
        },
    }


def _collect_trace(tv, n: int) -> dict:
    """The --trace-interval-ms samples as columns (cwnd/ssthresh in segments, RTTs in ms)."""
    k = int(tv.TraceCount())
    cols = ("cwnd", "ssthresh", "srtt", "minSrtt", "lastRtt", "minLastRtt", "state")
    flows = []
    for f in range(n):
        rows = [tv.TraceF(i, f) for i in range(k)]
        d = {c: [float(getattr(r, c)) for r in rows] for c in cols}
        flows.append({"cwnd_segs": [x / MSS for x in d["cwnd"]],
                      "ssthresh_segs": [min(x, 4294967295.0) / MSS for x in d["ssthresh"]],
                      "srtt_ms": d["srtt"], "min_srtt_ms": d["minSrtt"],
                      "last_rtt_ms": d["lastRtt"], "min_last_rtt_ms": d["minLastRtt"],
                      "cong_state": [int(x) for x in d["state"]]})
    return {"t_s": [float(tv.TraceT(i)) for i in range(k)],
            "queue_pkts": [int(tv.TraceQ(i)) for i in range(k)], "flows": flows}


def _bytes_at(t: float, ts: list[float], snaps: list[list[int]], n: int) -> list[float]:
    prev_t, prev = 0.0, [0] * n
    for tk, sk in zip(ts, snaps):
        if abs(tk - t) < 1e-9:
            return [float(x) for x in sk]
        if tk > t:
            a = (t - prev_t) / (tk - prev_t)
            return [p + a * (c - p) for p, c in zip(prev, sk)]
        prev_t, prev = tk, sk
    return [float(x) for x in prev]


def run_in_subprocess(flows: int = 10, cc: str = "Cubic", duration: float = 60.0, seed: int = 1,
                      warmup: float = 5.0, start_spread: float = 1.0,
                      flow_list: Optional[list[dict]] = None, json_out: Optional[str] = None,
                      timeout: Optional[float] = None, extra_args: Optional[list[str]] = None) -> dict:
    """Run the dumbbell in a fresh Python process (ns-3 cannot be re-run cleanly in one process,
    and peak RSS must be per run). Returns the parsed JSON result."""
    import tempfile
    tmpdir = tempfile.mkdtemp(prefix="ns3dumbbell-")
    out = json_out or os.path.join(tmpdir, "result.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--flows", str(flows), "--cc", cc,
           "--duration", str(duration), "--seed", str(seed), "--warmup", str(warmup),
           "--start-spread", str(start_spread), "--json", out]
    if flow_list is not None:
        fl = os.path.join(tmpdir, "flows.json")
        with open(fl, "w") as fh:
            json.dump(flow_list, fh)
        cmd += ["--flows-json", fl]
    cmd += list(extra_args or [])
    subprocess.run(cmd, check=True, timeout=timeout, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with open(out) as fh:
        return json.load(fh)


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--flows", type=int, default=10)
    p.add_argument("--cc", choices=sorted(CC_TYPES), default="Cubic")
    p.add_argument("--duration", type=float, default=60.0, help="simulated seconds")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--warmup", type=float, default=5.0, help="seconds excluded from *_after_warmup")
    p.add_argument("--start-spread", type=float, default=1.0,
                   help="flow starts ~ Uniform[0, this) seconds")
    p.add_argument("--flows-json", help="JSON list of {rtt_ms, start_s}; overrides --flows/--seed draws")
    p.add_argument("--bottleneck-delay-ms", type=float, default=BOTTLENECK_DELAY_MS,
                   help="one-way propagation delay of R1-R2")
    p.add_argument("--server-delay-ms", type=float, default=SERVER_LINK_DELAY_MS,
                   help="one-way propagation delay of server-R2")
    p.add_argument("--bottleneck-rate", default=BOTTLENECK_RATE)
    p.add_argument("--access-rate", default=ACCESS_RATE)
    p.add_argument("--server-rate", default=ACCESS_RATE)
    p.add_argument("--queue", type=int, default=BOTTLENECK_QUEUE_PKTS,
                   help="bottleneck drop-tail queue, packets")
    p.add_argument("--trace-interval-ms", type=float, default=None,
                   help="also sample the bottleneck queue and every sender's cwnd, ssthresh, "
                        "SRTT and last RTT on this grid (result key \"trace\")")
    p.add_argument("--json", help="write the result here (default: stdout)")
    a = p.parse_args(argv)
    flow_list = None
    if a.flows_json:
        with open(a.flows_json) as fh:
            flow_list = json.load(fh)
    res = run_dumbbell(flows=a.flows, cc=a.cc, duration=a.duration, seed=a.seed, warmup=a.warmup,
                       start_spread=a.start_spread, flow_list=flow_list,
                       bottleneck_delay_ms=a.bottleneck_delay_ms, server_delay_ms=a.server_delay_ms,
                       bottleneck_rate=a.bottleneck_rate, access_rate=a.access_rate,
                       server_rate=a.server_rate, queue_pkts=a.queue,
                       trace_interval_ms=a.trace_interval_ms)
    text = json.dumps(res, indent=1)
    if a.json:
        with open(a.json, "w") as fh:
            fh.write(text + "\n")
        r, c = res["results"], res["cost"]
        print(f"{a.cc} N={res['config']['flows']} {a.duration:g}s: goodput {r['goodput_mbps']:.2f} "
              f"Mbit/s (after warm-up {r['goodput_after_warmup_mbps']:.2f}), queue mean "
              f"{r['queue_mean_pkts']:.0f} max {r['queue_max_pkts']} pkts, drops "
              f"{r['bottleneck_drops']} (other {r['other_drops']}), Jain {r['jain_index']:.3f}; "
              f"Run {c['wall_run_s']:.1f} s wall ({c['cpu_run_s']:.1f} s CPU), {c['events']} events, "
              f"peak RSS {c['peak_rss_mb']:.0f} MB")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
