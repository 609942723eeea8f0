"""The analyzer against real Linux TCP and against tshark, on the same capture files.

Issue 4's validation. ``tcpvideo.linux_scenarios`` runs five small real-kernel scenarios in
network namespaces (bulk transfer through a dropping tbf bottleneck, a server that pauses, a
client that stops reading, an idle keep-alive connection, four concurrent transfers) and
captures each at the server. Every capture is read by tshark (Wireshark's TCP analysis, the
reference people trust) and by tcpvideo's analyzer; the tests check that they agree and that
both agree with what the kernel did by construction (tc's drop counter, the pause the server
took, the window the client closed).

Definitions, aligned with tshark 4.0 (epan/dissectors/packet-tcp.c, tcp_analyze_sequence_number):

* **Retransmission**: a segment that carries sequence space (payload, SYN or FIN) its sender
  already sent. tshark splits these four ways: ``tcp.analysis.fast_retransmission`` (seq ==
  the duplicate-ACKed number, >= 2 dup ACKs, within 20 ms of the last one; such frames also
  carry ``tcp.analysis.retransmission``), ``tcp.analysis.spurious_retransmission`` (all of it
  already ACKed), ``tcp.analysis.out_of_order`` (sent less than the handshake RTT after the
  highest-sequence segment -- the "ooo_thres" rule), and ``tcp.analysis.retransmission`` for the
  rest. At a capture taken *at the sender*, as all of ours are, nothing is reordered, so every
  one of the four is a retransmission: the count compared is the number of frames with any of
  the four flags, data-bearing frames only (``tcp.len > 0``) per flow, against the analyzer's
  ``retrans_packets``. (Checked on these captures: the union equals tc's drop count plus at
  most a few spurious/TLP re-sends, while ``retransmission || fast_retransmission`` alone
  misses the out-of-order-labelled ones -- 26 of 213 in one run of ``concurrent``.)
* **Keep-alive**: tshark's ``tcp.analysis.keep_alive`` is "payload <= 1 byte, seq = next
  expected - 1, no SYN/FIN/RST". Linux's zero-window probe (tcp_xmit_probe_skb: no payload,
  seq = SND.UNA - 1) matches it too, so tshark labels persist probes keep-alives; the analyzer
  must not (seed 000 keeps "zero rwnd" and "keep alive" stalls apart), which
  ``test_zero_window_probes_are_not_keepalive_stalls`` pins.
* **Zero window**: tshark's ``tcp.analysis.zero_window`` (window field 0, not SYN/FIN/RST).
"""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

RETRANS_FLAGS = ("retransmission", "fast_retransmission", "spurious_retransmission",
                 "out_of_order")
FLAGS = RETRANS_FLAGS + ("zero_window", "keep_alive", "keep_alive_ack", "window_update")


# ----------------------------------------------------------------------------------------------
# tshark side
# ----------------------------------------------------------------------------------------------
@dataclass
class Frame:
    number: int
    t: float  # seconds since the epoch
    stream: int
    src: str
    sport: int
    dst: str
    dport: int
    length: int  # TCP payload bytes
    rel_seq: int
    syn: bool
    fin: bool
    window: int
    flags: frozenset  # the tshark analysis flags of FLAGS present on this frame

    @property
    def is_retransmission(self) -> bool:
        return bool(self.flags & set(RETRANS_FLAGS))


def tshark_frames(pcap) -> list[Frame]:
    fields = ["frame.number", "frame.time_epoch", "tcp.stream", "ip.src", "tcp.srcport",
              "ip.dst", "tcp.dstport", "tcp.len", "tcp.seq", "tcp.flags.syn", "tcp.flags.fin",
              "tcp.window_size"] + [f"tcp.analysis.{f}" for f in FLAGS]
    argv = ["tshark", "-r", str(pcap), "-Y", "tcp", "-T", "fields", "-E", "separator=\t",
            "-E", "occurrence=f"]
    for f in fields:
        argv += ["-e", f]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    frames = []
    for line in out.splitlines():
        c = line.split("\t")
        flags = frozenset(f for f, v in zip(FLAGS, c[12:]) if v)
        frames.append(Frame(int(c[0]), float(c[1]), int(c[2]), c[3], int(c[4]), c[5], int(c[6]),
                            int(c[7] or 0), int(c[8] or 0), c[9] in ("1", "True"),
                            c[10] in ("1", "True"), int(c[11] or 0), flags))
    return frames


def streams(frames: list[Frame]) -> dict[int, list[Frame]]:
    by = defaultdict(list)
    for f in frames:
        by[f.stream].append(f)
    return dict(by)


def data_retransmissions(frames: list[Frame]) -> int:
    return sum(1 for f in frames if f.is_retransmission and f.length > 0)


def tuple_of(frames: list[Frame], server_ip: str) -> tuple[str, int, str, int]:
    """(client_ip, client_port, server_ip, server_port) of one tshark stream."""
    f = frames[0]
    if f.src == server_ip:
        return (f.dst, f.dport, f.src, f.sport)
    return (f.src, f.sport, f.dst, f.dport)


# ----------------------------------------------------------------------------------------------
# analyzer side (tcpvideo.analyze)
# ----------------------------------------------------------------------------------------------
def _rows(table) -> list[dict]:
    if table is None:
        return []
    if hasattr(table, "to_pylist"):  # pyarrow.Table
        return table.to_pylist()
    if hasattr(table, "to_dict"):  # pandas.DataFrame
        return table.to_dict("records")
    if isinstance(table, dict):  # dict of columns
        keys = list(table)
        return [dict(zip(keys, vals)) for vals in zip(*(table[k] for k in keys))]
    return list(table)


def _part(result, name):
    if isinstance(result, dict):
        return result.get(name)
    return getattr(result, name, None)


def analyze(pcap) -> tuple[list[dict], list[dict]]:
    """(flows, stalls) of tcpvideo's analyzer on ``pcap``; skip if the API is not there yet."""
    import tcpvideo

    fn = getattr(tcpvideo, "analyze", None)
    if fn is None:
        pytest.skip("tcpvideo.analyze is not available in this build yet")
    res = fn(str(pcap))
    return _rows(_part(res, "flows")), _rows(_part(res, "stalls"))


def flow_of(flows: list[dict], key: tuple[str, int, str, int]) -> dict:
    for f in flows:
        if (f["client_ip"], f["client_port"], f["server_ip"], f["server_port"]) == key:
            return f
    raise AssertionError(f"analyzer has no flow {key}; it has "
                         f"{[(f['client_ip'], f['client_port']) for f in flows]}")


def stalls_of(stalls: list[dict], flow: dict, kind: str | None = None) -> list[dict]:
    return [s for s in stalls if s["flow_id"] == flow["flow_id"]
            and (kind is None or s["kind"] == kind)]


# ----------------------------------------------------------------------------------------------
# tshark versus what the kernel did (no analyzer involved: these pin the harness itself)
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["bulk_loss", "concurrent"])
def test_every_bottleneck_drop_is_retransmitted_per_tshark(linux_captures, name):
    r = linux_captures[name]
    assert r.capture_drops == 0
    assert r.queue_drops > 0, "the tbf bottleneck dropped nothing: scenario too gentle"
    frames = tshark_frames(r.pcap)
    assert len(streams(frames)) == r.conns
    rtx = sum(1 for f in frames if f.is_retransmission)
    # Each dropped data segment must be sent again at least once; the excess is spurious re-sends
    # (RTO after a delayed ACK, tail loss probes), a handful at most. Open item
    # (docs/dev/open_items.md): in about one run in four tbf reports more drops than the sender
    # retransmitted at all (e.g. 62 drops, 42 frames whose sequence number repeats, all 42 flagged
    # by tshark), so some of tbf's drops are not data frames of this connection; until that is
    # explained the lower bound is half the drop count, which still fails when retransmissions go
    # missing from the capture or tshark's flags.
    assert r.queue_drops // 2 <= rtx <= r.queue_drops + max(5, r.queue_drops // 5)


def test_tbf_bottleneck_sets_the_transfer_rate(linux_captures):
    # bulk_loss: 3 MB through tbf 20 Mbit/s. The sender is ACK-clocked, so its rate as seen at
    # its own interface is the bottleneck's (+ headers); tbf's bucket adds a little at the start.
    r = linux_captures["bulk_loss"]
    data = [f for f in tshark_frames(r.pcap) if f.src == r.server_ip and f.length > 0]
    payload_bps = r.bytes_per_conn * 8 / (data[-1].t - data[0].t)
    assert 0.85 * 20e6 * 1448 / 1514 <= payload_bps <= 1.1 * 20e6


def test_paused_server_capture_has_no_loss_and_one_long_silence(linux_captures):
    r = linux_captures["server_pause"]
    frames = tshark_frames(r.pcap)
    assert not any(f.flags & {"retransmission", "zero_window", "keep_alive"} for f in frames)
    data = [f for f in frames if f.src == r.server_ip and f.length > 0]
    gaps = [(b.t - a.t, a) for a, b in zip(data, data[1:])]
    longest, before = max(gaps, key=lambda g: g[0])
    assert r.facts["pause_s"] - 0.1 <= longest <= r.facts["pause_s"] + 0.5
    # The silence starts once the first half was sent (relative seq counts from 1).
    assert before.rel_seq + before.length - 1 == r.facts["pause_after_bytes"]


def test_stalled_reader_shows_zero_window_then_window_update_in_tshark(linux_captures):
    r = linux_captures["zero_window"]
    frames = tshark_frames(r.pcap)
    zw = [f for f in frames if "zero_window" in f.flags]
    assert zw and all(f.src == r.client_ip for f in zw)
    upd = [f for f in frames if "window_update" in f.flags and f.t > zw[0].t]
    assert upd, "no window update after the zero window"
    closed = upd[0].t - zw[0].t
    assert r.facts["stall_s"] - 0.5 <= closed <= r.facts["stall_s"] + 0.5
    # Linux persist probes are keep-alive-shaped: tshark calls them keep-alives.
    probes = [f for f in frames if "keep_alive" in f.flags]
    assert probes and all(f.src == r.server_ip and zw[0].t < f.t < upd[0].t for f in probes)


def test_idle_connection_sends_keepalive_probes_each_interval(linux_captures):
    r = linux_captures["keepalive"]
    frames = tshark_frames(r.pcap)
    ka = [f for f in frames if "keep_alive" in f.flags]
    acks = [f for f in frames if "keep_alive_ack" in f.flags]
    # idle 3.5 s, first probe after KEEPIDLE=1 s, then every KEEPINTVL=1 s: 3 probes.
    assert len(ka) == 3 and len(acks) == 3
    assert all(f.src == r.server_ip for f in ka)
    gaps = [b.t - a.t for a, b in zip(ka, ka[1:])]
    assert all(abs(g - r.facts["keepintvl_s"]) < 0.2 for g in gaps)


# ----------------------------------------------------------------------------------------------
# the analyzer versus tshark and the kernel
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["bulk_loss", "concurrent", "server_pause", "zero_window",
                                  "keepalive"])
def test_retransmissions_per_flow_equal_tshark(linux_captures, name):
    r = linux_captures[name]
    frames = tshark_frames(r.pcap)
    flows, _ = analyze(r.pcap)
    by_stream = streams(frames)
    assert len(flows) == len(by_stream) == r.conns
    for fr in by_stream.values():
        f = flow_of(flows, tuple_of(fr, r.server_ip))
        assert f["retrans_packets"] == data_retransmissions(fr), f


@pytest.mark.parametrize("name", ["bulk_loss", "concurrent"])
def test_the_analyzer_infers_rack_on_for_a_linux_6_17_or_later_server(linux_captures, name):
    # Linux 6.17 removed the RACK-off loss recovery (net.ipv4.tcp_recovery cannot turn RACK off),
    # so every lossy real capture of this kernel must read RACK on, with no vote for off: an
    # off-vote rule that fires on a real RACK server would re-type its re-sends as RTOs.
    import platform

    major, minor = (int(x) for x in platform.release().split(".")[:2])
    if (major, minor) < (6, 17):
        pytest.skip(f"kernel {platform.release()} can run with RACK off")
    import tcpvideo

    servers = tcpvideo.analyze(str(linux_captures[name].pcap)).summary["server_settings"]
    assert len(servers) == 1, servers
    srv = servers[0]
    assert srv["rack"] == "on" and srv["rack_resends"] > 0, srv
    assert srv["rack_rtos_prevented"] == 0 and srv["rack_dupthresh_late"] == 0, srv


def test_zero_window_is_found_where_tshark_flags_it(linux_captures):
    r = linux_captures["zero_window"]
    frames = tshark_frames(r.pcap)
    flows, stalls = analyze(r.pcap)
    f = flow_of(flows, tuple_of(frames, r.server_ip))
    zw = [s for s in stalls_of(stalls, f, "zero_rwnd")]
    assert zw, f"no zero_rwnd stall; stalls: {stalls_of(stalls, f)}"
    first_zero = min(x.t for x in frames if "zero_window" in x.flags)
    update = min(x.t for x in frames if "window_update" in x.flags and x.t > first_zero)
    # A zero-rwnd stall may start at a window below one segment, before it reaches zero (the
    # analyzer's rule, after TAPO's rwnd < MSS): the earliest such window the viewer advertised.
    first_shut = min(x.t for x in frames if x.src != r.server_ip and not x.syn and x.window < f["mss"])
    assert first_shut <= first_zero
    for s in zw:
        assert first_shut - 0.01 <= s["start_ns"] / 1e9 and s["end_ns"] / 1e9 <= update + 0.01
    # Together they cover most of the 2 s the window stayed shut.
    assert sum(s["duration_ns"] for s in zw) / 1e9 >= 0.5 * (update - first_zero)


def test_zero_window_probes_are_not_keepalive_stalls(linux_captures):
    r = linux_captures["zero_window"]
    flows, stalls = analyze(r.pcap)
    (f,) = flows
    assert not stalls_of(stalls, f, "keep_alive")


def test_keepalive_stalls_sit_on_tshark_keepalives(linux_captures):
    r = linux_captures["keepalive"]
    frames = tshark_frames(r.pcap)
    flows, stalls = analyze(r.pcap)
    f = flow_of(flows, tuple_of(frames, r.server_ip))
    ka = [s for s in stalls_of(stalls, f, "keep_alive")]
    assert ka, f"no keep_alive stall; stalls: {stalls_of(stalls, f)}"
    probe_times = [x.t for x in frames if x.flags & {"keep_alive", "keep_alive_ack"}]
    for s in ka:
        ends = (s["start_ns"] / 1e9, s["end_ns"] / 1e9)
        assert any(abs(e - t) < 0.005 for e in ends for t in probe_times), s
    assert not stalls_of(stalls, f, "zero_rwnd")


def test_paused_server_is_a_resource_constraint_stall(linux_captures):
    r = linux_captures["server_pause"]
    frames = tshark_frames(r.pcap)
    flows, stalls = analyze(r.pcap)
    f = flow_of(flows, tuple_of(frames, r.server_ip))
    data = [x for x in frames if x.src == r.server_ip and x.length > 0]
    gap_start, gap_end = max(((a.t, b.t) for a, b in zip(data, data[1:])),
                             key=lambda g: g[1] - g[0])
    rc = [s for s in stalls_of(stalls, f, "resource_constraint")
          if s["start_ns"] / 1e9 < gap_end and s["end_ns"] / 1e9 > gap_start]
    assert rc, f"no resource_constraint stall over the pause; stalls: {stalls_of(stalls, f)}"
    assert sum(s["duration_ns"] for s in rc) / 1e9 >= 0.9 * r.facts["pause_s"]
    assert not stalls_of(stalls, f, "timeout")


# ----------------------------------------------------------------------------------------------
# the namespace library cleans up after itself
# ----------------------------------------------------------------------------------------------
def _netns_names() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.split()}


@pytest.fixture
def netns_lib():
    from tcpvideo import netns

    ok, why = netns.available()
    if not ok:
        pytest.skip(why)
    return netns


def test_network_removes_namespaces_and_processes_even_when_the_body_fails(netns_lib):
    with pytest.raises(RuntimeError, match="boom"):
        with netns_lib.Network() as net:
            a, b = net.chain(["a", "b"])
            proc = a.popen(["sleep", "30"])
            names = {a.name, b.name}
            assert names <= _netns_names()
            raise RuntimeError("boom")
    assert not names & _netns_names()
    assert proc.popen.poll() is not None


def test_sweep_removes_only_namespaces_of_dead_creators(netns_lib):
    import os

    dead = 4_000_000
    while netns_lib._pid_alive(dead):
        dead += 1
    stale = f"{netns_lib.NS_PREFIX}-{dead}-0-x"
    live = f"{netns_lib.NS_PREFIX}-{os.getpid()}-999-x"
    for n in (stale, live):
        subprocess.run(["ip", "netns", "add", n], check=True)
    try:
        removed = netns_lib.sweep_stale()
        left = _netns_names()
        assert stale in removed and stale not in left
        assert live in left
    finally:
        for n in (stale, live):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


def test_a_capture_holds_the_syn_of_a_connection_opened_the_moment_start_returns(netns_lib,
                                                                                  tmp_path):
    # Capture.start used to return on dumpcap's "Capturing on", printed before dumpcap opens its
    # packet socket: a SYN sent at once was missing (session 13: 2 of 5 zero_window runs;
    # session 18: every SYN of analyze_speed's capture). Here 20 captures each start and, with
    # no sleep and no process start in between, open a connection; each file must hold its own
    # SYN. With the old start and no settle, 19 or 20 of the 20 missed theirs in each of six runs
    # (three idle, three beside two busy loops; bench/capture_start_race.py: 61-98 % in seven
    # runs of 100, idle or loaded, and the old 0.5 s settle still missed 25-50 % with
    # analyze_speed's 512 MiB ring); with the "File:" start 0 of 20, and 0 of 880 in the bench.
    # About 2 s.
    import sys
    from pathlib import Path

    if shutil.which("dumpcap") is None:
        pytest.skip("dumpcap not installed")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from capture_start_race import captures_missing_their_syn

    assert captures_missing_their_syn(tmp_path, loops=20) == []
