"""Per-run reduction (the sweep's reducer): the simulator's ``progressive`` table joined with each
user's drawn last mile, and the analyzer's micro-bursts of the server-side capture.

Bursts (§5.2, Blanton & Allman's definition: ≥ 4 data packets ≤ 1 ms apart) come from
``tcpvideo.analyze`` on the simulator's pcap — the same code that reads a real capture — and are
kept only in the throttling phase (start at or after the flow's ``throttle_start_s``) and in the
download direction. ``retransmitted`` (Fig. 7: "bursts of that size that experience at least one
retransmission") is the analyzer's: a later retransmission of a sequence number inside the burst.
"""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.compute as pc

CLIENT_PORT_BASE = 32768  # the simulator's client port of flow f is 32768 + f (crates/sim/src/sim.rs)


def users_table(result) -> pa.Table:
    """``progressive`` plus each user's bandwidth (their link's rate) and base RTT."""
    prog = result.progressive.to_pandas()
    links = result.links.to_pandas()
    bw = links[links["from"] == "r1"].set_index("to")["rate_mbps"]
    flows = result.flows.to_pandas().set_index("flow")
    prog["bandwidth_mbps"] = prog["client"].map(bw)
    prog["base_rtt_ms"] = prog["flow"].map(flows["base_rtt_ms"])
    prog["cc"] = prog["flow"].map(flows["cc"])
    return pa.Table.from_pandas(prog, preserve_index=False)


def throttled_bursts(result, users: pa.Table) -> pa.Table:
    """Download-direction bursts that began in their flow's throttling phase."""
    from tcpvideo import analyze

    a = analyze([str(p) for p in result.pcaps], formats=())
    b = a.bursts.to_pandas()
    f = a.flows.to_pandas().set_index("flow_id")
    b = b[b["direction"] == "download"].copy()
    b["flow"] = b["flow_id"].map(f["client_port"]) - CLIENT_PORT_BASE
    start = users.to_pandas().set_index("flow")["throttle_start_s"]
    b["throttle_start_s"] = b["flow"].map(start)
    b = b[b["start_ns"] / 1e9 >= b["throttle_start_s"]]
    return pa.Table.from_pandas(b[["flow", "start_ns", "packets", "bytes", "retransmitted"]], preserve_index=False)


def reducer(result) -> tuple[dict, dict]:
    users = users_table(result)
    bursts = throttled_bursts(result, users)
    for p in result.pcaps:  # the pcaps live in a temporary directory of this worker
        shutil.rmtree(p.parent, ignore_errors=True)
        break
    summary = dict(result.summary)
    rr = users.column("throttle_retrans_rate")
    summary["mean_throttle_retrans_rate"] = pc.mean(rr).as_py()
    summary["bursts"] = bursts.num_rows
    return summary, {"users": users, "bursts": bursts}
