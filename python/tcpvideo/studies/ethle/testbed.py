"""One run of seed 002's simulated testbed (`tcpvideo_sim::ethle_testbed`: source, P-GW with the
ETHLE edge, fluctuating RAN, hls.js-like receiver) as the sweep's runner and reducer.

The Rust core does the run; this module only converts its JSON answer into the summary dict and
Arrow tables the sweep stores.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa


@dataclass
class TestbedRun:
    summary: dict
    segments: pa.Table
    fetches: pa.Table


def _table(rows: list[dict], columns: tuple[str, ...]) -> pa.Table:
    return pa.table({c: [r[c] for r in rows] for c in columns})


def run_testbed(config: dict, seed: int) -> TestbedRun:
    """Run one configuration (``seed`` overrides the configuration's)."""
    from tcpvideo import _core

    res = json.loads(_core.ethle_testbed_run(json.dumps({**config, "seed": seed})))
    return TestbedRun(
        summary=res["summary"],
        segments=_table(res["segments"], ("segment", "requested_s", "done_s", "throughput_mbps")),
        fetches=_table(res["fetches"], ("segment", "connection", "requested_s", "done_s", "throughput_mbps")),
    )


def reducer(result: TestbedRun) -> tuple[dict, dict]:
    """Keep the summary and the backhaul fetches (for throughput CDFs)."""
    return dict(result.summary), {"fetches": result.fetches}
