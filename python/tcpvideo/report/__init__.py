"""HTML reports of analyses (self-contained: plots are embedded PNGs)."""

from tcpvideo.report.analysis import write_report

__all__ = ["write_report"]
