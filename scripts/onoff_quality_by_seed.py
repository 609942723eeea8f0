#!/usr/bin/env python3
"""Seed-by-seed quality of the onoff study's adaptation runs (Figs 10–11), for claims 10a and 11a:
the mean quality, the first minute vs the rest, the media rate through the bottleneck and the
stall time (the study's own reducer, metrics.py), plus what the study's tables do not keep — the
share of segments at each quality after the first minute and the spread of the throughput
samples (segment bytes over download time) the throughput rule sees.

    python scripts/onoff_quality_by_seed.py --clients 150 --seeds 1-5                 # 20-min stream
    python scripts/onoff_quality_by_seed.py --clients 50,150 --seeds 1,2 --nosack --jobs 2

Each run is one `tcpvideo.simulate` of `studies.onoff.scenario` (a 20-minute point is ~10 CPU s);
nothing is stored. Configurations: vegas and cubic with 2-s segments and cubic with 10-s segments,
one-segment buffer, the throughput rule.
"""

from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor

import numpy as np


def _seeds(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(x) for x in text.split(",")]


def one(args: tuple) -> dict:
    import tcpvideo
    from tcpvideo.studies.onoff.metrics import FIRST_MINUTE_S, reduce_run
    from tcpvideo.studies.onoff.scenario import OnOffConfig, scenario

    cc, d, n, seed, segments, sack = args
    cfg = OnOffConfig(n, cc=cc, segment_s=d, abr="throughput", segments=segments, sack=sack)
    res = tcpvideo.simulate(scenario(cfg, seed))
    s, _ = reduce_run(res, d)
    seg = res.video_segments.to_pydict()
    done = [i for i, t in enumerate(seg["done_s"]) if t is not None]
    after = [seg["quality"][i] for i in done if seg["segment"][i] * d >= FIRST_MINUTE_S]
    thr = np.array([8 * seg["bytes"][i] / seg["download_s"][i] / 1e6 for i in done if seg["download_s"][i]])
    return {"config": cfg.label().replace("+throughput-buf1", ""), "clients": n, "seed": seed,
            "quality": s["quality_mean"], "first_min": s["quality_first_min_mean"],
            "after": s["quality_after_min_mean"], "high": s["quality_high_share"], "media": s["media_mbps"],
            "stall": s["stall_mean_s"],
            "levels_after": [after.count(q) / len(after) if after else float("nan") for q in range(6)],
            "sample_p10_50_90": [float(np.percentile(thr, p)) for p in (10, 50, 90)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", default="50,150,175")
    ap.add_argument("--seeds", default="1-2", help="e.g. 1-5 or 1,3")
    ap.add_argument("--minutes", type=float, default=20.0, help="stream length (the paper's: 20)")
    ap.add_argument("--nosack", action="store_true", help="NewReno recovery (no SACK, RACK-TLP, F-RTO)")
    ap.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args()
    tasks = [(cc, d, n, seed, int(a.minutes * 60 / d), not a.nosack) for n in map(int, a.clients.split(","))
             for cc, d in (("cubic", 2.0), ("vegas", 2.0), ("cubic", 10.0)) for seed in _seeds(a.seeds)]
    with ProcessPoolExecutor(a.jobs) as pool:
        rows = list(pool.map(one, tasks))
    print("config clients seed | quality first-min after high-share media-Mbit/s stall-s | share of qualities 0..5 "
          "after the first minute | throughput samples p10/p50/p90 Mbit/s")
    for r in rows:
        print(f"{r['config']} {r['clients']} {r['seed']} | {r['quality']:.3f} {r['first_min']:.3f} {r['after']:.3f} "
              f"{r['high']:.3f} {r['media']:.1f} {r['stall']:.1f} | " + " ".join(f"{x:.3f}" for x in r["levels_after"])
              + " | " + "/".join(f"{x:.2f}" for x in r["sample_p10_50_90"]))
    print("\nper seed, vegas − cubic (2 s) and 10 s − 2 s (cubic), whole stream:")
    by = {(r["config"].split("+nosack")[0], r["clients"], r["seed"]): r["quality"] for r in rows}
    for n in sorted({r["clients"] for r in rows}):
        for a_, b_ in (("vegas+2s", "cubic+2s"), ("cubic+10s", "cubic+2s")):
            d = [by[(a_, n, s)] - by[(b_, n, s)] for s in _seeds(a.seeds)]
            print(f"  {a_} − {b_} @{n}: " + " ".join(f"{x:+.3f}" for x in d) + f"  (lower in {sum(x < 0 for x in d)}"
                  f" of {len(d)})")


if __name__ == "__main__":
    main()
