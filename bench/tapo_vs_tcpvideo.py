"""TAPO (github ai1cyber/tapo, the seed-000 authors' stall analyzer, GPL-2.0) beside tcpvideo's
analyzer on the same captures: per-flow stall counts and TAPO's classes next to ours.

TAPO is a peer, never part of tcpvideo: build it outside the repository and pass its binary.
Build recipe (libpcap ≥ 1.10 has its own ``pcap_init``, so TAPO's must be renamed; and the link
line must list -lpcap after the objects)::

    git clone https://github.com/ai1cyber/tapo /work/peers/tapo && cd /work/peers/tapo
    sed -i 's/\\bpcap_init\\b/tapo_pcap_init/g' main.c tcp_pcap.c tcp_pcap.h
    sed -i 's/$(LD) $(LDFLAGS) $(LIBS) $(OBJS) -o $(TARGET)/$(LD) $(LDFLAGS) $(OBJS) -o $(TARGET) $(LIBS)/' Makefile
    make          # needs gcc, flex, bison, libpcap-dev

Usage::

    python bench/tapo_vs_tcpvideo.py --tapo /work/peers/tapo/tapo CAPTURE.pcap --server 10.0.0.1 --port 80

TAPO prints, per flow, ``name: CLIENT_IP.PORT``, ``#(stalls): N`` and one line per stall whose
first word is its class (``parser/rules.txt``: 14 classes). A TAPO crash (it segfaults on some
captures) is reported with the flows it finished.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

TAPO_CLASSES = ("UNDETERMINED", "DATA_UNAVAILABLE", "RESOURCE_CONSTRAINT", "TAIL_LOSS", "DOUBLE_RETRANSMISSION",
                "SMALL_INIT_RWND", "SMALL_RWND", "SMALL_CWND", "CONTINUOUS_LOSS", "ACK_DELAY_LOSS", "PACKET_DELAY",
                "LARGE_DUPTHRES", "CLIENT_IDLE", "ZERO_WINDOW")


def run_tapo(binary: str, pcap: Path, server: str, port: int) -> tuple[dict, dict, int]:
    """Per client port: TAPO's stall count and class counts; and TAPO's exit status."""
    p = subprocess.run([binary, "-f", str(pcap), "-s", server, "-p", str(port)], capture_output=True, text=True,
                       errors="replace", timeout=600)
    counts, classes, cur = {}, defaultdict(Counter), None
    for line in p.stdout.splitlines():
        m = re.match(r"name: [\d.]+\.(\d+)", line)
        if m:
            cur = int(m.group(1))
            continue
        m = re.match(r"#\(stalls\): (\d+)", line)
        if m and cur is not None:
            counts[cur] = int(m.group(1))
            continue
        for c in TAPO_CLASSES:
            if line.startswith(c + ":") and cur is not None:
                classes[cur][c] += 1
    return counts, classes, p.returncode


def run_tcpvideo(pcap: Path) -> tuple[dict, dict]:
    import pandas as pd

    out = Path(tempfile.mkdtemp(prefix="tapo-vs-tv-"))
    subprocess.run([sys.executable, "-m", "tcpvideo.cli", "analyze", str(pcap), "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    flows = pd.read_csv(out / "flows.csv")
    st = pd.read_csv(out / "stalls.csv")
    port = dict(zip(flows["flow_id"], flows["client_port"]))
    st["port"] = st["flow_id"].map(port)
    counts = st.groupby("port").size().to_dict()
    classes = {p: Counter(g["kind"]) for p, g in st.groupby("port")}
    for p in flows["client_port"]:
        counts.setdefault(int(p), 0)
    return counts, classes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tapo", required=True, help="path of the TAPO binary")
    ap.add_argument("captures", nargs="+", type=Path)
    ap.add_argument("--server", default="10.0.0.1", help="the front-end's IPv4 address (TAPO -s)")
    ap.add_argument("--port", type=int, default=80, help="the front-end's port (TAPO -p)")
    a = ap.parse_args()
    if not Path(a.tapo).is_file():
        print(f"--tapo {a.tapo}: no such file", file=sys.stderr)
        return 2
    for pcap in a.captures:
        tc, tcls, rc = run_tapo(a.tapo, pcap, a.server, a.port)
        vc, vcls = run_tcpvideo(pcap)
        print(f"== {pcap}: TAPO exit status {rc}" + (" (crashed; flows after the crash are missing)" if rc not in (0,) else ""))
        print(f"{'client port':>11} {'TAPO stalls':>11} {'tcpvideo':>8}  TAPO classes | tcpvideo classes")
        for port in sorted(set(tc) | set(vc)):
            t = tc.get(port)
            print(f"{port:>11} {('—' if t is None else t):>11} {vc.get(port, 0):>8}  "
                  f"{dict(tcls.get(port, {}))} | {dict(vcls.get(port, {}))}")
        both = [p for p in tc if p in vc]
        print(f"flows both report: {len(both)}; stalls TAPO {sum(tc[p] for p in both)}, tcpvideo {sum(vc[p] for p in both)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
