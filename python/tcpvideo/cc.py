"""Congestion controls available to simulated flows (the registry lives in Rust, crates/model)."""

from __future__ import annotations

from tcpvideo import _core


def cc_list() -> list[dict]:
    """Every congestion control with its summary, reference and documented parameters."""
    return _core.cc_list()
