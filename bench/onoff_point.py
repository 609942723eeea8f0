#!/usr/bin/env python3
"""One seed-004 on-off point at scale: N live clients × a stream of M minutes, CUBIC, 100 Mbit/s,
55±5 ms, 1375-packet queue, 2-second segments at 500 kbit/s with one-segment buffers (issue 10's
bench: goal ≤ 15 CPU seconds for 200 clients × 20 minutes).

Prints wall time, CPU time, simulated packets per CPU second and peak RSS for the video app
(`app = "live"`: player + origin over HTTP/1.1), and the same for the peer measured in the same
run: the same clients and schedule as byte-count request/response flows (`app = "reqresp"`, the
pre-video app), so the ratio is the video layer's cost. Each measurement runs in a fresh process
(peak RSS is per process). With `--profile`, `perf record` samples the video run and the top
symbols are printed (where the time goes).

    python bench/onoff_point.py                       # 200 clients × 20 min
    python bench/onoff_point.py --clients 50 --minutes 2 --profile
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


def scenario(clients: int, minutes: float, app: str) -> dict:
    flow = {"start_jitter": "2s", "tcp": {"cc": "cubic"}}
    sc = {
        "name": f"onoff-{app}",
        "duration": f"{minutes * 60:g}s",
        "seed": 1,
        "dumbbell": {"clients": clients, "bottleneck_rate": "100Mbps", "queue": 1375, "rtt": "55ms",
                     "rtt_std": "5ms", "flow": flow},
        "record": {"events": True},
    }
    if app == "live":
        sc["video"] = {"segment_duration": "2s"}
        flow.update({"app": "live", "player": {"abr": "fixed", "abr_params": {"quality": 1}, "buffer_segments": 1}})
    else:
        flow.update({"app": "reqresp", "period": "2s", "count": int(minutes * 30), "response_bytes": "125kB"})
    return sc


CHILD = r"""
import json, resource, sys, time
import tcpvideo
sc = json.loads(sys.argv[1])
w0, c0 = time.perf_counter(), time.process_time()
r = tcpvideo.simulate(sc)
wall, cpu = time.perf_counter() - w0, time.process_time() - c0
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
s = r.summary
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "packets": s["packets_sent"], "events": s["events_processed"],
                  "drops": s["drops"], "peak_rss_mb": rss_mb,
                  "mean_liveness_s": s.get("video_mean_liveness_s")}))
"""


# Where the time goes, by area: perf's self time per symbol summed over these patterns (first match).
# Inlined code counts where it was inlined (the old binary heap's push sat inside Network::offer).
AREAS = [("event queue (engine.rs, event_queue.rs)", r"engine::EventQueue|event_queue|binary_heap"),
         ("links and routing (network.rs)", r"network::"),
         ("TCP endpoints (tcp/)", r"tcpvideo_sim::tcp::|partition_point"),
         ("congestion control (model/cc)", r"tcpvideo_model::cc::"),
         ("video player/origin/HTTP (app/, model/video)", r"tcpvideo_sim::app::|tcpvideo_model::video::"),
         ("event loop and dispatch (sim.rs)", r"tcpvideo_sim::sim::"),
         ("memcpy/malloc (libc)", r"memmove|memcpy|malloc|free|realloc")]


def areas(perf_data: str) -> list[tuple[str, float]]:
    rep = subprocess.run(["perf", "report", "-i", perf_data, "--no-children", "--stdio", "--sort", "dso,symbol",
                          "-g", "none"], capture_output=True, text=True).stdout
    shares: dict[str, float] = {}
    for ln in rep.splitlines():
        m = re.match(r"\s+([\d.]+)%\s+(\S+)\s+\[.\]\s+(.*)", ln)
        if not m:
            continue
        pct, dso, sym = float(m[1]), m[2], m[3]
        name = next((n for n, pat in AREAS if re.search(pat, sym)), None)
        if name is None:
            name = "other simulator code" if "_core" in dso else \
                "Python interpreter" if "python" in dso else "kernel" if "kernel" in dso else "other libraries"
        shares[name] = shares.get(name, 0.0) + pct
    return sorted(shares.items(), key=lambda kv: -kv[1])


def measure(sc: dict, perf_out: str | None = None) -> dict:
    cmd = [sys.executable, "-c", CHILD, json.dumps(sc)]
    if perf_out:
        cmd = ["perf", "record", "-g", "-F", "499", "-o", perf_out, "--"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--profile", action="store_true", help="perf-record the video run and print the top symbols")
    a = ap.parse_args()
    rows = {}
    load_before = os.getloadavg()[0]
    for app in ("live", "reqresp"):
        rows[app] = measure(scenario(a.clients, a.minutes, app))
    print(f"onoff point: {a.clients} clients × {a.minutes:g} min, cubic "
          f"(1-min load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after)")
    print(f"{'app':9} {'wall s':>8} {'CPU s':>8} {'packets':>11} {'pkts/CPU s':>11} {'peak RSS MB':>12} {'drops':>8}")
    for app, r in rows.items():
        print(f"{app:9} {r['wall_s']:8.2f} {r['cpu_s']:8.2f} {r['packets']:11,} {r['packets'] / r['cpu_s']:11,.0f} "
              f"{r['peak_rss_mb']:12.0f} {r['drops']:8}")
    live, peer = rows["live"], rows["reqresp"]
    print(f"video app CPU / reqresp CPU: {live['cpu_s'] / peer['cpu_s']:.2f}×")
    if (a.clients, a.minutes) == (200, 20.0):
        print(f"goal ≤ 15 CPU s for 200 × 20 min: {'met' if live['cpu_s'] <= 15 else 'not met'} ({live['cpu_s']:.1f} s)")
    if a.profile:
        if shutil.which("perf") is None:
            print("perf not installed: no profile")
            return
        with tempfile.TemporaryDirectory() as d:
            out = f"{d}/perf.data"
            measure(scenario(a.clients, a.minutes, "live"), perf_out=out)
            rep = subprocess.run(["perf", "report", "-i", out, "--no-children", "--stdio", "--percent-limit", "2",
                                  "--sort", "symbol", "-g", "none"], capture_output=True, text=True)
            lines = [ln.rstrip(" -") for ln in rep.stdout.splitlines() if ln.strip() and not ln.startswith("#")]
            print("profile (self time, symbols ≥ 2 %):")
            print("\n".join(lines[:25]))
            print("by area (self time):")
            for name, pct in areas(out):
                print(f"  {pct:5.1f} %  {name}")


if __name__ == "__main__":
    main()
