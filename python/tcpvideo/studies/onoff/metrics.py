"""Seed 004's metrics (§IV, §V) from one simulated run, as the sweep's reducer: per-client QoE from
the simulator's live player (``video_clients``: startup, stalls, liveness, mean bitrate), each
stall's TCP cause (``video_stalls``), the segments' qualities (``video_segments``), drops and
utilisation of the bottleneck, retransmissions per segment period, the quality of the stream's
first minute and of the rest, the media rate all clients pulled through the bottleneck, and the
bottleneck queue when it was sampled.

Definitions are the player's (crates/model/src/video/player.rs): *startup time* is the time to
receive the first segment and start playing; *liveness* (§IV) is the availability of the last
segment played minus the time it starts playing ("a liveness of −4 s means that a client will
play the last segment 4 s after the segment has been made available on the server").
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

BOTTLENECK = ("bottleneck", "r1", "r2")  # the data direction of the dumbbell's bottleneck


def bottleneck_row(links: pa.Table) -> dict:
    for row in links.to_pylist():
        if (row["link"], row["from"], row["to"]) == BOTTLENECK:
            return row
    raise ValueError("links: no bottleneck r1→r2 row (is this a [dumbbell] scenario?)")


def queue_sample(queues: pa.Table) -> pa.Table:
    """The bottleneck queue (r1→r2) over time, when the run sampled it."""
    if queues.num_rows == 0:
        return pa.table({"t_s": pa.array([], pa.float64()), "packets": pa.array([], pa.int64())})
    q = queues.to_pydict()
    keep = [i for i in range(queues.num_rows)
            if (q["link"][i], q["from"][i], q["to"][i]) == BOTTLENECK]
    return pa.table({"t_s": pa.array([q["t_s"][i] for i in keep], pa.float64()),
                     "packets": pa.array([q["packets"][i] for i in keep], pa.int64())})


def _mean(xs) -> float:
    xs = [x for x in xs if x is not None and not math.isnan(x)]
    return float(np.mean(xs)) if xs else float("nan")


# The default scale's 2-s stream is one minute long: the quality of the first minute of the media vs
# the rest tells whether a quality difference is the start-up's (what a 1-minute stream measures) or
# the steady state's (what the paper's 20 minutes measure)
FIRST_MINUTE_S = 60.0
HIGH_QUALITY = 3  # Table I index of 1000 kbit/s: qualities 3–5 are the ladder's upper half
WARMUP_SEGMENTS = 5  # periods before "steady state": vegas's start-up losses end within ~4 (see onoff.md)


def retransmission_timeline(events: pa.Table, segment_s: float, periods: int) -> pa.Table:
    """Retransmissions (of every flow) per segment period: where in the stream losses happen.

    Retransmissions stand in for drops here: the simulator counts drops per link, not per time,
    and on this path (no random loss) nearly every retransmission repairs a queue drop.
    """
    counts = np.zeros(periods, dtype=np.int64)
    if events.num_rows:
        t = pc.filter(events["t_s"], pc.equal(events["kind"], "retransmit")).to_numpy(zero_copy_only=False)
        idx = np.minimum((t // segment_s).astype(np.int64), periods - 1)
        counts += np.bincount(idx, minlength=periods)[:periods]
    return pa.table({"period": pa.array(range(periods), pa.int64()), "start_s": [i * segment_s for i in range(periods)],
                     "retransmissions": pa.array(counts, pa.int64())})


def _col(t: pa.Table, name: str) -> list:
    return t[name].to_pylist() if t.num_rows else []


def reduce_run(result, segment_s: float) -> tuple[dict, dict]:
    """Sweep reducer: what one onoff run keeps (summary, tables) — picklable via :func:`reducer`."""
    end_s = float(result.summary["duration_s"])
    qoe = result.video_clients
    b = bottleneck_row(result.links)
    live = [x for x in _col(qoe, "liveness_s") if x is not None]
    segs = result.video_segments
    qualities = [q for q, done in zip(_col(segs, "quality"), _col(segs, "done_s")) if done is not None]
    first_min, after_min, media_bits, t_first, t_last = [], [], 0, math.inf, -math.inf
    for k, q, nbytes, req, done in zip(_col(segs, "segment"), _col(segs, "quality"), _col(segs, "bytes"),
                                       _col(segs, "requested_s"), _col(segs, "done_s")):
        if done is None:
            continue
        (first_min if k * segment_s < FIRST_MINUTE_S else after_min).append(q)
        media_bits += 8 * nbytes
        t_first, t_last = min(t_first, req), max(t_last, done)
    # where the startup time goes: waiting for the first request (segment availability) vs downloading
    joined = dict(zip(_col(qoe, "flow"), _col(qoe, "joined_s")))
    first: dict[int, float] = {}
    delays = []
    for f, seg, req, avail in zip(_col(segs, "flow"), _col(segs, "segment"), _col(segs, "requested_s"),
                                  _col(segs, "available_s")):
        if req is None:
            continue
        if f not in first:
            first[f] = req
        elif avail is not None:
            delays.append(req - avail)  # how long after a segment appears the client asks for it
    waits = [first[f] - joined[f] for f in first if joined.get(f) is not None]
    causes: dict[str, int] = {}
    for cause in _col(result.video_stalls, "cause"):
        causes[cause] = causes.get(cause, 0) + 1
    summary = {
        "clients": qoe.num_rows,
        "drops": int(b["queue_drops"] + b["loss_drops"]),
        "utilization": float(b["utilization"]),
        "mean_queue_packets": float(b["mean_queue_packets"]),
        "retransmissions": int(result.summary["retransmissions"]),
        "rto_count": int(result.summary["rto_count"]),
        "liveness_mean_s": _mean(live),
        "liveness_min_s": float(min(live)) if live else float("nan"),
        "liveness_max_s": float(max(live)) if live else float("nan"),
        "startup_mean_s": _mean(_col(qoe, "startup_s")),
        "stall_mean_s": _mean(_col(qoe, "stall_total_s")),
        "stall_count_mean": _mean(_col(qoe, "stall_count")),
        "startup_wait_mean_s": _mean(waits),
        "request_delay_mean_s": _mean(delays),
        "bitrate_mean_kbps": _mean(_col(qoe, "mean_bitrate_kbps")),
        "quality_mean": _mean(qualities),
        # §V-B's measure is "the relative number of high quality segments": read as the upper half of
        # Table I's six qualities (3–5: 1000 kbit/s and up)
        "quality_high_share": _mean([q >= HIGH_QUALITY for q in qualities]),
        "quality_first_min_mean": _mean(first_min),
        "quality_after_min_mean": _mean(after_min),
        # segment bodies of every client over the first request → last completion: the video rate the
        # bottleneck carried (its 100 Mbit/s is ~96.5 Mbit/s of TCP payload at 1448 bytes a packet)
        "media_mbps": media_bits / (t_last - t_first) / 1e6 if t_last > t_first else float("nan"),
        "segments_done": len(qualities),
        "segments_unfinished": int(segs.num_rows - len(qualities)),
        "clients_without_liveness": int(qoe.num_rows - len(live)),
        "events_processed": int(result.summary["events_processed"]),
        "packets_sent": int(result.summary["packets_sent"]),
        "duration_s": end_s,
        "stall_causes": dict(sorted(causes.items())),
    }
    periods = max(1, int(math.ceil(end_s / segment_s)))
    timeline = retransmission_timeline(result.events, segment_s, periods)
    stream_periods = int(max(_col(segs, "segment"), default=0)) + 1
    steady = timeline.to_pydict()["retransmissions"][WARMUP_SEGMENTS:max(stream_periods, WARMUP_SEGMENTS)]
    summary["steady_retx_per_period"] = float(np.mean(steady)) if steady else float("nan")
    tables = {"clients": qoe, "timeline": timeline, "stalls": result.video_stalls}
    if result.queues.num_rows:
        tables["queue"] = queue_sample(result.queues)
    return summary, tables


def reducer(segment_s: float):
    """A picklable reducer for a run with ``segment_s``-second segments."""
    return partial(reduce_run, segment_s=segment_s)
