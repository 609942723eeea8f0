"""Seed 002's claims next to ours (the study's "paper vs ours" table).

Each claim states its test and threshold; the numbers are the simulated cells of
:func:`tcpvideo.studies.ethle.tables.cells`. Where ours differ, ``why`` names the experiment that
explains it (or says none was run).
"""

from __future__ import annotations

import math

import pandas as pd

from tcpvideo.studies.report import NOT_REPRODUCED, PARTLY, REPRODUCED, Claim


def _n(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _cell(r) -> str:
    return f"{r.location} {r.stream}"


def claims(cells: pd.DataFrame, session_s: float) -> list[Claim]:
    out = []
    n = len(cells)

    # 1. hold-x removes buffering wherever E2E buffers
    buffering = cells[cells["e2e_buffering_s"] > 0]
    fixed_model = buffering[buffering["model_x_buffering_s"].fillna(1) == 0]
    fixed_any = buffering[buffering["sim_optimal_x"].notna()]
    missed = [_cell(r) for r in buffering.itertuples() if r.model_x_buffering_s is None or r.model_x_buffering_s > 0]
    ok = len(fixed_model) == len(buffering)
    out.append(Claim(
        "hold_x_removes_buffering", "Table II",
        "hold-x eliminates buffering in every scenario, including those where E2E buffers",
        "every cell where simulated E2E buffers: the run holding the model's x has zero buffering",
        "E2E buffers in 17 of 24 cells; the optimal hold-x in none",
        f"E2E buffers in {len(buffering)} of {n} cells; the model's x removes it in {len(fixed_model)}, "
        f"some hold-0..4 in {len(fixed_any)}" + (f"; still buffering with the model's x: {', '.join(missed)}" if missed else ""),
        REPRODUCED if ok and len(buffering) > 0 else (PARTLY if len(fixed_any) == len(buffering) else NOT_REPRODUCED),
        "" if ok else "cells listed: the simulated backhaul is slower than the model there (see the Table III claim)"))

    # 2. optimal x vs Table III actual
    matched = cells[cells["sim_optimal_x"] == cells["paper_t3_actual_x"]]
    diff = cells[cells["sim_optimal_x"] != cells["paper_t3_actual_x"]]
    detail = "; ".join(f"{_cell(r)}: ours {'none' if _n(r.sim_optimal_x) else int(r.sim_optimal_x)} vs "
                       f"{r.paper_t3_actual_x}" for r in diff.itertuples())
    out.append(Claim(
        "optimal_x_matches_actual", "Table III",
        "the optimal number of held segments per stream and location (Table III, Actual row)",
        "simulated optimal x (no buffering, then lowest latency, then initial delay) equals the Actual row in ≥ 21 of 24 cells",
        "Actual x: 15M-2s 1/2/2/4, 15M-4s 0/0/1/1, 15M-10s 0/0/0/0, 50M-2s 1/2/2/3, 50M-4s 1/1/1/2, 50M-10s 0/0/1/1",
        f"{len(matched)} of {n} cells match" + (f"; differ: {detail}" if detail else ""),
        REPRODUCED if len(matched) >= 21 else (PARTLY if len(matched) >= 16 else NOT_REPRODUCED),
        "India 15M-2s: the paper's own model says 3 and its text blames backhaul fluctuation (ours: 2, as our model "
        "and Eq. 2 with the paper's Actual 7.6 Mbit/s: 3.9 s per segment over 2 connections). Japan 15M-4s: our "
        "store-and-forward RAN leg is slower than the paper's (7.2 MB: ours 1.18 s, Table II − Table III imply "
        "0.82 s; with no RAN latency jitter ours is 0.61 s and hold-0 is clean), so hold-0 (2.6 s backhaul + RAN "
        "leg per 4-s segment) stalls. Australia 50M-4s and Japan 50M-10s: Linux's default socket buffers (the "
        "edge's 6-MiB tcp_rmem[2] = a 3-MiB window, the source's 4-MiB tcp_wmem[2]) cap our fetches 20 % / 32 % "
        "below the paper's Actual th_bh; with 16-MiB buffers (bench/ethle_gaps.py buffers) Japan 50M-10s hold-0 is "
        "clean (x = 0) and Australia 50M-4s reaches 47.1 Mbit/s (paper 47.0) and hold-1 stalls 0.1 s; at the "
        "~273 ms its Table III cells imply it is x = 1. The paper states no buffer setting, so Linux's defaults stay. "
        "Optimal x over seeds = median of the per-seed optima (the paper reports one session per cell). "
        "Experiments: docs/studies/ethle.md. "
        f"Sessions of {session_s:.0f} s, one seed by default (the paper: 300 s)"))

    # 3. modeled x (ours) vs Table III modeled x
    m = cells[cells["paper_t3_modeled_x"].notna()]
    mm = m[m["model_x"] == m["paper_t3_modeled_x"]]
    out.append(Claim(
        "model_x_matches_modeled", "Table III",
        "x derived from the BBR STARTUP model (Modeled row)",
        "the edge's x from the backhaul RTT it measured equals the Modeled row",
        "20 modeled cells (50M-10s not modeled)",
        f"{len(mm)} of {len(m)} modeled cells equal; the model also gives x for 50M-10s: "
        + ", ".join(f"{r.location} {int(r.model_x)}" for r in cells[cells["stream"] == "50Mbps 10s"].itertuples()),
        REPRODUCED if len(mm) >= len(m) - 2 else PARTLY,
        "the differences are the model's (crates/model/src/ethle: Table III's cells imply RTTs of ~273 ms for "
        "Australia and ~353 ms for India, not 302/334)"))

    # 4. backhaul throughput: simulated vs actual
    c = cells[cells["paper_t3_actual_th_mbps"].notna()].copy()
    c["err"] = c["sim_th_bh_mbps"] / c["paper_t3_actual_th_mbps"] - 1
    within = c[c["err"].abs() <= 0.10]
    out.append(Claim(
        "backhaul_throughput", "Table III",
        "modeled and actual backhaul throughput are very close (0–6.8 Mbit/s apart) except 50M-10s",
        "simulated th_bh (BBR source, a fresh TCP connection per fetch) within 10 % of the Actual row",
        "Actual th_bh 7.6 (India 15M-2s) … 181 (US West 50M-10s) Mbit/s",
        f"{len(within)} of {len(c)} cells within 10 %; error range {c['err'].min():+.0%} … {c['err'].max():+.0%}",
        REPRODUCED if len(within) >= len(c) - 4 else PARTLY,
        "the edge fetches each segment on a fresh connection (the paper's 'transient' connections): IW10 + "
        "handshake + request ≈ the model's doubling from one MSS. The 50 Mbit/s 4-s/10-s rows are low because "
        "Linux's default 6-MiB receive buffer (3-MiB window) caps a transfer at window/RTT once STARTUP gets there "
        "(an 8-MiB buffer: −32 % → −20 % for 50M-10s; not STARTUP exit or DRAIN). With persistent connections BBR "
        "keeps its estimates and th_bh is 2–5× higher (test a_transient_backhaul_fetch_takes_about_what_the_startup_model_predicts)"))

    # 5. E2E initial delay higher than hold-x
    both = cells[cells["holdx_initial_s"].notna()]
    higher = both[both["e2e_initial_s"] > both["holdx_initial_s"]]
    out.append(Claim(
        "e2e_initial_delay_higher", "Table II",
        "E2E's initial startup delay is much higher than any hold-x scheme's (up to 26.3 s vs mostly < 10 s)",
        "simulated E2E initial delay > the optimal hold-x's in every cell that has one",
        "E2E 6.8–26.3 s, hold-x 3.7–16.2 s",
        f"higher in {len(higher)} of {len(both)} cells; E2E {cells['e2e_initial_s'].min():.1f}–{cells['e2e_initial_s'].max():.1f} s, "
        f"hold-x {both['holdx_initial_s'].min():.1f}–{both['holdx_initial_s'].max():.1f} s",
        REPRODUCED if len(higher) == len(both) else (PARTLY if len(higher) >= len(both) // 2 else NOT_REPRODUCED),
        "on a lossless backhaul the edge's first segment crosses the backhaul on a fresh connection "
        "(handshake + STARTUP from IW10) and then the RAN (store and forward), while E2E reuses the receiver's "
        "warm connection whose BBR already measured the path. With backhaul packet errors (backhaul_loss = 1e-3, "
        "an experiment: the paper gives no rate) E2E starts take 3.4–23.5 s (paper 6.8–26.3); "
        "docs/studies/ethle.md"))

    # 5b. E2E buffering frequency
    e2e_buf = cells[cells["e2e_buffering_s"] > 0]
    out.append(Claim(
        "e2e_buffers", "Table II / Fig 5",
        "E2E cannot assure QoE: RAN latency fluctuation plus a long backhaul slow TCP down and the stream buffers",
        "simulated E2E buffers in as many cells as the paper's (17 of 24)",
        "E2E buffers in 17 of 24 cells (0.4–186 s in 5 min)",
        f"E2E buffers in {len(e2e_buf)} of {n} cells ({', '.join(_cell(r) for r in e2e_buf.itertuples())})",
        REPRODUCED if len(e2e_buf) >= 15 else (PARTLY if len(e2e_buf) > 0 else NOT_REPRODUCED),
        "the mechanism is there: Australia 50M-2s E2E (75 s) buffers 4.9 s with the RAN latency process and 0 s "
        "without it (ran_extra_ms = 0), and 18.4 s with a CUBIC source (docs/studies/ethle.md, 'E2E ablation'); "
        "and the missing part is backhaul packet errors (§V-E), which are not modeled by default: with "
        "backhaul_loss = 1e-3 E2E buffers in 12 of 24 cells, with 1e-2 in 15 (75-s sessions). A BBR source that "
        "restarts cwnd after idle (older kernels) lowers 15 Mbit/s E2E throughput 10–40 % but adds no buffering. "
        f"Sessions of {session_s:.0f} s (docs/studies/ethle.md, 'E2E: the candidates')"))

    # 6. total latency lower with the optimal hold-x
    lower = both[both["holdx_total_s"] < both["e2e_total_s"]]
    out.append(Claim(
        "total_latency_lower", "Table II / Fig 9",
        "the optimal hold-x has a lower total live latency than E2E in every cell",
        "simulated total latency (initial + buffering + x·l) of the optimal hold-x < E2E's",
        "hold-x 4.1–26.2 s vs E2E 6.8–205.9 s",
        f"lower in {len(lower)} of {len(both)} cells",
        REPRODUCED if len(lower) == len(both) else PARTLY,
        "where E2E does not buffer, holding costs x·l and the edge's cold backhaul fetches cost start-up time "
        "that E2E's warm BBR connection does not pay (see the initial-delay claim)"))
    return out
