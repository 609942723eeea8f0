"""Per-packet one-way delay noise of the emulated path: how far each packet's real crossing of a
linkem link lies from the link model's exact time (issue 15, session 18).

Runs the congestion-control suite's loss case (``scenarios/cc_loss_100ms.toml`` through
``bench/bpf_vs_sim_cwnd.py``'s ``scenario_for``: 100 Mbit/s, 100 ms, 1 % keyed loss) on real Linux
TCP with ``tcpvideo emulate`` and the scenario's own ``record.pcap`` taps at both ends of both
links (dumpcap on the TUN devices linkem joins, nanosecond timestamps where the kernel gives them).
A packet is matched across the two ends of a link by its IPv4 source, destination, identification
and total length and its TCP sequence, acknowledgment number and flags (the router only changes the
TTL and checksum); a key seen twice on one end is dropped. For each link direction the model time of
every matched packet is rebuilt from the captures on the sending end, as the simulator computes it
(crates/sim/src/network.rs ``Channel::admit``): the FIFO serialiser at the link's rate over the IPv4
length, then the propagation delay — every packet that entered, lost ones included, occupies the
serialiser (linkem drops after the bottleneck, crates/linkem/src/pipe.rs). The residual (real − model)
is the path's timing noise: the TUN read and write, linkem's wake-up, the stack's hand-over to and
from the capture point. Reported: its spread above its minimum (median, mean, p90, p99, max), per link
direction and end to end (server to client for data, client to server for ACKs, the model chained
through both links).

Also reported (issue 15, session 20), end to end: the residual of a packet that *heads a train* (the
previous packet of its direction entered the path more than 5 ms before) against that of a packet
*inside a train* (less than 1 ms after the previous one), as medians above the direction's minimum.
On the emulated path the head comes later than the rest (the emulator's and the hosts' wake-up after
idle), so a train's first packets are compressed; the simulator's jitter (exponential, order kept)
does the opposite — it holds back the packets behind a delayed one, not the first.

Root; run only while no other emulation runs. Orchestration and arithmetic only: the network is
tcpvideo.emulate's, the emulator crates/linkem.

    python bench/linkem_owd.py --cc cubic --duration 8 --seed 1
    python bench/linkem_owd.py --from RUN_DIR     # an existing run's captures (any of the four taps)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "bench"))

from bpf_vs_sim_cwnd import scenario_for  # noqa: E402

TAPS = [("access", "server"), ("access", "router"), ("bottleneck", "router"), ("bottleneck", "client")]


def read_pcap(path: Path) -> list[tuple[int, bytes]]:
    """(timestamp ns, IPv4 packet) of each frame of a classic pcap (raw IP, Ethernet or Linux cooked)."""
    data = path.read_bytes()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        raise ValueError(f"{path}: not a classic pcap")
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    skip = {101: 0, 228: 0, 12: 0, 14: 0, 1: 14, 113: 16}.get(linktype)
    if skip is None:
        raise ValueError(f"{path}: link type {linktype} not handled")
    out, off = [], 24
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        frame = data[off + 16:off + 16 + incl]
        off += 16 + incl
        out.append((sec * 1_000_000_000 + (frac if nano else frac * 1000), frame[skip:]))
    return out


def packets(path: Path) -> list[dict]:
    """The TCP/IPv4 packets of a capture: time, direction key and the matching key."""
    out = []
    for t, ip in read_pcap(path):
        if len(ip) < 40 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        total, ident = struct.unpack("!HH", ip[2:6])
        src, dst = ip[12:16], ip[16:20]
        seq, ack = struct.unpack("!II", ip[ihl + 4:ihl + 12])
        flags = ip[ihl + 13]
        out.append({"t": t, "dir": (src, dst), "len": total, "key": (src, dst, ident, total, seq, ack, flags)})
    return out


def unique(pkts: list[dict]) -> dict:
    seen: dict = {}
    for p in pkts:
        seen[p["key"]] = None if p["key"] in seen else p
    return {k: v for k, v in seen.items() if v is not None}


def model_times(ingress: list[dict], rate_bps: float, delay_ns: int) -> dict:
    """Model arrival of each packet (by key) that entered a link direction at its capture time."""
    busy, out = 0.0, {}
    for p in sorted(ingress, key=lambda p: p["t"]):
        busy = max(float(p["t"]), busy) + p["len"] * 8e9 / rate_bps
        out[p["key"]] = busy + delay_ns
    return out


def chain(ingress: list[dict], hops: list[tuple[float, int]]) -> dict:
    """Model arrival through several links in a row, each hop's model arrival the next hop's entry."""
    cur = [dict(p) for p in ingress]
    for rate, delay in hops:
        m = model_times(cur, rate, delay)
        cur = [dict(p, t=m[p["key"]]) for p in cur]
    return {p["key"]: p["t"] for p in cur}


def spread(residuals_ns: list[float]) -> dict:
    """The residuals' spread above their minimum, µs."""
    lo = min(residuals_ns)
    ex = sorted((r - lo) / 1e3 for r in residuals_ns)

    def q(f: float) -> float:
        return ex[min(len(ex) - 1, int(f * len(ex)))]

    return {"n": len(ex), "min_residual_us": lo / 1e3, "median_us": statistics.median(ex), "mean_us": statistics.fmean(ex),
            "p90_us": q(0.90), "p99_us": q(0.99), "max_us": ex[-1]}


def residuals(dst: list[dict], direction: tuple, model: dict) -> list[float]:
    arrived = unique([p for p in dst if p["dir"] == direction])
    return [arrived[k]["t"] - model[k] for k in arrived if k in model]


def head_vs_inside(ingress: list[dict], dst: list[dict], direction: tuple, model: dict,
                   head_gap_ns: int = 5_000_000, inside_gap_ns: int = 1_000_000) -> dict:
    """Median residual (µs above the direction's minimum) of the packets that head a train (more than
    `head_gap_ns` after the previous packet entered) and of those inside one (less than `inside_gap_ns`
    after it), by the time each entered the path (the sending end's capture)."""
    entered = sorted(unique(ingress).values(), key=lambda p: p["t"])
    gap, prev = {}, None
    for p in entered:
        gap[p["key"]] = p["t"] - prev if prev is not None else None
        prev = p["t"]
    arrived = unique([p for p in dst if p["dir"] == direction])
    res = {k: arrived[k]["t"] - model[k] for k in arrived if k in model and k in gap}
    if not res:
        return {"n_head": 0, "n_inside": 0}
    lo = min(res.values())
    head = [(r - lo) / 1e3 for k, r in res.items() if gap[k] is not None and gap[k] > head_gap_ns]
    inside = [(r - lo) / 1e3 for k, r in res.items() if gap[k] is not None and gap[k] < inside_gap_ns]
    out = {"n_head": len(head), "n_inside": len(inside)}
    if head and inside:
        out.update(head_median_us=statistics.median(head), inside_median_us=statistics.median(inside),
                   head_minus_inside_us=statistics.median(head) - statistics.median(inside))
    return out


def legs(data: tuple, acc: tuple, bot: tuple) -> list[tuple]:
    """(what, sending-end capture, receiving-end capture, direction, hops) of every leg measured: each
    link and end to end, for the data direction `data` and its ACKs."""
    ackd = (data[1], data[0])
    return [
        ("data, access link (server→router)", "access@server", "access@router", data, [acc]),
        ("data, bottleneck link (router→client)", "bottleneck@router", "bottleneck@client", data, [bot]),
        ("data, end to end (server→client)", "access@server", "bottleneck@client", data, [acc, bot]),
        ("ACKs, bottleneck link (client→router)", "bottleneck@client", "bottleneck@router", ackd, [bot]),
        ("ACKs, access link (router→server)", "access@router", "access@server", ackd, [acc]),
        ("ACKs, end to end (client→server)", "bottleneck@client", "access@server", ackd, [bot, acc]),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cc", default="cubic")
    ap.add_argument("--duration", type=float, default=8.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rt-priority", type=int, default=10, help="SCHED_FIFO priority of the link emulators (as the bench)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "linkem_owd"))
    ap.add_argument("--simulate", action="store_true",
                    help="the method's check: the simulator instead of the emulator (residuals 0 without jitter)")
    ap.add_argument("--sim-jitter-us", type=float, default=0.0,
                    help="with --simulate: jitter of this mean on every link direction (the method must recover it)")
    ap.add_argument("--from", dest="from_dir", default=None,
                    help="analyse this run directory's captures (the loss case's links) instead of running")
    args = ap.parse_args()

    sc = scenario_for(args.cc, args.duration, args.seed, 40.0, 448.0, 1.0)
    if args.from_dir:
        analyse(Path(args.from_dir), sc)
        return
    sc["record"]["pcap"] = [{"link": link, "at": at} for link, at in TAPS]
    sc["record"]["pcap_timestamps"] = "ns"
    out = Path(args.out) / f"{args.cc}-seed{args.seed}{'-sim' if args.simulate else ''}"
    load0 = os.getloadavg()[0]
    if args.simulate:
        import tcpvideo
        from bpf_vs_sim_cwnd import with_jitter

        if args.sim_jitter_us:
            sc = with_jitter(sc, round(args.sim_jitter_us * 1000), 1)
        res = tcpvideo.simulate(sc, out=out)
    else:
        from tcpvideo.emulate import emulate

        res = emulate(sc, out=out, log=lambda m: None, rt_priority=args.rt_priority)
    load1 = os.getloadavg()[0]
    cap = {f"{link}@{at}": packets(out / f"{link}@{at}.pcap") for link, at in TAPS}
    links = {l["name"]: l for l in sc["link"]}

    def rate_delay(name: str) -> tuple[float, int]:
        q = tcpvideo_qty(links[name]["rate"]), tcpvideo_qty(links[name]["delay"])
        return q

    acc, bot = rate_delay("access"), rate_delay("bottleneck")
    server, client = (cap["access@server"][0]["dir"][0], cap["access@server"][0]["dir"][1])
    data = max(((server, client), (client, server)), key=lambda d: sum(p["len"] for p in cap["access@server"] if p["dir"] == d))
    rows = {}
    for what, a, b, d, hops in legs(data, acc, bot):
        ingress = [p for p in cap[a] if p["dir"] == d]
        rs = residuals(cap[b], d, chain(ingress, hops))
        rows[what] = spread(rs) if rs else {"n": 0}
    summary = {"cc": args.cc, "seed": args.seed, "duration_s": args.duration, "load_avg_1min": [load0, load1],
               "goodput_mbps": res.flows.to_pydict()["goodput_mbps"][0], "spread": rows,
               "linkem": {k: v for k, v in res.summary.items() if "late" in k or "linkem" in k}}
    (out / "owd.json").write_text(json.dumps(summary, indent=1, default=str))
    print(f"{args.cc} seed {args.seed}, {args.duration:g} s, goodput {summary['goodput_mbps']:.1f} Mbit/s, "
          f"load {load0:.1f}→{load1:.1f}; one-way delay above the link model, excess over its minimum, µs:")
    print(f"  {'':<40} {'n':>6} {'min res':>8} {'median':>7} {'mean':>7} {'p90':>7} {'p99':>7} {'max':>8}")
    for what, r in rows.items():
        if r["n"]:
            print(f"  {what:<40} {r['n']:>6} {r['min_residual_us']:>8.1f} {r['median_us']:>7.1f} {r['mean_us']:>7.1f} "
                  f"{r['p90_us']:>7.1f} {r['p99_us']:>7.1f} {r['max_us']:>8.1f}")
    print(f"  written {out / 'owd.json'}")


def analyse(out: Path, sc: dict) -> None:
    """The spread and the head-vs-inside split for the taps an existing run recorded."""
    cap = {f"{link}@{at}": packets(out / f"{link}@{at}.pcap") for link, at in TAPS if (out / f"{link}@{at}.pcap").exists()}
    links = {l["name"]: l for l in sc["link"]}
    acc = tcpvideo_qty(links["access"]["rate"]), tcpvideo_qty(links["access"]["delay"])
    bot = tcpvideo_qty(links["bottleneck"]["rate"]), tcpvideo_qty(links["bottleneck"]["delay"])
    first = next(iter(cap.values()))
    ends = (first[0]["dir"][0], first[0]["dir"][1])
    data = max((ends, ends[::-1]), key=lambda d: sum(p["len"] for c in cap.values() for p in c if p["dir"] == d))
    print(f"{out}: residual above the link model, µs above the direction's minimum (median)")
    for what, a, b, d, hops in legs(data, acc, bot):
        if a not in cap or b not in cap:
            continue
        ingress = [p for p in cap[a] if p["dir"] == d]
        rs = residuals(cap[b], d, chain(ingress, hops))
        sp = spread(rs)
        hv = head_vs_inside(ingress, cap[b], d, chain(ingress, hops))
        line = f"  {what:<38} n {sp['n']:>6} median {sp['median_us']:7.1f} p90 {sp['p90_us']:7.1f}"
        if "head_median_us" in hv:
            line += (f"; train head (n {hv['n_head']}) {hv['head_median_us']:6.1f}, inside (n {hv['n_inside']}) "
                     f"{hv['inside_median_us']:6.1f}, head − inside {hv['head_minus_inside_us']:+6.1f}")
        print(line)


def tcpvideo_qty(s: str) -> float:
    """'1Gbps' → 1e9 (bit/s), '49ms' → 49e6 (ns), as the scenario's quantities."""
    for unit, f in (("Gbps", 1e9), ("Mbps", 1e6), ("kbps", 1e3), ("ms", 1e6), ("us", 1e3), ("ns", 1.0), ("s", 1e9)):
        if s.endswith(unit):
            return float(s[: -len(unit)]) * f
    raise ValueError(s)


if __name__ == "__main__":
    main()
