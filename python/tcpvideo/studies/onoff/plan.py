"""Which runs the onoff study makes, at the default (CI) scale and at the paper's (``--full``).

The paper (§IV) runs each point 10 times with different arrival draws over a 20-minute stream
(600 two-second segments) and plots mean and min–max; Fig 16 (§VI) uses 140 clients. The
default scale keeps every figure's configurations but fewer client counts, 2 seeds and a
1-minute stream (2-minute for 10-second segments, so it still has 12 segments), to finish in
under 3 minutes on 2 cores.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from tcpvideo.studies.onoff.scenario import OnOffConfig

CCS = ("cubic", "bic", "reno", "vegas", "bbr")  # Fig 4: bic, cubic, reno, vegas; bbr as the modern peer


@dataclass(frozen=True)
class Scale:
    name: str
    clients: tuple[int, ...]
    seeds: tuple[int, ...]
    segments_2s: int  # stream length in 2-second segments
    segments_10s: int  # stream length in 10-second segments
    combo_clients: int = 140  # Fig 16
    queue_clients: int = 150  # the queue samples (Figs 3c, 4d, 5c, 7c)
    queue_sample_s: float = 20.0
    long_segments: int = 0  # > 0: also run cubic and vegas at the fewest/most clients over this many 2-s segments
    groups: tuple[str, ...] = ()  # run only these groups of configs() (a reduced run); empty: all




DEFAULT = Scale("default", clients=(50, 100, 150, 175), seeds=(1, 2), segments_2s=30, segments_10s=12,
                long_segments=300)
FULL = Scale("full", clients=(50, 75, 100, 125, 150, 175), seeds=tuple(range(1, 11)), segments_2s=600,
             segments_10s=120, queue_sample_s=60.0)


def _sized(cfg: OnOffConfig, scale: Scale) -> OnOffConfig:
    return replace(cfg, segments=scale.segments_10s if cfg.segment_s == 10.0 else scale.segments_2s)


ABR = "throughput"  # §V: seed 004's rule (EWMA α = 0.1 of size/download time)


def combinations(clients: int) -> list[OnOffConfig]:
    """Fig 16's 16 settings (§VI, with adaptation): every subset of A = vegas, B = 10 s,
    C = distributed, D = cwnd limit."""
    out = []
    for a, b, c, d in itertools.product((False, True), repeat=4):
        out.append(OnOffConfig(clients, cc="vegas" if a else "cubic", segment_s=10.0 if b else 2.0,
                               distributed=c, cwnd_limit=d, abr=ABR))
    return out


def configs(scale: Scale) -> dict[str, list[OnOffConfig]]:
    """Run group → configurations (a configuration may serve several groups)."""
    n = scale.clients
    groups = {
        "cc": [OnOffConfig(c, cc=cc) for cc in CCS for c in n],  # Figs 3, 4
        "segment10": [OnOffConfig(c, segment_s=10.0) for c in n],  # Fig 5
        "distributed": [OnOffConfig(c, distributed=True) for c in n],  # Fig 7
        "cwnd_limit": [OnOffConfig(c, cwnd_limit=True) for c in n],  # Fig 8
        # §V, with quality adaptation
        "adapt_cc": [OnOffConfig(c, cc=cc, abr=ABR) for cc in ("cubic", "vegas") for c in n],  # Fig 10
        "adapt_segment10": [OnOffConfig(c, segment_s=10.0, abr=ABR) for c in n],  # Fig 11
        "adapt_buffers": [OnOffConfig(c, distributed=dist, abr=ABR, buffer_segments=b)
                          for b in (1, 5, 15) for dist in (False, True) for c in n],  # Figs 12–14
        "adapt_cwnd_limit": [OnOffConfig(c, cwnd_limit=True, abr=ABR) for c in n],  # Fig 15
        "combinations": combinations(scale.combo_clients),  # Fig 16
    }
    out = {g: [_sized(c, scale) for c in cs] for g, cs in groups.items()}
    q = scale.queue_clients
    samples = [OnOffConfig(q), OnOffConfig(q, cc="vegas"), OnOffConfig(q, segment_s=10.0),
               OnOffConfig(q, distributed=True), OnOffConfig(q, cwnd_limit=True)]
    if scale.long_segments:  # does a gap depend on the stream's length? (first seed only)
        out["long"] = [OnOffConfig(c, cc=cc, segments=scale.long_segments, tag="long")
                       for cc in ("cubic", "vegas") for c in (n[0], n[-1])]
    # does loss recovery explain a liveness gap? NewReno without SACK/RACK/F-RTO at the fewest/most clients
    out["recovery"] = [OnOffConfig(c, sack=False, segments=scale.segments_2s) for c in (n[0], n[-1])]
    # does the restart after idle explain a trend? the paper's "what if the window is not truncated" (§VII):
    # cubic (2-s and 10-s segments) at every count, the other Fig-4 algorithms at the most clients
    no_restart = ([OnOffConfig(c, slow_start_after_idle=False) for c in n] +
                  [OnOffConfig(c, segment_s=10.0, slow_start_after_idle=False) for c in n] +
                  [OnOffConfig(n[-1], cc=cc, slow_start_after_idle=False) for cc in ("bic", "reno", "vegas")])
    out["ssai_off"] = [_sized(c, scale) for c in no_restart]
    # does the arrival model explain startup/liveness? clients join when segment 0 is already there (§IV)
    out["paper_arrival"] = [_sized(OnOffConfig(c, join_after_first=True), scale) for c in n]
    # do persistent connections explain a trend? a new connection per segment starts every on-period
    # in slow start with no congestion-control state (ssthresh, W_max, vegas's base RTT) carried over,
    # where the restart after idle keeps them: the Fig-4 algorithms at the fewest/most clients (4a),
    # 10-s segments at every count (5d), the cwnd limit with adaptation (15) and Fig 16's none/A/C/AC (16a)
    per_seg = ([OnOffConfig(c, cc=cc, per_segment=True) for cc in ("bic", "cubic", "reno", "vegas") for c in (n[0], n[-1])] +
               [OnOffConfig(c, segment_s=10.0, per_segment=True) for c in n] +
               [OnOffConfig(c, cwnd_limit=lim, abr=ABR, per_segment=True) for lim in (False, True) for c in (n[0], n[-1])] +
               [replace(k, per_segment=True) for k in combinations(scale.combo_clients)
                if not k.cwnd_limit and k.segment_s == 2.0])
    out["per_segment"] = [_sized(c, scale) for c in per_seg]
    out["queue_samples"] = [replace(c, segments=max(1, int(scale.queue_sample_s // c.segment_s)),
                                    queue_sample_s=scale.queue_sample_s) for c in samples]
    if scale.groups:
        unknown = sorted(set(scale.groups) - set(out))
        if unknown:
            raise ValueError(f"groups: unknown {', '.join(unknown)} (known: {', '.join(out)})")
        out = {g: cs for g, cs in out.items() if g in scale.groups}
    return out
