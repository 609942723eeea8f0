"""Seed 004's live scenario (Kupka et al., "Performance of On-Off Traffic Stemming From Live
Adaptive Segmented HTTP Video Streaming", §III, §IV) as a tcpvideo scenario dict.

Topology: ``[dumbbell]`` (server → r1 ==100 Mbit/s, 1375-packet drop-tail== r2 → clients, base
RTT ~ Normal(55 ms, 5 ms) per client, drawn by the simulator from the seed).

Clients: arrivals are a Poisson process conditioned on N arrivals within the first segment
duration (§III: "all clients join the stream within the first segment duration"), i.e. N sorted
Uniform[0, d) times drawn here from the run's seed. Live segment k becomes available at k·d.
Each client downloads one segment at a time over one persistent HTTP/1.1 connection
(``app = "reqresp"``: request k leaves at max(its scheduled time, end of response k−1)), so it
holds at most one segment — §IV's one-segment buffer, the download-and-wait cycle:

- regular requests (§IV): segment 0 at arrival, segment k ≥ 1 at k·d, when it appears;
- distributed requests (§IV-C): segment k at arrival + k·d, so the request phases stay spread
  over the segment period as the arrivals were.

Segments are 500 kbit/s × d of payload (125 kB for 2 s, 625 kB for 10 s). The cwnd limit (§IV-D)
is the server-side per-flow clamp (``cwnd_clamp = 20`` packets).

Deviations (until the video apps of issue 10 land, then the study moves to ``app = "live"``):
constant-size segments, where the paper streamed a VBR-encoded soccer match; no HTTP HEAD, no
playlist fetch, no quality adaptation (so Figs 10–15 cannot run on this scenario); arrivals use
Uniform order statistics (the conditioned Poisson process) drawn in Python because the dumbbell's
``start_jitter`` cannot align later requests to segment availability. The dumbbell's own flows
are parked (they start at the end of the run and never send).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOTTLENECK_RATE = "100Mbps"  # §III, Fig 1
QUEUE_PACKETS = 1375  # §III: "rule of thumb sizing of bandwidth delay product"
RTT_MEAN = "55ms"  # §III: μ = 55 ms
RTT_STD = "5ms"  # §III: σ = 5 ms
BITRATE_BPS = 500_000  # §IV: quality 1 of Table I, the single quality of §IV
CWND_LIMIT_PACKETS = 20  # §IV-D: "3 times bigger than the average bitrate"
ARRIVAL_STREAM = 0x0A771_7A15  # separates the arrival draws from other uses of the seed


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
        if not self.sack:
            parts.append("nosack")
        if self.tag:
            parts.append(self.tag)
        return "+".join(parts)

    def combination(self) -> str:
        """Fig 16's letters: A = vegas, B = 10 s segments, C = distributed, D = cwnd limit."""
        s = ("A" if self.cc == "vegas" else "") + ("B" if self.segment_s == 10.0 else "") + \
            ("C" if self.distributed else "") + ("D" if self.cwnd_limit else "")
        return s or "none"


def arrivals(clients: int, segment_s: float, seed: int) -> np.ndarray:
    """N client arrival times (s): a Poisson process conditioned on N arrivals in [0, d)."""
    rng = np.random.Generator(np.random.PCG64([seed, ARRIVAL_STREAM]))
    return np.sort(rng.uniform(0.0, segment_s, size=clients))


def scenario(cfg: OnOffConfig, seed: int) -> dict:
    """The scenario dict of one configuration and seed."""
    d = cfg.segment_s
    duration = cfg.stream_s + cfg.tail_s
    if cfg.queue_sample_s > 0:
        duration = min(duration, cfg.queue_sample_s)
    flows = []
    for i, a in enumerate(arrivals(cfg.clients, d, seed)):
        a = round(float(a), 9)
        if cfg.distributed:
            times = [k * d for k in range(cfg.segments)]
        else:
            times = [0.0] + [round(k * d - a, 9) for k in range(1, cfg.segments)]
        flow = {
            "name": f"v{i}", "client": f"c{i}", "server": "server", "app": "reqresp", "start": a,
            "requests": [{"at": t, "bytes": cfg.segment_bytes} for t in times],
            "tcp": {"cc": cfg.cc} if cfg.sack else {"cc": cfg.cc, "sack": False, "rack_tlp": False, "frto": False},
        }
        if cfg.cwnd_limit:
            flow["cwnd_clamp"] = CWND_LIMIT_PACKETS
        flows.append(flow)
    sc = {
        "name": f"onoff-{cfg.label()}-{cfg.clients}",
        "duration": duration,
        "seed": seed,
        "dumbbell": {
            "clients": cfg.clients, "bottleneck_rate": BOTTLENECK_RATE, "queue": QUEUE_PACKETS,
            "rtt": RTT_MEAN, "rtt_std": RTT_STD,
            # parked: the dumbbell's own per-client flows start when the run ends
            "flow": {"app": "reqresp", "requests": [], "start": duration},
        },
        "flow": flows,
        "record": {"events": True},  # retransmission times: where in the stream losses happen
    }
    if cfg.queue_sample_s > 0:
        sc["record"]["sample_interval"] = "10ms"
    return sc
