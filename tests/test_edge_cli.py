"""`tcpvideo edge serve` starts the Rust edge binary, which proxies a live source and stops
cleanly on SIGTERM; bad options are refused with one line naming the option."""

import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

from typer.testing import CliRunner

from tcpvideo.cli import app
from tcpvideo.cli.edge import find_edge_binary

PLAYLIST = ("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:7\n"
            + "".join(f"#EXTINF:2.000,\nseg{n}.ts\n" for n in range(7, 13)))


class _Source(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = PLAYLIST.encode() if self.path.endswith(".m3u8") else bytes(range(256)) * 40
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_edge_serve_proxies_the_source_and_stops_on_sigterm():
    assert find_edge_binary(), "build it first: cargo build -p tcpvideo-edge --release"
    source = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Source)
    threading.Thread(target=source.serve_forever, daemon=True).start()
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from tcpvideo.cli import main; main()", "edge", "serve",
         "--upstream", f"http://127.0.0.1:{source.server_address[1]}", "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/live/stream.m3u8", timeout=5) as r:
                    assert r.read().decode() == PLAYLIST  # loopback backhaul: hold-0, unchanged
                break
            except OSError:
                assert time.time() < deadline, "edge did not come up"
                time.sleep(0.1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/live/seg9.ts", timeout=5) as r:
            assert r.read() == bytes(range(256)) * 40
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            assert "ethle_cache_misses_total 1" in r.read().decode()
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
        assert proc.returncode == 0, out
        assert "edge stopped" in out
    finally:
        if proc.poll() is None:
            proc.kill()
        source.shutdown()


def test_edge_serve_refuses_a_non_http_upstream_naming_the_option():
    result = CliRunner().invoke(app, ["edge", "serve", "--upstream", "ftp://origin/live"])
    assert result.exit_code != 0
    assert "--upstream" in result.output
