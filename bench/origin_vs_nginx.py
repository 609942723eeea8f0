"""tcpvideo-origin vs nginx serving the same HLS segments on loopback, in the same run.

Peer: nginx 1.22 (apt) with its usual static-file setup (sendfile on, tcp_nopush on, 2 workers,
access log off, long keep-alive). tcpvideo-origin in bulk mode (the same bytes, no pacing; its
tokio runtime has one worker per core, 2 here), access logs off as well. wrk (apt) drives both
with the same settings: `wrk -t2 -c64 -dS --latency` per segment size, origin and nginx
alternating (origin first in odd rounds, nginx first in even ones; medians over `--rounds`).
Printed: req/s, Gbit/s, p99 latency, server CPU µs per request (user+system of the server's
processes, from /proc: the number that holds when other jobs load the machine), and the
origin/nginx ratios. Goal: origin ≥ nginx on this machine. Note wrk runs on the same 2 cores as
the server.

Run after `cargo build -p tcpvideo-origin --release`:

    python bench/origin_vs_nginx.py [--seconds 5] [--rounds 3] [--sizes-kib 16,256,1024]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from nginx_wrk import (WRK_CONNECTIONS, WRK_THREADS, free_port, release_binary,  # noqa: E402
                       require_nginx_and_wrk, scratch_site, start_nginx, stop, wait_up, wrk)

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes-kib", default="16,256,1024")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes_kib.split(",")]
    require_nginx_and_wrk()
    origin_bin = release_binary("tcpvideo-origin", "TCPVIDEO_ORIGIN_BIN")

    work, live = scratch_site("origin_vs_nginx_")
    for kib in sizes:
        (live / f"seg{kib}k.ts").write_bytes(os.urandom(kib * 1024))
    origin_port, nginx_port = free_port(), free_port()
    nginx = start_nginx(work, f"""\
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  types {{ video/mp2t ts; }}
  server {{
    listen 127.0.0.1:{nginx_port};
    root {work}/www;
  }}
""")
    env = dict(os.environ, RUST_LOG="warn")
    origin = subprocess.Popen([origin_bin, str(work / "www"), "--listen", f"127.0.0.1:{origin_port}",
                               "--no-bpf", "--log-format", "json"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    samples: dict = {}
    try:
        wait_up(f"http://127.0.0.1:{nginx_port}/live/seg{sizes[0]}k.ts")
        wait_up(f"http://127.0.0.1:{origin_port}/live/seg{sizes[0]}k.ts")
        servers = [("origin", origin_port, [origin.pid]), ("nginx", nginx_port, [nginx.pid])]
        for round_no in range(args.rounds):
            for kib in sizes:
                for name, port, pids in servers if round_no % 2 == 0 else servers[::-1]:
                    w = wrk(f"http://127.0.0.1:{port}/live/seg{kib}k.ts", args.seconds, pids)
                    samples.setdefault((kib, name), []).append(w)
    finally:
        stop(origin, nginx)
        shutil.rmtree(work, ignore_errors=True)

    results = {key: {k: statistics.median(w[k] for w in ws) for k in ws[0]} for key, ws in samples.items()}
    print(f"wrk -t{WRK_THREADS} -c{WRK_CONNECTIONS} -d{args.seconds}s on loopback, same segment files, "
          f"{os.cpu_count()} cores, "
          f"medians of {args.rounds} alternating rounds, load average {os.getloadavg()[0]:.1f}")
    print(f"{'segment':>8s} {'server':>7s} {'req/s':>10s} {'Gbit/s':>8s} {'p99 ms':>8s} {'CPU us/req':>10s}")
    for kib in sizes:
        for name in ("origin", "nginx"):
            w = results[(kib, name)]
            print(f"{kib:>6d}Ki {name:>7s} {w['rps']:10.0f} {w['gbps']:8.2f} {w['p99_ms']:8.2f} {w['cpu_us']:10.1f}")
        o, n = results[(kib, "origin")], results[(kib, "nginx")]
        print(f"{kib:>6d}Ki {'ratio':>7s} {o['rps'] / n['rps']:10.2f} {o['gbps'] / n['gbps']:8.2f} "
              f"{o['p99_ms'] / n['p99_ms']:8.2f} {o['cpu_us'] / n['cpu_us']:10.2f}"
              "   (origin/nginx; p99 and CPU lower is better)")


if __name__ == "__main__":
    sys.exit(main())
