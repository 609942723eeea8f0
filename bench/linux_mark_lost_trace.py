#!/usr/bin/env python3
"""Does Linux re-send a retransmission whose LOST mark an F-RTO undo cleared, when it is marked
lost again? A kernel trace on this machine (issue 16, session 15; results in bench/README.md).

Two network namespaces joined by a user-space delay line over TUN (50 ms each way); a real
Linux sender (CUBIC by setsockopt, SACK, timestamps, F-RTO, TLP off: tcp_early_retrans = 0;
tcp_recovery = 0 is set too but does nothing since Linux 6.17, where RACK became the only loss
detection and tcp_mark_head_lost was removed).

After a warm-up the sender writes six segments at once (the "burst"). The head is dropped
`--drop-head` times (default 2: its first RTO retransmission too); segments 2-3 are dropped once
and 4-6 held `--hold-ms` (400) on the path, so their SACKs arrive after the RTO has re-sent the
head. F-RTO's undo (tcp_try_undo_loss(frto_undo) -> tcp_undo_cwnd_reduction(unmark_loss))
clears every LOST mark; the head's retransmission keeps TCPCB_SACKED_RETRANS.

- Case "rack" (default): once the sender sees the Loss state it writes `--more` (20) segments,
  which go out after the undo; their SACKs let RACK find the head's retransmission overdue:
  tcp_mark_skb_lost on a segment that is not LOST. Is the head re-sent then, or only at the
  next RTO?
- Case "rto" (`--no-drop-next --more 0`): segments 2-6 are all held, nothing new is written, so
  nothing marks the head after the undo; the next RTO's tcp_timeout_mark_lost finds it not LOST
  with SACKED_RETRANS. Is it re-sent by tcp_retransmit_timer?

This kernel has no kprobes and no fentry (no kprobe PMU; bpftrace 0.17: kfunc not available), so
bpftrace uses tracepoints only: tcp:tcp_retransmit_skb (the skb's sacked bits, read before
tcp_retransmit_skb adds TCPCB_RETRANS, and retrans_out/lost_out/sacked_out),
tcp:tcp_cong_state_set (Loss = 4 at an RTO, Open = 0 after an undo) and tcp:tcp_probe (each
incoming segment, before it is processed: the rtx-queue head's seq and sacked bits,
retrans_out, lost_out). Sacked bits: SACKED_ACKED 0x1, SACKED_RETRANS 0x2, LOST 0x4,
REPAIRED 0x10 (part of TCPCB_RETRANS), EVER_RETRANS 0x80. The delay line logs every data
segment (relative sequence, what it did to it) and every ACK with its SACK blocks.

    sudo python3 bench/linux_mark_lost_trace.py --out bench/out/mark_lost_rack
    sudo python3 bench/linux_mark_lost_trace.py --no-drop-next --more 0 --out bench/out/mark_lost_rto
    sudo python3 bench/linux_mark_lost_trace.py --tlp --burst 1 --drop-head 1 --more 0 --out bench/out/tlp_probe

The last one checks what a tail-loss probe leaves on the skb: a one-segment burst is lost, the
probe re-sends it, and the next ACK's tcp_probe shows the (head = probed) skb's bits and retrans_out.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import heapq
import os
import select
import socket
import struct
import subprocess
import sys
import time

NS_S, NS_R = "mlx15s", "mlx15r"
IP_S, IP_R = "10.77.0.1", "10.77.0.2"
PORT = 47011
MSS = 1448
WARM_SEGS = 60
BURST_SEGS = 6
MORE_SEGS = 20
ONE_WAY_S = 0.050

TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000
CLONE_NEWNET = 0x40000000
# Byte offset of sk_buff.cb on this kernel (bpftool btf dump: bits_offset 320); in tcp_skb_cb, seq is
# at 0 and sacked at 14. bpftrace 0.17 reads a member of the cb array cast to tcp_skb_cb as 0 here.
SKB_CB_OFFSET = 40

BPF = r"""
tracepoint:tcp:tcp_retransmit_skb /args->sport == PORT/ {
  $skb = (uint64)args->skbaddr;
  $tp = (struct tcp_sock *)args->skaddr;
  printf("%llu tcp_retransmit_skb seq=%u sacked=0x%x err=%d retrans_out=%u lost_out=%u sacked_out=%u\n", nsecs,
         *(uint32 *)($skb + CB), *(uint8 *)($skb + CB + 14), args->err, $tp->retrans_out, $tp->lost_out, $tp->sacked_out);
}
tracepoint:tcp:tcp_cong_state_set /args->sport == PORT/ {
  printf("%llu tcp_cong_state_set %d\n", nsecs, args->cong_state);
}
tracepoint:tcp:tcp_probe /args->sport == PORT/ {
  $tp = (struct tcp_sock *)args->skaddr;
  $n = ((struct sock *)args->skaddr)->tcp_rtx_queue.rb_node;
  if ($n != 0) {
    unroll(16) { if ($n->rb_left != 0) { $n = $n->rb_left; } }
    $skb = (uint64)$n;
    printf("%llu ack_in(before) una=%u head_seq=%u head_sacked=0x%x retrans_out=%u lost_out=%u sacked_out=%u packets_out=%u\n",
           nsecs, args->snd_una, *(uint32 *)($skb + CB), *(uint8 *)($skb + CB + 14), $tp->retrans_out, $tp->lost_out,
           $tp->sacked_out, $tp->packets_out);
  }
}
""".replace("PORT", str(PORT)).replace("CB", str(SKB_CB_OFFSET))

libc = ctypes.CDLL("libc.so.6", use_errno=True)


def sh(*cmd: str, check: bool = True) -> None:
    subprocess.run(cmd, check=check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL if not check else None)


def setup(tlp: bool) -> None:
    teardown()
    for ns, me, peer in ((NS_S, IP_S, IP_R), (NS_R, IP_R, IP_S)):
        sh("ip", "netns", "add", ns)
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", ns, "tuntap", "add", "dev", "tun0", "mode", "tun")
        sh("ip", "-n", ns, "addr", "add", me, "peer", peer, "dev", "tun0")
        sh("ip", "-n", ns, "link", "set", "tun0", "up")
    for kv in (f"net.ipv4.tcp_early_retrans={3 if tlp else 0}", "net.ipv4.tcp_recovery=0", "net.ipv4.tcp_frto=2",
               "net.ipv4.tcp_sack=1", "net.ipv4.tcp_timestamps=1"):
        sh("ip", "netns", "exec", NS_S, "sysctl", "-qw", kv)


def teardown() -> None:
    for ns in (NS_S, NS_R):
        sh("ip", "netns", "del", ns, check=False)


def open_tun(ns: str) -> int:
    here = os.open("/proc/self/ns/net", os.O_RDONLY)
    there = os.open(f"/var/run/netns/{ns}", os.O_RDONLY)
    if libc.setns(there, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", b"tun0", IFF_TUN | IFF_NO_PI))
    libc.setns(here, CLONE_NEWNET)
    os.close(here)
    os.close(there)
    os.set_blocking(fd, False)
    return fd


def tcp_fields(pkt: bytes):
    if len(pkt) < 40 or pkt[0] >> 4 != 4 or pkt[9] != 6:
        return None
    ihl = (pkt[0] & 15) * 4
    total = struct.unpack("!H", pkt[2:4])[0]
    sport, dport, seq, ack = struct.unpack("!HHII", pkt[ihl:ihl + 12])
    doff = (pkt[ihl + 12] >> 4) * 4
    flags = pkt[ihl + 13]
    return sport, dport, seq, ack, flags, total - ihl - doff, pkt[ihl + 20:ihl + doff]


def sack_blocks(opts: bytes) -> list[tuple[int, int]]:
    i, out = 0, []
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        ln = opts[i + 1] if i + 1 < len(opts) else 0
        if ln < 2:
            break
        if kind == 5:
            for j in range(i + 2, i + ln, 8):
                out.append(struct.unpack("!II", opts[j:j + 8]))
        i += ln
    return out


def delay_line(args, log, fs: int, fr: int) -> None:
    """Forward between the two TUNs with ONE_WAY_S delay; drop / hold the burst's segments."""
    isn = None
    burst0 = 1 + WARM_SEGS * MSS
    seen = [0] * args.burst
    heap: list = []
    n = 0
    t_end = time.monotonic() + args.seconds
    while time.monotonic() < t_end:
        timeout = 0.05
        if heap:
            timeout = max(0.0, min(timeout, heap[0][0] - time.monotonic()))
        ready, _, _ = select.select([fs, fr], [], [], timeout)
        now = time.monotonic()
        for fd in ready:
            while True:
                try:
                    pkt = os.read(fd, 65536)
                except BlockingIOError:
                    break
                out = fr if fd == fs else fs
                extra, action = 0.0, "fwd"
                f = tcp_fields(pkt)
                if f and fd == fs:
                    sport, dport, seq, ack, flags, plen, opts = f
                    if flags & 0x12 == 0x12:
                        isn = seq
                    if isn is not None and plen > 0:
                        rel = (seq - isn) % 2**32
                        k, r = divmod(rel - burst0, MSS)
                        if rel >= burst0 and r == 0 and k < args.burst:
                            seen[k] += 1
                            if k == 0 and seen[k] <= args.drop_head or k in (1, 2) and seen[k] == 1 and args.drop_next:
                                action = "drop"
                            elif (k >= 3 or not args.drop_next) and seen[k] == 1:
                                extra, action = args.hold_ms / 1000, "hold"
                        log.write(f"{now:.6f} data rel={rel} seg={(rel - 1) // MSS} len={plen} {action}\n")
                elif f and fd == fr and isn is not None:
                    sport, dport, seq, ack, flags, plen, opts = f
                    rel_ack = (ack - isn) % 2**32
                    sacks = [((a - isn) % 2**32, (b - isn) % 2**32) for a, b in sack_blocks(opts)]
                    log.write(f"{now:.6f} ack rel={rel_ack} sack={sacks}\n")
                if action != "drop":
                    n += 1
                    heapq.heappush(heap, (now + ONE_WAY_S + extra, n, out, pkt))
        now = time.monotonic()
        while heap and heap[0][0] <= now:
            _, _, out, pkt = heapq.heappop(heap)
            os.write(out, pkt)
    log.write(f"isn={isn}\n")


def sender(log, more: int, burst: int) -> None:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"cubic")  # the netns default is not settable here
    srv.bind((IP_S, PORT))
    srv.listen(1)
    c, _ = srv.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.sendall(b"w" * (WARM_SEGS * MSS))
    time.sleep(1.0)

    def info():
        b = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
        return b[1], struct.unpack("I", b[8:12])[0]  # tcpi_ca_state, tcpi_rto (us)

    ca, rto = info()
    t0 = time.monotonic()
    log.write(f"{t0:.6f} burst ca_state={ca} rto_us={rto}\n")
    c.sendall(b"b" * (burst * MSS))
    while info()[0] != 4 and time.monotonic() < t0 + 3:  # TCP_CA_Loss
        time.sleep(0.0005)
    log.write(f"{time.monotonic():.6f} loss_state_seen, writing {more} segments\n")
    c.sendall(b"m" * (more * MSS))
    time.sleep(4.0)
    c.close()


def receiver() -> int:
    s = socket.create_connection((IP_S, PORT))
    got = 0
    while True:
        b = s.recv(1 << 16)
        if not b:
            return got
        got += len(b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="bench/out/linux_mark_lost")
    ap.add_argument("--drop-head", type=int, default=2, help="transmissions of the burst's head dropped")
    ap.add_argument("--hold-ms", type=float, default=400.0, help="extra delay of segments 4-6 of the burst")
    ap.add_argument("--no-drop-next", dest="drop_next", action="store_false",
                    help="hold the burst's segments 2 and 3 with 4-6 instead of dropping them (only the head is lost)")
    ap.add_argument("--more", type=int, default=MORE_SEGS, help="segments written once the Loss state is seen")
    ap.add_argument("--burst", type=int, default=BURST_SEGS, help="segments in the burst")
    ap.add_argument("--tlp", action="store_true", help="TLP on (tcp_early_retrans = 3)")
    ap.add_argument("--seconds", type=float, default=9.0)
    ap.add_argument("--role", choices=["all", "sender", "receiver"], default="all")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.role == "sender":
        with open(os.path.join(args.out, "sender.log"), "w") as log:
            sender(log, args.more, args.burst)
        return 0
    if args.role == "receiver":
        print(f"received {receiver()} bytes")
        return 0
    setup(args.tlp)
    procs = []
    try:
        bt = subprocess.Popen(["bash", "-c", 'ulimit -l unlimited; exec bpftrace -e "$0"', BPF],
                              stdout=open(os.path.join(args.out, "bpftrace.log"), "w"),
                              stderr=subprocess.STDOUT)
        procs.append(bt)
        time.sleep(4.0)  # bpftrace attaches
        me = os.path.abspath(__file__)
        common = ["--out", args.out, "--more", str(args.more), "--burst", str(args.burst)]
        snd = subprocess.Popen(["ip", "netns", "exec", NS_S, sys.executable, me, "--role", "sender", *common])
        procs.append(snd)
        time.sleep(0.3)
        fs, fr = open_tun(NS_S), open_tun(NS_R)
        with open(os.path.join(args.out, "delay_line.log"), "w") as log:
            rcv = subprocess.Popen(["ip", "netns", "exec", NS_R, sys.executable, me, "--role", "receiver", *common],
                                   stdout=open(os.path.join(args.out, "receiver.log"), "w"))
            procs.append(rcv)
            delay_line(args, log, fs, fr)
        snd.wait(timeout=10)
        rcv.wait(timeout=10)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.kill()
        teardown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
