"""tcpvideo: diagnose, predict and fix the TCP behaviour of video delivery.

The Rust core (``tcpvideo._core``) does the work; this package is the face: argument checking,
documentation, and conversion of results to Arrow tables that pandas, polars and DuckDB read.
"""

from tcpvideo._core import __version__
from tcpvideo.cc import cc_list

from tcpvideo.analyze import AnalysisResult, analyze  # noqa: E402  (rebinds tcpvideo.analyze to the function)
from tcpvideo.simulate import ScenarioError, SimResult, simulate  # noqa: E402  (likewise)

__all__ = ["__version__", "cc_list", "analyze", "AnalysisResult", "simulate", "SimResult", "ScenarioError"]
