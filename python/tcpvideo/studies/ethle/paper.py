"""Seed 002's numbers the study compares against: Table II (E2E vs the optimal hold-x: overall
throughput Mbit/s, initial delay s, buffering s, total live latency s) and Table III (optimal x
and backhaul throughput, modeled and actual), keyed by (stream label, location).

Data only, as printed (the Rust model's tests hold Table III too: `crates/model/src/ethle/paper_tables.rs`).
"""

from __future__ import annotations

LOCS = ("US West", "Japan", "Australia", "India")

# stream → per location (E2E thr, init, buf, total, hold-x thr, init, buf, total)
_T2 = {
    "15Mbps 2s": ((46.5, 25.7, 0, 25.7, 37.6, 3.7, 0, 5.7), (33.3, 14.5, 3.5, 18.0, 57.7, 4.7, 0, 8.7),
                  (26.6, 8.8, 39.5, 48.3, 60.5, 5.6, 0, 9.6), (25.7, 15.9, 35.7, 51.6, 62.5, 7.0, 0, 15.0)),
    "15Mbps 4s": ((39.2, 7.9, 0, 7.9, 23.9, 4.1, 0, 4.1), (36.5, 20.5, 6.4, 26.9, 16.5, 5.3, 0, 5.3),
                  (33.0, 8.5, 20.7, 29.2, 67.7, 6.2, 0, 10.2), (31.8, 23.0, 0.4, 23.4, 15.8, 7.3, 0, 17.3)),
    "15Mbps 10s": ((52.7, 7.3, 0, 7.3, 42.3, 5.1, 0, 5.1), (40.1, 10.3, 0, 10.3, 29.3, 7.2, 0, 7.2),
                   (33.3, 16.7, 0, 16.7, 26.2, 7.4, 0, 7.4), (30.5, 22.8, 1.5, 24.3, 22.2, 8.8, 0, 8.8)),
    "50Mbps 2s": ((71.2, 8.4, 9.3, 17.7, 71.6, 4.5, 0, 6.5), (53.6, 16.0, 51.2, 67.2, 81.2, 6.1, 0, 10.1),
                  (44.9, 16.3, 102.7, 119.0, 81.9, 6.6, 0, 10.6), (34.9, 19.9, 186.0, 205.9, 79.3, 8.5, 0, 14.5)),
    "50Mbps 4s": ((75.7, 9.6, 10.3, 19.9, 92.6, 5.6, 0, 9.6), (58.6, 17.3, 83.0, 100.3, 79.8, 7.9, 0, 11.9),
                  (54.2, 14.9, 70.1, 85.0, 53.8, 8.0, 0, 12.0), (46.0, 20.5, 97.7, 118.2, 83.0, 9.5, 0, 17.5)),
    "50Mbps 10s": ((84.3, 6.8, 0, 6.8, 65.7, 4.3, 0, 4.3), (70.3, 21.7, 1.3, 23.0, 50.6, 13.7, 0, 13.7),
                   (59.7, 22.9, 16.9, 39.8, 88.9, 13.2, 0, 23.2), (54.6, 26.3, 18.3, 44.6, 87.5, 16.2, 0, 26.2)),
}

# stream → (modeled x, actual x, modeled th_bh, actual th_bh) per location; None = not modeled
_T3 = {
    "15Mbps 2s": ((1, 2, 2, 3), (1, 2, 2, 4), (20.0, 11.7, 9.6, 7.4), (19.6, 11.9, 9.9, 7.6)),
    "15Mbps 4s": ((0, 0, 1, 1), (0, 0, 1, 1), (34.4, 21.0, 17.2, 13.3), (35.2, 21.6, 17.8, 13.9)),
    "15Mbps 10s": ((0, 0, 0, 0), (0, 0, 0, 0), (78.7, 48.1, 39.3, 30.5), (75.4, 47.6, 35.6, 30.5)),
    "50Mbps 2s": ((1, 2, 2, 3), (1, 2, 2, 3), (54.8, 33.5, 27.4, 21.2), (53.7, 33.0, 27.6, 21.0)),
    "50Mbps 4s": ((1, 1, 1, 2), (1, 1, 1, 2), (101.8, 62.3, 50.9, 39.4), (95.0, 58.3, 47.0, 38.5)),
    "50Mbps 10s": ((None,) * 4, (0, 0, 1, 1), (None,) * 4, (181.0, 111.0, 81.6, 71.4)),
}


def table2(stream: str, location: str) -> dict:
    v = _T2[stream][LOCS.index(location)]
    keys = ("e2e_throughput_mbps", "e2e_initial_s", "e2e_buffering_s", "e2e_total_s",
            "holdx_throughput_mbps", "holdx_initial_s", "holdx_buffering_s", "holdx_total_s")
    return dict(zip(keys, v))


def table3(stream: str, location: str) -> dict:
    i = LOCS.index(location)
    mx, ax, mth, ath = _T3[stream]
    return {"modeled_x": mx[i], "actual_x": ax[i], "modeled_th_mbps": mth[i], "actual_th_mbps": ath[i]}
