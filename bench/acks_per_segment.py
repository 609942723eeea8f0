"""Receiver ACK behaviour, real Linux vs tcpvideo's simulator: ACKs per data segment, and what
preceded each ACK (issue 15, session 9).

One bulk flow over the congestion-control suite's loss case (``scenarios/cc_loss_100ms.toml``:
100 Mbit/s, 100 ms RTT, BDP queue), loss-free or with content-keyed loss (the same segments lost
in both runtimes), run in the simulator and on real Linux TCP (``tcpvideo emulate``), each with a
pcap of the bottleneck at the client. From each capture (tshark fields) the script replays the
receiver — RCV.NXT and the out-of-order ranges — and classifies every pure ACK the client sends
by what came before it since its previous ACK:

- ``1 in-order`` / ``1 in-order PSH``: exactly one new in-order segment (an immediate ACK: Linux
  quick-ack credits, e.g. one per ``tcp_grow_window`` growth), without / with PSH;
- ``2+ in-order``: two or more (``__tcp_ack_snd_check``'s "more than one full segment");
- ``ooo / hole / dup``: the last segment was out of order, filled a hole, or was a duplicate;
- ``timer``: sent more than 5 ms after the last data segment (delayed-ACK timer, or the read);
- ``no data``: nothing arrived since the previous ACK (window update after a read).

Root for the real run (namespaces), tshark. Prints one table per case and runtime:

    python bench/acks_per_segment.py --cc cubic --duration 3
    python bench/acks_per_segment.py --cc cubic ccp --loss 0 0.01 --duration 3
"""

from __future__ import annotations

import argparse
import copy
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "python"))

import tcpvideo  # noqa: E402
from bpf_vs_sim_cwnd import scenario_for  # noqa: E402

PCAP = "bottleneck@client.pcap"
KINDS = ["1 in-order", "1 in-order PSH", "2+ in-order", "ooo / hole / dup", "timer", "no data"]


def packets(pcap: Path) -> list[tuple[float, str, int, int, int, bool]]:
    """(time s, src ip, relative seq, relative ack, payload length, PSH) per TCP packet."""
    out = subprocess.run(
        ["tshark", "-r", str(pcap), "-Y", "tcp", "-T", "fields", "-e", "frame.time_relative", "-e", "ip.src",
         "-e", "tcp.seq", "-e", "tcp.ack", "-e", "tcp.len", "-e", "tcp.flags.push", "-e", "tcp.flags.syn",
         "-o", "tcp.relative_sequence_numbers:TRUE", "-o", "tcp.analyze_sequence_numbers:TRUE"],
        capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 7 or f[6] in ("1", "True"):
            continue
        rows.append((float(f[0]), f[1], int(f[2] or 0), int(f[3] or 0), int(f[4] or 0), f[5] in ("1", "True")))
    return rows


def tally(rows) -> dict:
    """Replay the receiver from a client-side capture and classify each pure ACK it sent."""
    data_src = next((r[1] for r in rows if r[4] > 0), None)
    if data_src is None:
        return {"segments": 0, "acks": 0, "kinds": Counter()}
    rcv_nxt = None
    ooo: list[tuple[int, int]] = []
    since: list[str] = []  # per segment since the previous ACK: "in", "in_psh", "other"
    last_data_t = None
    segments = acks = 0
    kinds: Counter = Counter()
    for t, src, seq, ack, length, psh in rows:
        if src == data_src and length > 0:
            segments += 1
            last_data_t = t
            end = seq + length
            if rcv_nxt is None:
                rcv_nxt = seq
            if end <= rcv_nxt:
                since.append("other")  # duplicate
            elif seq > rcv_nxt:
                ooo.append((seq, end))
                since.append("other")
            else:
                rcv_nxt = end
                filled = False
                ooo.sort()
                while ooo and ooo[0][0] <= rcv_nxt:
                    rcv_nxt = max(rcv_nxt, ooo.pop(0)[1])
                    filled = True
                since.append("other" if filled else ("in_psh" if psh else "in"))
        elif src != data_src and length == 0:
            acks += 1
            if not since:
                kind = "no data"
            elif last_data_t is not None and t - last_data_t > 0.005:
                kind = "timer"
            elif since[-1] == "other":
                kind = "ooo / hole / dup"
            elif len(since) >= 2:
                kind = "2+ in-order"
            else:
                kind = "1 in-order PSH" if since[-1] == "in_psh" else "1 in-order"
            kinds[kind] += 1
            since = []
    return {"segments": segments, "acks": acks, "kinds": kinds}


def run(cc: str, loss: float, args) -> dict:
    sc = scenario_for(cc, args.duration, args.seed, 40.0, 448.0, 1.0, loss, "keyed")
    sc["record"]["pcap"] = [{"link": "bottleneck", "at": "client"}]
    out = Path(args.out) / f"{cc}-loss{loss}-seed{args.seed}"
    res = {}
    tcpvideo.simulate(copy.deepcopy(sc), out=out / "sim")
    res["simulator"] = tally(packets(out / "sim" / PCAP))
    if not args.sim_only:
        from tcpvideo.emulate import emulate
        emulate(copy.deepcopy(sc), out=out / "real", log=lambda m: None, rt_priority=10)
        res["kernel"] = tally(packets(out / "real" / PCAP))
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cc", nargs="+", default=["cubic"])
    ap.add_argument("--loss", type=float, nargs="+", default=[0.0, 0.01])
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sim-only", action="store_true", help="no real run (no root needed)")
    ap.add_argument("--out", default="/tmp/ccplb/acks_per_segment")
    args = ap.parse_args()
    names = []
    if not args.sim_only:
        from tcpvideo import bpf
        for c in args.cc:
            try:
                names.append(bpf.resolve(c).name)  # a kernel port of a model algorithm
            except bpf.BpfError:
                pass  # Linux's own (cubic, reno)
        if names:
            bpf.load(names)
    try:
        for cc in args.cc:
            for loss in args.loss:
                res = run(cc, loss, args)
                print(f"\n{cc}, loss {loss:.2%} (keyed), {args.duration:g} s, seed {args.seed}; "
                      f"load {os.getloadavg()[0]:.1f}")
                print(f"  {'runtime':<10} {'segments':>8} {'ACKs':>6} {'ACK/seg':>8}  " + "  ".join(f"{k:>16}" for k in KINDS))
                for name, r in res.items():
                    per = r["acks"] / max(1, r["segments"])
                    print(f"  {name:<10} {r['segments']:>8} {r['acks']:>6} {per:>8.3f}  "
                          + "  ".join(f"{r['kinds'].get(k, 0):>16}" for k in KINDS), flush=True)
    finally:
        if names:
            from tcpvideo import bpf
            bpf.unload(names)


if __name__ == "__main__":
    main()
