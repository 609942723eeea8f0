"""tcpvideo: diagnose, predict and fix the TCP behaviour of video delivery.

The Rust core (``tcpvideo._core``) does the work; this package is the face: argument checking,
documentation, and conversion of results to Arrow tables that pandas, polars and DuckDB read.

The main entry points are functions: :func:`simulate` (``tcpvideo.simulation``: a scenario →
tables and pcaps) and :func:`analyze` (``tcpvideo.analysis``: captures → stalls, retransmissions,
bursts, frames). They are imported on first use: pyarrow and numpy alone cost ~0.8 s, which a
command such as ``tcpvideo analyze capture.pcap`` (0.05 s of analysis) must not pay before reading
a byte (issue 12).
"""

from __future__ import annotations

import importlib

from tcpvideo._core import __version__
from tcpvideo.cc import cc_list

# Public name → the submodule that defines it (imported on first access).
_LAZY = {
    "analyze": "tcpvideo.analysis",
    "analyze_summary": "tcpvideo.analysis",
    "AnalysisResult": "tcpvideo.analysis",
    "CaptureDamaged": "tcpvideo.analysis",
    "simulate": "tcpvideo.simulation",
    "check_scenario": "tcpvideo.simulation",
    "SimResult": "tcpvideo.simulation",
    "ScenarioError": "tcpvideo.simulation",
}

__all__ = ["__version__", "cc_list", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tcpvideo' has no attribute {name!r}")
    attr = "check" if name == "check_scenario" else name
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
