"""Seed 003's A/B test as scenarios: one population per data centre (``[population]`` with the
DC1/DC2 presets, crates/sim/src/population.rs), served once per experiment group with the same
users (same seed ⇒ same draws), each user one progressive download (``app = "progressive"``).

Groups (§4.1): baseline1 and baseline2 (64 kB application pacing; two identical groups to gauge
the noise of a metric — here they are the same simulation with a different connection seed),
trickle, shrunk-block (16 kB), and the modern alternatives pacing-cap (SO_MAX_PACING_RATE at
1.25·R) and bbr (64 kB pacing over BBR).

Fixed for every user (our choices where the seed is silent): startup phase of 30 s of media
(§2: "30 to 40 seconds"), a 3-minute video, CUBIC (§4.1), the server's send buffer 256 kB (Linux
autotunes it to ≈ 2·cwnd; the simulator's is fixed, see docs/scenario.md), users arriving within
the first 5 s, the capture at the server (§5.2: "tcpdump packet traces at the server").
"""

from __future__ import annotations

from dataclasses import dataclass

GROUPS = ("baseline1", "baseline2", "trickle", "shrunk-block", "pacing-cap", "bbr")
MODE = {"baseline1": "baseline", "baseline2": "baseline", "trickle": "trickle", "shrunk-block": "shrunk-block",
        "pacing-cap": "pacing-cap", "bbr": "bbr"}
DCS = ("dc1", "dc2")


@dataclass(frozen=True)
class Scale:
    name: str
    users: int  # per data centre (every group serves the same users)
    duration_s: float  # simulated time per run
    seeds: tuple[int, ...]  # population draws; each seed is another set of users


DEFAULT = Scale("default", users=48, duration_s=90.0, seeds=(1,))
FULL = Scale("full", users=300, duration_s=180.0, seeds=(1, 2, 3))


def scenario(dc: str, group: str, scale: Scale, seed: int) -> dict:
    """The run of ``group`` over data centre ``dc``'s users (population seed ``seed``)."""
    # baseline2 is baseline1 again with other ISNs (the only randomness a connection has): the
    # population is drawn from [population]'s own stream, so a different `tcp` seed is not
    # possible; we shift the users' arrival by 1 ms instead, which changes every packet time.
    start = "1ms" if group == "baseline2" else "0s"
    return {
        "name": f"trickle-{dc}-{group}",
        "duration": f"{scale.duration_s}s",
        "seed": seed,
        "population": {
            "users": scale.users,
            "preset": dc,
            "flow": {
                "app": "progressive",
                "start": start,
                "start_jitter": "5s",
                "progressive": {"mode": MODE[group], "media": "180s", "startup_media": "30s"},
                "tcp": {"cc": "bbr" if group == "bbr" else "cubic", "snd_buf": "256KB"},
            },
        },
        "record": {"pcap": [{"link": "server", "at": "server"}], "events": False},
    }
