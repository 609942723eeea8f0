"""Seed 000's frame-type trends over many seeds (issue 16, session 12): Table 5's "voice frames have
the highest less-packet timeout share and no continuous loss" and Table 4's "I frames have the
highest loss rate", each a count over every seed's run, not one run's handful of RTOs.

Why many seeds: one ``--full`` run has 10–20 RTOs on its downloads (our RTOs per lost packet are
6–20× rarer than the seed's, docs/studies/crowdlive.md "Timeouts per lost packet"), and a voice
RTO needs a lost voice packet at the tail of a flight; a share of 1 of 2 says nothing. So each
seed's population is simulated, analyzed and scored as the study does, once per server setting:

    tlp_off    TLP/RACK off, GOP-cache join — the seed's 2015 front-end (§4 proposes adopting TLP)
    tlp_on     Linux's default TLP/RACK, GOP-cache join — the study's baseline
    wait_key   TLP/RACK on, viewers join at the channel's next I frame (nginx-rtmp ``wait_key``)
    seed_pauses  (opt-in, not in the default runs) ``tlp_off`` with the publishers' encoder pauses
               as frequent as the seed's upload stalls: §2.1 measures stall time = 31.6 % of the
               upload FCT, 93.5 % of it normal (encoder gaps); our pauses last 0.5–3 s (mean
               1.75 s), so one every 1.75 × (1 − 0.316) / 0.316 = 3.79 ≈ 3.8 s (default 15 s, 10.7 %
               of the FCT). Derived from §2.1 before the run, not from Table 5: §2.3 names the
               path from upload stalls to download timeouts ("lack of data will result in not
               enough duplicates to trigger fast retransmit"). Session 14.
    tlp_off_rack_on  (opt-in) TLP off, RACK on: a Linux 6.17+ front-end with TLP off, the seed's
               proposed mitigation measured on today's recovery. Session 16.
    ack_spikes (opt-in) ``tlp_off`` with delay spikes on every viewer's ACK path (population.py
               ``viewer_spike_every_s``). Numbers fixed before any run (session 17), from Larson et
               al. 2015's abstract — round-trip delays "of several seconds, often multiple times per
               hour" — and the 50–500 ms interruption of a handover: spike lengths exponential
               with mean 500 ms (the top of the handover range; the multi-second events are its
               tail), and a spike of 1 s or more 3 times an hour ("multiple"): with
               P(length ≥ 1 s) = e^-2 = 0.135 that is 22.2 spikes an hour, one every 162 s. The
               seed's viewers are not all moving; the paper finds spikes more frequent on moving
               nodes, so
    ack_spikes_moving  (opt-in) the same with 4× the rate (one every 40.5 s), a sensitivity, not a
               second estimate.
    viewer_queue_drops  (opt-in) ``tlp_off`` with no random loss on the viewers' paths
               (``viewer_loss_p = 0``): downloads lose packets only where a burst overflows the
               viewer's queue, the mechanism the seed gives for Table 5's continuous-loss row
               ("because different number of burst packets, the ratio of continuous loss for
               frame V is 0"). Session 17: in ``tlp_off`` every voice continuous loss (14 of 14,
               truth_drops.csv) came from a random-loss run, none from a full queue.
    viewer_independent_loss  (opt-in) ``tlp_off`` with the viewers' random loss uncorrelated
               (Bernoulli at the chain's stationary mean; population.py ``viewer_loss_independent``):
               stated before its first run (session 20) — Table 4's V ≈ P per-packet loss keeps,
               voice continuous loss (the chain's runs) mostly goes, queue drops stay.
    viewer_chain_in_time  (opt-in) ``tlp_off`` with the viewers' chain in time at its own scale
               (population.py ``viewer_chain_in_time``: Bad periods of two full packets' wire time):
               stated before its first run (session 21, docs/studies/crowdlive.md); the study's
               default since then, so on the study's scale it is ``tlp_off`` again.
    viewer_chain_per_packet  (opt-in) ``tlp_off`` with the viewers' per-packet chain (the default
               until session 21): its state holds across idle time.

and the counts are pooled. Each run keeps a small ``result.json`` (its pcaps are deleted); a
result whose parameters and tcpvideo version match is reused, so a study can be resumed or
re-printed without re-simulating (delete OUT to start over).

Tests, one-sided because the seed states a direction:
- less packet, V vs P and V vs I: Fisher's exact test on the 2×2 table (frame × less packet or
  not) of download RTOs, pooled over the seeds — exact because the counts are small;
- I first: in how many seeds the I loss rate is the highest of the three, and a sign test of
  that count against 1/3 (no ordering among the three types); pooled rates with their counts.

    python -m tcpvideo.studies.crowdlive.trends OUT [--full] [--seeds 1-20] [--runs tlp_off,tlp_on,wait_key] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import pandas as pd

from .population import ACK_SPIKE_EVERY_S, ACK_SPIKE_MS  # derivation: module comment, ack_spikes

FRAMES = ("I", "P", "V")
TIMEOUT_KINDS = ("tail", "less_packet", "double", "ack_delay_loss", "continuous_loss", "other")
# name → (server TLP/RACK on, viewer join, population overrides beyond the scale). "tlp_only_off":
# TLP off with RACK on (tcp.tlp = false), the only TLP-off server Linux 6.17+ can be.
SEED_PAUSE_EVERY_S = 3.8  # the seed's upload stall share (module comment, seed_pauses)
RUNS = {"tlp_off": (False, "gop_cache", {}), "tlp_on": (True, "gop_cache", {}), "wait_key": (True, "wait_key", {}),
        "seed_pauses": (False, "gop_cache", {"pause_every_s": SEED_PAUSE_EVERY_S}),
        "tlp_off_rack_on": ("tlp_only_off", "gop_cache", {}),
        "ack_spikes": (False, "gop_cache", {"viewer_spike_every_s": ACK_SPIKE_EVERY_S, "viewer_spike_ms": ACK_SPIKE_MS}),
        "ack_spikes_moving": (False, "gop_cache", {"viewer_spike_every_s": ACK_SPIKE_EVERY_S / 4,
                                                   "viewer_spike_ms": ACK_SPIKE_MS}),
        "viewer_queue_drops": (False, "gop_cache", {"viewer_loss_p": 0.0}),
        "viewer_independent_loss": (False, "gop_cache", {"viewer_loss_independent": True}),
        "viewer_chain_in_time": (False, "gop_cache", {"viewer_chain_in_time": True}),
        "viewer_chain_per_packet": (False, "gop_cache", {"viewer_chain_in_time": False})}
SERVER_TCP = {True: {}, False: {"rack_tlp": False}, "tlp_only_off": {"tlp": False}}
DEFAULT_RUNS = ("tlp_off", "tlp_on", "wait_key")
# `tcpvideo study crowdlive --seeds`: the default runs, ACK spikes and the other viewer-loss processes
STUDY_RUNS = DEFAULT_RUNS + ("ack_spikes", "viewer_queue_drops", "viewer_independent_loss", "viewer_chain_per_packet")


def fisher_greater(a: int, b: int, c: int, d: int) -> float:
    """One-sided Fisher exact p for the 2×2 table [[a, b], [c, d]]: the probability, with the
    margins fixed, of a first cell ≥ a (row 1's share of column 1 at least as far above row 2's
    as observed) under independence — the hypergeometric upper tail."""
    n1, k, n = a + b, a + c, a + b + c + d
    if n1 == 0 or k == 0:
        return 1.0
    den = math.comb(n, n1)
    return min(1.0, sum(math.comb(k, x) * math.comb(n - k, n1 - x) for x in range(a, min(k, n1) + 1)) / den)


def binom_greater(k: int, n: int, p: float) -> float:
    """P(X ≥ k) for X ~ Binomial(n, p): the sign test of 'I first in k of n seeds'."""
    return sum(math.comb(n, x) * p**x * (1 - p) ** (n - x) for x in range(k, n + 1))


def _download_flows(run_dir: Path, an_dir: Path) -> tuple[set, pd.Series]:
    fl = pd.read_csv(run_dir / "truth_flows.csv")
    af = pd.read_csv(an_dir / "flows.csv").set_index("flow_id")
    return set(fl.loc[fl["role"] == "subscribe", "flow"]), af["direction"]


def _timeout_table(frame: pd.Series, kind: pd.Series) -> dict:
    return {f: {k: int(((frame == f) & (kind == k)).sum()) for k in TIMEOUT_KINDS} for f in FRAMES}


def collect(run_dir: Path, an_dir: Path) -> dict:
    """One run's numbers: download RTO types per frame (analyzer and truth, TLP probes apart),
    download loss per frame (analyzer whole run; truth per phase), and the run's scoring."""
    from tcpvideo.score import score

    from . import _loss_by_phase

    subs, direction = _download_flows(run_dir, an_dir)
    rt = pd.read_csv(an_dir / "retransmissions.csv")
    rt = rt[(rt["kind"] == "timeout") & (rt["flow_id"].map(direction) == "download")]
    tt = pd.read_csv(run_dir / "truth_timeouts.csv")
    tt = tt[tt["flow"].isin(subs) & (tt["timeout_type"] != "tlp_probe")]
    ft = pd.read_csv(an_dir / "frame_types.csv").set_index("frame")
    phases = _loss_by_phase(run_dir)
    sc = score(an_dir, run_dir).summary()
    return {
        "timeouts": {"analyzer": _timeout_table(rt["frame"], rt["timeout_type"]),
                     "truth": _timeout_table(tt["frame"], tt["timeout_type"])},
        "loss": {"analyzer": {f: [int(ft.loc[f, "retrans_packets"]), int(ft.loc[f, "packets"])] if f in ft.index else [0, 0]
                              for f in FRAMES},
                 **{ph: {f: [d.get(f, {}).get("retrans", 0), d.get(f, {}).get("packets", 0)] for f in FRAMES}
                    for ph, d in ((ph, phases.get(ph, {})) for ph in ("join", "steady"))}},
        "score": sc,
    }


def run_one(out: str, scale: dict, seed: int, run: str) -> dict:
    """Simulate, analyze, score one seed under one server setting; cached in OUT/RUN_sSEED/result.json."""
    import tcpvideo

    from . import _analyze
    from .population import scenario

    tlp, join, pop = RUNS[run]
    params = {"scale": scale, "seed": seed, "run": run, "tlp": tlp, "join": join, "version": tcpvideo.__version__}
    if pop:  # only then: the runs cached before session 14 stay valid
        params["population"] = pop
    d = Path(out) / f"{run}_s{seed}"
    res_file = d / "result.json"
    if res_file.exists():
        old = json.loads(res_file.read_text())
        if old.get("params") == params:
            return old
    rd, ad = d / "run", d / "analysis"
    over = ({} if join == "gop_cache" else {"viewer_join": join}) | pop
    tcpvideo.simulate(scenario(seed=seed, tcp=SERVER_TCP[tlp], **{**scale, **over}), out=rd)
    _analyze(rd / "fe.pcap", ad)
    res = {"params": params, **collect(rd, ad)}
    for pc in rd.glob("*.pcap"):  # ~100 MB a --full run; the tables stay
        pc.unlink()
    shutil.rmtree(rd / "pcaps", ignore_errors=True)
    res_file.write_text(json.dumps(res, indent=1) + "\n")
    return res


def run_many(out, scale: dict, seeds: list[int], runs=DEFAULT_RUNS, jobs: int = 1, progress=print) -> dict:
    """Every (run, seed), ``jobs`` at a time (each a simulation then an analyzer subprocess) →
    {run: [result per seed, in seed order]}."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    todo = [(r, s) for r in runs for s in seeds]
    res: dict = {r: {} for r in runs}
    if jobs <= 1:
        for r, s in todo:
            res[r][s] = run_one(str(out), scale, s, r)
            if progress:
                progress(f"{r} seed {s}: {line(res[r][s])}")
    else:
        # spawn, not fork: the parent may hold the Rust core's threads.
        with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as ex:
            futs = {ex.submit(run_one, str(out), scale, s, r): (r, s) for r, s in todo}
            for f, (r, s) in futs.items():
                res[r][s] = f.result()
                if progress:
                    progress(f"{r} seed {s}: {line(res[r][s])}")
    return {r: [res[r][s] for s in seeds] for r in runs}


def _rate(rp) -> float | None:
    return rp[0] / rp[1] if rp[1] else None


def line(res: dict) -> str:
    """One run in one line: timeouts per frame, less packet / continuous, loss I/P/V, scoring."""
    a = res["timeouts"]["analyzer"]
    sc = res["score"]
    lo = res["loss"]
    fmt = lambda d: " / ".join(f"{f} {100 * (_rate(d[f]) or 0):.2f}" for f in FRAMES)  # noqa: E731
    return (", ".join(f"{f} {a[f]['less_packet']}/{sum(a[f].values())} less" for f in FRAMES)
            + f", V continuous {a['V']['continuous_loss']}; loss whole run {fmt(lo['analyzer'])} %, steady {fmt(lo['steady'])} %"
            + f"; timeouts agree {sc['timeout_type_agreement']} of {sc['timeout_pairs']}")


def pool_timeouts(results: list[dict], side: str) -> dict:
    return {f: {k: sum(r["timeouts"][side][f][k] for r in results) for k in TIMEOUT_KINDS} for f in FRAMES}


def less_packet(results: list[dict], side: str = "analyzer") -> dict:
    """Pooled less-packet share per frame, V continuous loss, and the one-sided Fisher tests."""
    c = pool_timeouts(results, side)
    n = {f: sum(c[f].values()) for f in FRAMES}
    less = {f: c[f]["less_packet"] for f in FRAMES}
    out = {"less": less, "n": n, "share": {f: less[f] / n[f] if n[f] else None for f in FRAMES},
           "v_continuous": c["V"]["continuous_loss"], "counts": c}
    for o in ("P", "I"):
        out[f"p_V_gt_{o}"] = fisher_greater(less["V"], n["V"] - less["V"], less[o], n[o] - less[o])
    s = out["share"]
    out["v_highest"] = s["V"] is not None and all(s[o] is None or s["V"] > s[o] for o in ("I", "P"))
    return out


def i_first(results: list[dict], phase: str = "analyzer") -> dict:
    """Seeds whose I loss rate (``phase``: analyzer whole run, or truth join / steady) is the
    highest of the three; the sign test against 1/3; pooled rates with counts; per seed, which is first."""
    first = []
    for r in results:
        rates = {f: _rate(r["loss"][phase][f]) or 0.0 for f in FRAMES}
        top = [f for f in FRAMES if rates[f] == max(rates.values())]
        first.append(top[0] if len(top) == 1 else "=")  # a tie (no loss at all included) is no one's
    k, n = first.count("I"), len(results)
    pooled = {f: [sum(r["loss"][phase][f][i] for r in results) for i in (0, 1)] for f in FRAMES}
    return {"i_first": k, "seeds": n, "first": first, "p_sign": binom_greater(k, n, 1 / 3), "pooled": pooled,
            "pooled_i_highest": (_rate(pooled["I"]) or 0) > max(_rate(pooled["P"]) or 0, _rate(pooled["V"]) or 0)}


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def describe_less(lp: dict) -> str:
    return (", ".join(f"{f} {lp['less'][f]}/{lp['n'][f]} ({_pct(lp['share'][f])})" for f in FRAMES)
            + f"; V continuous {lp['v_continuous']}/{lp['n']['V']}; Fisher one-sided V > P p = {lp['p_V_gt_P']:.3g}, "
            f"V > I p = {lp['p_V_gt_I']:.3g}")


def describe_i(fi: dict) -> str:
    pr = fi["pooled"]
    return (f"I first in {fi['i_first']} of {fi['seeds']} seeds (sign test vs 1/3: p = {fi['p_sign']:.3g}; first per seed "
            + "".join(fi["first"]) + "); pooled " + ", ".join(f"{f} {100 * (_rate(pr[f]) or 0):.2f} % ({pr[f][0]}/{pr[f][1]})"
                                                             for f in FRAMES))


def agreement(results: list[dict]) -> tuple[float | None, int]:
    """Timeout-type agreement pooled over the runs (pairs-weighted)."""
    w = sum(r["score"]["timeout_pairs"] for r in results)
    s = sum((r["score"]["timeout_type_agreement"] or 0) * r["score"]["timeout_pairs"] for r in results)
    return (s / w if w else None), w


def v_less_claim(res: dict) -> tuple[str, str]:
    """(text, status) of Table 5's voice claim on the seed's server (``tlp_off``) over the seeds:
    reproduced when, by the analyzer and by the truth alike, V's less-packet share is the highest,
    V > P is significant (one-sided Fisher p < 0.05) and no V RTO is a continuous loss; partly
    when the analyzer has the direction and no V continuous loss without the significance, or when
    the whole claim holds only in the ``viewer_queue_drops`` run (the viewers' paths drop only at
    their queues, the seed's mechanism), the ``viewer_independent_loss`` run (their random loss
    uncorrelated) or the ``viewer_chain_per_packet`` run; the default population's correlated
    random loss is our choice."""
    from tcpvideo.studies.report import NOT_REPRODUCED, PARTLY, REPRODUCED

    rs = res["tlp_off"]
    sides = {side: less_packet(rs, side) for side in ("analyzer", "truth")}
    text = (f"{len(rs)} seeds pooled, TLP/RACK off, download RTOs: analyzer "
            + describe_less(sides["analyzer"]) + "; truth " + describe_less(sides["truth"]))
    if "tlp_on" in res:
        text += "; TLP on (analyzer): " + describe_less(less_packet(res["tlp_on"]))
    if "seed_pauses" in res:
        text += ("; TLP off with encoder pauses at the seed's upload stall share (every "
                 f"{SEED_PAUSE_EVERY_S} s, analyzer): " + describe_less(less_packet(res["seed_pauses"])))

    def holds(lp, significant):
        return lp["v_highest"] and lp["v_continuous"] == 0 and (not significant or lp["p_V_gt_P"] < 0.05)

    if all(holds(lp, True) for lp in sides.values()):
        return text, REPRODUCED
    other_loss = False
    for run, label in (("viewer_queue_drops", "viewer paths dropping only at their queues"),
                       ("viewer_independent_loss", "the viewers' random loss uncorrelated (Bernoulli at the chain's mean)"),
                       ("viewer_chain_per_packet", "the viewers' per-packet chain (the default before session 21)")):
        if run in res:
            q = {side: less_packet(res[run], side) for side in ("analyzer", "truth")}
            text += (f"; TLP off, {label} ({run}): analyzer " + describe_less(q["analyzer"])
                     + "; truth " + describe_less(q["truth"]))
            other_loss |= all(holds(lp, True) for lp in q.values())
    return text, PARTLY if holds(sides["analyzer"], False) or other_loss else NOT_REPRODUCED


def ack_delay_claim(res: dict) -> tuple[str, str] | None:
    """(text, status) of Table 5's "for I and P the ratios of ACK delay/loss timeout retransmission
    are much higher than that for V" over the seeds of the ``ack_spikes`` run (None without it):
    reproduced when V's ACK delay/loss share of its RTOs is below I's and P's and P > V is
    significant (one-sided Fisher p < 0.05), partly with the direction alone."""
    from tcpvideo.studies.report import NOT_REPRODUCED, PARTLY, REPRODUCED

    if "ack_spikes" not in res:
        return None
    c = pool_timeouts(res["ack_spikes"], "analyzer")
    n = {f: sum(c[f].values()) for f in FRAMES}
    a = {f: c[f]["ack_delay_loss"] for f in FRAMES}
    share = {f: a[f] / n[f] if n[f] else None for f in FRAMES}
    p = fisher_greater(a["P"], n["P"] - a["P"], a["V"], n["V"] - a["V"])
    text = (f"{len(res['ack_spikes'])} seeds pooled, ack_spikes (TLP/RACK off), analyzer: ACK delay/loss "
            + ", ".join(f"{f} {a[f]}/{n[f]} ({_pct(share[f])})" for f in FRAMES) + f"; Fisher one-sided P > V p = {p:.3g}")
    below = all(share[f] is not None for f in FRAMES) and share["V"] < min(share["I"], share["P"])
    return text, (REPRODUCED if below and p < 0.05 else PARTLY if below else NOT_REPRODUCED)


def i_loss_claim(res: dict) -> tuple[str, str]:
    """(text, status) of Table 4's "I frames the highest loss rate" over the seeds with the
    default GOP-cache join (``tlp_on``, the study's baseline): reproduced when the pooled whole-run
    I rate (analyzer) is the highest and I is first in more than half of the seeds; partly when
    that holds in the steady state (truth) or with the ``wait_key`` join."""
    from tcpvideo.studies.report import NOT_REPRODUCED, PARTLY, REPRODUCED

    def holds(fi):
        return fi["pooled_i_highest"] and 2 * fi["i_first"] > fi["seeds"]

    parts, partly = [], False
    for run, lab in (("tlp_on", "GOP-cache join"), ("wait_key", "wait_key join")):
        if run not in res:
            continue
        whole, steady = i_first(res[run], "analyzer"), i_first(res[run], "steady")
        parts.append(f"{lab}: whole run (analyzer) {describe_i(whole)}; steady state (truth) {describe_i(steady)}")
        partly |= holds(steady) or (run == "wait_key" and holds(whole))
    text = f"{len(res.get('tlp_on', []))} seeds, TLP on: " + "; ".join(parts)
    if "tlp_on" in res and holds(i_first(res["tlp_on"], "analyzer")):
        return text, REPRODUCED
    return text, PARTLY if partly else NOT_REPRODUCED


def table(res: dict) -> pd.DataFrame:
    """One row per (run, seed): download RTOs per frame and type (analyzer ``an_``, truth ``tr_``),
    loss counts per frame (analyzer whole run, truth steady / join), scoring."""
    rows = []
    for run, rs in res.items():
        for r in rs:
            row = {"run": run, "seed": r["params"]["seed"]}
            for side, pre in (("analyzer", "an"), ("truth", "tr")):
                for f in FRAMES:
                    for k in TIMEOUT_KINDS:
                        row[f"{pre}_{f}_{k}"] = r["timeouts"][side][f][k]
            for ph in ("analyzer", "steady", "join"):
                for f in FRAMES:
                    row[f"{ph}_{f}_retrans"], row[f"{ph}_{f}_packets"] = r["loss"][ph][f]
            row.update({f"score_{k}": v for k, v in r["score"].items()})
            rows.append(row)
    return pd.DataFrame(rows)


def report(res: dict) -> list[str]:
    """The pooled tables as text lines (the study's claims carry the same numbers)."""
    lines = []
    for run, rs in res.items():
        ag, w = agreement(rs)
        lines.append(f"== {run} ({len(rs)} seeds): timeout types agree {_pct(ag)} of {w}")
        for side in ("analyzer", "truth"):
            lines.append(f"  less packet ({side}): " + describe_less(less_packet(rs, side)))
        for ph, lab in (("analyzer", "whole run (analyzer)"), ("steady", "steady state (truth)"), ("join", "join (truth)")):
            lines.append(f"  loss {lab}: " + describe_i(i_first(rs, ph)))
        ct = pd.DataFrame(pool_timeouts(rs, "analyzer")).T
        lines.append("  analyzer RTO types per frame (pooled):\n    " + ct.to_string().replace("\n", "\n    "))
    return lines


def main(argv=None) -> None:
    from tcpvideo.sweep.grid import parse_seeds

    from . import DEFAULT, FULL

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--seeds", default="1-3", help="1-20, 1,3,5 or 1-3,7")
    ap.add_argument("--runs", default=",".join(DEFAULT_RUNS), help="of " + ", ".join(RUNS))
    ap.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args(argv)
    runs = [r for r in a.runs.split(",") if r]
    bad = [r for r in runs if r not in RUNS]
    if bad:
        ap.error(f"--runs: unknown {', '.join(bad)} (known: {', '.join(RUNS)})")
    res = run_many(a.out, dict(FULL if a.full else DEFAULT), parse_seeds(a.seeds), runs, a.jobs, progress=lambda s: print(s, flush=True))
    print("\n".join(report(res)))


if __name__ == "__main__":
    main()
