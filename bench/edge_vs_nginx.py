"""ETHLE edge vs nginx proxy_cache (with proxy_cache_lock) on loopback, in the same run.

Peers: nginx 1.22 (apt) as origin and as a caching reverse proxy with `proxy_cache_lock on`
(nginx's request coalescing, whose waiters poll the lock every 500 ms), and `tcpvideo-edge`
pointed at the same origin. Measured, each printed with the edge/nginx ratio:

1. cold coalescing: N receivers ask at once for a segment neither proxy has; upstream fetches per
   segment (from the origin's access log) and the time until the last receiver has the whole
   segment;
2. warm load: wrk (apt) on a cached segment: requests/s, Gbit/s, p99 latency.

Bounded in time (~40 s). Needs root-free loopback ports only; run after
`cargo build -p tcpvideo-edge --release`:

    python bench/edge_vs_nginx.py [--receivers 200] [--segment-kib 1024] [--seconds 5]
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import os
import re
import shutil
import socket
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


def fetch(url: str) -> tuple[int, float]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as r:
        n = len(r.read())
    return n, time.perf_counter() - t0


def cold_burst(base: str, path: str, receivers: int) -> float:
    with concurrent.futures.ThreadPoolExecutor(max_workers=receivers) as pool:
        t0 = time.perf_counter()
        results = list(pool.map(lambda _: fetch(base + path), range(receivers)))
        elapsed = time.perf_counter() - t0
    sizes = {n for n, _ in results}
    assert len(sizes) == 1, f"receivers got different sizes: {sizes}"
    return elapsed


def wrk(url: str, seconds: int) -> dict:
    out = subprocess.run(["wrk", "-t2", "-c64", f"-d{seconds}s", "--latency", url],
                         capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    transfer = re.search(r"Transfer/sec:\s+([\d.]+)(\w+)", out)
    scale = {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30}[transfer.group(2)]
    gbps = float(transfer.group(1)) * scale * 8 / 1e9
    p99 = re.search(r"99%\s+([\d.]+)(\w+)", out)
    unit = {"us": 1e-3, "ms": 1.0, "s": 1e3}[p99.group(2)]
    return {"rps": rps, "gbps": gbps, "p99_ms": float(p99.group(1)) * unit}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--receivers", type=int, default=200)
    ap.add_argument("--segment-kib", type=int, default=1024)
    ap.add_argument("--seconds", type=int, default=5)
    args = ap.parse_args()
    for tool in ("nginx", "wrk"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            raise SystemExit(f"{tool} not found: apt-get install -y nginx wrk")
    edge_bin = os.environ.get("TCPVIDEO_EDGE_BIN", str(ROOT / "target/release/tcpvideo-edge"))
    if not os.access(edge_bin, os.X_OK):
        raise SystemExit("tcpvideo-edge not built: cargo build -p tcpvideo-edge --release")

    work = Path(tempfile.mkdtemp(prefix="edge_vs_nginx_"))
    live = work / "www/live"
    live.mkdir(parents=True)
    segments = 6
    body = os.urandom(args.segment_kib * 1024)
    for n in range(segments):
        (live / f"seg{n}.ts").write_bytes(body[n:] + body[:n])
    (live / "stream.m3u8").write_text(
        "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n"
        + "".join(f"#EXTINF:2.000,\nseg{n}.ts\n" for n in range(segments)))
    origin_port, nginx_port, edge_port = free_port(), free_port(), free_port()
    (work / "cache").mkdir()
    conf = work / "nginx.conf"
    # As root, nginx's workers would switch to an unprivileged user that cannot read the temp dir.
    user_line = "user root;" if os.geteuid() == 0 else ""
    conf.write_text(f"""
{user_line}
worker_processes 2;
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  log_format plain '$request_uri';
  proxy_cache_path {work}/cache keys_zone=segments:10m max_size=1g;
  server {{
    listen 127.0.0.1:{origin_port};
    access_log {work}/origin.log plain;
    root {work}/www;
  }}
  server {{
    listen 127.0.0.1:{nginx_port};
    location / {{
      proxy_pass http://127.0.0.1:{origin_port};
      proxy_cache segments;
      proxy_cache_valid 200 10m;
      proxy_cache_lock on;
      proxy_cache_lock_timeout 30s;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }}
  }}
}}
""")
    nginx = subprocess.Popen(["nginx", "-c", str(conf), "-g", "daemon off;"])
    edge = subprocess.Popen([edge_bin, "--upstream", f"http://127.0.0.1:{origin_port}",
                             "--listen", f"127.0.0.1:{edge_port}", "--log-format", "json"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_up(f"http://127.0.0.1:{origin_port}/live/stream.m3u8")
        wait_up(f"http://127.0.0.1:{nginx_port}/live/stream.m3u8")
        wait_up(f"http://127.0.0.1:{edge_port}/healthz")
        peers = {"edge": f"http://127.0.0.1:{edge_port}", "nginx": f"http://127.0.0.1:{nginx_port}"}
        cold = {}
        for i, (name, base) in enumerate(peers.items()):
            path = f"/live/seg{i + 1}.ts"
            elapsed = cold_burst(base, path, args.receivers)
            time.sleep(0.2)
            counts = collections.Counter((work / "origin.log").read_text().split())
            cold[name] = (counts[path], elapsed)
        warm = {name: wrk(base + "/live/seg0.ts", args.seconds) for name, base in peers.items()}
    finally:
        edge.terminate()
        nginx.terminate()
        edge.wait(timeout=15)
        nginx.wait(timeout=15)
        shutil.rmtree(work, ignore_errors=True)

    print(f"cold: {args.receivers} receivers at once, one {args.segment_kib} KiB segment, loopback")
    for name, (fetches, elapsed) in cold.items():
        print(f"  {name:5s}  upstream fetches {fetches}   last receiver done after {elapsed * 1000:7.1f} ms")
    print(f"  ratio edge/nginx time to last receiver: {cold['edge'][1] / cold['nginx'][1]:.2f}")
    print(f"warm: wrk -t2 -c64 -d{args.seconds}s on a cached segment")
    for name, w in warm.items():
        print(f"  {name:5s}  {w['rps']:9.0f} req/s  {w['gbps']:6.2f} Gbit/s  p99 {w['p99_ms']:7.2f} ms")
    e, n = warm["edge"], warm["nginx"]
    print(f"  ratio edge/nginx: req/s {e['rps'] / n['rps']:.2f}  Gbit/s {e['gbps'] / n['gbps']:.2f}  "
          f"p99 {e['p99_ms'] / n['p99_ms']:.2f} (lower is better)")


if __name__ == "__main__":
    sys.exit(main())
