"""Per-run reduction (the sweep's reducer): seed 001's three measures for the one stream of a run.

- picture discards: frames the frame-deadline player dropped because they came later than its
  discard lateness (``progressive.picture_discards``, the model's ``frame_player``);
- buffer underflows: its underflow / catch-up episodes (``progressive.rebuffer_count``);
- packet retransmissions: every segment the server's TCP sent again (fast, timeout and loss-probe
  retransmissions; the summary's ``retransmissions``).

Also kept, to explain the results: the goodput, the time playback started, whether the whole
body arrived, and the run's final cwnd.
"""

from __future__ import annotations

MSS_BYTES = 1448  # the simulator's default MSS with timestamps (for the window in segments)


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
    return summary, {}
