"""Seed studies: one module per seed paper (STYLE rule 15), each with a default scale for CI and a
``--full`` scale, writing tables, one PNG per figure, a self-contained HTML report with the
paper-vs-ours table, and a JSON of it all (:mod:`tcpvideo.studies.report`).

``tcpvideo study list`` shows them; ``tcpvideo study NAME [--full] [--out DIR]`` runs one.
"""

from __future__ import annotations

import importlib

# name → (module, one-line summary); the module has ``run(full, out, jobs, ray_address, progress)``.
STUDIES = {
    "onoff": ("tcpvideo.studies.onoff", "seed 004: on-off traffic of live segmented HTTP streaming with many "
              "clients; cubic vs bic/reno/vegas/bbr, 10-s segments, distributed requests, cwnd limit, 16 combinations"),
    "ethle": ("tcpvideo.studies.ethle", "seed 002: ETHLE edge holding live segments — E2E vs hold-0..4, 6 streams × 4 locations"),
    "trickle": ("tcpvideo.studies.trickle", "seed 003: Trickle vs ustreamer's 64 kB / 16 kB application pacing, a pacing cap "
                "and BBR over DC1/DC2 user populations; bursts, retransmissions, srtt, rebuffering"),
    "crowdlive": ("tcpvideo.studies.crowdlive", "seed 000: crowdsourced live streaming at the front-end; analyzer "
                  "scored against simulator ground truth; TLP / aggressive-RTO mitigations"),
    "ccplb": ("tcpvideo.studies.ccplb", "seed 001: CUBIC/Compound/CCP/CCPLCA/CCPLB streaming to a frame-deadline "
              "player over lossy WiFi at RTT 3/100/200 ms; CCPLB POBRate at POB 448/897/1345"),
}


def study(name: str):
    """The module of study ``name`` (KeyError naming the known ones otherwise)."""
    if name not in STUDIES:
        raise KeyError(f"unknown study {name!r}; known: {', '.join(STUDIES)}")
    return importlib.import_module(STUDIES[name][0])
