"""`tcpvideo study onoff`: the seed-004 scenario (arrivals, request timing, cwnd limit), the loss
timeline, and a tiny end-to-end study writing the report directory (tables, one PNG per figure, a
self-contained HTML with the paper-vs-ours table, JSON). Liveness, stalls and startup are the
simulator player's (tested beside it in crates/model/src/video/player.rs).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pyarrow as pa

import tcpvideo
from tcpvideo.studies import STUDIES
from tcpvideo.studies.onoff import plan_points, run
from tcpvideo.studies.onoff.metrics import retransmission_timeline
from tcpvideo.studies.onoff.plan import EXPLAIN_GROUPS, PAPER_GROUPS, Scale
from tcpvideo.studies.onoff.scenario import OnOffConfig, scenario

CLI = [sys.executable, "-c", "from tcpvideo.cli import main; main()"]


def test_clients_join_within_the_first_segment_and_the_server_clamps_cwnd_to_20_packets():
    res = tcpvideo.simulate(scenario(OnOffConfig(6, segments=3, cwnd_limit=True), seed=2))
    joined = res.video_clients["joined_s"].to_pylist()
    assert len(joined) == 6 and all(0.0 <= j < 2.0 for j in joined)
    assert all(f["max_cwnd_bytes"] <= 20 * 1448 for f in res.flows.to_pylist())
    free = tcpvideo.simulate(scenario(OnOffConfig(6, segments=3), seed=2))
    assert max(f["max_cwnd_bytes"] for f in free.flows.to_pylist()) > 20 * 1448  # the clamp is what holds it


def _request_lag(cfg: OnOffConfig) -> dict[int, list[float]]:
    segs = tcpvideo.simulate(scenario(cfg, seed=3)).video_segments.to_pylist()
    lag: dict[int, list[float]] = {}
    for s in segs:
        if s["segment"] is not None and s["requested_s"] is not None and s["available_s"] is not None:
            lag.setdefault(s["flow"], []).append(s["requested_s"] - s["available_s"])
    return lag


def test_regular_clients_request_each_segment_when_it_appears_and_distributed_ones_at_their_own_phase():
    regular = _request_lag(OnOffConfig(8, segments=5))
    later = [x for lags in regular.values() for x in lags[1:]]
    assert later and max(later) < 0.01  # all together, as soon as available
    dist = _request_lag(OnOffConfig(8, segments=5, distributed=True))
    phases = [sorted(lags[1:])[len(lags[1:]) // 2] for lags in dist.values() if len(lags) > 1]
    assert len(phases) >= 6
    assert max(phases) - min(phases) > 0.5  # spread over the 2-s period, not synchronised
    for lags in dist.values():
        assert max(lags[1:]) - min(lags[1:]) < 0.05  # each client keeps its phase


def test_explaining_experiments_turn_off_the_restart_after_idle_and_let_clients_join_after_segment_0_appears():
    base = tcpvideo.simulate(scenario(OnOffConfig(6, segments=4), seed=2))
    kinds = lambda r: r.events["kind"].to_pylist()  # noqa: E731
    assert "restart_after_idle" in kinds(base)  # one-segment on-off: every period restarts
    off = tcpvideo.simulate(scenario(OnOffConfig(6, segments=4, slow_start_after_idle=False), seed=2))
    assert "restart_after_idle" not in kinds(off)
    late = tcpvideo.simulate(scenario(OnOffConfig(6, segments=4, join_after_first=True), seed=2))
    joined = dict(zip(late.video_clients["flow"].to_pylist(), late.video_clients["joined_s"].to_pylist()))
    assert all(2.0 <= j < 4.0 for j in joined.values())  # segment 0 appears at d = 2 s
    first = {}
    for s in late.video_segments.to_pylist():
        first.setdefault(s["flow"], s)
    # the newest segment is there on arrival: segment 0 is asked for at once, not at the next period
    assert all(first[f]["segment"] == 0 and first[f]["requested_s"] - joined[f] < 0.5 for f in joined)
    base_first = {s["flow"]: s for s in reversed(base.video_segments.to_pylist())}
    assert any(base_first[f]["requested_s"] - j > 0.5 for f, j in zip(base.video_clients["flow"].to_pylist(),
                                                                        base.video_clients["joined_s"].to_pylist()))


def test_a_client_with_a_b_segment_buffer_joins_when_b_segments_exist_and_fills_its_buffer_from_the_oldest():
    # §V-C: "has to request an older segment to have a chance to fill its buffer"; with the
    # stream starting at 0 no older segment existed and b = 5 and b = 15 ran the same.
    res = tcpvideo.simulate(scenario(OnOffConfig(4, segments=10, buffer_segments=3), seed=2))
    joined = dict(zip(res.video_clients["flow"].to_pylist(), res.video_clients["joined_s"].to_pylist()))
    assert all(6.0 <= j < 8.0 for j in joined.values())  # segments 0..2 exist from 6 s
    by_flow: dict[int, list[dict]] = {}
    for s in res.video_segments.to_pylist():
        by_flow.setdefault(s["flow"], []).append(s)
    for f, segs in by_flow.items():
        segs.sort(key=lambda s: s["segment"])
        assert segs[0]["segment"] == 0, f"flow {f} starts behind the newest segment"
        # segments 0..2 are already there: each is asked for as soon as the previous one is in
        for a, b in zip(segs[:2], segs[1:3]):
            assert b["requested_s"] - a["done_s"] < 0.5, (f, a, b)


def test_the_per_segment_experiment_opens_a_connection_per_segment_and_buffered_distributed_clients_keep_their_clock():
    flows = lambda r: r.flows.to_pylist()  # noqa: E731
    res = tcpvideo.simulate(scenario(OnOffConfig(3, segments=4, per_segment=True), seed=2))
    assert OnOffConfig(3, per_segment=True).label() == "cubic+2s+perseg"
    # the flows table sums each client's connections, so it holds every downloaded segment's bytes
    segs = res.video_segments.to_pylist()
    done = [s for s in segs if s["done_s"] is not None]
    assert len(done) >= 9
    assert sum(f["bytes"] for f in flows(res)) >= sum(s["bytes"] for s in done)
    # buffers of more than one segment: one request per period on the client's own clock
    res = tcpvideo.simulate(scenario(OnOffConfig(3, segments=12, buffer_segments=3, distributed=True), seed=2))
    by_flow: dict[int, list[float]] = {}
    for s in res.video_segments.to_pylist():
        by_flow.setdefault(s["flow"], []).append(s["requested_s"])
    for reqs in by_flow.values():
        gaps = [b - a for a, b in zip(reqs[1:], reqs[2:])]
        assert gaps and all(abs(g - 2.0) < 1e-6 for g in gaps), reqs


def test_retransmission_timeline_counts_retransmissions_per_segment_period():
    events = pa.table({"t_s": [0.1, 2.5, 2.7, 3.9, 4.0, 9.99, 50.0], "kind": ["retransmit", "retransmit", "rto",
                       "retransmit", "retransmit", "retransmit", "retransmit"]})
    t = retransmission_timeline(events, segment_s=2.0, periods=5).to_pydict()
    assert t["retransmissions"] == [1, 2, 1, 0, 2]  # 50.0 s lands in the last period; the rto is not counted
    assert t["start_s"] == [0.0, 2.0, 4.0, 6.0, 8.0]


# every group but the three suspects of the unexplained rows (newreno, vbr, poisson: 64 more tiny runs;
# their plan and their "why" are tested on their own below), to keep CI time
TINY = Scale("tiny", clients=(6, 12), seeds=(1,), segments_2s=4, segments_10s=2, combo_clients=8,
             queue_clients=12, queue_sample_s=4.0, long_segments=6,
             groups=tuple(g for g in PAPER_GROUPS + EXPLAIN_GROUPS if g not in ("newreno", "vbr", "poisson")))


def test_tiny_study_writes_tables_figures_self_contained_html_and_json(tmp_path):
    out = tmp_path / "study"
    res = run(out=out, jobs=1, progress=False, scale=TINY)
    rep = out / "report"
    doc = json.loads((rep / "report.json").read_text())
    assert doc["facts"]["runs"] == len(plan_points(TINY))
    statuses = {c["id"]: c["status"] for c in doc["claims"]}
    assert {"live175", "vegas_live", "vegas_drops", "cwnd_drops", "dist_drops", "adapt_dist5", "combos_quality"} \
        <= set(statuses)
    assert all(s in ("reproduced", "not reproduced", "partly", "not run") for s in statuses.values())
    # every decided claim shows our numbers, every one that does not reproduce says why
    for c in doc["claims"]:
        if c["status"] in ("reproduced", "not reproduced"):
            assert c["ours"]
        if c["status"] == "not reproduced":
            assert c["why"], c["id"]
    pngs = sorted(p.name for p in (rep / "figures").iterdir())
    assert {"fig03_cubic.png", "fig04_congestion_control.png", "fig05_segment_duration.png",
            "fig07_distributed_requests.png", "fig08_cwnd_limit.png", "fig10_adaptation_cc.png",
            "fig12_adaptation_distributed_buffer1.png", "fig14_adaptation_distributed_buffer15.png",
            "fig15_adaptation_cwnd_limit.png", "fig16_combinations.png"} <= set(pngs)
    assert all((rep / "figures" / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    html = (rep / "report.html").read_text()
    assert "Paper vs ours" in html
    assert html.count("data:image/png;base64,") == len(pngs)
    assert not re.search(r"""src=['"](?!data:)""", html)  # nothing loaded from outside the file
    for t in ("runs", "points", "clients", "claims"):
        assert (rep / "tables" / f"{t}.parquet").is_file() and (rep / "tables" / f"{t}.csv").is_file()
    runs = res["facts"]["runs"]
    # a second run reuses every stored point and writes the same tables
    before = (rep / "tables" / "points.csv").read_bytes()
    again = run(out=out, jobs=1, progress=False, scale=TINY)
    assert again["facts"]["ran_now"] == 0 and again["facts"]["reused"] == runs
    assert (rep / "tables" / "points.csv").read_bytes() == before


def test_study_list_names_onoff_and_an_unknown_study_is_one_line():
    r = subprocess.run([*CLI, "study", "list"], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert r.returncode == 0 and "onoff" in r.stdout and "onoff" in STUDIES
    bad = subprocess.run([*CLI, "study", "onof"], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    bad = subprocess.run([*CLI, "study", "onoff", "--jobs", "0"], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "200"})
    assert bad.returncode == 2 and "--jobs 0" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_a_reduced_run_keeps_only_the_groups_asked_for_and_an_unknown_group_is_one_line():
    from dataclasses import replace

    import pytest

    from tcpvideo.studies.onoff.plan import configs

    only = configs(replace(TINY, groups=("cc", "cwnd_limit")))
    assert set(only) == {"cc", "cwnd_limit"} and len(only["cc"]) == 5 * len(TINY.clients)
    with pytest.raises(ValueError, match="unknown bogus"):
        configs(replace(TINY, groups=("cc", "bogus")))
    r = subprocess.run(CLI + ["study", "onoff", "--groups", "bogus"], capture_output=True, text=True)
    assert r.returncode == 2 and "--groups" in r.stderr and "bogus" in r.stderr


def test_a_claim_without_runs_in_a_reduced_run_is_not_run_rather_than_judged_on_nothing():
    import pandas as pd

    from tcpvideo.studies.onoff import claims as cl
    from tcpvideo.studies.onoff import evaluate
    from tcpvideo.studies.report import NOT_RUN

    # only the cc group at one count, as `--groups cc --clients 50` leaves it
    agg = pd.DataFrame({"config": ["cubic+2s"], "clients": [50], "group": ["cc"], "liveness_mean_s_mean": [-0.5]})
    found = {c.id: c for c in evaluate(cl.Evidence(agg=agg))}
    for cid in ("seg10", "adapt_vegas_q", "adapt_seg10", "seg10_drops", "adapt_dist5", "combos"):
        assert found[cid].status == NOT_RUN, (cid, found[cid])
    # a partial run with some of a claim's configurations (bic/vegas but no reno): not judged on a NaN
    agg = pd.DataFrame({"config": ["cubic+2s", "bic+2s", "vegas+2s"], "clients": [175] * 3, "group": ["cc"] * 3,
                        "liveness_mean_s_mean": [-2.3, -2.1, -2.2], "liveness_mean_s_min": [-2.4, -2.2, -2.3],
                        "liveness_mean_s_max": [-2.2, -2.0, -2.1]})
    ranking = {c.id: c for c in evaluate(cl.Evidence(agg=agg))}["bic_cubic"]
    assert ranking.status == NOT_RUN and ranking.ours.startswith("incomplete:") and "nan" in ranking.ours


def test_full_is_the_papers_groups_and_explain_adds_our_experiments_without_changing_the_papers_runs():
    from dataclasses import replace

    from tcpvideo.studies.onoff.plan import DEFAULT, EXPLAIN_GROUPS, FULL, PAPER_GROUPS, configs, unexplained_rows

    paper, both = configs(FULL), configs(replace(FULL, explain=True))
    assert set(paper) == set(PAPER_GROUPS)
    assert set(both) == set(PAPER_GROUPS) | set(EXPLAIN_GROUPS) - {"long"}  # long: default scale only
    keys = lambda sc: {(json.dumps(p.scenario, sort_keys=True), p.seed) for p, _ in plan_points(sc)}  # noqa: E731
    full, full_explain = keys(FULL), keys(replace(FULL, explain=True))
    assert full < full_explain and len(full) == 1185  # the paper's: Figs 3–8, 10–16, queue samples, 10 seeds
    # the default scale keeps both (its report's "why" column needs them); a group named is always run
    assert set(EXPLAIN_GROUPS) <= set(configs(DEFAULT))
    assert set(configs(replace(FULL, groups=("ssai_off",)))) == {"ssai_off"}
    # each suspect of the unexplained rows is those rows' configurations with one thing changed
    rows = unexplained_rows(FULL)
    for group, change in (("newreno", {"sack": False}), ("vbr", {"vbr": True}), ("poisson", {"poisson": True}),
                          ("per_segment", {"per_segment": True})):
        assert [replace(c, segments=0) for c in both[group][:len(rows)]] == \
            [replace(c, segments=0, **change) for c in rows]
    # NewReno also runs the rest of Fig 16's settings, so 16a's pairs are all there
    assert {c.combination() for c in both["newreno"] if c.abr != "fixed" and c.clients == 140} == \
        {c.combination() for c in both["combinations"]}
    sc = scenario(OnOffConfig(50, vbr=True, poisson=True), seed=1)
    assert sc["video"]["sizes"] == "vbr" and sc["dumbbell"]["arrivals"] == "poisson"
    assert "arrivals" not in scenario(OnOffConfig(50), seed=1)["dumbbell"]  # the main runs' keys do not move
    r = subprocess.run(CLI + ["study", "onoff", "--help"], capture_output=True, text=True,
                       env={**os.environ, "COLUMNS": "200"})
    assert "--explain" in r.stdout and "--no-explain" in r.stdout


def test_a_suspect_under_which_an_unexplained_claim_holds_is_named_and_without_one_it_stays_not_explained():
    import pandas as pd

    from tcpvideo.studies.onoff import claims as cl

    def agg(rows):
        return pd.DataFrame([{"config": c, "clients": n, "drops_mean": d, "steady_retx_per_period_mean": d / 10}
                             for c, n, d in rows])

    grows = [("cubic+10s", 50, 100), ("cubic+10s", 175, 1000), ("cubic+10s+nosack", 50, 100),
             ("cubic+10s+nosack", 175, 900)]
    judge = dict((c[0].id, (c[0], c[1])) for c in cl.claims())["seg10_drops"]
    claim, test = judge
    test(cl.Evidence(agg=agg(grows + [("cubic+10s+vbr", 50, 100), ("cubic+10s+vbr", 175, 150)])), claim)
    assert claim.status == "not reproduced"
    assert "with VBR segment sizes: drops 100@50, 150@175 (holds)" in claim.why
    assert "drops 100@50, 900@175 (still not)" in claim.why
    assert claim.why.endswith("explained: the claim holds with VBR segment sizes")
    claim, test = dict((c[0].id, (c[0], c[1])) for c in cl.claims())["seg10_drops"]
    test(cl.Evidence(agg=agg(grows)), claim)
    assert claim.why.endswith("not explained by any of these 1 experiments")


def test_poisson_arrivals_join_in_client_order_with_exponential_gaps_where_uniform_ones_do_not():
    def joins(**kw):
        return tcpvideo.simulate(scenario(OnOffConfig(20, segments=2, **kw), seed=4)).video_clients["joined_s"].to_pylist()

    uniform, poisson = joins(), joins(poisson=True)
    assert poisson == sorted(poisson) and uniform != sorted(uniform)  # cumulative gaps vs independent draws
    assert poisson != uniform and 0 < poisson[0] and poisson[-1] < 2.0 * 2  # around the 2-s window


def test_quality_metrics_split_the_first_minute_and_count_the_media_the_bottleneck_carried():
    from types import SimpleNamespace

    from tcpvideo.studies.onoff.metrics import reduce_run

    # two clients, 2-s segments: 0–29 are the first minute (k·d < 60 s), 30 and 31 after it; one unfinished
    segs = pa.table({"flow": [0, 0, 0, 1, 1, 1], "segment": [0, 29, 30, 0, 31, 32],
                     "quality": [0, 4, 5, 1, 3, 5], "bytes": [1000, 2000, 3000, 1000, 4000, 9000],
                     "requested_s": [2.0, 59.5, 61.0, 2.5, 63.0, 65.0], "available_s": [2.0, 60.0, 62.0, 2.0, 64.0, 66.0],
                     "done_s": [3.0, 60.0, 62.0, 4.0, 66.0, None]})
    qoe = pa.table({"flow": [0, 1], "joined_s": [0.5, 1.0], "liveness_s": [-1.0, -2.0], "startup_s": [2.5, 3.0],
                    "stall_total_s": [0.0, 0.0], "stall_count": [0, 0], "mean_bitrate_kbps": [1.0, 1.0]})
    links = pa.table({"link": ["bottleneck"], "from": ["r1"], "to": ["r2"], "queue_drops": [0], "loss_drops": [0],
                      "utilization": [0.5], "mean_queue_packets": [0.0]})
    res = SimpleNamespace(summary={"duration_s": 70.0, "retransmissions": 0, "rto_count": 0, "events_processed": 1,
                                   "packets_sent": 1}, video_clients=qoe, links=links, video_segments=segs,
                          video_stalls=pa.table({"cause": pa.array([], pa.string())}),
                          events=pa.table({"t_s": pa.array([], pa.float64()), "kind": pa.array([], pa.string())}),
                          queues=pa.table({"t_s": pa.array([], pa.float64())}))
    s, _ = reduce_run(res, segment_s=2.0)
    assert s["quality_first_min_mean"] == (0 + 4 + 1) / 3 and s["quality_after_min_mean"] == (5 + 3) / 2
    assert s["quality_high_share"] == 3 / 5  # qualities 3–5 of the five finished segments
    assert s["media_mbps"] == 8 * (1000 + 2000 + 3000 + 1000 + 4000) / (66.0 - 2.0) / 1e6  # unfinished: not carried


def _adapt_agg(rows):
    import pandas as pd

    out = []
    for cfg, n, q, first, after, media, high in rows:
        r = {"config": f"{cfg}+throughput-buf1", "clients": n}
        for m, v in (("quality_mean", q), ("quality_first_min_mean", first), ("quality_after_min_mean", after),
                     ("media_mbps", media), ("quality_high_share", high)):
            r.update({f"{m}_mean": v, f"{m}_min": v - 0.01, f"{m}_max": v + 0.01})
        out.append(r)
    return pd.DataFrame(out)


def test_10a_says_the_link_sets_the_quality_only_where_both_congestion_controls_fill_it():
    import pandas as pd

    from tcpvideo.studies.onoff import claims as cl

    judge = dict((c.id, (c, t)) for c, t in cl.claims())
    rows = [("vegas+2s", 50, 3.99, 3.87, 4.00, 74.9, 1.0), ("cubic+2s", 50, 4.20, 3.94, 4.22, 93.6, 1.0),
            ("vegas+2s", 150, 1.70, 1.53, 1.71, 95.8, 0.2), ("cubic+2s", 150, 1.69, 1.56, 1.70, 95.8, 0.2)]
    claim, test = judge["adapt_vegas_q"]
    test(cl.Evidence(agg=_adapt_agg(rows)), claim)
    assert claim.status == "not reproduced"
    assert "at 150 clients both fill the link" in claim.why and "0.67 Mbit/s per client" in claim.why
    assert "vegas is lower where the link has room (50 clients)" in claim.why and "18.7 Mbit/s@50" in claim.why
    assert "NewReno" not in claim.why  # not run
    # vegas short of the link at 150: the link is not what sets its quality there, and the why must not say so;
    # with NewReno recovery vegas is lower at both counts: named as what explains the row
    rows[2] = ("vegas+2s", 150, 1.70, 1.53, 1.71, 90.0, 0.2)
    nosack = [("vegas+2s+throughput-buf1+nosack", 50, 3.99), ("cubic+2s+throughput-buf1+nosack", 50, 4.41),
              ("vegas+2s+throughput-buf1+nosack", 150, 1.70), ("cubic+2s+throughput-buf1+nosack", 150, 1.85)]
    agg = pd.concat([_adapt_agg(rows), pd.DataFrame([{"config": c, "clients": n, "quality_mean_mean": q,
                                                      "stall_mean_s_mean": 9.0} for c, n, q in nosack])])
    claim, test = dict((c.id, (c, t)) for c, t in cl.claims())["adapt_vegas_q"]
    test(cl.Evidence(agg=agg), claim)
    assert "both fill the link" not in claim.why
    assert "vegas/cubic 3.99/4.41@50, 1.70/1.85@150, stall time per client" in claim.why and "(holds)" in claim.why
    assert claim.why.endswith("explained: the claim holds with NewReno recovery (no SACK, RACK-TLP or F-RTO; "
                              "closer to ns-2's TCP)")


def test_11a_blames_the_start_up_only_when_10_s_segments_catch_up_after_the_first_minute():
    import pandas as pd

    from tcpvideo.studies.onoff import claims as cl

    rows = [("cubic+10s", 50, 4.21, 3.37, 4.25, 91.9, 0.99), ("cubic+2s", 50, 4.20, 3.94, 4.22, 93.6, 0.99),
            ("cubic+10s", 150, 1.71, 1.28, 1.74, 95.5, 0.18), ("cubic+2s", 150, 1.70, 1.56, 1.71, 95.8, 0.23)]
    claim, test = dict((c.id, (c, t)) for c, t in cl.claims())["adapt_seg10"]
    test(cl.Evidence(agg=_adapt_agg(rows)), claim)
    assert claim.status == "not reproduced"
    assert "10-s segments are lower only in the first minute" in claim.why
    assert "18.0%/23.0%@150" in claim.why and "lower at 150 clients" in claim.why and "less spread" in claim.why
    rows[2] = ("cubic+10s", 150, 1.60, 1.28, 1.62, 95.5, 0.18)  # still lower after the first minute
    rows[0] = ("cubic+10s", 50, 4.25, 3.37, 4.30, 91.9, 0.99)
    claim, test = dict((c.id, (c, t)) for c, t in cl.claims())["adapt_seg10"]
    test(cl.Evidence(agg=_adapt_agg(rows)), claim)
    assert "lower only in the first minute" not in claim.why and "after it they are lower at 150 clients" in claim.why
    assert "NewReno" not in claim.why  # not run
    agg = pd.concat([_adapt_agg(rows), pd.DataFrame([{"config": f"cubic+{d}+throughput-buf1+nosack", "clients": n,
                                                       "quality_mean_mean": q, "stall_mean_s_mean": 9.0} for d, n, q in
                                                      (("10s", 50, 4.25), ("2s", 50, 4.41), ("10s", 150, 1.90),
                                                       ("2s", 150, 1.85))])])
    claim, test = dict((c.id, (c, t)) for c, t in cl.claims())["adapt_seg10"]
    test(cl.Evidence(agg=agg), claim)
    assert "quality 10 s/2 s 4.25/4.41@50, 1.90/1.85@150, stall time per client 9/9@50, 9/9@150 s (still not)" \
        in claim.why
    assert claim.why.endswith("not explained by any of these 1 experiments")


def test_with_demand_above_the_link_vegas_and_cubic_carry_the_same_media_and_below_it_vegas_carries_less():
    """The premise of 10a's why, on the paper's setup (the study's 100 Mbit/s dumbbell; 150 clients get
    0.67 Mbit/s each, 50 get 2 Mbit/s), 2-minute stream, ~1 s a run. It ran the setup scaled down 5×
    (20 Mbit/s, 10 and 30 clients) until session 19, when the simulator stopped recording false reordering
    (prior_fack): there cubic's media fell from 15.72 to 14.94 Mbit/s at 10 clients, level with vegas's 14.82,
    while at the paper's 50 clients cubic still carries 82.0 to vegas's 74.1 — the scaling, chosen for test
    time, no longer kept what the premise is about."""
    from tcpvideo.studies.onoff.metrics import reduce_run

    def media(n, cc):
        sc = scenario(OnOffConfig(n, cc=cc, abr="throughput", segments=60), seed=1)
        return reduce_run(tcpvideo.simulate(sc), 2.0)[0]

    payload = 100 * 1448 / 1500
    full = {cc: media(150, cc) for cc in ("cubic", "vegas")}
    assert all(s["media_mbps"] > 0.93 * payload for s in full.values())
    assert abs(full["vegas"]["media_mbps"] / full["cubic"]["media_mbps"] - 1) < 0.03
    room = {cc: media(50, cc) for cc in ("cubic", "vegas")}
    assert room["vegas"]["media_mbps"] < 0.97 * room["cubic"]["media_mbps"]
    assert room["vegas"]["quality_after_min_mean"] < room["cubic"]["quality_after_min_mean"]
