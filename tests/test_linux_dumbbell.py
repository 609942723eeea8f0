"""The real-Linux dumbbell's instruments: delay line, bottleneck, queue sampling (root only).

``tcpvideo.linux_dumbbell`` is the reference bench/cc_vs_linux.py compares tcpvideo with, so
its instruments must be right before its numbers mean anything. One short run (2 cubic flows,
5 s, RTTs 40 and 70 ms) checks each against something it does not compute itself:

* the delay line: ICMP echo RTT per client address on the idle path, and the first flow's TCP
  handshake (the kernel's own SYN/SYN-ACK sample), within 1.5 ms above the configured RTT
  (two delay-line crossings; session 16 measured 0.6-1.07 ms) and never below it (a line
  releasing early would show up as a smaller RTT); the two addresses get different RTTs, so a
  line applying one delay to everything fails;
* the bottleneck: tbf's own byte counter says it sent close to 100 Mbit/s after the warm-up
  (saturated, not stalled by a too-small bucket) and never more than the configured rate;
* the queue sampling: the samples reach the 1375-packet limit that cubic's slow start
  overshoots into, the sampled drop counter equals tc's final drop count up to the drops after
  the run window, and drops imply retransmissions reported by the kernel.

Skipped without root, tc/ip/ethtool or /dev/net/tun (like tests/test_linux_capture.py).

The delay line itself is also tested without root (at the end): two AF_UNIX datagram socket
pairs stand in for the TUN devices and carry hand-made IPv4 headers, so per-address delays (never
early), the B->A source lookup, the default delay, order within an address and the counters are
checked on any machine.
"""

from __future__ import annotations

import os

import pytest

from tcpvideo import netns


def _skip_reason() -> str | None:
    ok, why = netns.available()
    if not ok:
        return why
    if not os.path.exists("/dev/net/tun"):
        return "no /dev/net/tun"
    try:
        from tcpvideo import _core
    except ImportError as e:  # pragma: no cover
        return f"tcpvideo._core not built: {e}"
    if not hasattr(_core, "DelayLine"):
        return "this build has no DelayLine"
    return None


@pytest.fixture(scope="module")
def run():
    why = _skip_reason()
    if why:
        pytest.skip(why)
    from tcpvideo import linux_dumbbell as ld

    flows = [ld.FlowSpec(rtt_ms=40.0, start_s=0.0), ld.FlowSpec(rtt_ms=70.0, start_s=0.3)]
    return ld.run(flows, "cubic", duration=5.0, warmup=2.5, ping_count=5, log=lambda m: None)


def test_ping_rtt_matches_configured_delay(run):
    for addr, p in run.ping.items():
        assert p["received"] >= 3, f"{addr}: pings lost through the delay line: {p}"
        err = p["min_ms"] - p["configured_ms"]
        # Never early; late by what the path itself costs: an echo crosses the user-space delay
        # line twice (TUN read, the SCHED_FIFO thread's wake-up, TUN write) and two veth pairs.
        # Measured on this 2-core machine: min excess 0.62-0.83 ms over three idle runs, 1.04 ms
        # once in a fresh-clone CI run (session 16), so 1.0 ms was a flaky bound; 1.5 ms still
        # catches a delay applied once instead of twice (20 ms) or a wrong unit.
        assert 0.0 <= err <= 1.5, f"{addr}: ping {p['min_ms']:.3f} ms vs {p['configured_ms']} ms"


def test_handshake_rtt_matches_configured_delay(run):
    # the first flow connects through an empty queue; its SYN/SYN-ACK time is the path RTT. Read from
    # the kernel's own sample (TCP_INFO right after connect): timing connect() from Python also
    # measured the thread's wake-up (41.06 ms vs 40 once on a nearly idle machine).
    # One sample, not the minimum of five like the ping above, so it carries the delay line's
    # wake-up tail: excess 0.36-1.50 ms over four idle runs and 0.55-1.35 ms beside two busy loops
    # (session 21, /tmp/hs), 1.77 ms once in session 20's fresh-clone CI run, where 1.5 ms failed.
    # The ping test holds the path's precision; this one checks that the kernel's handshake sample
    # is the path's RTT (a direction without its delay is 20 ms short, a doubled one 20 ms or more long)
    # and that connect() returns after it, so its bound leaves room for one late wake-up per crossing.
    f = run.flows[0]
    err = f["handshake_rtt_ms"] - f["rtt_ms"]
    assert 0.0 <= err <= 5.0, f"handshake {f['handshake_rtt_ms']:.3f} ms (kernel) vs configured {f['rtt_ms']}"
    # connect() returned after the kernel's sample, never before it
    assert f["connect_ms"] >= f["handshake_rtt_ms"] - 0.05


def test_flows_ran_with_the_requested_congestion_control(run):
    assert [f["cc"] for f in run.flows] == ["cubic", "cubic"]
    assert all(f["bytes_read"] > 1_000_000 for f in run.flows), run.flows


def test_bottleneck_saturated_at_configured_rate(run):
    r = run.bottleneck_rate_after_warmup_mbps
    assert 95.0 <= r <= 100.5, f"tbf sent {r:.2f} Mbit/s after the warm-up (configured 100)"
    # goodput cannot exceed the payload share of the link (1448 of 1500 bytes)
    assert run.goodput_after_warmup_mbps <= 100.0 * 1448 / 1500 * 1.01
    assert run.goodput_after_warmup_mbps >= 0.9 * r * 1448 / 1500


def test_queue_sampling_and_drop_counter(run):
    q = run.queue_sampling
    assert q["error"] is None
    assert q["samples"] >= 0.8 * run.duration_s / (q["interval_ms"] / 1e3), q
    # cubic's slow start overshoots a 1375-packet queue with two flows at 40/70 ms: the sampled
    # queue must reach (close to) the limit, and tbf must have dropped
    assert run.queue_max_pkts >= 1300, run.queue_max_pkts
    assert run.queue_max_pkts <= 1375
    assert 0 < run.bottleneck_drops <= run.tbf["dropped"]
    assert run.queue_mean_pkts > 0
    # every drop at the only bottleneck is a lost data segment the sender had to resend
    assert run.retransmissions >= run.bottleneck_drops * 0.5
    assert run.mib["RetransSegs"] >= run.retransmissions


def test_delay_line_counters(run):
    dl = run.delay_line
    assert dl["error"] is None
    data, acks = dl["a_to_b"], dl["b_to_a"]
    assert data["write_errors"] == 0 and acks["write_errors"] == 0
    # the data direction carried (at least) what the clients read
    assert data["bytes"] >= sum(f["bytes_read"] for f in run.flows)
    assert acks["packets"] > 0
    assert data["late_p50_us"] is not None and data["late_p50_us"] <= 1000


# ----------------------------------------------------------------------------------------------
# The delay line alone, no root: any two packet-preserving fds stand in for the TUN devices
# (AF_UNIX datagram socket pairs), carrying hand-made IPv4 headers.
# ----------------------------------------------------------------------------------------------
def _ipv4(src: str, dst: str, payload: bytes = b"") -> bytes:
    import socket
    import struct

    return (struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(payload), 0, 0, 64, 6, 0)
            + socket.inet_aton(src) + socket.inet_aton(dst) + payload)


@pytest.fixture
def line_fds():
    import socket

    try:
        from tcpvideo._core import DelayLine  # noqa: F401
    except ImportError:
        pytest.skip("this build has no DelayLine")
    a_app, a_line = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    b_line, b_app = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    for s in (a_line, b_line):
        s.setblocking(False)
    yield a_app, a_line, b_line, b_app
    for s in (a_app, a_line, b_line, b_app):
        s.close()


def _recv_all(sock, n: int, timeout: float = 3.0) -> list[tuple[float, bytes]]:
    import time

    out = []
    sock.settimeout(timeout)
    while len(out) < n:
        data = sock.recv(4096)
        out.append((time.monotonic(), data))
    return out


def test_delay_line_delays_per_address_and_never_early(line_fds):
    import time

    from tcpvideo._core import DelayLine

    a_app, a_line, b_line, b_app = line_fds
    line = DelayLine(a_line.fileno(), b_line.fileno(),
                     a_to_b={"10.99.0.1": 0.060, "10.99.0.2": 0.020},
                     b_to_a={"10.99.0.1": 0.030}, default_a_to_b=0.005, default_b_to_a=0.0)
    line.start()
    try:
        t0 = time.monotonic()
        a_app.send(_ipv4("10.0.0.1", "10.99.0.1", b"slow"))   # 60 ms
        a_app.send(_ipv4("10.0.0.1", "10.99.0.2", b"fast"))   # 20 ms: overtakes the first
        a_app.send(_ipv4("10.0.0.1", "10.99.0.9", b"other"))  # not in the table: 5 ms default
        a_app.send(b"\x60" + bytes(39))                        # IPv6: default too
        got = _recv_all(b_app, 4)
        b_app.send(_ipv4("10.99.0.1", "10.0.0.1", b"ack"))    # B->A keyed by source: 30 ms
        t1 = time.monotonic()
        back = _recv_all(a_app, 1)
        st = line.stop()
    finally:
        line.stop()
    by_payload = {d[20:]: t - t0 for t, d in got}
    assert [d[20:] for _, d in got[:2]] != [b"slow", b"fast"], "no per-address delay"
    assert by_payload[b"slow"] >= 0.060
    assert by_payload[b"fast"] >= 0.020
    assert by_payload[b"other"] >= 0.005
    # generous upper bounds (shared CI machines); the accuracy is measured in bench/
    assert by_payload[b"slow"] < 0.060 + 0.050
    assert by_payload[b"fast"] < by_payload[b"slow"]
    assert back[0][1][20:] == b"ack" and 0.030 <= back[0][0] - t1 < 0.030 + 0.050
    assert st["error"] is None
    assert st["a_to_b"]["packets"] == 4 and st["b_to_a"]["packets"] == 1
    assert st["a_to_b"]["bytes"] == sum(len(d) for _, d in got)
    assert st["a_to_b"]["non_ipv4"] == 1


def test_delay_line_keeps_order_within_an_address(line_fds):
    from tcpvideo._core import DelayLine

    a_app, a_line, b_line, b_app = line_fds
    line = DelayLine(a_line.fileno(), b_line.fileno(), a_to_b={"10.99.0.1": 0.010})
    line.start()
    try:
        for i in range(200):
            a_app.send(_ipv4("10.0.0.1", "10.99.0.1", i.to_bytes(4, "big")))
        got = _recv_all(b_app, 200)
    finally:
        st = line.stop()
    assert [int.from_bytes(d[20:], "big") for _, d in got] == list(range(200))
    assert st["a_to_b"]["held_max"] >= 1 and st["a_to_b"]["write_errors"] == 0


def test_delay_line_rejects_bad_tables():
    try:
        from tcpvideo._core import DelayLine
    except ImportError:
        pytest.skip("this build has no DelayLine")
    with pytest.raises(ValueError):
        DelayLine(3, 4, a_to_b={"not-an-ip": 0.01})
    with pytest.raises(ValueError):
        DelayLine(3, 4, default_a_to_b=-1.0)
    with pytest.raises(ValueError):
        DelayLine(3, 3)
