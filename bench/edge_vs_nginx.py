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
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from nginx_wrk import (WRK_CONNECTIONS, WRK_THREADS, free_port, release_binary,  # noqa: E402
                       require_nginx_and_wrk, scratch_site, start_nginx, stop, wait_up, wrk)

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--receivers", type=int, default=200)
    ap.add_argument("--segment-kib", type=int, default=1024)
    ap.add_argument("--seconds", type=int, default=5)
    args = ap.parse_args()
    require_nginx_and_wrk()
    edge_bin = release_binary("tcpvideo-edge", "TCPVIDEO_EDGE_BIN")

    work, live = scratch_site("edge_vs_nginx_")
    segments = 6
    body = os.urandom(args.segment_kib * 1024)
    for n in range(segments):
        (live / f"seg{n}.ts").write_bytes(body[n:] + body[:n])
    (live / "stream.m3u8").write_text(
        "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n"
        + "".join(f"#EXTINF:2.000,\nseg{n}.ts\n" for n in range(segments)))
    origin_port, nginx_port, edge_port = free_port(), free_port(), free_port()
    (work / "cache").mkdir()
    nginx = start_nginx(work, f"""\
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
""")
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
        stop(edge, nginx)
        shutil.rmtree(work, ignore_errors=True)

    print(f"cold: {args.receivers} receivers at once, one {args.segment_kib} KiB segment, loopback")
    for name, (fetches, elapsed) in cold.items():
        print(f"  {name:5s}  upstream fetches {fetches}   last receiver done after {elapsed * 1000:7.1f} ms")
    print(f"  ratio edge/nginx time to last receiver: {cold['edge'][1] / cold['nginx'][1]:.2f}")
    print(f"warm: wrk -t{WRK_THREADS} -c{WRK_CONNECTIONS} -d{args.seconds}s on a cached segment")
    for name, w in warm.items():
        print(f"  {name:5s}  {w['rps']:9.0f} req/s  {w['gbps']:6.2f} Gbit/s  p99 {w['p99_ms']:7.2f} ms")
    e, n = warm["edge"], warm["nginx"]
    print(f"  ratio edge/nginx: req/s {e['rps'] / n['rps']:.2f}  Gbit/s {e['gbps'] / n['gbps']:.2f}  "
          f"p99 {e['p99_ms'] / n['p99_ms']:.2f} (lower is better)")


if __name__ == "__main__":
    sys.exit(main())
