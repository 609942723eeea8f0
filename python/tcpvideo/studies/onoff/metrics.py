"""Seed 004's user metrics (§IV) from one simulated run: startup time and liveness per client,
drops and utilisation of the bottleneck, and the bottleneck queue when it was sampled.

Definitions (§IV): *startup time* is the time to receive the first segment; *liveness* is how
far the client lags behind the live stream at the end ("a liveness of −4 s means that a client
will play the last segment 4 s after the segment has been made available on the server").

Liveness from the requests table. For a client that holds one segment and never skips (§IV),
with segment k available at A_k = k·d and completely received at C_k, playout of k starts at
P_k = max(C_k, P_{k−1} + d), P_0 = C_0. Unrolled, P_K = max_j (C_j + (K−j)·d), and since
A_K − (K−j)·d = A_j, the liveness A_K − P_K = min_j (A_j − C_j): minus the worst lag of any
segment's arrival behind its availability. It includes the arrival time and the startup time
(j = 0) and every stall, the three parts §IV names. Total stall time is therefore
−liveness − C_0 (the lag beyond what the first segment already had). This is a metric over the
simulator's table, not a player: it is replaced by the video apps' QoE table (issue 10) when they
land. A segment still unfinished when the run ends counts as arriving at the end (a bound; the
run's ``unfinished_segments`` says how often).
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

BOTTLENECK = ("bottleneck", "r1", "r2")  # the data direction of the dumbbell's bottleneck


def client_metrics(requests: pa.Table, flows: pa.Table, segment_s: float, end_s: float) -> pa.Table:
    """One row per video client: arrival, base RTT, startup, liveness, stall total, lag stats."""
    fl = flows.to_pydict()
    video = {f: i for i, f in enumerate(fl["flow"]) if fl["name"][i].startswith("v")}
    rq = requests.to_pydict()
    per: dict[int, list[tuple[int, float, bool]]] = {f: [] for f in video}
    for f, k, done in zip(rq["flow"], rq["index"], rq["completed_s"]):
        if f in per:
            per[f].append((k, end_s if done is None else done, done is None))
    rows = {c: [] for c in ("client", "arrival_s", "base_rtt_ms", "startup_s", "liveness_s", "stall_s",
                            "late_segments", "unfinished_segments", "retransmissions")}
    for f, i in sorted(video.items(), key=lambda kv: kv[1]):
        segs = sorted(per[f])
        arrival = fl["start_s"][i]
        if not segs:
            continue
        lags = np.array([c - k * segment_s for k, c, _ in segs])
        first_done = segs[0][1]
        liveness = -float(lags.max())
        rows["client"].append(fl["name"][i])
        rows["arrival_s"].append(arrival)
        rows["base_rtt_ms"].append(fl["base_rtt_ms"][i])
        rows["startup_s"].append(first_done - arrival)
        rows["liveness_s"].append(liveness)
        rows["stall_s"].append(max(0.0, -liveness - first_done))
        # segment k stalls playout iff it arrives after the previous one's playout ends, i.e. iff its
        # lag exceeds every earlier lag (the playout clock runs at the worst lag so far)
        running = np.maximum.accumulate(lags)
        rows["late_segments"].append(int(np.sum(lags[1:] > running[:-1] + 1e-9)))
        rows["unfinished_segments"].append(sum(1 for *_, u in segs if u))
        rows["retransmissions"].append(fl["retrans_fast"][i] + fl["retrans_timeout"][i] + fl["retrans_tlp"][i])
    return pa.table(rows)


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


def reduce_run(result, segment_s: float) -> tuple[dict, dict]:
    """Sweep reducer: what one onoff run keeps (summary, tables) — picklable via :func:`reducer`."""
    end_s = float(result.summary["duration_s"])
    clients = client_metrics(result.requests, result.flows, segment_s, end_s)
    b = bottleneck_row(result.links)
    c = clients.to_pydict()
    summary = {
        "clients": clients.num_rows,
        "drops": int(b["queue_drops"] + b["loss_drops"]),
        "utilization": float(b["utilization"]),
        "mean_queue_packets": float(b["mean_queue_packets"]),
        "retransmissions": int(result.summary["retransmissions"]),
        "rto_count": int(result.summary["rto_count"]),
        "liveness_mean_s": _mean(c["liveness_s"]),
        "liveness_min_s": float(min(c["liveness_s"])) if c["liveness_s"] else float("nan"),
        "liveness_max_s": float(max(c["liveness_s"])) if c["liveness_s"] else float("nan"),
        "startup_mean_s": _mean(c["startup_s"]),
        "stall_mean_s": _mean(c["stall_s"]),
        "unfinished_segments": int(sum(c["unfinished_segments"])),
        "events_processed": int(result.summary["events_processed"]),
        "packets_sent": int(result.summary["packets_sent"]),
        "duration_s": end_s,
    }
    periods = max(1, int(math.ceil(end_s / segment_s)))
    timeline = retransmission_timeline(result.events, segment_s, periods)
    last = int(result.requests["index"].to_numpy().max()) + 1 if result.requests.num_rows else 0
    steady = timeline.to_pydict()["retransmissions"][WARMUP_SEGMENTS:max(last, WARMUP_SEGMENTS)]
    summary["steady_retx_per_period"] = float(np.mean(steady)) if steady else float("nan")
    tables = {"clients": clients, "timeline": timeline}
    if result.queues.num_rows:
        tables["queue"] = queue_sample(result.queues)
    return summary, tables


def reducer(segment_s: float):
    """A picklable reducer for a run with ``segment_s``-second segments."""
    return partial(reduce_run, segment_s=segment_s)
