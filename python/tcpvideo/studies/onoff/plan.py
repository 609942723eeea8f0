"""Which runs the onoff study makes, at the default (CI) scale and at the paper's (``--full``).

The paper (§IV) runs each point 10 times with different arrival draws over a 20-minute stream
(600 two-second segments) and plots mean and min–max; Fig 16 (§VI) uses 140 clients. The
default scale keeps every figure's configurations but fewer client counts, 2 seeds and a
1-minute stream (2-minute for 10-second segments, so it still has 12 segments), to finish in
under 3 minutes on 2 cores.

Two kinds of run group: :data:`PAPER_GROUPS` reproduce the paper's figures (Figs 3–8, 10–16 and
the queue samples); :data:`EXPLAIN_GROUPS` are our experiments that test why a claim does not
reproduce (slow start after idle off, the paper's arrival, NewReno recovery — also with
adaptation, for Figs 10–11 — a connection per segment, VBR sizes, Poisson arrivals, a longer
stream). ``--full`` is the paper's groups at the
paper's scale; ``--full --explain`` adds ours at the same scale (the default scale always has
both: they are cheap there and the report's "why" column needs them).
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
    explain: bool = True  # also the explaining experiments (EXPLAIN_GROUPS); named groups always run


DEFAULT = Scale("default", clients=(50, 100, 150, 175), seeds=(1, 2), segments_2s=30, segments_10s=12,
                long_segments=300)
FULL = Scale("full", clients=(50, 75, 100, 125, 150, 175), seeds=tuple(range(1, 11)), segments_2s=600,
             segments_10s=120, queue_sample_s=60.0, explain=False)

# the paper's figures (§IV–§VI) ...
PAPER_GROUPS = ("cc", "segment10", "distributed", "cwnd_limit", "adapt_cc", "adapt_segment10", "adapt_buffers",
                "adapt_cwnd_limit", "combinations", "queue_samples")
# ... and our experiments that test why a claim does not reproduce
EXPLAIN_GROUPS = ("long", "recovery", "ssai_off", "paper_arrival", "per_segment", "newreno", "vbr", "poisson",
                  "newreno_adapt")
# groups run with fewer seeds than the scale's: samples (one run shows the queue) and the suspects
# of the unexplained rows, which need the trend, not the error bars
GROUP_SEEDS = {"queue_samples": 1, "long": 1, "newreno": 2, "vbr": 2, "poisson": 2, "newreno_adapt": 2}


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
    # suspects of the rows still unexplained (4a, 5d, 15, 16a), each switched towards the paper on
    # those rows' configurations: a new connection per segment (every on-period in slow start with no
    # congestion-control state — ssthresh, W_max, vegas's base RTT — carried over, where the restart
    # after idle keeps them), NewReno recovery without SACK/RACK-TLP/F-RTO (ns-2's one-way TCP),
    # VBR segment sizes (the paper's soccer stream was VBR) and Poisson arrivals (exponential gaps)
    rows = unexplained_rows(scale)
    for group, variant in (("per_segment", {"per_segment": True}), ("newreno", {"sack": False}),
                           ("vbr", {"vbr": True}), ("poisson", {"poisson": True})):
        out[group] = [_sized(replace(c, **variant), scale) for c in rows]
    # NewReno explains 16a on the pairs above (none/A, C/AC): all 16 settings, so 16a is judged on 8 pairs
    out["newreno"] += [_sized(replace(k, sack=False), scale) for k in combinations(scale.combo_clients)
                       if k.cwnd_limit or k.segment_s != 2.0]
    # do 10a and 11a (vegas and 10-s segments lower quality with adaptation, which a 20-minute stream
    # does not show) hold with ns-2-like loss repair? Fig 10's and Fig 11's runs with NewReno recovery
    out["newreno_adapt"] = [_sized(OnOffConfig(c, cc=cc, segment_s=d, abr=ABR, sack=False), scale)
                            for cc, d in (("cubic", 2.0), ("vegas", 2.0), ("cubic", 10.0)) for c in n]
    out["queue_samples"] = [replace(c, segments=max(1, int(scale.queue_sample_s // c.segment_s)),
                                    queue_sample_s=scale.queue_sample_s) for c in samples]
    if scale.groups:
        unknown = sorted(set(scale.groups) - set(out))
        if unknown:
            raise ValueError(f"groups: unknown {', '.join(unknown)} (known: {', '.join(out)})")
        out = {g: cs for g, cs in out.items() if g in scale.groups}
    elif not scale.explain:
        out = {g: cs for g, cs in out.items() if g not in EXPLAIN_GROUPS}
    return out


def unexplained_rows(scale: Scale) -> list[OnOffConfig]:
    """The configurations of the rows no experiment has explained yet: the Fig-4 algorithms at the
    fewest and most clients (4a), 10-s segments at every count (5d), the cwnd limit with
    adaptation at the fewest and most (15), and Fig 16's none/A/C/AC (16a)."""
    n = scale.clients
    return ([OnOffConfig(c, cc=cc) for cc in ("bic", "cubic", "reno", "vegas") for c in (n[0], n[-1])] +
            [OnOffConfig(c, segment_s=10.0) for c in n] +
            [OnOffConfig(c, cwnd_limit=lim, abr=ABR) for lim in (False, True) for c in (n[0], n[-1])] +
            [k for k in combinations(scale.combo_clients) if not k.cwnd_limit and k.segment_s == 2.0])
