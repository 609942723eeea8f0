"""Shared pytest fixtures. Keep this file small: fixtures used by one module live in that module.

``linux_captures``: every real-Linux-TCP scenario of ``tcpvideo.linux_scenarios`` run once per
test session (about 15 s, needs root, ``ip netns`` and dumpcap), as ``{name: ScenarioResult}``;
tests that use it are skipped, with the reason, where that is impossible.

``serve_cli``: starts ``tcpvideo origin|edge serve ...`` as a child process the way a user would
(tests/test_origin_cli.py, tests/test_edge_cli.py). The Rust binary must be built (CI builds it
with ``cargo test --workspace --release`` before pytest): a missing one fails the test, it is not
skipped, so the servers' CLI tests cannot pass by not running.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest


@pytest.fixture(scope="session")
def linux_captures(tmp_path_factory):
    from tcpvideo import linux_scenarios, netns

    ok, why = netns.available(need_capture=True)
    if not ok:
        pytest.skip(f"real-Linux-TCP captures unavailable: {why}")
    out = tmp_path_factory.mktemp("linux_captures")
    return {name: linux_scenarios.run(name, out) for name in linux_scenarios.SCENARIOS}


def free_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServedCli:
    """One ``tcpvideo SERVER serve`` child on ``127.0.0.1:port``, its output (stdout and stderr
    together) kept for ``stop_with_sigterm``."""

    def __init__(self, server: str, args: list[str]):
        self.server = server
        self.port = free_loopback_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from tcpvideo.cli import main; main()", server, "serve",
             *args, "--listen", f"127.0.0.1:{self.port}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def wait_until_answers(self, path: str, deadline_s: float = 20) -> bytes:
        """The body of the first successful GET of ``path`` (retried while the server starts)."""
        deadline = time.time() + deadline_s
        while True:
            try:
                with urllib.request.urlopen(self.base + path, timeout=5) as r:
                    return r.read()
            except OSError:
                assert time.time() < deadline, f"{self.server} did not come up"
                time.sleep(0.1)

    def stop_with_sigterm(self) -> str:
        """Send SIGTERM, check the server exits 0 saying it stopped, return its output."""
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=15)
        assert self.proc.returncode == 0, out
        assert f"{self.server} stopped" in out
        return out


@pytest.fixture
def serve_cli():
    """``serve_cli("origin" | "edge", *args)`` -> a running ``ServedCli``; killed at teardown if
    the test left it running."""
    import importlib

    from tcpvideo.cli.binaries import find_binary

    started: list[ServedCli] = []

    def start(server: str, *args: str) -> ServedCli:
        cli = importlib.import_module(f"tcpvideo.cli.{server}")
        assert find_binary(cli.BINARY, cli.BINARY_ENV), f"build it first: cargo build -p {cli.BINARY} --release"
        started.append(ServedCli(server, list(args)))
        return started[-1]

    yield start
    for served in started:
        if served.proc.poll() is None:
            served.proc.kill()
