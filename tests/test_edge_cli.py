"""`tcpvideo edge serve` starts the Rust edge binary, which proxies a live source and stops
cleanly on SIGTERM; bad options are refused with one line naming the option."""

import http.server
import threading
import urllib.request

from typer.testing import CliRunner

from tcpvideo.cli import app

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


def test_edge_serve_proxies_the_source_and_stops_on_sigterm(serve_cli):
    source = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Source)
    threading.Thread(target=source.serve_forever, daemon=True).start()
    try:
        edge = serve_cli("edge", "--upstream", f"http://127.0.0.1:{source.server_address[1]}")
        playlist = edge.wait_until_answers("/live/stream.m3u8")
        assert playlist.decode() == PLAYLIST  # loopback backhaul: hold-0, unchanged
        # seg7 is older than where a new hls.js receiver starts (the edge prefetches seg9..seg12
        # on a receiver's first playlist), so it is fetched on request: one miss.
        with urllib.request.urlopen(edge.base + "/live/seg7.ts", timeout=5) as r:
            assert r.read() == bytes(range(256)) * 40
        with urllib.request.urlopen(edge.base + "/metrics", timeout=5) as r:
            assert "ethle_cache_misses_total 1" in r.read().decode()
        edge.stop_with_sigterm()
    finally:
        source.shutdown()


def test_edge_serve_refuses_a_non_http_upstream_naming_the_option():
    result = CliRunner().invoke(app, ["edge", "serve", "--upstream", "ftp://origin/live"])
    assert result.exit_code != 0
    assert "--upstream" in result.output
