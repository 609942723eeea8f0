"""ETHLE edge vs nginx proxy_cache (with proxy_cache_lock) on loopback, in the same run.

Peers: nginx 1.22 (apt) as origin and as a caching reverse proxy with `proxy_cache_lock on`
(nginx's request coalescing, whose waiters poll the lock every 500 ms), and `tcpvideo-edge`
pointed at the same origin. Measured, each printed with the edge/nginx ratio:

1. cold coalescing: N receivers ask at once for a segment neither proxy has; upstream fetches per
   segment (from the origin's access log) and the time until the last receiver has the whole
   segment;
2. warm load: wrk (apt) on a cached segment: requests/s, Gbit/s, p99 latency;
3. moving live window (``--live-s``, per peer; 0 skips it): a writer adds a segment to a live
   playlist every ``--live-segment-s`` and drops the oldest (window of 6, as ffmpeg's
   ``-hls_list_size``); ``--live-receivers`` players each reload the playlist through the proxy
   every half segment and fetch every new segment once. Per peer: upstream fetches per segment
   and playlist fetches per second (origin access log), and the delivery lag (segment written at
   the origin -> a receiver has all of it: playlist staleness + fetch), p50 / p99 / max, with
   the ratio. Both proxies cache playlists for 1 s (nginx's `proxy_cache_valid` has whole
   seconds; the edge runs with `--playlist-ttl-ms 1000` to match).

Bounded in time (~40 s + 2 x --live-s). Needs root-free loopback ports only; run after
`cargo build -p tcpvideo-edge --release`:

    python bench/edge_vs_nginx.py [--receivers 200] [--segment-kib 1024] [--seconds 5]
                                  [--live-s 6] [--live-receivers 20] [--live-segment-s 0.5]
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import os
import shutil
import statistics
import subprocess
import sys
import threading
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


LIVE_WINDOW = 6  # segments listed at once


class LiveWindow:
    """A live HLS stream written into ``live_dir`` (served by the origin): every ``segment_s`` a
    new segment appears (written under a temporary name, then renamed, as ffmpeg's
    ``temp_file`` flag) and the playlist moves to list the newest ``LIVE_WINDOW``; segments
    that left the window are deleted a little later. ``written[name]`` is when each appeared."""

    def __init__(self, live_dir: Path, segment_bytes: int, segment_s: float):
        self.dir, self.segment_s = live_dir, segment_s
        self.body = os.urandom(segment_bytes)
        self.written: dict[str, float] = {}
        self.next = 0
        self.stop = threading.Event()
        live_dir.mkdir(parents=True, exist_ok=True)
        for _ in range(LIVE_WINDOW):
            self.add()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def add(self) -> None:
        n = self.next
        name = f"seg{n}.ts"
        tmp = self.dir / (name + ".tmp")
        tmp.write_bytes(self.body[n % 997:] + self.body[:n % 997])
        tmp.rename(self.dir / name)
        first = max(0, n + 1 - LIVE_WINDOW)
        text = (f"#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:{max(1, round(self.segment_s))}\n"
                f"#EXT-X-MEDIA-SEQUENCE:{first}\n"
                + "".join(f"#EXTINF:{self.segment_s:.3f},\nseg{k}.ts\n" for k in range(first, n + 1)))
        ptmp = self.dir / "stream.m3u8.tmp"
        ptmp.write_text(text)
        ptmp.rename(self.dir / "stream.m3u8")
        self.written[name] = time.perf_counter()
        old = self.dir / f"seg{n - LIVE_WINDOW - 4}.ts"
        old.unlink(missing_ok=True)
        self.next += 1

    def run(self) -> None:
        while not self.stop.wait(self.segment_s):
            self.add()


def live_receiver(base: str, poll_s: float, until: float, done: list) -> None:
    """A player: reload the playlist every ``poll_s``; fetch each segment newer than the
    newest listed when it joined, once; append (name, finished at, bytes)."""
    seen: set[str] = set()
    joined = False
    while time.perf_counter() < until:
        try:
            with urllib.request.urlopen(base + "/live2/stream.m3u8", timeout=10) as r:
                names = [ln for ln in r.read().decode().splitlines() if ln and not ln.startswith("#")]
        except OSError:
            time.sleep(poll_s)
            continue
        if not joined:
            seen.update(names)
            joined = True
        for name in names:
            if name in seen:
                continue
            seen.add(name)
            n, _ = fetch(base + "/live2/" + name)
            done.append((name, time.perf_counter(), n))
        time.sleep(poll_s)


def live_run(base: str, window: LiveWindow, receivers: int, seconds: float) -> dict:
    """``receivers`` players on ``base`` for ``seconds``: the segments that appeared meanwhile
    and each delivery (name, lag s, bytes)."""
    first_new = window.next
    done: list = []
    until = time.perf_counter() + seconds
    threads = [threading.Thread(target=live_receiver, args=(base, window.segment_s / 2, until, done))
               for _ in range(receivers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Judged: segments that appeared early enough for every receiver to have had them (a 1 s
    # playlist cache, a reload interval and the fetch before the receivers stopped).
    judged = {f"seg{n}.ts" for n in range(first_new, window.next)
              if window.written[f"seg{n}.ts"] <= until - 1.0 - window.segment_s}
    delivered = [(name, at, n) for name, at, n in done if name in judged]
    lags = [at - window.written[name] for name, at, _ in delivered]
    return {"segments": sorted(judged, key=lambda s: int(s[3:-3])), "deliveries": delivered, "lags": lags}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--receivers", type=int, default=200)
    ap.add_argument("--segment-kib", type=int, default=1024)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--live-s", type=float, default=6.0, help="moving-window run per peer (s); 0 skips it")
    ap.add_argument("--live-receivers", type=int, default=20)
    ap.add_argument("--live-segment-s", type=float, default=0.5)
    ap.add_argument("--live-segment-kib", type=int, default=256)
    args = ap.parse_args()
    for name, v in (("--receivers", args.receivers), ("--segment-kib", args.segment_kib), ("--seconds", args.seconds),
                    ("--live-receivers", args.live_receivers), ("--live-segment-kib", args.live_segment_kib)):
        if v <= 0:
            raise SystemExit(f"{name}: must be positive, got {v}")
    if args.live_s < 0 or args.live_segment_s <= 0:
        raise SystemExit("--live-s must be >= 0 and --live-segment-s > 0")
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
    location ~ \\.m3u8$ {{
      proxy_pass http://127.0.0.1:{origin_port};
      proxy_cache segments;
      proxy_cache_valid 200 1s;
      proxy_cache_lock on;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }}
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
                             "--listen", f"127.0.0.1:{edge_port}", "--log-format", "json",
                             "--playlist-ttl-ms", "1000"],
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
        live = {}
        if args.live_s > 0:
            window = LiveWindow(work / "www/live2", args.live_segment_kib * 1024, args.live_segment_s)
            window.thread.start()
            try:
                for name, base in peers.items():
                    wait_up(base + "/live2/stream.m3u8")
                    log_from = len((work / "origin.log").read_text().split())
                    run = live_run(base, window, args.live_receivers, args.live_s)
                    time.sleep(0.3)
                    requests = (work / "origin.log").read_text().split()[log_from:]
                    counts = collections.Counter(requests)
                    run["fetches"] = [counts[f"/live2/{s}"] for s in run["segments"]]
                    run["playlist_fetches"] = counts["/live2/stream.m3u8"]
                    live[name] = run
            finally:
                window.stop.set()
                window.thread.join()
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
    if live:
        print(f"moving live window: a {args.live_segment_kib} KiB segment every {args.live_segment_s:g} s, "
              f"window {LIVE_WINDOW}, {args.live_receivers} receivers reloading every "
              f"{args.live_segment_s / 2:g} s, {args.live_s:g} s per peer (load {os.getloadavg()[0]:.1f})")
        q = {}
        for name, run in live.items():
            lags = sorted(run["lags"])
            expected = len(run["segments"]) * args.live_receivers
            fetched = [f for f in run["fetches"]]
            p = (lambda x: lags[min(len(lags) - 1, int(x * len(lags)))]) if lags else (lambda x: float("nan"))
            q[name] = (statistics.median(lags) if lags else float("nan"), p(0.99), lags[-1] if lags else float("nan"))
            print(f"  {name:5s}  {len(run['segments'])} new segments, {len(run['deliveries'])} of {expected} "
                  f"deliveries  upstream fetches per segment "
                  f"max {max(fetched, default=0)} mean {statistics.fmean(fetched) if fetched else 0:.2f}  "
                  f"playlist fetches {run['playlist_fetches'] / args.live_s:.1f}/s  delivery lag ms "
                  f"p50 {q[name][0] * 1e3:6.1f} p99 {q[name][1] * 1e3:6.1f} max {q[name][2] * 1e3:6.1f}")
        if "edge" in q and "nginx" in q:
            print(f"  ratio edge/nginx delivery lag: p50 {q['edge'][0] / q['nginx'][0]:.2f}  "
                  f"p99 {q['edge'][1] / q['nginx'][1]:.2f} (lower is better)")


if __name__ == "__main__":
    sys.exit(main())
