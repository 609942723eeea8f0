"""Seed 004's live scenario (Kupka et al., "Performance of On-Off Traffic Stemming From Live
Adaptive Segmented HTTP Video Streaming", §III–§VI) as a tcpvideo scenario dict.

Topology: ``[dumbbell]`` (server → r1 ==100 Mbit/s, 1375-packet drop-tail== r2 → clients, base
RTT ~ Normal(55 ms, 5 ms) per client, drawn by the simulator from the seed).

Clients: the simulator's live player (``app = "live"``, crates/model/src/video/player.rs) over
real HTTP/1.1 on one persistent connection, joining within the first segment duration
(``start_jitter = d``: uniform arrivals, i.e. a Poisson process conditioned on N arrivals in
[0, d), §III). §IV: one quality (500 kbit/s, quality 1 of Table I), a one-segment buffer, requests
as soon as a segment is available (``request_timing = "synchronized"``) or at the client's arrival
phase every period (``"distributed"``, §IV-C; with a buffer of more than one segment ``"clocked"``:
one request per period on the client's own clock whatever its buffer, as §IV-C describes it — the
not-before reading never acts for a client behind the live edge, see request_timing.rs); §V: seed 004's throughput rule
(``abr = "throughput"``: EWMA α = 0.1, HEAD for sizes, first segment at the lowest quality) with
buffers of 1, 5 or 15 segments. The cwnd limit (§IV-D) is the server-side per-flow clamp
(``cwnd_clamp = 20`` packets).

Deviations: constant-size segments (``sizes = "cbr"``) where the paper streamed a VBR-encoded
soccer match; TCP is tcpvideo's Linux-like TCP, not ns-2's. Explaining experiments switch each
back towards the paper: ``vbr`` (the model's seeded VBR sizes, ``crates/model/src/video/vbr.rs``,
not fitted to the soccer stream), ``poisson`` (``dumbbell.arrivals = "poisson"``: exponential
gaps, as an ns-2 Poisson arrival process draws them), ``sack = False`` (NewReno recovery without
SACK, RACK-TLP or F-RTO, closer to ns-2's one-way TCP).
"""

from __future__ import annotations

from dataclasses import dataclass

BOTTLENECK_RATE = "100Mbps"  # §III, Fig 1
QUEUE_PACKETS = 1375  # §III: "rule of thumb sizing of bandwidth delay product"
RTT_MEAN = "55ms"  # §III: μ = 55 ms
RTT_STD = "5ms"  # §III: σ = 5 ms
BITRATE_BPS = 500_000  # §IV: quality 1 of Table I, the single quality of §IV
LADDER_KBPS = [250, 500, 750, 1000, 1500, 3000]  # Table I
FIXED_QUALITY = 1  # §IV: 500 kbit/s
CWND_LIMIT_PACKETS = 20  # §IV-D: "3 times bigger than the average bitrate"


@dataclass(frozen=True)
class OnOffConfig:
    """One configuration of §IV/§VI: the four mitigations are A/B/C/D of Fig 16."""

    clients: int
    cc: str = "cubic"  # A: "vegas"
    segment_s: float = 2.0  # B: 10.0
    distributed: bool = False  # C
    cwnd_limit: bool = False  # D
    segments: int = 30  # length of the stream in segments
    queue_sample_s: float = 0.0  # > 0: record the bottleneck queue every 10 ms for this long
    tag: str = ""  # marks an explaining experiment's variant (e.g. "long": a longer stream)
    sack: bool = True  # False: NewReno recovery without SACK, RACK-TLP or F-RTO (an explaining experiment)
    abr: str = "fixed"  # §V: "throughput" (seed 004's rule)
    buffer_segments: int = 1  # §IV: 1; §V: 1, 5, 15
    # explaining experiments (False/True defaults are the study's setup):
    slow_start_after_idle: bool = True  # False: the window is not truncated after an off period (§VII)
    join_after_first: bool = False  # True: clients join in [d, 2d), when segment 0 is already there (§IV's arrival)
    per_segment: bool = False  # True: a new TCP connection per segment (fresh slow start, no CC state kept)
    vbr: bool = False  # True: the model's seeded VBR segment sizes (an I-frame per segment) instead of CBR
    poisson: bool = False  # True: exponential inter-arrival times (mean d/N) instead of N uniform arrivals in [0, d)

    @property
    def segment_bytes(self) -> int:
        return int(BITRATE_BPS * self.segment_s / 8)

    @property
    def stream_s(self) -> float:
        return self.segments * self.segment_s

    @property
    def tail_s(self) -> float:
        """Simulated time after the last segment appears, for late clients to finish."""
        return max(20.0, 2 * self.segment_s)

    def label(self) -> str:
        parts = [self.cc, f"{self.segment_s:g}s"]
        if self.distributed:
            parts.append("distributed")
        if self.cwnd_limit:
            parts.append(f"cwnd{CWND_LIMIT_PACKETS}")
        if self.abr != "fixed":
            parts.append(f"{self.abr}-buf{self.buffer_segments}")
        if not self.sack:
            parts.append("nosack")
        if not self.slow_start_after_idle:
            parts.append("nossai")
        if self.join_after_first:
            parts.append("joinlate")
        if self.per_segment:
            parts.append("perseg")
        if self.vbr:
            parts.append("vbr")
        if self.poisson:
            parts.append("poisson")
        if self.tag:
            parts.append(self.tag)
        return "+".join(parts)

    def combination(self) -> str:
        """Fig 16's letters: A = vegas, B = 10 s segments, C = distributed, D = cwnd limit."""
        s = ("A" if self.cc == "vegas" else "") + ("B" if self.segment_s == 10.0 else "") + \
            ("C" if self.distributed else "") + ("D" if self.cwnd_limit else "")
        return s or "none"


def scenario(cfg: OnOffConfig, seed: int) -> dict:
    """The scenario dict of one configuration and seed."""
    d = cfg.segment_s
    duration = cfg.stream_s + cfg.tail_s
    if cfg.queue_sample_s > 0:
        duration = min(duration, cfg.queue_sample_s)
    timing = "synchronized"
    if cfg.distributed:
        timing = "clocked" if cfg.buffer_segments > 1 else "distributed"
    player = {"abr": cfg.abr, "buffer_segments": cfg.buffer_segments, "request_timing": timing}
    if cfg.per_segment:
        player["connection"] = "per_segment"
    if cfg.abr == "fixed":
        player["abr_params"] = {"quality": FIXED_QUALITY}
    join_at = 0.0
    if cfg.buffer_segments > 1:  # §V-C: join behind the live edge, or the buffer can never fill
        player["live_start_behind"] = cfg.buffer_segments - 1
        # ... which needs b older segments to exist: the stream has been running for b periods when
        # the clients join (segment k appears at (k+1)·d, so at b·d segments 0..b−1 are there)
        join_at = cfg.buffer_segments * d
    tcp = {"cc": cfg.cc} if cfg.sack else {"cc": cfg.cc, "sack": False, "rack_tlp": False, "frto": False}
    if not cfg.slow_start_after_idle:
        tcp["slow_start_after_idle"] = False
    flow = {"app": "live", "start_jitter": d, "player": player, "tcp": tcp}
    if cfg.join_after_first:  # segment 0 appears at d: joining in [d, 2d) finds it there
        join_at = max(join_at, d)
    if join_at > 0:
        flow["start"] = join_at
        duration += join_at
    if cfg.cwnd_limit:
        flow["cwnd_clamp"] = CWND_LIMIT_PACKETS
    sc = {
        "name": f"onoff-{cfg.label()}-{cfg.clients}",
        "duration": duration,
        "seed": seed,
        "video": {"segment_duration": d, "segments": cfg.segments, "ladder_kbps": LADDER_KBPS,
                  "sizes": "vbr" if cfg.vbr else "cbr"},
        "dumbbell": {
            "clients": cfg.clients, "bottleneck_rate": BOTTLENECK_RATE, "queue": QUEUE_PACKETS,
            "rtt": RTT_MEAN, "rtt_std": RTT_STD, "flow": flow,
        },
        "record": {"events": True},  # retransmission times: where in the stream losses happen
    }
    if cfg.poisson:  # only set when asked: the main runs' scenarios (and run keys) stay as they were
        sc["dumbbell"]["arrivals"] = "poisson"
    if cfg.queue_sample_s > 0:
        sc["record"]["sample_interval"] = "10ms"
    return sc
