"""Kernel windows no real path can have, found in an emulated run's cwnd/ssthresh series.

On 2026-11-29 Linux 6.18 ran a socket of the BPF struct_ops port tv_compound with snd_ssthresh =
668 121 856 segments: the kernel's ssthresh call returned without running the port's program, PRR
held the window near the flight and Recovery ended with snd_cwnd at that value (docs/bpf.md). The
port now repairs that case, but the other ports, and the kernel's own, may meet something like it.
A run that contains such a window measures the anomaly, not the congestion control, so `emulate`
names it: ``summary.json`` key ``kernel_window_anomalies`` and a warning in its log.

The bound: 2^24 segments of the smallest IPv4 MSS (536 bytes), about 9 GB, is far above any window
a real path can fill (Linux caps the send buffer at tcp_wmem[2], 4 MB by default) and far below
the anomaly's 668 M segments. TCP_INFINITE_SSTHRESH is not an anomaly (the series holds None).
"""

from __future__ import annotations

IMPLAUSIBLE_BYTES = (1 << 24) * 536


def window_anomalies(series: dict) -> list[dict]:
    """Per flow, the samples whose cwnd or finite ssthresh is above :data:`IMPLAUSIBLE_BYTES`.

    ``series`` is the run's series table as columns (``t_s``, ``flow``, ``cwnd_bytes``,
    ``ssthresh_bytes``). Returns one dict per affected flow, in flow order: the first such time,
    how many samples, and the largest cwnd and ssthresh seen.
    """
    found: dict[int, dict] = {}
    for t, flow, cwnd, ssthresh in zip(series["t_s"], series["flow"], series["cwnd_bytes"], series["ssthresh_bytes"]):
        big_cwnd = cwnd is not None and cwnd > IMPLAUSIBLE_BYTES
        big_ssthresh = ssthresh is not None and ssthresh > IMPLAUSIBLE_BYTES
        if not (big_cwnd or big_ssthresh):
            continue
        a = found.setdefault(flow, {"flow": flow, "first_t_s": t, "samples": 0, "max_cwnd_bytes": 0,
                                    "max_ssthresh_bytes": 0})
        a["first_t_s"] = min(a["first_t_s"], t)
        a["samples"] += 1
        a["max_cwnd_bytes"] = max(a["max_cwnd_bytes"], cwnd or 0)
        a["max_ssthresh_bytes"] = max(a["max_ssthresh_bytes"], ssthresh or 0)
    return [found[f] for f in sorted(found)]


def describe(anomaly: dict) -> str:
    """One log line for one flow's anomaly."""
    return (f"flow {anomaly['flow']}: the kernel ran a window no path can have from {anomaly['first_t_s']:.2f} s "
            f"({anomaly['samples']} samples, cwnd up to {anomaly['max_cwnd_bytes']:,} B, ssthresh up to "
            f"{anomaly['max_ssthresh_bytes']:,} B); this run measures that, not the congestion control")
