"""The experiments behind docs/studies/ethle.md's explanations of where the simulated ETHLE study
differs from seed 002 (Ge et al., JSAC 2018). Each prints one table; 75-s sessions (40 s for the
window sweep), seed 1, through the Rust testbed (`tcpvideo_sim::ethle_testbed`).

    python bench/ethle_gaps.py cells    # the x cells that differ: hold-0..3 buffering per variant
    python bench/ethle_gaps.py window   # backhaul th_bh vs the receive buffer (rcv_buf_max_bytes)
    python bench/ethle_gaps.py e2e      # E2E buffering / initial delay: idle restart, backhaul loss
    python bench/ethle_gaps.py idle     # share of E2E segment downloads after an idle gap > RTO

Not a speed bench: a few minutes of CPU in all (most in `e2e`).
"""

from __future__ import annotations

import json
import sys

from tcpvideo import _core
from tcpvideo.studies.ethle import paper
from tcpvideo.studies.ethle.plan import LOCATIONS, STREAMS, stream_label


def run(**cfg) -> dict:
    base = {"seed": 1, "session_s": 75.0, "join_s": 30.0, "scheme": "hold", "hold": 0}
    return json.loads(_core.ethle_testbed_run(json.dumps({**base, **cfg})))


def stream_cfg(bitrate, segment_s, size_mb, rtt_ms) -> dict:
    return {"backhaul_rtt_ms": rtt_ms, "bitrate_mbps": float(bitrate), "segment_s": float(segment_s),
            "segment_bytes": int(round(size_mb * 1e6))}


def cells() -> None:
    chosen = [("India", (15, 2, 3.7)), ("Japan", (15, 4, 7.2)), ("Australia", (50, 4, 24.4)), ("Japan", (50, 10, 61.1))]
    variants = {"default": {}, "cut_through": {"edge_forwarding": "cut_through"},
                "rcv_buf 8 MiB": {"rcv_buf_max_bytes": 8 << 20}, "no RAN jitter": {"ran_extra_ms": 0.0}}
    rtt = dict(LOCATIONS)
    for loc, stream in chosen:
        actual = paper.table3(stream_label(stream[0], stream[1]), loc)["actual_x"]
        for name, v in variants.items():
            row = []
            for x in range(4):
                s = run(**stream_cfg(*stream, rtt[loc]), hold=x, **v)["summary"]
                row.append(f"hold{x} {s['buffering_s']:5.1f} s")
            print(f"{loc} {stream_label(stream[0], stream[1])} (paper x={actual}) {name:14s} th_bh {s['backhaul_throughput_mbps']:6.1f}  "
                  + "  ".join(row))


def window() -> None:
    buffers = [None, 8 << 20, 12 << 20, 64 << 20]
    print("cell | th_bh Mbit/s (vs paper) for rcv_buf_max_bytes = default, 8, 12, 64 MiB | paper Actual")
    for stream in STREAMS:
        for loc, rtt in LOCATIONS:
            p = paper.table3(stream_label(stream[0], stream[1]), loc)["actual_th_mbps"]
            vals = []
            for b in buffers:
                extra = {"rcv_buf_max_bytes": b} if b else {}
                vals.append(run(**stream_cfg(*stream, rtt), hold=3, session_s=40.0, **extra)["summary"]["backhaul_throughput_mbps"])
            print(f"{stream_label(stream[0], stream[1])} {loc:9s} | " + "  ".join(f"{v:6.1f} ({v / p - 1:+4.0%})" for v in vals) + f" | {p}")


def e2e() -> None:
    variants = {"default": {}, "source_cwnd_restart": {"source_cwnd_restart": True}, "loss 1e-3": {"backhaul_loss": 1e-3},
                "loss 1e-2": {"backhaul_loss": 1e-2}, "restart + loss 1e-3": {"source_cwnd_restart": True, "backhaul_loss": 1e-3}}
    buffering = {k: 0 for k in variants}
    initial = {k: [] for k in variants}
    print("cell | buffering s / initial delay s / throughput Mbit/s per variant:", ", ".join(variants))
    for stream in STREAMS:
        for loc, rtt in LOCATIONS:
            out = []
            for name, v in variants.items():
                s = run(**stream_cfg(*stream, rtt), scheme="e2e", **v)["summary"]
                buffering[name] += s["buffering_s"] > 0
                initial[name].append(s["initial_delay_s"])
                out.append(f"{s['buffering_s']:5.1f}/{s['initial_delay_s']:4.1f}/{s['receiver_throughput_mbps']:5.1f}")
            print(f"{stream_label(stream[0], stream[1])} {loc:9s} | " + " | ".join(out))
    for name in variants:
        print(f"{name}: E2E buffers in {buffering[name]} of 24 cells; initial delay {min(initial[name]):.1f}–{max(initial[name]):.1f} s")


def idle() -> None:
    for stream in STREAMS:
        for loc, rtt in LOCATIONS:
            r = run(**stream_cfg(*stream, rtt), scheme="e2e")
            segs = r["segments"]
            rto = rtt / 1000 + 0.28  # srtt + Linux's 200-ms floor on 4·rttvar, plus the RAN's mean extra RTT
            gaps = [b["requested_s"] - a["done_s"] for a, b in zip(segs, segs[1:])]
            n = sum(g > rto for g in gaps)
            print(f"{stream_label(stream[0], stream[1])} {loc:9s} {n:3d} of {len(gaps):3d} downloads after an idle gap > RTO ({n / max(1, len(gaps)):.0%})")


if __name__ == "__main__":
    modes = {"cells": cells, "window": window, "e2e": e2e, "idle": idle}
    if len(sys.argv) != 2 or sys.argv[1] not in modes:
        print(f"usage: python bench/ethle_gaps.py {{{'|'.join(modes)}}}", file=sys.stderr)
        sys.exit(2)
    modes[sys.argv[1]]()
