"""tcpvideo: diagnose, predict and fix the TCP behaviour of video delivery.

The Rust core (``tcpvideo._core``) does the work; this package is the face: argument checking,
documentation, and conversion of results to Arrow tables that pandas, polars and DuckDB read.

``tcpvideo.analyze`` and ``tcpvideo.simulate`` are the functions of the submodules of the same
name. They are imported on first use: pyarrow and numpy alone cost ~0.8 s, which a command such
as ``tcpvideo analyze capture.pcap`` (0.05 s of analysis) must not pay before reading a byte
(issue 12).
"""

from __future__ import annotations

import importlib
import sys
import types

from tcpvideo._core import __version__
from tcpvideo.cc import cc_list

# Public name → the submodule that defines it (imported on first access).
_LAZY = {
    "analyze": "tcpvideo.analyze",
    "AnalysisResult": "tcpvideo.analyze",
    "simulate": "tcpvideo.simulate",
    "SimResult": "tcpvideo.simulate",
    "ScenarioError": "tcpvideo.simulate",
}
# Submodules whose package attribute is their main function, whatever the import order.
_FUNCTION_MODULES = ("analyze", "simulate")

__all__ = ["__version__", "cc_list", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tcpvideo' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """Keeps ``tcpvideo.analyze``/``tcpvideo.simulate`` bound to the functions: importing a
    submodule makes Python set the package attribute of the same name to the module."""

    def __setattr__(self, name, value):
        if name in _FUNCTION_MODULES and isinstance(value, types.ModuleType):
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
