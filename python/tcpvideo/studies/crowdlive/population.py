"""Seed 000's population as a scenario: publishers on lossy, reordering mobile uplinks and
subscribers on their own access links, all served by one front-end (Fig. 1).

Each client has its own access link to the front-end's router (rate, one-way delay, Gilbert–Elliott
loss and reordering drawn per client from the run's seed); the front-end's link is fast. Every
channel has one publisher; subscribers pick a channel (popular channels more often) and join at a
random time while it is live. Publisher stream lengths and viewer watch times are drawn so that,
with the front-end's 20 s idle close, flow completion times resemble Fig. 3 (about 60 % of flows
under 30 s of activity, uploads nearly all above 20 s); the distributions are our choice — the
seed gives only the figure.

Publishers end by closing the connection (a user pressing stop) with probability
``fin_share`` and otherwise go silent until the front-end's 20 s idle close (a phone left
alone); while streaming, each pauses its encoder now and then (``pause_every_s``: mean time
between pauses, exponential; 0.5–3 s each: the app sent to the background, the camera
re-initialising, a radio outage the encoder waits out). Both are our choices, set before
looking at the result (issue 16); they are drawn from their own random stream, so the rest of
the population is the same with or without them.

Experiments (all off by default, each leaves every random draw of the population unchanged):
Viewer last miles (issue 16, session 7): every viewer path has random (Gilbert–Elliott) loss
*and* a finite drop-tail queue. ``viewer_loss_p`` sets the viewers' random loss apart from the
publishers' (``loss_p``); the study's default 0.004 (mean 0.5 % per path: the function's
long-standing default, and just under the paper's overall ~0.6 % so that queue drops come on top).
``bdp_queue_share`` — the share of viewer paths whose queue is BDP-sized (the classic rule
buffer = RTT × C, :func:`bdp_packets`); the others keep the drawn 30/60/100 packets, the
over-provisioned buffers of home routers and cellular base stations (bufferbloat). No source
gives the mix; the study's default ½ is the no-information midpoint, stated before its per-type
result was looked at, and the study reports a 0 / ¼ / ½ / 1 sensitivity (``buffers.py``). Which
paths are BDP-sized is drawn from its own random stream (nested: a path BDP-sized at ¼ is at ½).

``per_type_connections`` — seed 000 §4's last mitigation, "transmit each type of frame in
separate connections": every publisher opens one upload per frame type (I, P, voice; flows
``pubN_I`` …, the same encoder and pauses) and every viewer one download per type, to which the
front-end relays only that type; ``viewer_queue`` — every viewer's access queue this many
packets (the experiment behind Table 4's "routers are likely to drop burst packets": a queue
shorter than an I frame's burst); ``viewer_pacing = "fq"`` — the front-end paces every download
at Linux's ``sk_pacing_rate`` (the fq qdisc; default unpaced: pfifo_fast / fq_codel, the default
qdiscs of the seed's era, enforce no pacing), so the GOP cache sent at a viewer's join leaves
spread over each RTT instead of in slow start's ACK-clocked bursts (issue 16, session 8);
``viewer_join = "wait_key"`` — a new viewer gets no GOP cache: the front-end relays new frames
only, P frames from the channel's next I frame on, voice at once (nginx-rtmp's ``wait_key``;
issue 16, session 11; default ``"gop_cache"``).

``viewer_bad_ms`` (issue 16, session 11 round 2; default ``None``: the per-packet chain) — the
viewers' random loss as Gilbert–Elliott *in time* (``gilbert_elliott_time``, crates/sim/src/loss.rs):
the same share of time in Bad as the per-packet chain (p/(p+r) of the same draw), every packet
lost while Bad, each Bad period ``viewer_bad_ms`` on average (exponential). Radio loss comes in
outages that last a time — hard handovers that break the link before the target cell takes over
(Han et al., IEEE Commun. Mag. 53(3), 2015, measured on LTE), RRC state transitions and RAT
changes / temporary loss of service, where most of the loss of measured mobile broadband paths
falls (Baltrūnas et al., INFOCOM 2015; IFIP Networking 2016: 70 % of the loss on trains), burst
loss and short or long outages from moving vehicles (Jang et al., MICNET 2009) — whereas the
per-packet chain ends its 2-packet Bad state within microseconds inside a burst. None of these
gives a duration distribution for the seed's viewers, so the study sweeps it (issue 16).

``viewer_loss_independent`` (issue 16, session 20; default ``False``: the per-packet chain) — the
viewers' random loss without correlation: each packet lost alone with the chain's stationary loss
p/(p + r) of the same draw (Bernoulli), so the mean loss per path is unchanged and only its bursts
go. An experiment on what the seed's own tables say about its viewers' random loss: Table 4 has V
and P losing alike per packet (0.61 / 0.6 %: loss that hits a lone voice packet as often as a P
frame's, i.e. not queue overflow behind bursts), and Table 5 has no voice RTO with every packet out
lost (with the chain, a Bad period takes the voice copy and the next P frame's first segments
together: every voice continuous loss of session 17's 200 seeds came from it).

``viewer_chain_in_time`` (issue 16, session 21; the study's default since then, off here so that
the function's older callers keep their bytes) — the
viewers' chain in time at its own scale: the same share of time in Bad, p/(p + r), each Bad period
as long on average as the chain's 1/r = 2 full-size packets take to serialize at the path's access
rate (12 ms at 2 Mbit/s, 1.2 ms at 20). Back to back, a burst meets the same 2-packet loss runs as
under the chain; across idle time the state moves on. The per-packet chain holds its state while
nothing is sent, so a lone voice packet and the next frame 20–40 ms later share a Bad period with
probability ½ whatever the gap, which no physical loss process does: fades and outages last a
time, and measured loss correlation decays with the spacing of the packets (Bolot, SIGCOMM 1993:
correlated at probe spacings up to ~20 ms, essentially random beyond unless the probes load the
path; Yajnik et al., INFOCOM 1999: correlation timescales of 1 s or less). Queue overflow behind
bursts is modelled apart (the access queue).

``publisher_chain_in_time`` (issue 16, session 21; off here) — the publishers' uplinks get the
same conversion: their chain in time at its own scale (2 full packets' wire time at the uplink
rate: 3 ms at 8 Mbit/s, 16 ms at 1.5).

``viewer_cross_every_s`` (issue 16, session 11 round 2; default ``None``: none) — cross traffic on
every viewer's access link: a second device or app on the same home link or cell fetching
``viewer_cross_bytes`` from a web server behind the router, one fetch every ``viewer_cross_every_s``
on average (exponential, from its own random stream) while the viewer watches, one persistent
connection per viewer (``reqresp``; the web server's link is not captured and the truth tracks
crowdlive connections only). An experiment for the seed's explanation of double retransmissions
("when the network drops a packet, the network has a high probability to become congested"):
the viewer's own flow in fast recovery sends one packet per packet delivered and cannot keep its
queue full for an RTT; another flow in slow start can. Sizes and rates are not measured for the
seed's viewers.

``viewer_spike_every_s`` (issue 16, session 17; default ``None``: none) — delay spikes on every
viewer's ACK path (the viewer's uplink): now and then the radio holds every ACK for a while and
then releases them together (``spikes``, crates/sim/src/delay_spikes.rs), a spike every
``viewer_spike_every_s`` on average, each ``viewer_spike_ms`` long on average (both exponential,
from the link direction's own random stream, so every other draw stays). Measured mobile paths
have round-trip delays of several seconds several times an hour, from handovers, RRC state
transitions and link-layer retransmissions (Larson et al., SIGCOMM AllThingsCellular 2015); the
seed's Table 5 types 8.5–19 % of timeouts as "ACK delay/loss", which needs such a path, and the
seed explains voice's high less-packet share partly by I and P frames' larger share of ACK
delay/loss. The numbers the trends run uses are derived in trends.py (``ack_spikes``).

``separate_audio`` (the study's default since issue 16 session 10; off here, so the function's
older callers and the golden scenario keep their bytes): each publisher's voice frame leaves
``audio_offset`` after the slot's video frame, as its own write, with the offset drawn uniformly
in [0, 40) ms per publisher from its own random stream. Seed 000 §1.1 gives voice its own
production ("Frame V carries voice data with size less than 1 kbytes and production speed of
about 25f/s"), and §3.1–3.2 see every voice frame leave on its own: "the intervals begin as the
server sends out a frame", "Frame V experiences no burst packet as its size is less than one
packet size", "when sending frame V, there are often fewer packets in the network". Audio and
video come from separate capture clocks, so their phase is arbitrary; uniform is the
no-information choice. Without it the voice tag shares the video frame's write and its last
segment: on downloads 91 % of voice-typed segments were ≥ 1000 bytes (mean 1327, `--full`
tlp_off, seed 1: a voice tag followed by the next slot's P data) and the last segment before a
≥ 200-ms gap was P-typed in 77 % of gaps.

``nodelay`` (with ``separate_audio`` the study's default since session 10): TCP_NODELAY at both
ends of every connection. A separate voice write alone does not put the voice frame on the wire
by itself: with Nagle the 200-byte write waits behind the video frame's unacknowledged last
segment and leaves with the next slot's video data (`--full` tlp_off, 3 seeds: 33–36 % of voice
segments under 300 bytes with Nagle, 80–89 % without). The seed's voice frames are packets of
their own (above); librtmp, the usual RTMP publishing library of the time, sets TCP_NODELAY on
connect (`RTMP_Connect0`), and a live relay writes each frame as it comes. Both ends are set
alike: the seed does not say which software the front-end ran.

Capture: one pcap on the front-end's link, at the front-end (the seed's vantage point).
"""

from __future__ import annotations

import math
import random

# Delay spikes on a mobile ACK path, from Larson et al. 2015 (module comment,
# ``viewer_spike_every_s``; derivation in trends.py, run ``ack_spikes``): lengths exponential with
# mean 500 ms, and 3 spikes an hour of 1 s or more, so 3 / e^-2 = 22.2 an hour, one every 162.4 s.
ACK_SPIKE_MS = 500.0
ACK_SPIKE_EVERY_S = round(3600 / (3 / math.exp(-1000 / ACK_SPIKE_MS)), 1)

# The random-loss chain's Bad→Good probability per packet (Bad periods of 1/r = 2 packets on
# average) and a full-size packet in bits: with ``*_chain_in_time`` a Bad period lasts on average
# the time those 1/r packets take on the wire.
CHAIN_R = 0.5
FULL_PACKET_BITS = 1500 * 8


def scenario(
    publishers: int = 6,
    subscribers: int = 12,
    duration_s: float = 60.0,
    seed: int = 1,
    slow_reader_share: float = 0.2,
    tcp: dict | None = None,
    reorder_p: float = 0.01,
    loss_p: float = 0.004,
    fin_share: float = 0.7,
    pause_every_s: float = 15.0,
    per_type_connections: bool = False,
    viewer_queue: int | None = None,
    bdp_queue_share: float = 0.0,
    viewer_loss_p: float | None = None,
    viewer_pacing: str = "none",
    viewer_join: str = "gop_cache",
    separate_audio: bool = False,
    nodelay: bool = False,
    viewer_bad_ms: float | None = None,
    viewer_loss_independent: bool = False,
    viewer_chain_in_time: bool = False,
    publisher_chain_in_time: bool = False,
    viewer_cross_every_s: float | None = None,
    viewer_cross_bytes: int = 1_000_000,
    viewer_spike_every_s: float | None = None,
    viewer_spike_ms: float = 500.0,
) -> dict:
    """A scenario dict for `tcpvideo.simulate` (keys documented in docs/scenario.md)."""
    rng = random.Random(seed * 7919 + 16)
    style_rng = random.Random(seed * 104729 + 3)  # publisher end and encoder pauses
    buffer_rng = random.Random(seed * 15485863 + 7)  # which viewer paths have BDP-sized queues
    audio_rng = random.Random(seed * 32452843 + 11)  # each publisher's audio/video phase
    cross_rng = random.Random(seed * 49979687 + 13)  # cross traffic on the viewer links
    cross_flows = []
    nodes = [{"name": "fe", "kind": "host"}, {"name": "r", "kind": "router"}]
    links = [{"name": "fe_link", "a": "fe", "b": "r", "rate": "1Gbps", "delay": "1ms", "queue": 2000}]
    base_tcp = {"keepalive_idle": "5s", "keepalive_interval": "5s", "keepalive_probes": 9}
    if nodelay:
        base_tcp["nagle"] = False
    base_tcp.update(tcp or {})
    flows = []
    live_until = {}
    for i in range(publishers):
        name = f"pub{i}"
        nodes.append({"name": name, "kind": "host"})
        up_rate = rng.choice([1.5, 2, 3, 5, 8])
        delay = rng.uniform(15, 60)
        # Mobile uplink: bursty loss (Gilbert–Elliott, mean burst 2 packets) and reordering.
        p_bad = loss_p * rng.uniform(0.5, 2.0) / 2
        links.append({
            "name": f"{name}_link", "a": name, "b": "r", "rate": f"{up_rate * 4}Mbps", "delay": f"{delay:.1f}ms",
            "ab": {"rate": f"{up_rate}Mbps", "queue": rng.choice([30, 60, 100]),
                   "loss": _path_loss(p_bad, chain_in_time_mbps=up_rate if publisher_chain_in_time else None),
                   "reorder": {"p": reorder_p * rng.uniform(0.5, 2.0), "delay": f"{rng.uniform(5, 30):.1f}ms"}},
        })
        start = rng.uniform(0, duration_s * 0.25)
        length = min(rng.lognormvariate(3.2, 0.6), duration_s - start)  # median ~25 s of streaming
        live_until[i] = (start, start + length)
        crowd = {"channel": i, "stream_for": f"{length:.3f}s",
                 "end": "fin" if style_rng.random() < fin_share else "silence"}
        pauses, t = [], 0.0
        while pause_every_s > 0:
            t += style_rng.expovariate(1.0 / pause_every_s)
            d = style_rng.uniform(0.5, 3.0)
            if t + d >= length:
                break
            pauses.append({"at": f"{t:.3f}s", "duration": f"{d:.3f}s"})
            t += d
        if pauses:
            crowd["pauses"] = pauses
        offset_ms = audio_rng.uniform(0.0, 40.0)
        if separate_audio:
            crowd["audio_offset"] = f"{offset_ms:.3f}ms"
        flow = {"name": name, "client": name, "server": "fe", "app": "publish", "start": f"{start:.3f}s",
                "crowd": crowd, "tcp": dict(base_tcp)}
        flows.extend(_per_type(flow) if per_type_connections else [flow])
    for j in range(subscribers):
        name = f"sub{j}"
        nodes.append({"name": name, "kind": "host"})
        ch = min(int(rng.paretovariate(1.2)) - 1, publishers - 1)
        a, b = live_until[ch]
        start = rng.uniform(a + 0.5, max(a + 1.0, b))
        watch = rng.lognormvariate(3.0, 0.7)  # median ~20 s
        down_rate = rng.choice([2, 4, 8, 20])
        delay = rng.uniform(10, 50)
        p_bad = (loss_p if viewer_loss_p is None else viewer_loss_p) * rng.uniform(0.5, 2.0) / 2
        links.append({
            "name": f"{name}_link", "a": name, "b": "r", "rate": f"{down_rate}Mbps", "delay": f"{delay:.1f}ms",
            "ba": {"rate": f"{down_rate}Mbps",
                   "queue": _queue(rng.choice([30, 60, 100]), viewer_queue, buffer_rng.random() < bdp_queue_share,
                                   bdp_packets(down_rate, delay)),
                   "loss": _path_loss(p_bad, viewer_bad_ms, viewer_loss_independent,
                                      down_rate if viewer_chain_in_time else None)},
        })
        if viewer_spike_every_s:
            links[-1]["ab"] = {"spikes": {"every": f"{viewer_spike_every_s}s", "length": f"{viewer_spike_ms}ms"}}
        flow = {"name": name, "client": name, "server": "fe", "app": "subscribe", "start": f"{start:.3f}s",
                "crowd": {"channel": ch, "stream_for": f"{watch:.3f}s"}, "tcp": dict(base_tcp)}
        if viewer_pacing != "none":
            flow["crowd"]["pacing"] = viewer_pacing
        if viewer_join != "gop_cache":
            flow["crowd"]["join"] = viewer_join
        if rng.random() < slow_reader_share:
            # A viewer whose player stops reading for a while: its window closes (zero rwnd).
            at = rng.uniform(2, 8)
            flow["reader"] = {"pauses": [{"at": f"{at:.2f}s", "duration": f"{rng.uniform(1, 6):.2f}s"}]}
            flow["tcp"]["rcv_buf"] = "64KB"
        flows.extend(_per_type(flow) if per_type_connections else [flow])
        if viewer_cross_every_s:
            reqs, t = [], 0.0
            while True:
                t += cross_rng.expovariate(1.0 / viewer_cross_every_s)
                if t >= watch:
                    break
                reqs.append({"at": f"{t:.3f}s", "bytes": viewer_cross_bytes})
            if reqs:
                cross_flows.append({"name": f"web{j}", "client": name, "server": "web", "app": "reqresp",
                                    "start": f"{start:.3f}s", "requests": reqs})
    if cross_flows:
        nodes.append({"name": "web", "kind": "host"})
        links.append({"name": "web_link", "a": "web", "b": "r", "rate": "1Gbps", "delay": "5ms", "queue": 2000})
        flows.extend(cross_flows)  # after the crowdlive flows: their indices (truth) stay
    return {
        "name": "crowdlive",
        "duration": f"{duration_s}s",
        "seed": seed,
        "node": nodes,
        "link": links,
        "flow": flows,
        "record": {"pcap": [{"link": "fe_link", "at": "fe", "file": "fe.pcap"}], "snaplen": 65535},
    }


def _path_loss(p_bad: float, bad_ms: float | None = None, independent: bool = False,
               chain_in_time_mbps: float | None = None) -> dict:
    """The per-packet chain (Bad→Good `CHAIN_R` a packet), or with `bad_ms` the chain in time with
    the same share of time in Bad, p/(p + r), or with `independent` each packet lost alone with that
    same stationary probability, or with `chain_in_time_mbps` the chain in time at its own scale:
    each Bad period as long on average as the chain's 1/r packets take to serialize at full size at
    the path's access rate. An explicit `bad_ms` wins over the chain's own scale."""
    stationary = p_bad / (p_bad + CHAIN_R)
    if independent:
        return {"model": "bernoulli", "p": stationary}
    if bad_ms is not None:
        mean_bad = f"{bad_ms}ms"
    elif chain_in_time_mbps is not None:
        mean_bad = f"{FULL_PACKET_BITS / CHAIN_R / (chain_in_time_mbps * 1e3):.3f}ms"
    else:
        return {"model": "gilbert_elliott", "p": p_bad, "r": CHAIN_R, "loss_good": 0.0, "loss_bad": 1.0}
    return {"model": "gilbert_elliott_time", "p": stationary, "mean_bad": mean_bad, "loss_good": 0.0, "loss_bad": 1.0}


def bdp_packets(rate_mbps: float, one_way_ms: float) -> int:
    """A viewer path's bandwidth-delay product in 1500-byte packets: the access rate times the
    path's base RTT (two access delays plus the front-end link's 1 ms each way), at least 4.

    The classic router buffer rule (Villamizar & Song, "High performance TCP in ANSNET", CCR
    1994: buffer = RTT × C, so that one Reno flow keeps the link busy after halving its window);
    the floor keeps a path's queue above the 2–3 packets of Linux's initial ACK-clocked bursts."""
    rtt_s = 2 * (one_way_ms + 1.0) / 1000
    return max(4, round(rate_mbps * 1e6 * rtt_s / (1500 * 8)))


def _queue(drawn: int, override: int | None, bdp_sized: bool = False, bdp: int = 0) -> int:
    """The drawn queue, the BDP-sized one, or the experiment's (the draws still happen: the
    population stays put)."""
    if override is not None:
        return override
    return bdp if bdp_sized else drawn


def _per_type(flow: dict) -> list[dict]:
    """One connection per frame type (seed 000 §4): the same flow three times, each carrying one
    type (``crowd.frames``) and named ``<flow>_<type>``."""
    out = []
    for kind in ("I", "P", "V"):
        f = {**flow, "name": f"{flow['name']}_{kind}", "crowd": {**flow["crowd"], "frames": kind},
             "tcp": dict(flow["tcp"])}
        out.append(f)
    return out
