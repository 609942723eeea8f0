"""Kernel ports vs simulator twins: cwnd over a run of each BPF congestion control in bpf/ and of
the model algorithm it mirrors, on the same path and loss (issue 15).

Each CC carries one bulk flow through the congestion-control suite's loss case
(``scenarios/cc_loss_100ms.toml``: 100 Mbit/s, 100 ms RTT, 1 % Bernoulli loss, BDP queue) twice:
in tcpvideo's simulator (the model algorithm: ccp, ccplca, ccplb, compound) and on real Linux
TCP through ``tcpvideo emulate`` (namespaces, linkem; the scenario's ``cc`` resolves to the
registered BPF twin tv_NAME). The cwnd series of both runs (the simulator's samples and the
kernel's TCP_INFO, the struct ``ss -ti`` prints, every 100 ms) are paired by time; the figure of
merit is the median of real/simulated cwnd over the run after ``--skip`` seconds, which must lie
within ±15 % (issue 15). The loss is content-keyed by default (``--loss-model keyed``,
crates/sim/src/keyed_loss.rs): a data segment is lost iff a hash of (seed, connection, relative
sequence number, n-th transmission) is under p·2^64, in the simulator and in linkem alike, so both
runtimes lose the same segments whatever the timing (``--loss-model bernoulli``: one draw per
packet in arrival order, which differ between the runtimes as soon as one packet differs). Next
to it the script prints the metric's noise floor: the simulator against itself on another loss
pattern (seed + 1000: another keyed key); with ``--kernel-twice`` also the kernel against itself
(the same scenario and seed emulated a second time: keyed loss drops the same segments, so what
differs is the kernel's own timing — session 11: CCP's law amplifies it to a factor ~2 between
two kernel runs, CCPLB and Compound stay within 8 %). With ``--kernel-runs N`` each case is emulated N
times and the script prints, beside the per-seed ratio, CCP's well-posed must-show: the simulator's
mean cwnd ranked among the N kernel runs of each seed, and a rank-sum test over the seeds of the
hypothesis "the simulator is one more kernel run" (rejected at p < 0.05; its false-fail rate is
then below 5 % whatever the kernel's scatter). CCPLCA gets a video rate (``--video-rate``) so that its floor acts, and
CCPLB its POB / POBRate, through ``cc_params`` in the simulator and the per-socket app info in
the kernel (tcpvideo.bpf.set_app_info).

``--ensemble N`` (bench/README.md, session 18) poses the must-show so that a chaotic law can meet
or fail it: per seed, N kernel runs of the unchanged scenario against N simulator runs whose access
delay is lengthened by k·10 µs/N (k = 0…N−1; the emulated path's unmodelled latency is of that
order, and the keyed losses do not move with it), each run reduced to its median cwnd; per seed the
ratio of medians and an exact Mann–Whitney p, pooled the ratio of medians and a stratified rank-sum
p; a CC passes iff the pooled ratio is within ±15 % and the pooled p ≥ 0.05 (criterion stated in
bench/README.md before any result). ``--sim-jitter-us X`` (session 18) replaces the simulator runs'
delay shifts by per-packet delay jitter of mean X µs on every link direction (crates/sim/src/delay_jitter.rs),
run k from jitter stream k + 1 (same keyed losses); ``--kernel-summary`` compares them with saved
kernel runs instead of emulating (bench/linkem_owd.py measures the emulated path's jitter).

Root, clang, bpftool, libbpf headers. Loads the ports it needs and unloads them afterwards.
The link emulators run SCHED_FIFO (``--rt-priority``, default 10) so that other load on the
machine delays them less; the load average is printed next to the numbers.

    python bench/bpf_vs_sim_cwnd.py                       # ccp compound ccplb ccplca, 20 s each
    python bench/bpf_vs_sim_cwnd.py --cc ccp compound --duration 10 --seeds 1 2 3
    python bench/bpf_vs_sim_cwnd.py --cc ccp --seeds 1 2 3 --kernel-runs 5   # CCP's rank-sum must-show
    python bench/bpf_vs_sim_cwnd.py --cc ccp compound --seeds 1 2 3 --ensemble 5   # ensembles on both sides
    python bench/bpf_vs_sim_cwnd.py --cc ccp --seeds 1 2 3 --ensemble 10 --sim-jitter-us 20 \
        --kernel-summary OUT/ccp-s*-n10/summary.json          # jittered simulator vs saved kernel runs
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import os
import statistics
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

import tcpvideo  # noqa: E402
from tcpvideo import bpf  # noqa: E402

SCENARIO = ROOT / "scenarios" / "cc_loss_100ms.toml"
BOUND = 0.15
RANK_ALPHA = 0.05  # the rank-sum must-show's false-fail rate when the simulator is a kernel run
# The ensemble's simulator runs lengthen the access link's one-way delay by k·SHIFT_SPAN_NS/N, k = 0…N−1:
# the emulated path's latency beyond its configured delays (veth, TUN, linkem's wake-up) is of this
# order and not known more precisely (bench/README.md, session 18).
SHIFT_SPAN_NS = 10_000
ACCESS_DELAY_NS = 1_000_000  # the loss case's access link (server-router), scenarios/cc_loss_100ms.toml
MSS = 1448


def scenario_for(cc: str, duration_s: float, seed: int, video_rate_mbps: float, pob: float, pob_rate: float,
                 loss: float = 0.01, loss_model: str = "keyed") -> dict:
    sc = tomllib.loads(SCENARIO.read_text())
    if loss > 0:
        sc["link"][1]["loss"] = {"model": loss_model, "p": loss}
    else:
        del sc["link"][1]["loss"]
    sc["duration"] = f"{duration_s}s"
    sc["seed"] = seed
    sc["name"] = f"cc_loss_100ms-{cc}"
    tcp = {"cc": cc}
    if cc == "ccplca":
        tcp["cc_params"] = {"video_rate_mbps": video_rate_mbps}
    elif cc == "ccplb":
        tcp["cc_params"] = {"pob_segments": pob, "pob_rate": pob_rate}
    sc["flow"][0]["tcp"] = tcp
    return sc


def cwnd_series(res) -> list[tuple[float, float]]:
    t = res.series.to_pydict()
    return [(ts, c) for ts, f, c in zip(t["t_s"], t["flow"], t["cwnd_bytes"]) if f == 0 and c is not None]


def median_ratio(real: list[tuple[float, float]], sim: list[tuple[float, float]], skip_s: float) -> tuple[float, int]:
    """Median of real/sim cwnd, each real sample paired with the simulator's nearest in time."""
    if not sim:
        return float("nan"), 0
    ratios = []
    j = 0
    for ts, c in real:
        if ts < skip_s:
            continue
        while j + 1 < len(sim) and abs(sim[j + 1][0] - ts) <= abs(sim[j][0] - ts):
            j += 1
        if sim[j][1] > 0:
            ratios.append(c / sim[j][1])
    return (statistics.median(ratios) if ratios else float("nan")), len(ratios)


def loss_reductions(series: list[tuple[float, float]], skip_s: float, drop: float = 0.8) -> list[float]:
    """Window after each loss episode over the window before it, from a cwnd series.

    An episode starts where cwnd falls below ``drop`` x the previous sample and ends at the first
    sample that does not fall further; its reduction is that sample over the last one before the
    fall (Reno and Compound at small windows: 0.5, or 0.25 for two episodes back to back). This is
    the loss reaction itself, which unlike the cwnd level does not depend on when the random
    losses fell.
    """
    out = []
    i = 1
    while i < len(series):
        if series[i][0] >= skip_s and series[i - 1][1] > 0 and series[i][1] < drop * series[i - 1][1]:
            before, j = series[i - 1][1], i
            while j + 1 < len(series) and series[j + 1][1] < series[j][1]:
                j += 1
            out.append(series[j][1] / before)
            i = j + 1
        else:
            i += 1
    return out


def kernel_runs(args) -> int:
    """How many times each case is emulated (--kernel-runs; --kernel-twice means at least 2)."""
    return max(args.kernel_runs, 2 if args.kernel_twice else 1)


def sim_rank(sim_mean: float, kernel_means: list[float]) -> float:
    """The simulator's rank among the kernel's runs: how many runs have a smaller mean cwnd (ties 1/2)."""
    return sum(1.0 if k < sim_mean else 0.5 if k == sim_mean else 0.0 for k in kernel_means)


def rank_sum_p(ranks: list[float], n: int) -> float:
    """Two-sided p-value of the sum of the simulator's ranks over seeds, under "the simulator is one more
    kernel run" (exchangeable with them): each seed's rank is then uniform on 0..n, independently.

    This is the CCP must-show that stays well-posed when the kernel scatters run to run (session 11:
    a factor 2 between two kernel runs on the same losses, so one kernel run against the simulator is a
    coin toss): it fails only when the simulator sits on one side of the kernel's runs on most seeds.
    """
    dist = [1.0]
    for _ in ranks:
        nxt = [0.0] * (len(dist) + n)
        for i, p in enumerate(dist):
            for r in range(n + 1):
                nxt[i + r] += p / (n + 1)
        dist = nxt
    total = sum(ranks)
    lo = sum(p for i, p in enumerate(dist) if i <= total)
    hi = sum(p for i, p in enumerate(dist) if i >= total)
    return min(1.0, 2 * min(lo, hi))


def delay_shifts_ns(n: int, span_ns: int = SHIFT_SPAN_NS) -> list[int]:
    """The ensemble's simulator runs: run k's access delay is lengthened by k·span/n, k = 0…n−1."""
    return [k * span_ns // n for k in range(n)]


def with_access_delay_shift(sc: dict, shift_ns: int) -> dict:
    """The scenario with its access link's one-way delay (both directions) lengthened by shift_ns."""
    access = sc["link"][0]
    if access["name"] != "access" or access["delay"] != "1ms":
        raise ValueError(f"expected the loss case's 1-ms access link first, found {access}")
    out = copy.deepcopy(sc)
    out["link"][0]["delay"] = f"{ACCESS_DELAY_NS + shift_ns}ns"
    return out


def with_jitter(sc: dict, mean_ns: int, seed: int) -> dict:
    """The scenario with per-packet delay jitter (crates/sim/src/delay_jitter.rs: exponential extra
    delay of mean mean_ns, order preserved) on every direction of every link, from jitter stream seed."""
    out = copy.deepcopy(sc)
    for link in out["link"]:
        link["jitter"] = {"mean": f"{mean_ns}ns", "seed": seed}
    return out


def run_median_cwnd(series: list[tuple[float, float]], skip_s: float) -> float:
    """One run's statistic in the ensemble: its median cwnd in segments over the samples after skip_s."""
    xs = [c for t, c in series if t >= skip_s]
    return statistics.median(xs) / MSS if xs else float("nan")


def _u_doubled(x: list[float], y: list[float]) -> int:
    """2·U of x against y (Mann–Whitney: pairs with x above y, ties counted 1/2), doubled to stay an integer."""
    return sum(2 if a > b else 1 if a == b else 0 for a in x for b in y)


def _u_null(x: list[float], y: list[float]) -> dict[int, int]:
    """The exact null distribution of 2·U: every way of splitting the pooled values into len(x) and len(y).

    C(2N, N) splits: 252 at N = 5, 184 756 at N = 10 (~1 s per seed); beyond N ≈ 12 it is too slow.
    """
    pooled = x + y
    dist: dict[int, int] = {}
    for idx in itertools.combinations(range(len(pooled)), len(x)):
        chosen = set(idx)
        u = _u_doubled([pooled[i] for i in idx], [pooled[i] for i in range(len(pooled)) if i not in chosen])
        dist[u] = dist.get(u, 0) + 1
    return dist


def stratified_rank_sum_p(groups: list[tuple[list[float], list[float]]]) -> float:
    """Two-sided exact p of the Mann–Whitney U summed over strata (one stratum: the plain rank-sum test).

    Each group is (kernel runs, simulator runs) of one seed; under the null the runs of a seed are
    exchangeable, so each seed's U has its own exact permutation distribution (ties as mid-ranks,
    conditional on the observed values) and the sum's is their convolution. The p-value counts the
    outcomes at least as far from the null's mean as the one observed.
    """
    dist = {0: 1.0}
    observed = 0
    for x, y in groups:
        null = _u_null(x, y)
        total = sum(null.values())
        nxt: dict[int, float] = {}
        for a, pa in dist.items():
            for b, nb in null.items():
                nxt[a + b] = nxt.get(a + b, 0.0) + pa * nb / total
        dist = nxt
        observed += _u_doubled(x, y)
    centre = sum(len(x) * len(y) for x, y in groups)  # E[2·U] = n·m per stratum
    far = abs(observed - centre)
    return min(1.0, sum(p for u, p in dist.items() if abs(u - centre) >= far - 1e-9))


def ratio_of_medians(kernel: list[float], sim: list[float]) -> float:
    return statistics.median(kernel) / statistics.median(sim)


def ensemble_verdict(ratio: float, p: float) -> str:
    """The criterion of bench/README.md (session 18): ratio of medians within ±15 % and rank-sum p ≥ 0.05."""
    bad = ([f"ratio {ratio:.3f} outside ±{BOUND:.0%}"] if abs(ratio - 1) > BOUND else []) + (
        [f"rank-sum p {p:.3f} < {RANK_ALPHA}"] if p < RANK_ALPHA else [])
    return "PASS" if not bad else "FAIL (" + "; ".join(bad) + ")"


def ensemble_sim(cc: str, args, seed: int) -> dict:
    """The simulator side of one seed's ensemble: N runs, run k's access delay lengthened by shift k, or
    with --sim-jitter-us every run unshifted with per-packet jitter from jitter stream k + 1."""
    sc = scenario_for(cc, args.duration, seed, args.video_rate, args.pob, args.pob_rate, args.loss, args.loss_model)
    out = Path(args.out) / f"{cc}-seed{seed}"
    jitter_ns = round(args.sim_jitter_us * 1000)
    shifts = [0] * args.ensemble if jitter_ns else delay_shifts_ns(args.ensemble)
    medians = []
    for k, shift in enumerate(shifts):
        run = with_access_delay_shift(sc, shift)
        if jitter_ns:
            run = with_jitter(run, jitter_ns, k + 1)
        res = tcpvideo.simulate(run, out=out / (f"sim_jitter{k}" if jitter_ns else f"sim_shift{k}"))
        medians.append(run_median_cwnd(cwnd_series(res), args.skip))
    row = {"cc": cc, "seed": seed, "sim_shifts_ns": shifts, "sim_run_median_cwnd_segments": medians}
    if jitter_ns:
        row.update(sim_jitter_mean_ns=jitter_ns, sim_jitter_seeds=list(range(1, args.ensemble + 1)))
    return row


def ensemble_kernel(cc: str, args, seed: int) -> dict:
    """The kernel side of one seed's ensemble: the unchanged scenario emulated N times, each with the load."""
    from tcpvideo.emulate import emulate

    sc = scenario_for(cc, args.duration, seed, args.video_rate, args.pob, args.pob_rate, args.loss, args.loss_model)
    out = Path(args.out) / f"{cc}-seed{seed}"
    medians, loads = [], []
    for k in range(args.ensemble):
        res = emulate(copy.deepcopy(sc), out=out / f"real_{k}", log=lambda m: None, rt_priority=args.rt_priority)
        medians.append(run_median_cwnd(cwnd_series(res), args.skip))
        loads.append(os.getloadavg()[0])
    return {"kernel": f"tv_{cc}", "kernel_run_median_cwnd_segments": medians, "kernel_load_avg_1min": loads}


def print_ensemble(rows: list[dict]) -> None:
    """The per-seed table and, per CC, the pooled verdict under bench/README.md's criterion."""
    def spread(xs: list[float]) -> str:
        return f"{min(xs):6.1f} {statistics.median(xs):6.1f} {max(xs):6.1f}"

    print(f"\n{'cc':<9} {'seed':>4}  {'kernel min/med/max':>20}  {'sim min/med/max':>20}  {'ratio':>6}  "
          f"{'p':>6}  load")
    for r in rows:
        k, s = r["kernel_run_median_cwnd_segments"], r["sim_run_median_cwnd_segments"]
        loads = r["kernel_load_avg_1min"]
        print(f"{r['cc']:<9} {r['seed']:>4}  {spread(k):>20}  {spread(s):>20}  {ratio_of_medians(k, s):6.3f}  "
              f"{stratified_rank_sum_p([(k, s)]):6.3f}  {min(loads):.1f}-{max(loads):.1f}")
    print(f"\npooled per CC (criterion: ratio of medians within ±{BOUND:.0%} and stratified rank-sum "
          f"p ≥ {RANK_ALPHA}):")
    for cc in dict.fromkeys(r["cc"] for r in rows):
        mine = [r for r in rows if r["cc"] == cc]
        k = [x for r in mine for x in r["kernel_run_median_cwnd_segments"]]
        s = [x for r in mine for x in r["sim_run_median_cwnd_segments"]]
        ratio = ratio_of_medians(k, s)
        p = stratified_rank_sum_p([(r["kernel_run_median_cwnd_segments"], r["sim_run_median_cwnd_segments"])
                                   for r in mine])
        print(f"  {cc:<9} seeds {' '.join(str(r['seed']) for r in mine)}, {len(k)} kernel vs {len(s)} simulator runs: "
              f"kernel {spread(k)}, simulator {spread(s)}; ratio of medians {ratio:.3f}, p = {p:.3f}: "
              f"{ensemble_verdict(ratio, p)}")


def run_ensembles(args) -> None:
    """--ensemble N: every simulator ensemble first (no root needed), then the kernel runs."""
    rows = [ensemble_sim(cc, args, seed) for cc in args.cc for seed in args.seeds]
    for r in rows:
        shifts = " +".join(f"{x / 1000:g}" for x in r["sim_shifts_ns"])
        how = (f"jitter mean {r['sim_jitter_mean_ns'] / 1000:g} µs per link direction, jitter seeds "
               f"{r['sim_jitter_seeds'][0]}…{r['sim_jitter_seeds'][-1]}" if "sim_jitter_mean_ns" in r
               else f"access delay +{shifts} µs")
        print(f"simulator {r['cc']:<9} seed {r['seed']}: median cwnd per run ({how}) "
              f"{' '.join(f'{x:.1f}' for x in r['sim_run_median_cwnd_segments'])}", flush=True)
    if args.kernel_summary:
        kernel = {(r["cc"], r["seed"]): r for f in args.kernel_summary for r in json.loads(Path(f).read_text())}
        for r in rows:
            k = kernel.get((r["cc"], r["seed"]))
            if k is None:
                sys.exit(f"error: no saved kernel runs of {r['cc']} seed {r['seed']} in --kernel-summary")
            r.update({key: k[key] for key in ("kernel", "kernel_run_median_cwnd_segments", "kernel_load_avg_1min")})
    elif args.sim_only:
        return
    else:
        why = bpf.missing()
        if why:
            sys.exit(f"error: {why}")
        names = sorted({bpf.resolve(c).name for c in args.cc})
        bpf.load(names)
        try:
            for r in rows:
                r.update(ensemble_kernel(r["cc"], args, r["seed"]))
                print(f"{r['kernel']:>12} seed {r['seed']}: median cwnd per run "
                      f"{' '.join(f'{x:.1f}' for x in r['kernel_run_median_cwnd_segments'])} (load "
                      f"{' '.join(f'{x:.1f}' for x in r['kernel_load_avg_1min'])})", flush=True)
        finally:
            bpf.unload(names)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "summary.json").write_text(json.dumps(rows, indent=1))
    print_ensemble(rows)


def run_one(cc: str, args, seed: int) -> dict:
    from tcpvideo.emulate import emulate

    sc = scenario_for(cc, args.duration, seed, args.video_rate, args.pob, args.pob_rate, args.loss, args.loss_model)
    out = Path(args.out) / f"{cc}-seed{seed}"
    sim = tcpvideo.simulate(copy.deepcopy(sc), out=out / "sim")
    real = emulate(copy.deepcopy(sc), out=out / "real", log=lambda m: None, rt_priority=args.rt_priority)
    s, r = cwnd_series(sim), cwnd_series(real)
    ratio, n = median_ratio(r, s, args.skip)
    # The metric's noise floor: the same model against itself on another loss pattern (seed +
    # 1000). With Bernoulli loss the kernel and the simulator lose different segments, so a
    # kernel/simulator ratio can be no tighter than this; with keyed loss they lose the same ones.
    other = copy.deepcopy(sc)
    other["seed"] = seed + 1000
    noise, _ = median_ratio(cwnd_series(tcpvideo.simulate(other, out=out / "sim_other_seed")), s, args.skip)
    kernel_twice = float("nan")
    mean = lambda xs: sum(c for _, c in xs if _ >= args.skip) / max(1, sum(1 for _ in xs if _[0] >= args.skip))  # noqa: E731
    kernel_means = [mean(r) / 1448]
    for k in range(1, kernel_runs(args)):
        again = cwnd_series(emulate(copy.deepcopy(sc), out=out / ("real_again" if k == 1 else f"real_{k}"),
                                    log=lambda m: None, rt_priority=args.rt_priority))
        if k == 1:
            kernel_twice, _ = median_ratio(again, r, args.skip)
        kernel_means.append(mean(again) / 1448)
    return {"cc": cc, "kernel": f"tv_{cc}", "seed": seed, "samples": n, "median_ratio": ratio,
            "sim_mean_cwnd_segments": mean(s) / 1448, "real_mean_cwnd_segments": mean(r) / 1448,
            "sim_goodput_mbps": sim.summary.get("aggregate_goodput_mbps"),
            "real_goodput_mbps": real.summary.get("aggregate_goodput_mbps"),
            "sim_other_seed_ratio": noise, "kernel_again_ratio": kernel_twice, "within_bound": abs(ratio - 1) <= BOUND,
            "kernel_runs_mean_cwnd_segments": kernel_means, "sim_rank": sim_rank(mean(s) / 1448, kernel_means),
            "loss_model": args.loss_model, "load_avg_1min": os.getloadavg()[0],
            "sim_retransmissions": sim.summary.get("retransmissions"),
            "real_retransmissions": real.summary.get("retransmissions"),
            "real_loss_reductions": loss_reductions(r, args.skip), "sim_loss_reductions": loss_reductions(s, args.skip)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cc", nargs="+", default=["ccp", "compound", "ccplb", "ccplca"])
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--skip", type=float, default=1.0, help="seconds left out at the start (handshake, first RTTs)")
    ap.add_argument("--loss", type=float, default=0.01, help="random loss on the bottleneck (0: none)")
    ap.add_argument("--loss-model", choices=["keyed", "bernoulli"], default="keyed",
                    help="keyed: the same segments lost in both runtimes (default); bernoulli: one draw per packet")
    ap.add_argument("--rt-priority", type=int, default=10, help="SCHED_FIFO priority of the link emulators (0: none)")
    ap.add_argument("--video-rate", type=float, default=40.0, help="CCPLCA's video rate, Mbit/s")
    ap.add_argument("--pob", type=float, default=448.0, help="CCPLB's POB, segments")
    ap.add_argument("--pob-rate", type=float, default=1.0, help="CCPLB's POBRate")
    ap.add_argument("--kernel-twice", action="store_true",
                    help="emulate each case a second time and print the kernel against itself (its own noise floor)")
    ap.add_argument("--kernel-runs", type=int, default=1,
                    help="emulate each case N times; prints the simulator's rank among the N kernel runs' mean cwnd "
                         "per seed and the rank-sum test over seeds (CCP's must-show; N >= 5 with 3 seeds)")
    ap.add_argument("--ensemble", type=int, default=0, metavar="N",
                    help="per seed, N kernel runs against N simulator runs with the access delay lengthened by "
                         "k·10 µs/N; prints the ratio of medians, rank-sum p and the verdict (bench/README.md)")
    ap.add_argument("--sim-only", action="store_true", help="with --ensemble: the simulator side only (no root)")
    ap.add_argument("--sim-jitter-us", type=float, default=0.0, metavar="X",
                    help="with --ensemble: simulator runs without delay shifts, each with per-packet delay jitter of "
                         "mean X µs on every link direction from its own jitter stream (k + 1; crates/sim/src/delay_jitter.rs)")
    ap.add_argument("--kernel-summary", nargs="+", metavar="JSON",
                    help="with --ensemble: compare the simulator runs with the kernel runs saved in these summary.json "
                         "files (run no kernel) and print the table and verdict")
    ap.add_argument("--ensemble-summary", nargs="+", metavar="JSON",
                    help="reprint the ensemble table and verdict from saved summary.json files, run nothing")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "bpf_vs_sim_cwnd"))
    args = ap.parse_args()
    if args.ensemble_summary:
        print_ensemble([r for f in args.ensemble_summary for r in json.loads(Path(f).read_text())])
        return
    if args.ensemble:
        run_ensembles(args)
        return
    why = bpf.missing()
    if why:
        sys.exit(f"error: {why}")
    names = [bpf.resolve(c).name for c in args.cc]
    bpf.load(names)
    rows = []
    try:
        for cc in args.cc:
            for seed in args.seeds:
                row = run_one(cc, args, seed)
                rows.append(row)
                print(f"{row['kernel']:>12} vs {cc:<9} seed {seed}: median cwnd ratio real/sim {row['median_ratio']:.3f} "
                      f"({row['samples']} samples; mean cwnd {row['real_mean_cwnd_segments']:.0f} vs "
                      f"{row['sim_mean_cwnd_segments']:.0f} segments; goodput {row['real_goodput_mbps']:.1f} vs "
                      f"{row['sim_goodput_mbps']:.1f} Mbit/s) {'ok' if row['within_bound'] else 'OUTSIDE ±15 %'}; "
                      f"sim/sim(seed {seed + 1000}) {row['sim_other_seed_ratio']:.3f}"
                      + (f"; kernel/kernel {row['kernel_again_ratio']:.3f}" if kernel_runs(args) > 1 else "")
                      + (f"; kernel mean cwnd over {kernel_runs(args)} runs "
                         f"{' '.join(f'{x:.0f}' for x in sorted(row['kernel_runs_mean_cwnd_segments']))}, "
                         f"simulator above {row['sim_rank']:g} of them" if kernel_runs(args) > 1 else "")
                      + f"; load {row['load_avg_1min']:.1f}",
                      flush=True)
    finally:
        bpf.unload(names)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / "summary.json").write_text(json.dumps(rows, indent=1))
    print(f"\nkernel/simulator cwnd, median ratio per CC (bound ±{BOUND:.0%}; loss model {args.loss_model}, "
          f"load average {os.getloadavg()[0]:.1f} at the end):")
    for cc in args.cc:
        rs = [r["median_ratio"] for r in rows if r["cc"] == cc]
        floor = [r["sim_other_seed_ratio"] for r in rows if r["cc"] == cc]
        print(f"  {cc:<9} {' '.join(f'{x:.3f}' for x in rs)}   (simulator vs itself, other loss pattern: "
              f"{' '.join(f'{x:.3f}' for x in floor)})")
        if kernel_runs(args) > 1:
            again = [r["kernel_again_ratio"] for r in rows if r["cc"] == cc]
            print(f"  {'':<9} kernel vs itself, same seed, second run: {' '.join(f'{x:.3f}' for x in again)}")
            ranks = [r["sim_rank"] for r in rows if r["cc"] == cc]
            n = kernel_runs(args)
            p = rank_sum_p(ranks, n)
            print(f"  {'':<9} mean cwnd, simulator's rank among {n} kernel runs per seed (0: below all): "
                  f"{' '.join(f'{x:g}' for x in ranks)}; rank-sum test, 'the simulator is one more kernel run': "
                  f"p = {p:.3f} {'ok' if p >= RANK_ALPHA else f'REJECTED (p < {RANK_ALPHA})'}")
        red = {k: [x for r in rows if r["cc"] == cc for x in r[f"{k}_loss_reductions"]] for k in ("real", "sim")}
        if red["real"] and red["sim"]:
            print(f"  {'':<9} window after / before each loss episode, median: kernel "
                  f"{statistics.median(red['real']):.3f} ({len(red['real'])} episodes), simulator "
                  f"{statistics.median(red['sim']):.3f} ({len(red['sim'])})")


if __name__ == "__main__":
    main()
