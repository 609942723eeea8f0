"""`tcpvideo origin serve DIR` starts the Rust origin binary, which serves the directory with
ranges and per-request delivery modes and stops cleanly on SIGTERM (removing its BPF program and
cgroup when it loaded them); bad options are refused with one line naming the option."""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from typer.testing import CliRunner

from tcpvideo.cli import app
from tcpvideo.cli.origin import find_origin_binary


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_origin_serve_serves_ranges_and_modes_and_stops_on_sigterm(tmp_path: Path):
    assert find_origin_binary(), "build it first: cargo build -p tcpvideo-origin --release"
    (tmp_path / "hls").mkdir()
    segment = bytes(range(256)) * 400
    (tmp_path / "hls" / "seg1.ts").write_bytes(segment)
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from tcpvideo.cli import main; main()", "origin", "serve",
         str(tmp_path), "--listen", f"127.0.0.1:{port}", "--rate-kbps", "4000"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 20
        while True:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=5).read()
                break
            except OSError:
                assert time.time() < deadline, "origin did not come up"
                time.sleep(0.1)
        req = urllib.request.Request(base + "/hls/seg1.ts", headers={"Range": "bytes=1000-1999"})
        with urllib.request.urlopen(req, timeout=5) as r:
            assert r.status == 206
            assert r.headers["Content-Type"] == "video/mp2t"
            assert r.read() == segment[1000:2000]
        # 102 400 bytes at R = 4 Mbit/s (tokens at 5 Mbit/s, 64 kB blocks, no startup burst):
        # the second block is due after 2 x 65 536 x 8 / 5e6 = 0.21 s; bulk takes milliseconds.
        t0 = time.perf_counter()
        with urllib.request.urlopen(base + "/hls/seg1.ts?mode=baseline&startup_s=0", timeout=10) as r:
            assert r.read() == segment
        assert time.perf_counter() - t0 >= 0.18
        with urllib.request.urlopen(base + "/metrics", timeout=5) as r:
            text = r.read().decode()
        assert 'origin_responses_by_mode_total{mode="baseline"} 1' in text
        assert 'origin_responses_total{code="206"} 1' in text
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
        assert proc.returncode == 0, out
        assert "origin stopped" in out
    finally:
        if proc.poll() is None:
            proc.kill()
    leftovers = [p for p in os.listdir("/sys/fs/cgroup/unified") if p == f"origin-tcpvideo-{proc.pid}"] \
        if os.path.isdir("/sys/fs/cgroup/unified") else []
    assert not leftovers


def test_origin_serve_refuses_an_unknown_mode_naming_the_option(tmp_path: Path):
    result = CliRunner().invoke(app, ["origin", "serve", str(tmp_path), "--mode", "trikle"])
    assert result.exit_code != 0
    assert "--mode" in result.output
    result = CliRunner().invoke(app, ["origin", "serve", str(tmp_path / "missing")])
    assert result.exit_code != 0
    assert "DIR" in result.output
