"""The simulated ETHLE study (seed 002): a few cells at a short session, end to end through the
sweep, tables, claims and report."""

import json

import pytest

from tcpvideo import _core
from tcpvideo.studies import ethle
from tcpvideo.studies.ethle.plan import Scale

CELLS = (("15Mbps 2s", "Japan"), ("50Mbps 2s", "India"))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    out = tmp_path_factory.mktemp("ethle")
    scale = Scale(session_s=40.0, seeds=(1,), only=CELLS)
    return out, scale, ethle.run(out=out, jobs=1, progress=False, scale=scale)


def test_the_model_x_run_removes_the_buffering_that_hold_0_suffers(study):
    _, _, res = study
    cells = res["cells"].set_index(["stream", "location"])
    india = cells.loc[("50Mbps 2s", "India")]
    assert india["model_x"] == 3
    assert india["model_x_buffering_s"] == 0
    runs = res["cells"]
    assert len(runs) == 2
    # some hold is buffer-free in both cells, and it is not hold-0 over India's 334 ms backhaul
    assert india["sim_optimal_x"] >= 1


def test_table_three_compares_simulated_and_modeled_backhaul_throughput(study):
    out, _, res = study
    cells = res["cells"].set_index(["stream", "location"])
    japan = cells.loc[("15Mbps 2s", "Japan")]
    # Table III: modeled 11.7, actual 11.9 Mbit/s; the simulated transient BBR fetches land near both
    assert abs(japan["model_th_bh_mbps"] - 11.7) < 0.6
    assert 0.85 < japan["sim_th_bh_mbps"] / japan["paper_t3_actual_th_mbps"] < 1.15
    report = json.loads((out / "report" / "report.json").read_text())
    ids = {c["id"] for c in report["claims"]}
    assert {"hold_x_removes_buffering", "optimal_x_matches_actual", "backhaul_throughput"} <= ids
    assert (out / "report" / "figures" / "fig09_latency_stacks.png").stat().st_size > 10_000
    assert (out / "report" / "tables" / "table3.csv").read_text().count("\n") == 3


def test_a_second_run_reuses_every_stored_point(study):
    out, scale, _ = study
    again = ethle.run(out=out, jobs=1, progress=False, scale=scale)
    assert again["facts"]["ran_now"] == 0 and again["facts"]["reused"] == 12


def test_a_bad_testbed_key_is_one_line_naming_it():
    with pytest.raises(ValueError, match="backhaul_rtt_ms"):
        _core.ethle_testbed_run(json.dumps({"seed": 1, "session_s": 10, "join_s": 5, "backhaul_rtt_ms": -3,
                                            "bitrate_mbps": 15, "segment_s": 2, "segment_bytes": 1000,
                                            "scheme": "e2e"}))
    with pytest.raises(ValueError, match="sheme"):
        _core.ethle_testbed_run(json.dumps({"sheme": "e2e"}))


def _runs(rows):
    import pandas as pd

    return pd.DataFrame([{"stream": "50Mbps 2s", "location": "Australia", "seed": seed, "scheme_name": f"hold{x}",
                          "buffering_s": buf, "total_latency_s": 10.0 + 2 * x, "initial_delay_s": 6.0}
                         for seed, x, buf in rows])


def test_the_optimal_x_over_seeds_is_the_median_of_each_sessions_optimum_and_the_strict_x_is_reported_too():
    from tcpvideo.studies.ethle.tables import median_x, optimal, per_scheme, per_seed_optimal_x

    # hold-2 stalls 0.18 s in one seed of three (the --full Australia 50M-2s case)
    rows = [(s, x, 0.0 if x >= 2 and not (s == 3 and x == 2) else 5.0) for s in (1, 2, 3) for x in range(5)]
    runs = _runs(rows)
    per_seed = per_seed_optimal_x(runs)
    assert sorted(per_seed["x"]) == [2, 2, 3]
    assert median_x(per_seed["x"]) == 2
    import numpy as np

    agg = per_scheme(runs.assign(**{k: np.nan for k in ("stalls", "hold_latency_s", "receiver_throughput_mbps",
                                                        "backhaul_throughput_mbps", "predicted_backhaul_mbps",
                                                        "model_x", "measured_backhaul_rtt_ms", "player_latency_s")}))
    assert optimal(agg)["scheme_name"] == "hold3"  # free of buffering in every seed
    # a seed without any buffer-free hold leaves the cell without an x (never guessed)
    rows = [(s, x, 0.0 if s != 2 else 1.0) for s in (1, 2, 3) for x in range(5)]
    assert median_x(per_seed_optimal_x(_runs(rows))["x"]) is None
