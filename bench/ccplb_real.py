"""Seed 001's testbed, simulated vs real Linux TCP (issue 15, build item 4): discards, underflows,
retransmissions and the median cwnd per variant × RTT, each run once in tcpvideo's simulator and
once on real TCP (namespaces, linkem with the WiFi link's random loss, tcpvideo's origin with the
kernel CC — CUBIC or the registered BPF twin, POB / video rate in its socket storage — and a real
frame-deadline client; ``ss -tin`` cwnd samples). The harness is
``python/tcpvideo/studies/ccplb/real.py``; this script only chooses the points and prints.

Root, the origin binary (cargo build -p tcpvideo-origin --release), clang/bpftool for the BPF CCs.
Loads the ports it needs and unloads them afterwards.

    python bench/ccplb_real.py                                  # 5 variants × RTT 3/100/200 ms, 8 s of video
    python bench/ccplb_real.py --cc cubic ccplb --rtt 100 --media 20 --seed 2
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from tcpvideo.studies.ccplb import real  # noqa: E402
from tcpvideo.studies.ccplb.scenario import CCS, RTTS_MS  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cc", nargs="+", default=list(CCS), choices=CCS)
    ap.add_argument("--rtt", nargs="+", type=float, default=list(RTTS_MS), help="path RTTs, ms")
    ap.add_argument("--media", type=float, default=8.0, help="video length, s")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "ccplb_real"))
    a = ap.parse_args()
    why = real.missing(a.cc)
    if why:
        sys.exit(f"error: {why}")
    t0, c0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    rows = real.compare(real.default_points(a.cc, a.rtt), a.media, a.seed, Path(a.out))
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    print()
    print(real.markdown(rows))
    print(f"{len(rows)} points in {time.perf_counter() - t0:.0f} s wall, children CPU "
          f"{c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime:.0f} s, load {os.getloadavg()[0]:.1f}; "
          f"table in {a.out}/sim_vs_real.md")


if __name__ == "__main__":
    main()
