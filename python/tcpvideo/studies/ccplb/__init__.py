"""Seed 001 (Cavendish, Kumazoe, Tsuru, Oie, Gerla et al.: TCP congestion avoidance for video
streaming — CCP, CCPLCA and CCPLB, "LargeBuffer"), reproduced in simulation:
``tcpvideo study ccplb [--full]``.

Method: docs/studies/ccplb.md. Parts: :mod:`.scenario` (the testbed of Fig. 3 / Table I),
:mod:`.metrics` (the sweep's reducer: discards, underflows, retransmissions), :mod:`.claims`
(Figs 4–9, the sensitivity table, paper vs ours). Runs go through :mod:`tcpvideo.sweep` (local
pool or Ray, resumable, ``OUT/runs/``).
"""

from __future__ import annotations

import itertools
import json
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Optional

import pandas as pd
import pyarrow as pa

from tcpvideo import sweep
from tcpvideo.studies.ccplb import claims as claims_mod
from tcpvideo.studies.ccplb.metrics import reducer
from tcpvideo.studies.ccplb.scenario import (CCS, DEFAULT, FULL, LARGE_AP_QUEUE_PACKETS, LOSS_SENSITIVITY, POB_PACKETS, POB_RATES, RTTS_MS,
                                             POBRATE_WIFI_RATES, SENSITIVITY, SENSITIVITY_RTTS_MS, SLOW_WIFI_RATE, VIDEO_RATE_BPS, literal_ccplca_pob_rate, WIFI_LOSS, WIFI_RATE, Scale, pob_seconds,
                                             scenario)
from tcpvideo.studies.report import write_report

NAME = "ccplb"
SUMMARY = ("seed 001: CUBIC, Compound, CCP, CCPLCA and CCPLB streaming a video to a frame-deadline player over a "
           "lossy WiFi last link at RTT 3/100/200 ms (Figs 4-6), CCPLB's POBRate at POB 448/897/1345 (Figs 7-9), "
           "and a sensitivity table over CCP's open choices")


def plan(scale: Scale, sensitivity_runs: bool = True) -> list[sweep.Point]:
    """Every row of the study: the variants (Figs 4–6), CCPLB's POBRate grid at 100 ms (Figs 7–9)
    and the sensitivity of CCP and CCPLB(1), POB 448, 100 ms to the CCP choices the seed leaves
    open. Some rows are the same run (CCPLB(1), POB 448, 100 ms is in all three): see :func:`unique`."""
    pts = []
    for seed in scale.seeds:
        for rtt in RTTS_MS:
            for cc in CCS:
                pts.append(sweep.Point(params={}, scenario=scenario(cc, rtt, scale), seed=seed, labels=dict(
                    group="variants", cc=cc, rtt_ms=rtt, pob_packets=448, pob_rate=1.0, config="")))
        for pob in POB_PACKETS:
            for r in POB_RATES:
                pts.append(sweep.Point(params={}, scenario=scenario("ccplb", 100, scale, pob, r), seed=seed, labels=dict(
                    group="pobrate", cc="ccplb", rtt_ms=100, pob_packets=pob, pob_rate=r, config="")))
        if sensitivity_runs:
            for name, params in SENSITIVITY.items():
                for cc, rtt in itertools.product(("ccp", "ccplb"), SENSITIVITY_RTTS_MS):
                    pts.append(sweep.Point(params={}, scenario=scenario(cc, rtt, scale, cc_params=params), seed=seed,
                                           labels=dict(group="sensitivity", cc=cc, rtt_ms=rtt, pob_packets=448,
                                                       pob_rate=1.0, config=name)))
            for loss in LOSS_SENSITIVITY:
                for cc in CCS:
                    pts.append(sweep.Point(params={}, scenario=scenario(cc, 100, scale, wifi_loss=loss), seed=seed,
                                           labels=dict(group="loss", cc=cc, rtt_ms=100, pob_packets=448, pob_rate=1.0,
                                                       config=f"wifi loss {loss:.1%}")))
            for cc, r in [(cc, 1.0) for cc in CCS] + [("ccplb", 0.5), ("ccplb", 2.0)]:
                pts.append(sweep.Point(params={}, scenario=scenario(cc, 100, scale, pob_rate=r,
                                                                    ap_queue_packets=LARGE_AP_QUEUE_PACKETS),
                                       seed=seed, labels=dict(group="apqueue", cc=cc, rtt_ms=100, pob_packets=448,
                                                              pob_rate=r, config=f"AP queue {LARGE_AP_QUEUE_PACKETS}")))
            for client in ("at_once", "pushback_small_rcvbuf"):
                for rtt in (3, 100):
                    for cc, r in [(cc, 1.0) for cc in CCS] + [("ccplb", 0.5), ("ccplb", 2.0)]:
                        pts.append(sweep.Point(params={}, scenario=scenario(cc, rtt, scale, pob_rate=r, client=client),
                                               seed=seed, labels=dict(group=client, cc=cc, rtt_ms=rtt, pob_packets=448,
                                                                      pob_rate=r, config=f"client {client}")))
            for rtt in (3, 100):
                for cc, r in [(cc, 1.0) for cc in CCS] + [("ccplb", 0.5), ("ccplb", 2.0)]:
                    pts.append(sweep.Point(params={}, scenario=scenario(cc, rtt, scale, pob_rate=r,
                                                                        wifi_rate=SLOW_WIFI_RATE),
                                           seed=seed, labels=dict(group="slow_wifi", cc=cc, rtt_ms=rtt, pob_packets=448,
                                                                  pob_rate=r, config=f"WiFi {SLOW_WIFI_RATE}")))
            for wifi in POBRATE_WIFI_RATES:
                for r in POB_RATES:
                    pts.append(sweep.Point(params={}, scenario=scenario("ccplb", 100, scale, pob_rate=r, wifi_rate=wifi),
                                           seed=seed, labels=dict(group="wifi_pobrate", cc="ccplb", rtt_ms=100,
                                                                  pob_packets=448, pob_rate=r, config=f"WiFi {wifi}")))
            for wifi, rtts in ((WIFI_RATE, RTTS_MS), (SLOW_WIFI_RATE, (3, 100))):
                for rtt in rtts:
                    r = literal_ccplca_pob_rate(rtt)
                    pts.append(sweep.Point(params={}, scenario=scenario("ccplb", rtt, scale, pob_rate=r, wifi_rate=wifi),
                                           seed=seed, labels=dict(group="literal_ccplca", cc="ccplca (VR/rtt)", rtt_ms=rtt,
                                                                  pob_packets=448, pob_rate=round(r, 6),
                                                                  config=f"WiFi {wifi}")))
    return pts


def unique(pts: list[sweep.Point]) -> tuple[list[int], list[sweep.Point]]:
    """The distinct runs among ``pts`` (same scenario and seed once) and, per row, its run's index."""
    index: dict[str, int] = {}
    distinct: list[sweep.Point] = []
    runs_of = []
    for p in pts:
        sig = json.dumps([p.scenario, p.seed], sort_keys=True)
        if sig not in index:
            index[sig] = len(distinct)
            distinct.append(p)
        runs_of.append(index[sig])
    return runs_of, distinct


def notes(scale: Scale) -> list[str]:
    return [
        f"Video: {VIDEO_RATE_BPS / 1e6:.2f} Mbit/s CBR, {scale.media_s:g} s long at this scale (the paper's clip is "
        "10 min 24 s: Table I's '10.24 secs' read as a clock time, since 409 MB in 10.24 s would be a 320 Mbit/s "
        "video, above the WiFi link the authors checked to be faster than the playout rate).",
        "POB 448 / 897 / 1345 packets of 1600 B = " + " / ".join(f"{pob_seconds(p):.2f}" for p in POB_PACKETS) +
        " s of video (VLC's network caching): the client fills it before playing, and the server hands it with the "
        "video rate to its CC through AppInfo (CCPLB pob_from_app = 1, in MSS-sized segments: the same bytes).",
        f"WiFi last link {WIFI_RATE}, 100-packet queue, {WIFI_LOSS:.1%} Bernoulli loss both ways (our choice: the "
        "seed gives neither); server access and the emulator path 1 Gbit/s; no cross traffic.",
        "The frame player discards a frame more than 200 ms late and counts an underflow / catch-up episode when "
        "a frame is missing at its slot (the model's frame_player defaults; VLC's exact rules are not in the seed).",
        "The client pushes back as VLC's bounded buffer does (seed 001 §III: the player pulls no more than it can "
        "handle, cwnd ≤ awnd): once playing it reads from its socket only while it holds less than POB of media "
        "ahead of its playout clock (progressive.read_ahead = POB), over Linux's autotuned receive buffer, so a full "
        "buffer closes TCP's window. The client_experiment table compares it with a client that reads at once (the "
        "main runs before session 7) and with a POB-sized receive buffer. Picture discards come only from late "
        "frames (the model's player never drops an early frame).",
        f"Explaining experiments: slow_wifi_experiment (WiFi {SLOW_WIFI_RATE}, 1.5 × the video rate) and "
        "literal_ccplca_experiment (CCPLCA's floor read as the seed writes it, VR/rtt, run as CCPLB with that "
        "constant POB term).",
        f"Trials per point: {len(scale.seeds)} (the paper: 5; --full runs 5).",
        "Compound is the draft's (alpha 1/8, beta 1/2, k 3/4); CCP's Kp = 2 and its estimators are ours (ref [3] "
        "not found): the sensitivity table varies them.",
    ]


def run(full: bool = False, out: os.PathLike | str = "studies/ccplb", jobs: Optional[int] = None,
        ray_address: Optional[str] = None, progress: bool = True, scale: Optional[Scale] = None,
        sensitivity_runs: bool = True) -> dict:
    """Run the study (resuming from ``out``) and write its report directory; returns report facts."""
    scale = scale or (FULL if full else DEFAULT)
    out = Path(out)
    t0 = time.perf_counter()
    pts = plan(scale, sensitivity_runs)
    runs_of, distinct = unique(pts)
    res = sweep.run(distinct, out, jobs=jobs, ray_address=ray_address, reducer=reducer, progress=progress,
                    label=f"ccplb {scale.name}")
    runs_df = pd.DataFrame([{**p.labels, "seed": p.seed, **res.store.summary(res.keys[j])}
                            for p, j in zip(pts, runs_of)])
    found = claims_mod.claims(runs_df)
    figs = claims_mod.figures(runs_df)
    facts = {"study": NAME, "scale": scale.name, "code_version": res.code, "runs": len(distinct), "ran_now": res.ran,
             "reused": res.reused, "trials": len(scale.seeds), "seeds": ", ".join(map(str, scale.seeds)),
             "media_s": scale.media_s, "wall_s": round(time.perf_counter() - t0, 1),
             "jobs": jobs or sweep.default_jobs(),
             "executor": f"ray {ray_address}" if ray_address else "local process pool"}
    tables = {
        "runs": pa.Table.from_pandas(runs_df, preserve_index=False),
        "figs4_6_variants": pa.Table.from_pandas(claims_mod.variants(runs_df), preserve_index=False),
        "figs7_9_pobrate": pa.Table.from_pandas(claims_mod.pobrate(runs_df), preserve_index=False),
        "claims": pa.Table.from_pylist([asdict(c) for c in found]),
    }
    if sensitivity_runs:
        tables["sensitivity"] = pa.Table.from_pandas(claims_mod.sensitivity(runs_df), preserve_index=False)
        tables["loss_sensitivity"] = pa.Table.from_pandas(claims_mod.loss_sensitivity(runs_df), preserve_index=False)
        tables["ap_queue_experiment"] = pa.Table.from_pandas(claims_mod.ap_queue(runs_df), preserve_index=False)
        tables["client_experiment"] = pa.Table.from_pandas(claims_mod.client_experiment(runs_df), preserve_index=False)
        tables["wifi_pobrate_experiment"] = pa.Table.from_pandas(claims_mod.wifi_pobrate(runs_df), preserve_index=False)
        tables["slow_wifi_experiment"] = pa.Table.from_pandas(claims_mod.slow_wifi(runs_df), preserve_index=False)
        tables["literal_ccplca_experiment"] = pa.Table.from_pandas(claims_mod.literal_ccplca(runs_df), preserve_index=False)
    write_report(out / "report", f"tcpvideo study ccplb ({scale.name} scale): seed 001 reproduced in simulation",
                 "Seed 001: playout-buffer-aware TCP congestion avoidance for video streaming (CCP, CCPLCA, CCPLB) "
                 "against CUBIC and Compound. Method and deviations: docs/studies/ccplb.md.",
                 found, figs, tables, facts, notes=notes(scale))
    return {"facts": facts, "claims": found, "out": out / "report", "tables": tables}
