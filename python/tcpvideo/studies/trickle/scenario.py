"""Seed 003's A/B test as scenarios: one population per data centre (``[population]`` with the
DC1/DC2 presets, crates/sim/src/population.rs), served once per experiment group with the same
users (same seed ⇒ same draws), each user one progressive download (``app = "progressive"``).

Groups (§4.1): baseline1 and baseline2 (64 kB application pacing; the paper's two identical
groups gauge the noise of a metric — here they are the same simulation, see below), trickle,
shrunk-block (16 kB), and the modern alternatives pacing-cap (SO_MAX_PACING_RATE at 1.25·R) and
bbr (64 kB pacing over BBR). An explaining run, dc1-shallow, serves DC1's users with 40-ms
buffers (baseline1 and trickle only).

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
# The explaining experiment for the size of the retransmission rates (see claims.py, "fig4_share"):
# DC1's users with shallow last-mile buffers (40 ms instead of 150 ms), baseline1 vs trickle only.
SHALLOW = "dc1-shallow"
SHALLOW_GROUPS = ("baseline1", "trickle")


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
    # baseline2 is baseline1 again. The users share no bottleneck and no random loss, so the two are
    # the same simulation and give identical numbers: the paper's two baselines measure the noise of
    # a production A/B split, which a deterministic simulation of independent users does not have.
    population = {"preset": "dc1", "buffer_median": "40ms"} if dc == SHALLOW else {"preset": dc}
    return {
        "name": f"trickle-{dc}-{group}",
        "duration": f"{scale.duration_s}s",
        "seed": seed,
        "population": {
            "users": scale.users,
            **population,
            "flow": {
                "app": "progressive",
                "start_jitter": "5s",
                "progressive": {"mode": MODE[group], "media": "180s", "startup_media": "30s"},
                "tcp": {"cc": "bbr" if group == "bbr" else "cubic", "snd_buf": "256KB"},
            },
        },
        "record": {"pcap": [{"link": "server", "at": "server"}], "events": False},
    }
