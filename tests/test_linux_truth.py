"""The analyzer scored against real Linux TCP where the truth is known by construction (issue 16).

``tcpvideo.linux_scenarios`` forces one class per scenario in network namespaces: a server that
pauses (resource constraint), a client that stops reading (zero rwnd), an idle connection with
keep-alive probes (keep alive, then the idle FIN: resource constraint), and a 0.5-s blackout at
the router with TLP off (an RTO after a window that was wholly lost: continuous loss, then the
backed-off RTO of the same segment: double). ``write_truth`` labels every gap above the stall
floor with the class the construction gives; ``tcpvideo.score`` compares. Needs root, tshark and
clang (the blackout's eBPF drop filter); skips otherwise.
"""

from __future__ import annotations

import os
import shutil

import pytest

from tcpvideo import netns


def _skip_reason() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool in ("tshark", "clang", "tc"):
        if shutil.which(tool) is None:
            return f"{tool} not installed"
    ok, why = netns.available(need_capture=True)
    return None if ok else why


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=_skip_reason() or "")


def test_the_analyzer_agrees_with_the_class_each_linux_scenario_forces(tmp_path):
    from tcpvideo.linux_scenarios import TRUTH_SCENARIOS, score_by_construction

    scores = score_by_construction(tmp_path, floor_ms=50.0)
    assert set(scores) == set(TRUTH_SCENARIOS)
    for name, s in scores.items():
        summary = s.summary()
        assert summary["stall_pairs"] >= 1, (name, summary)
        # Every forced stall found, with the forced class; nothing the construction cannot explain.
        assert summary["stall_class_agreement"] == 1.0, (name, s.stalls.disagreements())
        assert summary["stalls_missed"] == 0 and summary["stalls_extra"] == 0, (name, s.stalls.matrix())
        assert ("unexplained", "unexplained") not in s.stalls.counts, name
    blackout = scores["blackout"]
    truth_kinds = {t for t, _ in blackout.timeouts.counts}
    assert {"continuous_loss", "double"} <= truth_kinds, blackout.timeouts.matrix()
    assert blackout.summary()["timeout_type_agreement"] == 1.0, blackout.timeouts.disagreements()
