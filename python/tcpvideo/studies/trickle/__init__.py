"""Seed 003 (Ghobadi, Cheng, Jain, Mathis: "Trickle: Rate Limiting YouTube Video Streaming",
USENIX ATC 2012), reproduced in simulation: ``tcpvideo study trickle [--full]``.

Method: docs/studies/trickle.md. Parts: :mod:`.scenario` (the A/B groups over DC1/DC2 user
populations), :mod:`.metrics` (the sweep's reducer: the simulator's ``progressive`` table and
the analyzer's throttling-phase bursts), :mod:`.claims` (Tables 1–3, Figs 3, 4, 5, 7, 8, paper vs
ours). Runs go through :mod:`tcpvideo.sweep` (local pool or Ray, resumable, ``OUT/runs/``).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Optional

import pandas as pd
import pyarrow as pa

from tcpvideo import sweep
from tcpvideo.studies.report import write_report
from tcpvideo.studies.trickle import claims as claims_mod
from tcpvideo.studies.trickle.metrics import reducer
from tcpvideo.studies.trickle.scenario import DCS, DEFAULT, FULL, GROUPS, Scale, scenario

NAME = "trickle"
SUMMARY = ("seed 003: Trickle vs ustreamer's application pacing (64 kB / 16 kB), plus a pacing cap and BBR, over "
           "DC1/DC2 user populations (Figs 3–5, 7, 8, Tables 1–3)")

NOTES = [
    "Users are simulated last miles (crates/sim/src/population.rs): no cross traffic, no random loss, drop-tail "
    "buffers; every loss is a buffer overflow caused by the flow itself.",
    "The throttling phase starts when the startup bytes are acknowledged and ends when the body is acknowledged "
    "or the run ends; the default run is 90 s, so most throttling phases are 40–80 s long (the paper's: minutes).",
    "baseline2 is baseline1 with every user arriving 1 ms later: the two differ only by chance, as in the paper.",
    "The server's send buffer is 256 kB (Linux autotunes it; the simulator's is fixed).",
    "Fig 7 is noisy at the default scale (few bursts per size); --full has ~10x the users.",
]


def plan(scale: Scale) -> list[sweep.Point]:
    return [sweep.Point(params={}, scenario=scenario(dc, g, scale, seed), seed=seed,
                        labels={"dc": dc, "group": g, "population_seed": seed})
            for seed in scale.seeds for dc in DCS for g in GROUPS]


def run(full: bool = False, out: os.PathLike | str = "studies/trickle", jobs: Optional[int] = None,
        ray_address: Optional[str] = None, progress: bool = True, scale: Optional[Scale] = None) -> dict:
    """Run the study (resuming from ``out``) and write its report directory; returns report facts."""
    scale = scale or (FULL if full else DEFAULT)
    out = Path(out)
    t0 = time.perf_counter()
    pts = plan(scale)
    res = sweep.run(pts, out, jobs=jobs, ray_address=ray_address, reducer=reducer, progress=progress,
                    label=f"trickle {scale.name}")
    users, bursts = [], []
    for p, key in zip(pts, res.keys):
        tag = {"dc": p.labels["dc"], "group": p.labels["group"], "population_seed": p.seed}
        u = res.store.table(key, "users").to_pandas().assign(**tag)
        b = res.store.table(key, "bursts").to_pandas().assign(**tag)
        users.append(u)
        bursts.append(b)
    users_df = pd.concat(users, ignore_index=True)
    bursts_df = pd.concat(bursts, ignore_index=True)
    found = claims_mod.claims(users_df, bursts_df)
    figs = claims_mod.figures(users_df, bursts_df)
    facts = {"study": NAME, "scale": scale.name, "code_version": res.code, "runs": len(pts), "ran_now": res.ran,
             "reused": res.reused, "users_per_dc": scale.users, "population_seeds": ", ".join(map(str, scale.seeds)),
             "simulated_s_per_run": scale.duration_s, "wall_s": round(time.perf_counter() - t0, 1),
             "jobs": jobs or sweep.default_jobs(),
             "executor": f"ray {ray_address}" if ray_address else "local process pool"}
    tables = {
        "users": pa.Table.from_pandas(users_df, preserve_index=False),
        "bursts": pa.Table.from_pandas(bursts_df, preserve_index=False),
        "table1_controls": pa.Table.from_pandas(claims_mod.table1(users_df), preserve_index=False),
        "table2_by_bandwidth": pa.Table.from_pandas(claims_mod.table2(users_df), preserve_index=False),
        "table3_rebuffering": pa.Table.from_pandas(claims_mod.table3(users_df), preserve_index=False),
        "claims": pa.Table.from_pylist([asdict(c) for c in found]),
    }
    write_report(out / "report", f"tcpvideo study trickle ({scale.name} scale): seed 003 reproduced",
                 "Ghobadi, Cheng, Jain, Mathis: 'Trickle: Rate Limiting YouTube Video Streaming' (USENIX ATC 2012). "
                 "Method and deviations: docs/studies/trickle.md.", found, figs, tables, facts, notes=NOTES)
    return {"facts": facts, "claims": found, "out": out / "report", "tables": tables}
