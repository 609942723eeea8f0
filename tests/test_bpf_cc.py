"""tcpvideo's BPF ports of Linux Vegas and BIC (bpf/) on a real Linux stack (root only).

bench/cc_bpf_vs_tcpvideo.py uses these ports as the real-Linux reference for tcpvideo's Vegas and
BIC, so they must load, be what the kernel runs, and behave as the algorithm says:

* build + register: both names appear in tcp_available_congestion_control, and unregister
  removes them again (a leftover registration would leak into other engineers' runs);
* Vegas keeps alpha..beta segments queued: one tv_vegas flow alone through a 10 Mbit/s, 20 ms
  path (BDP 17 packets) with a deep drop-tail queue drains its slow-start overshoot at one
  segment per RTT and then holds 2-4 segments in the queue (Brakmo & Peterson, section 3.2);
  the bottleneck's own queue length (tbf qlen sampled by linux_dumbbell) over the last 2 s of a
  6 s run must be small, with no drop. A Reno-like port (or no port: Linux's default) would fill
  the 1375-packet queue and drop.

Skipped without root, namespaces, /dev/net/tun, clang, bpftool, the libbpf headers, kernel BTF,
or while a bench already has tv_vegas/tv_bic registered (this test would unregister them).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tcpvideo import bpf, netns

NAMES = ("tv_vegas", "tv_bic")


def _available() -> list[str]:
    return Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()


def _skip_reason() -> str | None:
    ok, why = netns.available()
    if not ok:
        return why
    why = bpf.missing()
    if why:
        return why
    if not os.path.exists("/dev/net/tun"):
        return "no /dev/net/tun"
    busy = [n for n in NAMES if n in _available()]
    if busy:
        return f"{', '.join(busy)} already registered (a bench is running?)"
    return None


@pytest.fixture(scope="module")
def registered(tmp_path_factory):
    why = _skip_reason()
    if why:
        pytest.skip(why)
    os.environ["TCPVIDEO_BPF_BUILD"] = str(tmp_path_factory.mktemp("bpf_cc"))
    bpf.load(NAMES)
    try:
        yield
    finally:
        bpf.unload(NAMES)
        del os.environ["TCPVIDEO_BPF_BUILD"]


def test_register_and_unregister(registered):
    assert set(NAMES) <= set(_available())
    bpf.unload(["tv_bic"])
    try:
        assert "tv_bic" not in _available()
        assert "tv_vegas" in _available()
    finally:
        bpf.load(["tv_bic"])


def test_vegas_alone_holds_alpha_to_beta_segments(registered):
    from tcpvideo import linux_dumbbell as ld

    r = ld.run([ld.FlowSpec(rtt_ms=20.0, start_s=0.0)], "tv_vegas", duration=6.0, warmup=4.0,
               rate="10mbit", ping_count=3, log=lambda m: None)
    assert r.flows[0]["cc"] == "tv_vegas"
    assert r.goodput_after_warmup_mbps > 8.5, r.goodput_after_warmup_mbps  # link kept busy
    assert r.bottleneck_drops == 0
    # alpha..beta = 2..4 segments of this flow queued; the bucket of tbf (10 packets) lets a few
    # more pass unqueued or queue briefly, so allow 0.5..8 on average
    assert 0.5 <= r.queue_mean_after_warmup_pkts <= 8.0, r.queue_mean_after_warmup_pkts
    assert r.queue_max_pkts < 1375
