"""ETHLE end to end on real Linux TCP with a real player: ``tcpvideo edge demo`` (seed 002 §V).

* ``live_source.py`` — ffmpeg's live 15 Mbit/s, 2 s HLS stream;
* ``testbed.py`` — namespaces, the 302 ms backhaul (crates/linkem delay line), origin and edge;
* ``player.py`` + ``player/`` — hls.js in headless chromium (playwright-core), its own events;
* ``demo.py`` — the runs (edge hold-x, E2E) and the printed table;
* ``cli.py`` — the ``demo`` subcommand of ``tcpvideo edge``.
"""

from tcpvideo.edge_demo.demo import (DemoConfig, DemoResult, DemoRow, format_table,
                                     missing_requirements, run_demo)
from tcpvideo.edge_demo.testbed import TestbedConfig

__all__ = ["DemoConfig", "DemoResult", "DemoRow", "TestbedConfig", "format_table",
           "missing_requirements", "run_demo"]
