"""Corpus check: `tcpvideo analyze` against tshark, flow by flow, on every capture in a folder.

    python bench/corpus_check.py /work/captures/zeek /work/captures/tcpdump [--max-files N] [--show N]

For each capture (pcap/pcapng, optionally .gz) with TCP in it, both tools read the same frames:
tshark reads the file after `editcap -D 16` (exact duplicates removed, as tcpvideo does), and
its per-packet fields are summed per TCP stream. Flows are matched by 5-tuple and start order.
Compared per flow:

- flows: present in both (per file: tcpvideo flows vs tshark streams);
- retransmissions of the flow's data direction (tshark: `tcp.analysis.retransmission`, which
  includes fast and spurious ones, in the direction tcpvideo calls the data direction);
- zero-window episodes (tshark: runs of `tcp.analysis.zero_window` from the client);
- keep-alives (tshark: `tcp.analysis.keep_alive`, both directions);
- initial RTT (tshark: `tcp.analysis.initial_rtt`; agreement within 1 ms);
- bytes (tshark: highest relative `tcp.seq + tcp.len − 1` of the data direction, i.e. unique bytes).

Prints an agreement table (per metric: flows compared, agreeing, disagreeing) and every
disagreement with the side judged right and why, where a rule can tell; "?" where it cannot
(then the evidence is printed to look at by hand). Not a pass/fail test: public captures are
what they are; the output is the material for the judgment.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tcpvideo
from tcpvideo.analysis import analyze

PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d", b"\x0a\x0d\x0d\x0a"}
FIELDS = ["tcp.stream", "ip.src", "ipv6.src", "tcp.srcport", "ip.dst", "ipv6.dst", "tcp.dstport", "tcp.len",
          "tcp.seq", "tcp.flags.reset", "tcp.flags.syn", "tcp.window_size_value", "tcp.analysis.retransmission",
          "tcp.analysis.fast_retransmission", "tcp.analysis.spurious_retransmission",
          "tcp.analysis.out_of_order", "tcp.analysis.zero_window", "tcp.analysis.keep_alive",
          "tcp.analysis.initial_rtt", "frame.time_epoch"]
METRICS = ("flows", "retransmissions", "zero_window_episodes", "keepalives", "initial_rtt", "bytes")


def is_capture(p: Path) -> bool:
    try:
        with open(p, "rb") as f:
            head = f.read(4)
            if head[:2] == b"\x1f\x8b":
                with gzip.open(p) as g:
                    head = g.read(4)
    except (OSError, EOFError, gzip.BadGzipFile):
        return False
    return head in PCAP_MAGICS


def captures(folders: list[str]) -> list[Path]:
    out = []
    for folder in folders:
        if os.path.isfile(folder) and is_capture(Path(folder)):
            out.append(Path(folder))
        for root, _, files in os.walk(folder):
            for f in sorted(files):
                p = Path(root) / f
                if p.is_file() and is_capture(p):
                    out.append(p)
    return sorted(out)


def norm_ip(a: str) -> str:
    return a.split(",")[0]


def tshark_flows(path: Path, tmp: Path) -> dict:
    """tcp.stream → per-stream aggregates from tshark's per-packet fields."""
    src = path
    if path.suffix == ".gz":
        src = tmp / "in.pcap"
        with gzip.open(path) as g, open(src, "wb") as o:
            shutil.copyfileobj(g, o)
    dedup = tmp / "dedup.pcapng"
    r = subprocess.run(["editcap", "-D", "16", str(src), str(dedup)], capture_output=True, text=True)
    if r.returncode != 0 or not dedup.exists():
        dedup = src
    cmd = ["tshark", "-n", "-r", str(dedup), "-Y", "tcp", "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"]
    for f in FIELDS:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    streams: dict = {}
    for line in r.stdout.splitlines():
        v = dict(zip(FIELDS, line.split("\t")))
        if not v.get("tcp.stream"):
            continue
        sid = int(v["tcp.stream"])
        src_ip = norm_ip(v["ip.src"] or v["ipv6.src"])
        dst_ip = norm_ip(v["ip.dst"] or v["ipv6.dst"])
        sp, dp = int(v["tcp.srcport"] or 0), int(v["tcp.dstport"] or 0)
        s = streams.setdefault(sid, {"first": float(v["frame.time_epoch"] or 0), "ends": {}, "keepalives": 0,
                                     "initial_rtt": None, "zw": collections.Counter(), "zw_on": {}})
        e = s["ends"].setdefault((src_ip, sp), {"retrans": 0, "ooo": 0, "max_seq_end": 0, "data": 0})
        s["ends"].setdefault((dst_ip, dp), {"retrans": 0, "ooo": 0, "max_seq_end": 0, "data": 0})
        ln = int(v["tcp.len"] or 0)
        if v["tcp.analysis.retransmission"] or v["tcp.analysis.fast_retransmission"] or v["tcp.analysis.spurious_retransmission"]:
            e["retrans"] += 1
        if v["tcp.analysis.out_of_order"]:
            e["ooo"] += 1
        if ln > 0 and v["tcp.seq"]:
            e["data"] += 1
            e["max_seq_end"] = max(e["max_seq_end"], int(v["tcp.seq"]) + ln - 1)
        if v["tcp.analysis.keep_alive"]:
            s["keepalives"] += 1
        zero = bool(v["tcp.analysis.zero_window"])
        if zero and not s["zw_on"].get((src_ip, sp)):
            s["zw"][(src_ip, sp)] += 1
        if v["tcp.flags.reset"] not in ("1", "True"):
            s["zw_on"][(src_ip, sp)] = zero
        if v["tcp.analysis.initial_rtt"] and s["initial_rtt"] is None:
            s["initial_rtt"] = float(v["tcp.analysis.initial_rtt"])
    return streams


def compare(path: Path, rows: list, disagreements: list, per_file: list) -> None:
    try:
        r = analyze(path, threads=1)
    except Exception as exc:  # noqa: BLE001 (reported, the corpus goes on)
        per_file.append((path, f"tcpvideo error: {exc}"))
        return
    with tempfile.TemporaryDirectory() as td:
        ts = tshark_flows(path, Path(td))
    ours = r.flows.to_pylist()
    per_file.append((path, f"tcpvideo {len(ours)} flows, tshark {len(ts)} streams, duplicates dropped "
                           f"{r.summary['decode'].get('duplicates', 0)}"))
    rows.append(("flows", len(ours) == len(ts)))
    if len(ours) != len(ts):
        disagreements.append((path, "-", "flows", len(ours), len(ts), "?",
                              "flow splitting differs (port reuse, idle timeout, or non-TCP-looking streams)"))
    # Match by unordered endpoint pair, in start order.
    by_pair = collections.defaultdict(list)
    for sid in sorted(ts, key=lambda k: (ts[k]["first"], k)):
        by_pair[frozenset(ts[sid]["ends"])].append(ts[sid])
    for f in ours:
        client = (f["client_ip"], f["client_port"])
        server = (f["server_ip"], f["server_port"])
        cands = by_pair.get(frozenset([client, server]))
        if not cands:
            continue
        t = cands.pop(0)
        data_end = server if f["direction"] == "download" else client
        peer = client if data_end == server else server
        te = t["ends"].get(data_end, {"retrans": 0, "ooo": 0, "max_seq_end": 0})
        name = f"{client[0]}:{client[1]}↔{server[0]}:{server[1]}"

        def check(metric, ours_v, ts_v, ok, judge):
            rows.append((metric, ok))
            if not ok:
                side, why = judge()
                disagreements.append((path, name, metric, ours_v, ts_v, side, why))

        check("retransmissions", f["retrans_packets"], te["retrans"], f["retrans_packets"] == te["retrans"],
              lambda: judge_retrans(f, te))
        zw_ts = t["zw"].get(client, 0)
        check("zero_window_episodes", f["zero_window_episodes"], zw_ts, f["zero_window_episodes"] == zw_ts,
              lambda: ("?", "episode boundaries differ (tshark flags each zero-window packet; ours counts runs of the client's window)"))
        check("keepalives", f["keepalive_packets"], t["keepalives"], f["keepalive_packets"] == t["keepalives"],
              lambda: judge_keepalive(f, t))
        if t["initial_rtt"] is not None or f["rtt_initial_ns"] is not None:
            a = None if f["rtt_initial_ns"] is None else f["rtt_initial_ns"] / 1e9
            b = t["initial_rtt"]
            ok = a is not None and b is not None and abs(a - b) <= 1e-3
            check(f"initial_rtt ({f['vantage']})", f"{a * 1e3:.3f} ms" if a is not None else "—",
                  f"{b * 1e3:.3f} ms" if b is not None else "—", ok, lambda: judge_rtt(f, a, b))
        check("bytes", f["bytes"], te["max_seq_end"], f["bytes"] == te["max_seq_end"],
              lambda: judge_bytes(f, te, t["ends"].get(peer, {})))


def judge_retrans(f, te):
    if f["direction"] == "upload" and f["retrans_packets"] < te["retrans"]:
        return ("?", "upload: ours counts data the receiving server got twice; tshark also flags copies it "
                     "never saw the original of (capture started mid-flight)")
    if f["retrans_packets"] > te["retrans"] and te["ooo"] >= f["retrans_packets"] - te["retrans"]:
        return ("tcpvideo", f"tshark calls {te['ooo']} of them out-of-order (sent again below the highest "
                            "sequence, later than its initial-RTT heuristic allows for reordering)")
    if f["retrans_packets"] < te["retrans"] and f["bytes"] == 0:
        return ("?", "flow without payload in our data direction")
    return ("?", f"kinds fast/timeout/recovery/other/unclassified = {f['fast_retrans']}/{f['timeout_retrans']}/"
                 f"{f['recovery_retrans']}/{f['other_retrans']}/{f['unclassified_retrans']}; tshark out-of-order {te['ooo']}")


def judge_keepalive(f, t):
    if f["keepalive_packets"] > t["keepalives"]:
        return ("?", "ours also counts zero-window probes and 1-byte keep-alives with nothing outstanding")
    return ("?", "tshark flags seq = next−1 with data outstanding too (a retransmitted last byte)")


def judge_rtt(f, a, b):
    if b is None:
        return ("tcpvideo" if f["handshake"] else "?", "tshark gives no initial RTT (handshake not complete in its view)")
    if a is None:
        return ("tshark", "we found no handshake ACK")
    return ("?", f"vantage {f['vantage']}, SYN retransmissions {f['syn_retrans']}")


def judge_bytes(f, te, peer):
    if te["max_seq_end"] == 0 and f["bytes"] > 0:
        return ("?", "tshark saw no data with a sequence number in this direction")
    if f["bytes"] > te["max_seq_end"] and not f["handshake"]:
        return ("?", "no handshake: relative sequence bases differ")
    return ("?", "compare the streams by hand")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--max-files", type=int, default=0)
    ap.add_argument("--show", type=int, default=200, help="disagreements to print (all are counted)")
    args = ap.parse_args()
    if not shutil.which("tshark") or not shutil.which("editcap"):
        print("error: tshark and editcap are needed (apt-get install -y tshark)", file=sys.stderr)
        return 2
    files = captures(args.folders)
    if args.max_files:
        files = files[: args.max_files]
    rows: list = []
    disagreements: list = []
    per_file: list = []
    for i, p in enumerate(files):
        compare(p, rows, disagreements, per_file)
    print(f"tcpvideo {tcpvideo.__version__} vs {subprocess.run(['tshark', '-v'], capture_output=True, text=True).stdout.splitlines()[0]}")
    print(f"{len(files)} captures\n")
    print(f"{'metric':24} {'compared':>9} {'agree':>7} {'disagree':>9} {'agree %':>8}")
    metrics = list(dict.fromkeys([m for m in METRICS if m != "initial_rtt"] + sorted({k for k, _ in rows if k.startswith("initial_rtt")})))
    for m in metrics:
        n = sum(1 for k, _ in rows if k == m)
        a = sum(1 for k, ok in rows if k == m and ok)
        print(f"{m:24} {n:9} {a:7} {n - a:9} {100 * a / n if n else 0:7.1f}%")
    sides = collections.Counter(d[5] for d in disagreements)
    print(f"\ndisagreements: {len(disagreements)}; judged right: " + ", ".join(f"{k} {v}" for k, v in sides.items()))
    for d in disagreements[: args.show]:
        path, name, metric, a, b, side, why = d
        print(f"  {Path(path).name}  {name}  {metric}: tcpvideo {a} | tshark {b}  → {side}: {why}")
    if len(disagreements) > args.show:
        print(f"  ... {len(disagreements) - args.show} more")
    return 0


if __name__ == "__main__":
    sys.exit(main())
