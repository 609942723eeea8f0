"""``tcpvideo demo``: simulate a small embedded dumbbell and print its summary.

Four clients behind a 20 Mbit/s bottleneck (base RTTs drawn from 40±5 ms, BDP-sized drop-tail
queue): two bulk CUBIC downloads and two live-video clients fetching 2-second segments of
500 kB (2 Mbit/s) over persistent connections, for 6 simulated seconds.
"""

from __future__ import annotations

from typing import Optional

import typer
from rich.console import Console

from tcpvideo.cli.run import print_summary, run_with_progress

DEMO_SCENARIO = {
    "name": "demo",
    "duration": "6s",
    "seed": 1,
    "node": [{"name": "server"}, {"name": "r1", "kind": "router"}, {"name": "r2", "kind": "router"},
             {"name": "alice"}, {"name": "bob"}, {"name": "carol"}, {"name": "dave"}],
    "link": [
        {"name": "server", "a": "server", "b": "r1", "rate": "1Gbps", "delay": "0.5ms"},
        {"name": "bottleneck", "a": "r1", "b": "r2", "rate": "20Mbps", "delay": "5ms", "queue": 70},
        {"name": "alice", "a": "r2", "b": "alice", "rate": "100Mbps", "delay": "12ms"},
        {"name": "bob", "a": "r2", "b": "bob", "rate": "100Mbps", "delay": "15ms"},
        {"name": "carol", "a": "r2", "b": "carol", "rate": "100Mbps", "delay": "14ms"},
        {"name": "dave", "a": "r2", "b": "dave", "rate": "100Mbps", "delay": "17ms"},
    ],
    "flow": [
        {"name": "bulk-alice", "client": "alice", "server": "server", "app": "bulk"},
        {"name": "bulk-bob", "client": "bob", "server": "server", "app": "bulk", "start": "0.5s"},
        {"name": "video-carol", "client": "carol", "server": "server", "app": "reqresp",
         "period": "2s", "count": 3, "response_bytes": "500kB"},
        {"name": "video-dave", "client": "dave", "server": "server", "app": "reqresp",
         "period": "2s", "count": 3, "response_bytes": "500kB", "start": "0.3s"},
    ],
    "record": {"sample_interval": "50ms"},
}


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo_cmd(seed: Optional[int] = typer.Option(None, "--seed", help="Override the demo's seed.")) -> None:
        """Simulate a small embedded dumbbell (bulk + segment downloads) and print the summary."""
        console = Console()
        res = run_with_progress(DEMO_SCENARIO, seed, None, console)
        print_summary(res, console, title="tcpvideo demo: 4 clients, 20 Mbit/s bottleneck")
