"""Per-run reduction (the sweep's reducer): seed 001's three measures for the one stream of a run.

- picture discards: frames the frame-deadline player dropped because they came later than its
  discard lateness (``progressive.picture_discards``, the model's ``frame_player``);
- buffer underflows: its underflow / catch-up episodes (``progressive.rebuffer_count``);
- packet retransmissions: every segment the server's TCP sent again (fast, timeout and loss-probe
  retransmissions; the summary's ``retransmissions``).

Also kept, to explain the results: the goodput, the time playback started, whether the whole
body arrived, the largest cwnd, and from the 100 ms samples (``series``) while the body is in
flight: the mean cwnd, the mean data in flight, the share of samples where the receiver's
advertised window (not cwnd) bounds what is in flight, and the player's smallest lead — media
received in order ahead of the playout clock, ``bytes_received / VR − (t − start)``, the margin
a run kept before a frame would be late (negative: it was behind).
"""

from __future__ import annotations

MSS_BYTES = 1448  # the simulator's default MSS with timestamps (for the window in segments)


def window_use(series: list[dict], rate_bps: float, start_s, done_s) -> dict:
    """Mean cwnd and in-flight (segments), the receive-window-limited share of samples and the smallest
    lead (s) over the 100 ms samples from playback start until the body is in (``done_s`` None: the end)."""
    rows = [r for r in series if r["flow"] == 0 and start_s is not None and r["t_s"] >= start_s
            and (done_s is None or r["t_s"] <= done_s)]
    if not rows:
        return {"mean_cwnd_segments": float("nan"), "mean_inflight_segments": float("nan"),
                "rwnd_limited_share": float("nan"), "min_lead_s": float("nan")}
    # in flight within one MSS of the peer's window: the receiver, not cwnd, decides what is sent
    rwnd_limited = sum(1 for r in rows if r["bytes_in_flight"] + MSS_BYTES >= r["peer_window_bytes"]
                       and r["bytes_in_flight"] + MSS_BYTES < r["cwnd_bytes"])
    lead = min(r["bytes_received"] * 8 / rate_bps - (r["t_s"] - start_s) for r in rows)
    return {"mean_cwnd_segments": sum(r["cwnd_bytes"] for r in rows) / len(rows) / MSS_BYTES,
            "mean_inflight_segments": sum(r["bytes_in_flight"] for r in rows) / len(rows) / MSS_BYTES,
            "rwnd_limited_share": rwnd_limited / len(rows), "min_lead_s": lead}


def reducer(result) -> tuple[dict, dict]:
    prog = result.progressive.to_pylist()
    flows = result.flows.to_pylist()
    if len(prog) != 1 or len(flows) != 1:
        raise ValueError(f"progressive: expected one stream per testbed run, got {len(prog)}")
    p, f = prog[0], flows[0]
    summary = {
        "picture_discards": p["picture_discards"],
        "underflows": p["rebuffer_count"],
        "underflow_s": p["rebuffer_total_s"],
        "retransmissions": f["retrans_fast"] + f["retrans_timeout"] + f["retrans_tlp"],
        "rto_count": f["rto_count"],
        "playback_start_s": p["playback_start_s"],
        "body_done": bool(p["body_done"]),
        "bytes_read": f["bytes_read"],
        "file_bytes": p["file_bytes"],
        "max_cwnd_segments": f["max_cwnd_bytes"] / MSS_BYTES,
        "goodput_mbps": f["goodput_mbps"],
    }
    done_s = p["flow_s"] + p["request_s"] if p["body_done"] and p.get("flow_s") is not None else None
    summary.update(window_use(result.series.to_pylist(), p["rate_kbps"] * 1e3, p["playback_start_s"], done_s))
    return summary, {}
