"""tcpvideo's kernel congestion controls (bpf/: tv_ccp, tv_ccplca, tv_ccplb, tv_compound) and
the per-socket app info a server hands them (issue 15).

Without root: bad input is one line naming the field or the name (POB 0, a negative video rate,
an unknown CC name); the bench's rank-sum must-show for CCP (hand-counted p-values, false-fail
rate <= 5 %). With root, clang, bpftool, libbpf headers and BTF (skipped otherwise):

* a port that fails the kernel's verifier, loaded together with a good one, is refused with one
  line and leaves nothing registered (neither the good one nor the shared pinned map);
* each port registers and carries a real transfer (loopback in a namespace of our own), and the
  accepted socket reports the port as its congestion control;
* the kernel ports follow their simulator twins (median of real/simulated cwnd within ±15 %):
  tv_compound on the CC suite's loss case (100 Mbit/s, 100 ms, 1 % loss; 12 s here,
  bench/bpf_vs_sim_cwnd.py runs 20 s), tv_ccp on the same path without random loss. With 1 %
  loss CCP leaves slow start early and, with the delivery-rate capacity estimate, its law is
  neutral (the window drifts from where slow start left it), so one run of the kernel and one of
  the simulator need not agree; the bench reports that case (docs/bpf.md). tv_ccplb likewise on
  the loss-free path;
* tv_ccplb adds the POB the server hands it per socket (its diagnostic array), and follows its
  twin on the loss-free path with that POB.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tomllib
import uuid
from pathlib import Path

import pytest

from tcpvideo import bpf, netns

ROOT = Path(__file__).resolve().parent.parent
PORTS = ("tv_ccp", "tv_ccplca", "tv_ccplb", "tv_compound")


# ---- bad input, no privileges needed ----

def test_pob_zero_is_refused_in_one_line_naming_the_field():
    with pytest.raises(bpf.BpfError) as e:
        bpf.app_info_value(pob_segments=0)
    assert "pob_segments" in str(e.value) and "\n" not in str(e.value)


def test_negative_video_rate_is_refused_in_one_line_naming_the_field():
    with pytest.raises(bpf.BpfError) as e:
        bpf.app_info_value(video_rate_bps=-1e6)
    assert "video_rate_bps" in str(e.value) and "\n" not in str(e.value)


def test_non_positive_pob_rate_is_refused():
    with pytest.raises(bpf.BpfError, match="pob_rate"):
        bpf.app_info_value(pob_segments=448, pob_rate=0)


def test_app_info_packs_pob_rate_in_thousandths_and_video_rate_in_bits():
    v = bpf.app_info_value(pob_segments=897, pob_rate=0.5, video_rate_bps=4e6)
    assert bpf._APP_INFO.unpack(v) == (897, 500, 4_000_000)


def test_unknown_cc_name_is_one_line_and_exit_status_2():
    r = subprocess.run([sys.executable, "-m", "tcpvideo.cli", "bpf", "load", "tv_nosuch"], capture_output=True, text=True)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "tv_nosuch" in lines[0] and "known:" in lines[0], r.stderr


def test_model_names_resolve_to_their_kernel_twins():
    assert bpf.resolve("ccplb").name == "tv_ccplb"
    assert bpf.resolve("compound").name == "tv_compound"
    assert bpf.resolve("tv_ccp").twin == "ccp"


def _plan(cc: str, cc_params: dict | None, ccs: set[str]):
    from tcpvideo.emulate.plan import make_plan, read_scenario

    sc = tomllib.loads((ROOT / "scenarios" / "cc_loss_100ms.toml").read_text())
    sc["flow"][0]["tcp"] = {"cc": cc} | ({"cc_params": cc_params} if cc_params else {})
    return make_plan(*read_scenario(sc), ccs=ccs)


def test_emulate_runs_a_model_cc_on_its_registered_kernel_twin():
    plan = _plan("ccplb", {"pob_segments": 897.0, "pob_rate": 2.0}, {"cubic", "tv_ccplb"})
    tcp = plan.topology["flows"][0]["tcp"]
    assert tcp["cc"] == "tv_ccplb"
    assert dict(tcp["cc_params"]) == {"pob_segments": 897.0, "pob_rate": 2.0}


def test_emulate_refuses_kernel_wide_cc_params_naming_the_key():
    from tcpvideo.emulate.plan import ScenarioRefused

    with pytest.raises(ScenarioRefused, match=r"cc_params\.kp: simulator-only"):
        _plan("ccplb", {"pob_segments": 897.0, "kp": 3.0}, {"cubic", "tv_ccplb"})


def test_emulate_without_the_twin_registered_says_how_to_load_it():
    from tcpvideo.emulate.plan import ScenarioRefused

    with pytest.raises(ScenarioRefused, match="tcpvideo bpf load ccplb"):
        _plan("ccplb", None, {"cubic", "reno"})


def test_ccp_rank_sum_must_show_rejects_a_simulator_below_every_kernel_run_and_keeps_its_false_fail_rate():
    import itertools

    sys.path.insert(0, str(ROOT / "bench"))
    from bpf_vs_sim_cwnd import rank_sum_p, sim_rank

    assert sim_rank(50.0, [40.0, 50.0, 60.0, 70.0]) == 1.5
    # 3 seeds, 5 kernel runs each: the rank sum is 0 in 1 of 6^3 equally likely outcomes, <= 1 in 4
    assert rank_sum_p([0, 0, 0], 5) == pytest.approx(2 / 216)
    assert rank_sum_p([0, 1, 0], 5) == pytest.approx(2 * 4 / 216)
    assert rank_sum_p([5, 5, 5], 5) == pytest.approx(2 / 216)
    assert rank_sum_p([2, 3, 3], 5) == 1.0
    # when the simulator is one more kernel run, the test rejects with probability <= 5 %
    false_fail = sum(1 for ranks in itertools.product(range(6), repeat=3) if rank_sum_p(list(ranks), 5) < 0.05) / 216
    assert 0 < false_fail <= 0.05


def test_ensemble_rank_sum_is_the_exact_mann_whitney_test_and_sums_over_seeds():
    import itertools

    sys.path.insert(0, str(ROOT / "bench"))
    from bpf_vs_sim_cwnd import stratified_rank_sum_p

    below, above = [10.0, 11.0, 12.0, 13.0, 14.0], [20.0, 21.0, 22.0, 23.0, 24.0]
    # 5 vs 5 separated: 1 split of C(10, 5) = 252 on each side
    assert stratified_rank_sum_p([(below, above)]) == pytest.approx(2 / 252)
    assert stratified_rank_sum_p([(above, below)]) == pytest.approx(2 / 252)
    # interleaved: U at its mean
    assert stratified_rank_sum_p([([1.0, 3.0, 5.0, 7.0], [2.0, 4.0, 6.0, 8.0])]) > 0.5
    # every value tied: no evidence either way
    assert stratified_rank_sum_p([([11.0] * 5, [11.0] * 5)]) == 1.0
    # three seeds each separated the same way: only 1 of 252^3 outcomes on that side
    assert stratified_rank_sum_p([(below, above)] * 3) == pytest.approx(2 / 252 ** 3)
    # opposite directions on two seeds cancel in the sum
    assert stratified_rank_sum_p([(below, above), (above, below)]) == 1.0
    # under the null (the runs of a seed exchangeable) it rejects at most 5 % of the splits
    pooled = [1.0, 2.0, 3.0, 3.0, 5.0, 6.0, 7.0, 8.0]
    splits = list(itertools.combinations(range(8), 4))
    rejected = sum(1 for idx in splits if stratified_rank_sum_p(
        [([pooled[i] for i in idx], [pooled[i] for i in range(8) if i not in idx])]) < 0.05)
    assert rejected / len(splits) <= 0.05


def test_ensemble_verdict_needs_both_the_ratio_of_medians_and_the_rank_sum():
    sys.path.insert(0, str(ROOT / "bench"))
    from bpf_vs_sim_cwnd import ensemble_verdict, ratio_of_medians

    assert ratio_of_medians([60.0, 70.0, 500.0], [50.0, 56.0, 400.0]) == pytest.approx(1.25)
    assert ensemble_verdict(1.10, 0.30) == "PASS"
    assert ensemble_verdict(0.84, 0.30).startswith("FAIL (ratio")
    assert ensemble_verdict(1.00, 0.01).startswith("FAIL (rank-sum")


def test_ensemble_simulator_runs_shift_only_the_access_delay_below_ten_microseconds():
    import tcpvideo

    sys.path.insert(0, str(ROOT / "bench"))
    from bpf_vs_sim_cwnd import delay_shifts_ns, scenario_for, with_access_delay_shift

    shifts = delay_shifts_ns(5)
    assert len(set(shifts)) == 5 and min(shifts) == 0 and max(shifts) < 10_000
    sc = scenario_for("ccp", 20.0, 1, 40.0, 448.0, 1.0)
    moved = with_access_delay_shift(sc, 8_000)
    assert moved["link"][0]["delay"] == "1008000ns" and sc["link"][0]["delay"] == "1ms"
    assert moved["link"][1] == sc["link"][1]  # the bottleneck and its keyed loss untouched
    # the simulator takes the shifted delay: the round trip crosses the access link twice, 16 µs longer
    short = scenario_for("compound", 2.0, 1, 40.0, 448.0, 1.0, loss=0)
    min_rtt = [tcpvideo.simulate(sc).flows.to_pylist()[0]["min_rtt_ms"]
               for sc in (short, with_access_delay_shift(short, 8_000))]
    assert min_rtt[1] - min_rtt[0] == pytest.approx(0.016, abs=1e-6)



def test_jittered_simulator_runs_lengthen_the_round_trip_by_the_jitter_and_keep_the_losses():
    import tcpvideo

    sys.path.insert(0, str(ROOT / "bench"))
    from bpf_vs_sim_cwnd import scenario_for, with_jitter

    sc = scenario_for("ccp", 3.0, 1, 40.0, 448.0, 1.0)
    j = with_jitter(sc, 20_000, 3)
    assert [l["jitter"] for l in j["link"]] == [{"mean": "20000ns", "seed": 3}] * 2 and "jitter" not in sc["link"][0]
    runs = [tcpvideo.simulate(x).flows.to_pylist()[0] for x in (sc, j, with_jitter(sc, 20_000, 4))]
    # the handshake crosses four jittered link directions (mean 80 µs in all): longer, and by far less than 1 ms
    assert 0 < runs[1]["handshake_rtt_ms"] - runs[0]["handshake_rtt_ms"] < 1.0
    # jitter seeds 3 and 4 give other timings of the same scenario
    assert runs[1]["handshake_rtt_ms"] != runs[2]["handshake_rtt_ms"]


# ---- kernel ----

def _skip_reason() -> str | None:
    why = bpf.missing()
    if why:
        return why
    ok, why = netns.available()
    if not ok:
        return why
    busy = [n for n in PORTS if n in bpf.registered_names()]
    if busy:
        return f"{', '.join(busy)} already registered (another run uses them; this test would unload them)"
    return None


@pytest.fixture(scope="module")
def kernel():
    # builds go to bpf/build (reused while the sources are unchanged: clang is the slow part)
    why = _skip_reason()
    if why:
        pytest.skip(why)


BROKEN = textwrap.dedent("""\
    // A port the verifier must refuse: it reads socket storage without checking for NULL.
    #include "vmlinux.h"
    #include <bpf/bpf_helpers.h>
    #include <bpf/bpf_tracing.h>
    char _license[] SEC("license") = "Dual MIT/GPL";
    struct { __uint(type, BPF_MAP_TYPE_SK_STORAGE); __uint(map_flags, BPF_F_NO_PREALLOC);
             __type(key, int); __type(value, __u32); } broken_store SEC(".maps");
    SEC("struct_ops") __u32 BPF_PROG(broken_ssthresh, struct sock *sk)
    { __u32 *v = bpf_sk_storage_get(&broken_store, sk, 0, 0); return *v; }
    SEC("struct_ops") __u32 BPF_PROG(broken_undo, struct sock *sk) { return 10; }
    SEC("struct_ops") void BPF_PROG(broken_avoid, struct sock *sk, __u32 ack, __u32 acked) {}
    SEC(".struct_ops") struct tcp_congestion_ops tv_broken = {
        .ssthresh = (void *)broken_ssthresh, .undo_cwnd = (void *)broken_undo,
        .cong_avoid = (void *)broken_avoid, .name = "tv_broken" };
    """)


def test_a_port_failing_the_verifier_leaves_nothing_registered(kernel, tmp_path, monkeypatch):
    src = tmp_path / "src"
    src.mkdir()
    for f in ("tv_ccp.bpf.c", "tv_ccp_core.h", "tv_app_info.h"):
        (src / f).symlink_to(ROOT / "bpf" / f)
    (src / "tv_broken.bpf.c").write_text(BROKEN)
    monkeypatch.setenv("TCPVIDEO_BPF_SRC", str(src))
    pin_before = bpf.APP_INFO_PIN.exists()
    with pytest.raises(bpf.BpfError) as e:
        bpf.load(["tv_ccp", "tv_broken"])  # tv_ccp registers first, then tv_broken fails
    msg = str(e.value)
    assert msg.startswith("tv_broken:") and "\n" not in msg, msg
    assert "tv_ccp" not in bpf.registered_names() and "tv_broken" not in bpf.registered_names()
    assert bpf.APP_INFO_PIN.exists() == pin_before


TRANSFER = textwrap.dedent("""\
    import socket, sys, threading
    cc = sys.argv[1]
    ls = socket.socket(); ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    ls.bind(("127.0.0.1", 0)); ls.listen(1)
    def send():
        c, _ = ls.accept()
        print(c.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\\0").decode())
        c.sendall(b"x" * (8 << 20)); c.close()
    t = threading.Thread(target=send); t.start()
    s = socket.create_connection(ls.getsockname()); n = 0
    while True:
        b = s.recv(1 << 16)
        if not b: break
        n += len(b)
    t.join(); print(n)
    """)


def test_each_port_registers_and_carries_a_real_transfer(kernel):
    ns = f"ccplb-{uuid.uuid4().hex[:8]}"
    bpf.load(PORTS)
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        for name in PORTS:
            assert name in bpf.registered_names()
            r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", TRANSFER, name],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, r.stderr
            used, got = r.stdout.split()
            assert used == name and int(got) == 8 << 20, r.stdout
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
        bpf.unload(PORTS)
    assert not any(n in bpf.registered_names() for n in PORTS)
    assert not bpf.APP_INFO_PIN.exists()


def _loss_case(cc: str, cc_params: dict | None = None, loss: bool | str = True, duration: str = "12s") -> dict:
    """The CC suite's loss case (12 s by default); ``loss`` False: loss-free, "keyed": the same 1 % loss in both
    runtimes (crates/sim/src/keyed_loss.rs; the scenario's own is Bernoulli)."""
    sc = tomllib.loads((ROOT / "scenarios" / "cc_loss_100ms.toml").read_text())
    sc["duration"] = duration
    if not loss:
        del sc["link"][1]["loss"]
    elif loss == "keyed":
        sc["link"][1]["loss"] = {"model": "keyed", "p": 0.01}
    sc["flow"][0]["tcp"] = {"cc": cc} | ({"cc_params": cc_params} if cc_params else {})
    return sc


@pytest.fixture(scope="module")
def loss_runs(kernel, tmp_path_factory):
    """compound on the loss case; ccplb (POB 448) on it with keyed loss; ccp and ccplb (POB 600) on
    the loss-free path; simulated and real."""
    sys.path.insert(0, str(ROOT / "bench"))
    import tcpvideo
    from tcpvideo.emulate import emulate

    out = tmp_path_factory.mktemp("loss_case")
    runs = {}
    bpf.load(["tv_ccp", "tv_compound", "tv_ccplb"])
    try:
        # ccplb_loss runs before ccplb so that the diagnostic array keeps the POB-600 run's term
        for key, cc, params, loss in (("ccp", "ccp", None, False), ("compound", "compound", None, True),
                                      ("ccplb_loss", "ccplb", {"pob_segments": 448.0, "pob_rate": 1.0}, "keyed"),
                                      ("ccplb", "ccplb", {"pob_segments": 600.0, "pob_rate": 1.0}, False)):
            # On the loss case cwnd is ~12 segments, so one run's median ratio moves in steps of
            # 1/12 with the loss pattern (seed 1 alone: 1.18 in one run, 1.00 in another); three
            # seeds, judged by their median, measure the law rather than one loss pattern.
            seeds = (1, 2, 3) if loss else (1,)
            runs[key] = []
            for seed in seeds:
                # ccplb on the loss case: 20 s, as bench/bpf_vs_sim_cwnd.py measures it
                sc = _loss_case(cc, params, loss, "20s" if key == "ccplb_loss" else "12s") | {"seed": seed}
                runs[key].append((tcpvideo.simulate(dict(sc), out=out / f"{key}-{seed}-sim"),
                                  emulate(dict(sc), out=out / f"{key}-{seed}-real", log=lambda m: None)))
        # the simulator's own spread over loss draws: nine more seeds (simulator only, ~0.2 s each)
        runs["compound_sim_more"] = [tcpvideo.simulate(dict(_loss_case("compound") | {"seed": seed}),
                                                       out=out / f"compound-{seed}-sim") for seed in range(4, 13)]
        # what tv_ccplb added to Eq. 4, per peer, from its diagnostic array
        runs["ccplb_terms"] = [e["variant_milli"] for e in _newest_bss("tv_ccplb.bss")[1].get("ccp_diag", [])
                               if e["acks"] > 0]
        # congestion episodes tv_compound repaired because the kernel started them without running
        # its ssthresh() (bpf/tv_compound.bpf.c, repair_missed_ssthresh); shown, not asserted on
        runs["compound_diag"] = _newest_bss("tv_compo.bss")[1].get("compound_diag")
    finally:
        bpf.unload(["tv_ccp", "tv_compound", "tv_ccplb"])
    return runs


def _newest_bss(map_name: str) -> tuple[int, dict]:
    """Id and BTF-formatted variables of the newest BPF map called ``map_name`` (bpftool truncates
    object names: tv_compound's .bss is ``tv_compo.bss``). A port unregistered earlier leaves its
    maps behind while sockets of a deleted namespace still hold it, and a dump by name then lists
    them all, so the one the registered port uses is the newest."""
    shown = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True, text=True, check=True)
    ids = [m["id"] for m in json.loads(shown.stdout or "[]") if m.get("name") == map_name]
    assert ids, f"no BPF map {map_name}"
    newest = max(ids)
    dump = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(newest)], capture_output=True, text=True,
                          check=True)
    out: dict = {}
    for entry in json.loads(dump.stdout):
        for sec in entry.get("formatted", {}).get("value", {}).get(".bss", []):
            out |= sec
    return newest, out


# Compound on the 1 % loss case: the median of real/sim cwnd paired by time cannot be held to
# ±15 % in 12 s runs, whoever runs it. cwnd is ~12 segments and follows the random losses, which
# linkem and the simulator draw from different generators: the simulator against itself on
# another loss draw gives 0.67–1.50 (54 % of seed pairs outside ±15 %; 15 % at 60 s), and the
# kernel twin 1.18/1.19/1.00 on an idle machine, 1.000/1.155/0.941 at load 17 (20 s). The loss
# reaction itself agrees exactly (window after/before each episode: kernel 0.500 over 58
# episodes, simulator 0.500 over 59) and so does the mean window (12/14/14 vs 12/14/14
# segments); the two tests below hold those strictly. Kept running so it shows as XPASS.
_COMPOUND_LOSS_GAP = pytest.mark.xfail(reason="issue 15: one loss draw's cwnd path; the simulator against itself on "
                                              "another draw is outside ±15 % in 54 % of 12 s pairs", strict=False)


@pytest.mark.parametrize("cc", ["ccp", pytest.param("compound", marks=_COMPOUND_LOSS_GAP), "ccplb"])
def test_kernel_cwnd_follows_the_simulator_twin(loss_runs, cc):
    from bpf_vs_sim_cwnd import cwnd_series, median_ratio

    import statistics

    # Loss-free runs: the first ~5–6 s are slow start's overshoot of the 833-packet queue and its
    # recovery (RTOs in both runtimes, at different moments); the comparison is the settled law.
    skip = 2.0 if cc == "compound" else 6.0
    ratios = []
    for sim, real in loss_runs[cc]:
        ratio, n = median_ratio(cwnd_series(real), cwnd_series(sim), skip_s=skip)
        assert n >= 40, n
        ratios.append(ratio)
    ratio = statistics.median(ratios)
    assert abs(ratio - 1) <= 0.15, f"{cc}: median real/sim cwnd {ratio:.3f} (per seed {ratios})"


def test_kernel_ccplb_follows_its_twin_on_the_loss_case(loss_runs):
    # 1 % keyed loss (both runtimes lose the same segments), POB 448, three seeds. Until session 10
    # the simulator's receive window stopped at 3 MiB (tcp_rmem[2] = 6 MiB, Linux < 6.16; the
    # kernel here has 32 MiB): its twin became receive-window limited in the long SACK recoveries,
    # Eq. 5's -in_flight/2 term opened the window, the queue overflowed and the medians were
    # 0.60-0.68 (bench/bpf_vs_sim_cwnd.py, 20 s); session 10 0.88-1.07 per seed: the simulator's
    # rtt_max took one 40-ms delayed ACK in the receive-window-limited start where the kernel's
    # flight ends with a PSH segment ACKed at once. Session 11's GSO sender (PSH per packet,
    # tcp/tso.rs): 0.97-1.02 per seed; the kernel against itself 0.997-1.043. So each seed must
    # be within ±15 % (issue 15's must-show), not only their median.
    from bpf_vs_sim_cwnd import cwnd_series, median_ratio

    ratios = []
    for sim, real in loss_runs["ccplb_loss"]:
        ratio, n = median_ratio(cwnd_series(real), cwnd_series(sim), skip_s=1.0)
        assert n >= 150, n
        ratios.append(ratio)
    assert all(abs(r - 1) <= 0.15 for r in ratios), f"ccplb, 1 % keyed loss: median real/sim cwnd per seed {ratios}"


def test_ccplb_adds_the_pob_the_server_handed_its_socket(loss_runs):
    # The server (emulate's bulk app) handed POB 600, POBRate 1 through the socket storage; the
    # port's default is 448. Its diagnostic array records the term it added to Eq. 5.
    assert loss_runs["ccplb_terms"], "no tv_ccplb connection in the diagnostic array"
    assert set(loss_runs["ccplb_terms"]) == {600_000}, loss_runs["ccplb_terms"]


def test_kernel_compound_halves_its_window_per_loss_episode_as_its_model(loss_runs):
    # Reno and Compound at the loss case's ~12-segment windows (dwnd is 0 below ~41 segments):
    # each loss episode ends at half the window it started from, 0.25 for two back to back.
    from bpf_vs_sim_cwnd import cwnd_series, loss_reductions

    import statistics

    real = [x for _, r in loss_runs["compound"] for x in loss_reductions(cwnd_series(r), 2.0)]
    sim = [x for s, _ in loss_runs["compound"] for x in loss_reductions(cwnd_series(s), 2.0)]
    assert len(real) >= 15 and len(sim) >= 15, (len(real), len(sim))
    assert abs(statistics.median(real) - statistics.median(sim)) <= 0.05, (statistics.median(real), statistics.median(sim))
    assert 0.45 <= statistics.median(real) <= 0.55, statistics.median(real)


def test_kernel_compound_mean_window_on_the_loss_case_is_within_15_percent_of_its_model(loss_runs):
    # Means over the pooled runs: the simulator's 3-seed pooled means differ from each other by
    # 0.87–1.15 (30 seeds), so ±15 % is the bound a correct twin meets; the reference pools 12.
    from bpf_vs_sim_cwnd import cwnd_series

    import statistics

    def mean_cwnd(results):
        return statistics.mean(c for res in results for t, c in cwnd_series(res) if t >= 2.0)

    real = mean_cwnd([r for _, r in loss_runs["compound"]])
    sim = mean_cwnd([s for s, _ in loss_runs["compound"]] + loss_runs["compound_sim_more"])
    assert abs(real / sim - 1) <= 0.15, (f"kernel {real / 1448:.1f} vs simulator {sim / 1448:.1f} segments "
                                         f"(tv_compound's repairs: {loss_runs['compound_diag']})")


def test_kernel_compound_repairs_an_episode_the_kernel_started_without_its_ssthresh(kernel, tmp_path):
    # On this kernel icsk_ca_ops->ssthresh(sk) now and then returns 668 121 856 without running
    # tv_compound's program (CI, 2026-11-29: Recovery ended with snd_cwnd = that value and 515
    # segments left at once; docs/bpf.md). The port's test knob imitates it on every second
    # call; the repair must then install the episode's own threshold before PRR ends Recovery
    # on it. Without the repair the window jumps to ~668 M segments at the first such episode.
    sys.path.insert(0, str(ROOT / "bench"))
    from bpf_vs_sim_cwnd import cwnd_series
    from tcpvideo.emulate import emulate

    bpf.load(["tv_compound"])
    try:
        bss_id, bss = _newest_bss("tv_compo.bss")
        diag = bss["compound_diag"]
        knob = {**diag, "test_miss_every": 2, "test_calls": 0}
        order = ("missed_ssthresh", "last_kernel_ssthresh", "last_prior_cwnd", "last_repaired_ssthresh",
                 "test_miss_every", "test_calls")
        assert set(knob) == set(order), knob
        value = b"".join(knob[k].to_bytes(4, "little") for k in order)
        subprocess.run(["bpftool", "map", "update", "id", str(bss_id), "key", "hex", "00", "00", "00", "00",
                        "value", "hex", *(f"{b:02x}" for b in value)], check=True, capture_output=True)
        res = emulate(dict(_loss_case("compound") | {"seed": 2}), out=tmp_path / "real", log=lambda m: None)
        diag = _newest_bss("tv_compo.bss")[1]["compound_diag"]
    finally:
        bpf.unload(["tv_compound"])
    assert diag["test_calls"] >= 4, diag
    series = cwnd_series(res)
    assert len(series) >= 40, len(series)
    assert max(c for _, c in series) / 1448 <= 1000, f"the kernel ran a missed episode's bogus threshold: {diag}"
    assert diag["missed_ssthresh"] >= 2, diag
    assert diag["last_kernel_ssthresh"] == 668121856, diag
    assert 2 <= diag["last_repaired_ssthresh"] <= max(diag["last_prior_cwnd"], 2), diag


# A kernel run whose link emulator is frozen once (SIGSTOP of the emulating process, which hosts
# linkem's threads): nothing is lost, the sender's RTO fires during the freeze, and the ACKs of
# the original segments then prove it spurious (F-RTO / Eifel), so Linux undoes it
# (tcp_try_undo_loss -> tcp_undo_cwnd_reduction -> the CC's undo_cwnd).
FROZEN_RUN = textwrap.dedent("""\
    import json, sys, tomllib
    from tcpvideo.emulate import emulate
    sc = tomllib.loads(open(sys.argv[1]).read())
    del sc["link"][1]["loss"]
    sc["duration"] = "3s"
    sc["flow"][0]["tcp"] = {"cc": sys.argv[2]}
    res = emulate(sc, out=sys.argv[3], log=lambda m: print(m, flush=True), rt_priority=10)
    t = res.series.to_pydict()
    print("SERIES", json.dumps([(ts, c) for ts, f, c in zip(t["t_s"], t["flow"], t["cwnd_bytes"])
                                if f == 0 and c is not None]), flush=True)
    """)


def _run_with_one_spurious_timeout(cc: str, out: Path, freeze_at_s: float = 0.5, freeze_s: float = 0.7):
    import json
    import os
    import signal
    import time

    p = subprocess.Popen([sys.executable, "-c", FROZEN_RUN, str(ROOT / "scenarios" / "cc_loss_100ms.toml"), cc, str(out)],
                         stdout=subprocess.PIPE, text=True)
    series = None
    try:
        for line in p.stdout:
            if line.startswith("running"):
                time.sleep(freeze_at_s)
                os.kill(p.pid, signal.SIGSTOP)
                time.sleep(freeze_s)
                os.kill(p.pid, signal.SIGCONT)
            elif line.startswith("SERIES"):
                series = [(t, c / 1448) for t, c in json.loads(line[len("SERIES"):])]
    finally:
        os.kill(p.pid, signal.SIGCONT)
        p.wait(timeout=60)
    assert p.returncode == 0 and series, f"{cc}: the frozen run failed (exit {p.returncode})"
    return series


def test_kernel_compound_undoes_a_spurious_timeout_in_slow_start_as_linux_reno(kernel, tmp_path):
    # Linux's tcp_undo_cwnd_reduction restores cwnd = max(cwnd, prior_cwnd) and ssthresh =
    # prior_ssthresh, which in the first slow start is infinite: Reno (Linux's own, the peer
    # here) resumes slow start. The model does the same through set_cwnd / set_ssthresh, and so
    # must tv_compound (dwnd is 0 in slow start, so Compound is Reno there). Before the fix the
    # port kept the halved threshold and grew one segment per RTT (20 -> 22 -> 24 ... while
    # Reno went 20 -> 80 -> 320 -> 1129).
    bpf.load(["tv_compound"])
    try:
        compound = _run_with_one_spurious_timeout("compound", tmp_path / "compound")
    finally:
        bpf.unload(["tv_compound"])
    reno = _run_with_one_spurious_timeout("reno", tmp_path / "reno")
    for name, s in (("reno", reno), ("compound", compound)):
        assert min(c for t, c in s if 0.5 <= t <= 1.4) <= 2, f"{name}: no RTO during the freeze: {s}"
    after = lambda s: max(c for t, c in s if 1.2 <= t <= 2.2)  # noqa: E731
    before = max(c for t, c in reno if t <= 0.6)
    assert after(reno) >= 8 * before, f"reno did not resume slow start: {before:.0f} -> {after(reno):.0f}"
    assert after(compound) >= 0.5 * after(reno), \
        f"tv_compound peaked at {after(compound):.0f} segments after the undo, Linux Reno at {after(reno):.0f}"
