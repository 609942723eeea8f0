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
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(url: str, deadline_s: float = 15) -> None:
    end = time.time() + deadline_s
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            if time.time() > end:
                raise SystemExit(f"{url} did not come up")
            time.sleep(0.1)


def cpu_seconds(pids: list[int]) -> float:
    """user + system CPU seconds of these processes and their live children (nginx workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry.name), int(fields[1])
        if pid in pids or ppid in pids:
            total += int(fields[11]) + int(fields[12])
    return total / tick


def wrk(url: str, seconds: int, pids: list[int]) -> dict:
    cpu0 = cpu_seconds(pids)
    out = subprocess.run(["wrk", "-t2", "-c64", f"-d{seconds}s", "--latency", url],
                         capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    transfer = re.search(r"Transfer/sec:\s+([\d.]+)(\w+)", out)
    scale = {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30}[transfer.group(2)]
    gbps = float(transfer.group(1)) * scale * 8 / 1e9
    p99 = re.search(r"99%\s+([\d.]+)(\w+)", out)
    unit = {"us": 1e-3, "ms": 1.0, "s": 1e3}[p99.group(2)]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise SystemExit(f"{url}: {errors.group(1)} error responses\n{out}")
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    cpu_us = (cpu_seconds(pids) - cpu0) * 1e6 / max(requests, 1)
    return {"rps": rps, "gbps": gbps, "p99_ms": float(p99.group(1)) * unit, "cpu_us": cpu_us}



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sizes-kib", default="16,256,1024")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes_kib.split(",")]
    for tool in ("nginx", "wrk"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            raise SystemExit(f"{tool} not found: apt-get install -y nginx wrk")
    origin_bin = os.environ.get("TCPVIDEO_ORIGIN_BIN", str(ROOT / "target/release/tcpvideo-origin"))
    if not os.access(origin_bin, os.X_OK):
        raise SystemExit("tcpvideo-origin not built: cargo build -p tcpvideo-origin --release")

    work = Path(tempfile.mkdtemp(prefix="origin_vs_nginx_"))
    live = work / "www/live"
    live.mkdir(parents=True)
    for kib in sizes:
        (live / f"seg{kib}k.ts").write_bytes(os.urandom(kib * 1024))
    origin_port, nginx_port = free_port(), free_port()
    conf = work / "nginx.conf"
    user_line = "user root;" if os.geteuid() == 0 else ""
    conf.write_text(f"""
{user_line}
worker_processes 2;
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  types {{ video/mp2t ts; }}
  server {{
    listen 127.0.0.1:{nginx_port};
    root {work}/www;
  }}
}}
""")
    nginx = subprocess.Popen(["nginx", "-c", str(conf), "-g", "daemon off;"])
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
        origin.terminate()
        nginx.terminate()
        origin.wait(timeout=15)
        nginx.wait(timeout=15)
        shutil.rmtree(work, ignore_errors=True)

    results = {key: {k: statistics.median(w[k] for w in ws) for k in ws[0]} for key, ws in samples.items()}
    print(f"wrk -t2 -c64 -d{args.seconds}s on loopback, same segment files, {os.cpu_count()} cores, "
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
