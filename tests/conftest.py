"""Shared pytest fixtures. Keep this file small: fixtures used by one module live in that module.

``linux_captures``: every real-Linux-TCP scenario of ``tcpvideo.linux_scenarios`` run once per
test session (about 15 s, needs root, ``ip netns`` and dumpcap), as ``{name: ScenarioResult}``;
tests that use it are skipped, with the reason, where that is impossible.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def linux_captures(tmp_path_factory):
    from tcpvideo import linux_scenarios, netns

    ok, why = netns.available(need_capture=True)
    if not ok:
        pytest.skip(f"real-Linux-TCP captures unavailable: {why}")
    out = tmp_path_factory.mktemp("linux_captures")
    return {name: linux_scenarios.run(name, out) for name in linux_scenarios.SCENARIOS}
