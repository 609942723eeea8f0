"""Trickle on real Linux TCP, short: tcpvideo-origin serves 1 Mbit/s video over a 10 Mbit/s,
50 ms path (namespaces, tbf, delay line) with its BPF cwnd clamp; the analyzer on the server's
capture finds ≥ 90 % of bursts ≤ 10 packets, `ss` never shows cwnd above the applied clamp, and
the throttling phase delivers R (±5 % over this short run; bench/trickle_real.py runs the 60 s
version and the 64 kB-pacing contrast). Skips without root, namespaces, dumpcap or the binary."""

import importlib.util
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _skip_reason():
    if os.geteuid() != 0:
        return "needs root (namespaces, BPF)"
    from tcpvideo import netns
    ok, why = netns.available(need_capture=True)
    if not ok:
        return why
    from tcpvideo.cli.origin import find_origin_binary
    if not find_origin_binary():
        return "tcpvideo-origin not built (cargo build -p tcpvideo-origin --release)"
    from tcpvideo import _core
    if not hasattr(_core, "DelayLine"):
        return "this build has no DelayLine"
    return None


def _bench():
    spec = importlib.util.spec_from_file_location("trickle_real", ROOT / "bench" / "trickle_real.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_trickle_keeps_real_bursts_within_ten_packets_and_cwnd_under_its_clamp(tmp_path):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    from tcpvideo.cli.origin import find_origin_binary
    r = _bench().run_case("trickle", 1000, 10, 50, 14, tmp_path, find_origin_binary(), startup_s=2,
                          log=lambda *_: None)
    assert r["bpf_clamp"], "the BPF clamp did not load"
    assert r["clamps_applied"][0] == 10  # 1.2 x 50 ms x 1 Mbit/s / 1448 B = 5.2 -> floor 10
    assert r["bursts"] >= 20, r
    assert r["bursts_le10_share"] >= 0.9, r
    assert r["ss_cwnd_le_clamp_share"] == 1.0, r
    assert abs(r["delivered_vs_target"] - 1.0) <= 0.05, r
