"""Which runs the ETHLE study makes (seed 002 §V): 6 streams × 4 source locations, each watched
end to end and through the edge holding 0–4 segments, at the default (CI) or the paper's scale.

Streams are Table I's (bitrate, segment length, size in decimal MB); locations are §V-A's source
sites with their backhaul RTT to the UK edge. The paper cuts each session five minutes after the
first request (``--full``); the default cuts it after 75 s with one seed.
"""

from __future__ import annotations

from dataclasses import dataclass

LOCATIONS = (("US West", 137.0), ("Japan", 224.0), ("Australia", 302.0), ("India", 334.0))

# (bitrate Mbit/s, segment length s, segment size MB as Table I prints it)
STREAMS = ((15, 2, 3.7), (15, 4, 7.2), (15, 10, 18.3), (50, 2, 12.2), (50, 4, 24.4), (50, 10, 61.1))

SCHEMES = ("e2e", "hold0", "hold1", "hold2", "hold3", "hold4")


@dataclass(frozen=True)
class Scale:
    session_s: float
    seeds: tuple[int, ...]
    join_s: float = 30.0  # the stream has been live this long when the receiver arrives
    # Only these (stream label, location) cells; empty = all 24 (tests run a few).
    only: tuple[tuple[str, str], ...] = ()


DEFAULT = Scale(session_s=75.0, seeds=(1,))
FULL = Scale(session_s=300.0, seeds=(1, 2, 3))


def stream_label(bitrate: int, segment_s: int) -> str:
    return f"{bitrate}Mbps {segment_s}s"


def config(location: str, rtt_ms: float, stream: tuple, scheme: str, scale: Scale, seed: int) -> dict:
    """One testbed configuration (the JSON `tcpvideo_sim::ethle_testbed::TestbedConfig` reads)."""
    bitrate, segment_s, size_mb = stream
    cfg = {"seed": seed, "session_s": scale.session_s, "join_s": scale.join_s, "backhaul_rtt_ms": rtt_ms,
           "bitrate_mbps": float(bitrate), "segment_s": float(segment_s), "segment_bytes": int(round(size_mb * 1e6)),
           "scheme": "e2e" if scheme == "e2e" else "hold", "hold": 0 if scheme == "e2e" else int(scheme[4:])}
    return cfg


def points(scale: Scale) -> list[tuple[dict, int, dict]]:
    """(configuration, seed, labels) of every run."""
    out = []
    for bitrate, segment_s, size_mb in STREAMS:
        for location, rtt in LOCATIONS:
            if scale.only and (stream_label(bitrate, segment_s), location) not in scale.only:
                continue
            for scheme in SCHEMES:
                for seed in scale.seeds:
                    labels = {"stream": stream_label(bitrate, segment_s), "location": location, "rtt_ms": rtt,
                              "scheme_name": scheme, "bitrate_mbps": bitrate, "segment_s": segment_s,
                              "segment_mb": size_mb}
                    out.append((config(location, rtt, (bitrate, segment_s, size_mb), scheme, scale, seed), seed, labels))
    return out
