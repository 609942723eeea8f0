"""Seed 004 (Kupka, Halvorsen, Griwodz: on-off traffic of live segmented HTTP streaming with
many clients), reproduced: ``tcpvideo study onoff [--full]``.

Method: docs/studies/onoff.md. Parts: :mod:`.scenario` (the paper's setup as a scenario),
:mod:`.plan` (which runs, default and full scale), :mod:`.metrics` (startup, liveness, drops
per run, as the sweep's reducer), :mod:`.figures`, :mod:`.claims` (paper vs ours). Runs go
through :mod:`tcpvideo.sweep`, so the study runs on a local pool or on Ray and resumes where
it stopped (the run store is ``OUT/runs/``).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Optional

import pandas as pd
import pyarrow as pa

from tcpvideo import sweep
from tcpvideo.studies.onoff import claims as claims_mod
from tcpvideo.studies.onoff import figures
from tcpvideo.studies.onoff.metrics import reducer
from tcpvideo.studies.onoff.plan import DEFAULT, FULL, GROUP_SEEDS, Scale, configs
from tcpvideo.studies.onoff.scenario import OnOffConfig, scenario
from tcpvideo.studies.report import Claim, Figure, write_report

NAME = "onoff"
SUMMARY = "seed 004: on-off traffic of live segmented HTTP streaming, many clients, four mitigations (Figs 3–8, 16)"
METRICS = ("liveness_mean_s", "liveness_min_s", "startup_mean_s", "drops", "stall_mean_s", "utilization",
           "retransmissions", "steady_retx_per_period", "quality_mean", "bitrate_mean_kbps", "startup_wait_mean_s",
           "request_delay_mean_s", "quality_high_share", "quality_first_min_mean", "quality_after_min_mean",
           "media_mbps")


def _labels(cfg: OnOffConfig, group: str) -> dict:
    return {"group": group, "config": cfg.label(), "cc": cfg.cc, "segment_s": cfg.segment_s,
            "distributed": cfg.distributed, "cwnd_limit": cfg.cwnd_limit, "clients": cfg.clients,
            "combination": cfg.combination(), "segments": cfg.segments, "queue_sample": cfg.queue_sample_s > 0}


def plan_points(scale: Scale) -> list[tuple[sweep.Point, OnOffConfig]]:
    """Every (configuration, seed) once; a configuration in several groups keeps its first."""
    seen: set = set()
    out = []
    for group, cfgs in configs(scale).items():
        seeds = scale.seeds[:GROUP_SEEDS[group]] if group in GROUP_SEEDS else scale.seeds
        for cfg in cfgs:
            for seed in seeds:
                if (cfg, seed) in seen:
                    continue
                seen.add((cfg, seed))
                out.append((sweep.Point(params={}, scenario=scenario(cfg, seed), seed=seed,
                                        labels=_labels(cfg, group)), cfg))
    return out


def aggregate(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean, min and max over seeds of each metric per configuration and client count."""
    r = runs[~runs["queue_sample"]]
    if r.empty:
        return pd.DataFrame(columns=["config", "clients", "group", "combination"])
    keys = ["config", "clients"]
    agg = r.groupby(keys)[list(METRICS)].agg(["mean", "min", "max"])
    agg.columns = [f"{m}_{s}" for m, s in agg.columns]
    agg = agg.reset_index()
    first = r.groupby(keys)[["group", "cc", "segment_s", "distributed", "cwnd_limit", "combination", "segments"]].first()
    agg = agg.merge(first.reset_index(), on=keys)
    agg["runs"] = r.groupby(keys).size().values
    combo_order = {c.combination(): i for i, c in enumerate(plan_combinations_order())}
    agg["order"] = agg["combination"].map(combo_order)
    # a configuration that is also one of Fig 16's settings at its client count belongs to the figure
    return agg


def plan_combinations_order() -> list[OnOffConfig]:
    from tcpvideo.studies.onoff.plan import combinations

    return combinations(0)


def _queue(res: sweep.SweepResult, runs: pd.DataFrame, label: str) -> Optional[pd.DataFrame]:
    rows = runs[(runs["queue_sample"]) & (runs["config"] == label)]
    if rows.empty:
        return None
    return res.store.table(rows["key"].iloc[0], "queue").to_pandas()


def build_figures(agg: pd.DataFrame, queues: dict, scale: Scale) -> list[Figure]:
    def by(labels: dict[str, str]) -> dict:
        return {shown: agg[agg["config"] == cfg] for shown, cfg in labels.items()}

    q = scale.queue_clients
    figs = [
        figures.comparison_figure("fig03_cubic", f"Fig 3: cubic — liveness, startup, drops vs clients; R1 queue at {q} clients",
                                  by({"cubic": "cubic+2s"}), {f"cubic, {q} clients": queues.get("cubic+2s")}),
        figures.comparison_figure("fig04_congestion_control", "Fig 4: bic, cubic, reno, vegas (and bbr, the modern peer)",
                                  by({cc: f"{cc}+2s" for cc in ("bic", "cubic", "reno", "vegas", "bbr")}),
                                  {f"vegas, {q} clients": queues.get("vegas+2s")}),
        figures.comparison_figure("fig05_segment_duration", "Fig 5: 2-second vs 10-second segments (cubic)",
                                  by({"2 s": "cubic+2s", "10 s": "cubic+10s"}), {f"10-s segments, {q} clients": queues.get("cubic+10s")}),
        figures.comparison_figure("fig07_distributed_requests", "Figs 6–7: regular vs distributed requests (cubic)",
                                  by({"regular": "cubic+2s", "distributed": "cubic+2s+distributed"}),
                                  {f"distributed, {q} clients": queues.get("cubic+2s+distributed")}),
        figures.comparison_figure("fig08_cwnd_limit", "Fig 8: cwnd limited to 20 packets (cubic)",
                                  by({"regular": "cubic+2s", "cwnd 20": "cubic+2s+cwnd20"}),
                                  {f"cwnd 20, {q} clients": queues.get("cubic+2s+cwnd20")},
                                  metrics=("liveness_mean_s", "drops", "startup_mean_s")),
    ]
    qlm = ("quality_mean", "liveness_mean_s", "drops")
    t = "+throughput-buf"
    figs += [
        figures.comparison_figure("fig10_adaptation_cc", "Fig 10: with adaptation — cubic vs vegas (1-segment buffer)",
                                  by({"cubic": f"cubic+2s{t}1", "vegas": f"vegas+2s{t}1"}), {}, metrics=qlm),
        figures.comparison_figure("fig11_adaptation_segments", "Fig 11: with adaptation — 2-s vs 10-s segments",
                                  by({"2 s": f"cubic+2s{t}1", "10 s": f"cubic+10s{t}1"}), {}, metrics=qlm),
    ]
    for fig_no, buf in ((12, 1), (13, 5), (14, 15)):
        figs.append(figures.comparison_figure(
            f"fig{fig_no}_adaptation_distributed_buffer{buf}",
            f"Fig {fig_no}: with adaptation — regular vs distributed requests, {buf}-segment buffer",
            by({"regular": f"cubic+2s{t}{buf}", "distributed": f"cubic+2s+distributed{t}{buf}"}), {}, metrics=qlm))
    figs.append(figures.comparison_figure("fig15_adaptation_cwnd_limit", "Fig 15: with adaptation — cwnd limited to 20",
                                          by({"regular": f"cubic+2s{t}1", "cwnd 20": f"cubic+2s+cwnd20{t}1"}), {},
                                          metrics=qlm))
    combos = agg[(agg["group"] == "combinations")]
    if not combos.empty:
        figs.append(figures.combinations_figure(
            "fig16_combinations", f"Fig 16: the 16 combinations at {scale.combo_clients} clients with adaptation "
            "(A = vegas, B = 10-s segments, C = distributed requests, D = cwnd limit)", combos))
    return figs


def evaluate(ev: claims_mod.Evidence) -> list[Claim]:
    out = []
    for claim, test in claims_mod.claims():
        if test is not None:
            try:
                test(ev, claim)
            except (IndexError, KeyError, ValueError, ZeroDivisionError):  # a reduced run has no runs for it
                claim.status, claim.ours, claim.why = claims_mod.NOT_RUN, "no runs for this claim in this run", ""
        if claim.status in ("reproduced", "not reproduced") and re.search(r"\bnan\b", claim.ours):
            # a partial run (stored runs only) lacks some of the claim's configurations: not judged
            claim.status, claim.why = claims_mod.NOT_RUN, "some of this claim's runs are not stored yet"
            claim.ours = f"incomplete: {claim.ours}"
        if claim.status == "not reproduced" and not claim.why:
            claim.why = claims_mod.NO_EXPERIMENT
        out.append(claim)
    return out


def timelines(res: sweep.SweepResult, runs: pd.DataFrame, seed: int) -> dict:
    """(config, clients) → retransmissions per segment period, for the first seed's run."""
    rows = runs[(~runs["queue_sample"]) & (runs["seed"] == seed)]
    return {(r["config"], int(r["clients"])): res.store.table(r["key"], "timeline")["retransmissions"].to_pylist()
            for _, r in rows.iterrows()}


def study_scale(full: bool = False, scale: Optional[Scale] = None, seeds: Optional[int] = None,
                groups: tuple[str, ...] = (), clients: tuple[int, ...] = (), explain: Optional[bool] = None) -> Scale:
    """The scale a run of the study uses, named after what was cut or added (see :func:`run`)."""
    scale = scale or (FULL if full else DEFAULT)
    if explain is not None and explain != scale.explain:
        scale = replace(scale, name=f"{scale.name}{' + explaining experiments' if explain else ', paper groups only'}",
                        explain=explain)
    if seeds is not None and seeds < len(scale.seeds):
        scale = replace(scale, name=f"{scale.name}, {seeds} of {len(scale.seeds)} seeds", seeds=scale.seeds[:seeds])
    if clients:
        scale = replace(scale, name=f"{scale.name}, clients {'/'.join(map(str, clients))}", clients=tuple(clients))
    if groups:
        scale = replace(scale, name=f"{scale.name}, groups {'/'.join(groups)}", groups=tuple(groups))
        configs(scale)  # an unknown group fails here, before any run
    return scale


def run(full: bool = False, out: os.PathLike | str = "studies/onoff", jobs: Optional[int] = None,
        ray_address: Optional[str] = None, progress: bool = True, scale: Optional[Scale] = None,
        seeds: Optional[int] = None, groups: tuple[str, ...] = (), clients: tuple[int, ...] = (),
        explain: Optional[bool] = None, stored_only: bool = False, base_code: Optional[str] = None) -> dict:
    """Run the study (resuming from ``out``) and write its report directory; returns report facts.
    ``seeds``: keep only the first N of the scale's seeds; ``groups``: run only these groups of
    :func:`plan.configs`; ``clients``: these client counts instead of the scale's (a reduced run,
    named so in the report; claims without runs are 'not run'); ``explain``: add (True) or leave
    out (False) the explaining experiments (default: the scale's — on at the default scale, off
    at ``--full``); ``stored_only``: run nothing, report on the runs already stored (a partial
    study, e.g. while ``bench/onoff_full_run.py`` is resumed over sessions); ``base_code``: see
    :func:`tcpvideo.sweep.run`."""
    scale = study_scale(full, scale, seeds, groups, clients, explain)
    if stored_only:
        scale = replace(scale, name=f"{scale.name}, stored runs only")
    out = Path(out)
    t0, c0 = time.perf_counter(), time.process_time()
    planned = plan_points(scale)
    # one sweep per segment duration: the reducer's loss timeline counts per segment period
    results, key_order = [], {}
    for d in sorted({cfg.segment_s for _, cfg in planned}):
        idx = [i for i, (_, cfg) in enumerate(planned) if cfg.segment_s == d]
        r = sweep.run([planned[i][0] for i in idx], out, jobs=jobs, ray_address=ray_address, reducer=reducer(d),
                      progress=progress, label=f"onoff {scale.name}, {d:g}-s segments", stored_only=stored_only,
                      base_code=base_code)
        key_order.update(zip(r.keys, idx))
        results.append(r)
    res = results[0]
    pts = [p for p, _ in planned]
    runs = pd.concat([r.table.to_pandas() for r in results if r.table.num_rows], ignore_index=True) \
        if any(r.table.num_rows for r in results) else pd.DataFrame()
    if runs.empty:
        raise RuntimeError(f"{out}: none of the {len(pts)} planned runs is stored yet (run without stored_only)")
    runs = runs.sort_values("key", key=lambda k: k.map(key_order)).reset_index(drop=True)
    sweep.write_results(pa.Table.from_pandas(runs, preserve_index=False), out)
    clients = []
    for _, row in runs.iterrows():
        if row["queue_sample"]:
            continue
        t = res.store.table(row["key"], "clients").to_pandas()
        for col in ("config", "clients", "seed", "key"):
            t.insert(0, col if col != "clients" else "n_clients", row[col])
        clients.append(t)
    per_client = pd.concat(clients, ignore_index=True) if clients else pd.DataFrame()
    is_long = runs["group"] == "long"
    agg = aggregate(runs[~is_long])
    queues = {lab: _queue(res, runs, lab) for lab in runs[runs["queue_sample"]]["config"].unique()}
    long_agg = aggregate(runs[is_long])
    if not long_agg.empty:
        long_agg["config"] = long_agg["config"].str.replace("+long", "", regex=False)
    ev = claims_mod.Evidence(agg=agg, queues=queues, timelines=timelines(res, runs, scale.seeds[0]), long=long_agg,
                             long_segments=scale.long_segments)
    figs = build_figures(agg, queues, scale)
    figs.append(figures.timeline_figure(
        "explain_losses", f"Where losses happen: retransmissions per segment period at {scale.queue_clients} clients "
        f"(seed {scale.seeds[0]}); start-up waves vs steady state", ev.timelines, scale.queue_clients,
        {"cubic": "cubic+2s", "vegas": "vegas+2s", "cwnd 20": "cubic+2s+cwnd20", "distributed": "cubic+2s+distributed",
         "bbr": "bbr+2s"}))
    found = evaluate(ev)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    sim_cpu = _children_cpu()
    facts = {
        "study": NAME, "scale": scale.name, "code_version": res.code, "runs": len(pts), "stored": len(runs),
        "ran_now": sum(r.ran for r in results), "reused": sum(r.reused for r in results),
        "clients": ", ".join(map(str, scale.clients)), "seeds": f"{scale.seeds[0]}–{scale.seeds[-1]}",
        "stream": f"{scale.segments_2s} × 2 s, {scale.segments_10s} × 10 s",
        "wall_s": round(wall, 1), "driver_cpu_s": round(cpu, 1), "workers_cpu_s": round(sim_cpu, 1),
        "jobs": jobs or sweep.default_jobs(), "executor": f"ray {ray_address}" if ray_address else "local process pool",
    }
    tables = {
        "runs": pa.Table.from_pandas(runs, preserve_index=False),
        "points": pa.Table.from_pandas(pd.concat([agg, long_agg.assign(config=long_agg["config"] + "+long")])
                                       if not long_agg.empty else agg, preserve_index=False),
        "clients": pa.Table.from_pandas(per_client, preserve_index=False),
        "claims": pa.Table.from_pylist([asdict(c) for c in found]),
    }
    for lab, q in queues.items():
        if q is not None:
            tables[f"queue_{lab.replace('+', '_')}"] = pa.Table.from_pandas(q, preserve_index=False)
    write_report(out / "report", f"tcpvideo study onoff ({scale.name} scale): seed 004 reproduced",
                 "Kupka, Halvorsen, Griwodz: 'Performance of On-Off Traffic Stemming From Live Adaptive "
                 "Segmented HTTP Video Streaming'. Method and deviations: docs/studies/onoff.md.",
                 found, figs, tables, facts, notes=NOTES)
    return {"facts": facts, "claims": found, "out": out / "report"}


def _children_cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


NOTES = [
    "Liveness is derived from the requests table for a one-segment, no-skip client "
    "(liveness = −max over segments of completion − availability); see metrics.py.",
    "Segments are constant-size (500 kbit/s × d); the paper streamed a VBR soccer match.",
    "TCP is tcpvideo's Linux-like TCP (SACK, RACK-TLP, PRR, slow start after idle, IW10, 200 ms min RTO), "
    "not ns-2's TCP/Linux; that difference is the first suspect where a trend differs.",
    "Figs 10–16 run the simulator's player with seed 004 §V's quality adaptation (the throughput rule: "
    "EWMA α = 0.1 of segment size / download time, the six qualities of Table I).",
    "Drops are counted over the whole run (stream + a tail for late clients); the default scale's stream is "
    "1 minute, the paper's 20 minutes, so compare trends and ratios, not absolute counts.",
]
