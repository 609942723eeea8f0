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

Real Linux captures with losses (root; docs/studies/crowdlive.md "Real lossy captures")::

    python -m tcpvideo.linux_scenarios generate OUT --only bulk_loss concurrent
    python bench/tapo_vs_tcpvideo.py --tapo /work/peers/tapo/tapo OUT/bulk_loss.pcap OUT/concurrent.pcap --server 10.201.0.1 --port 5201 --stall-floor-ms 10

TAPO prints, per flow, ``name: CLIENT_IP.PORT``, ``#(stalls): N`` and one line per stall whose
first word is its class (``parser/rules.txt``: 14 classes). A TAPO crash (it segfaults on some
captures) is reported with the flows it finished.

Why TAPO segfaults (issue 16; gdb on the study capture): ``delete_list`` (list.h) frees each entry
*before* unlinking it (``FREE(list_entry(t)); list_delete_entry(t)``) — a use after free. A
``struct range_t`` is {u32 begin, u32 end, struct list_head list}: ``list.next`` sits at byte 8 of
the chunk, exactly where glibc ≥ 2.29 writes its tcache ``key`` on free(), so the unlink follows
that key as a pointer (backtrace: list_delete_entry ← free_tcp_state, tcp_state.c:457 ←
finish_tcp_state ← delete_ts_entry ← parse_tcp_info). A TAPO defect, allocator-dependent; we run
TAPO with ``GLIBC_TUNABLES=glibc.malloc.tcache_count=0`` (no tcache: fastbin frees write only the
first 8 bytes, begin/end), which lets it finish every flow without touching its code.

Pairing: TAPO prints each stall's class after a state line with ``cur_time`` (stall start minus
the flow's first packet, s) and ``duration``. Per flow, TAPO's stalls are paired with tcpvideo's
by order (the k-th with the k-th) and, separately, by start time (within ``--match-ms``); the
paired table (``--out CSV``) carries TAPO's 14 classes as a column next to the seed's taxonomy.
TAPO's classes map onto the seed's for the agreement count (``TAPO_AS_SEED``): its loss classes
are all "timeout" (a stall TAPO attributes to a loss ends with a retransmission), ZERO_WINDOW is
"zero_rwnd", RESOURCE_CONSTRAINT / DATA_UNAVAILABLE / CLIENT_IDLE are "resource_constraint",
PACKET_DELAY is "packet_delay". TAPO has no keep-alive class and no stall floor.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

TAPO_CLASSES = ("UNDETERMINED", "DATA_UNAVAILABLE", "RESOURCE_CONSTRAINT", "TAIL_LOSS", "DOUBLE_RETRANSMISSION",
                "SMALL_INIT_RWND", "SMALL_RWND", "SMALL_CWND", "CONTINUOUS_LOSS", "ACK_DELAY_LOSS", "PACKET_DELAY",
                "LARGE_DUPTHRES", "CLIENT_IDLE", "ZERO_WINDOW")


TAPO_AS_SEED = {"TAIL_LOSS": "timeout", "DOUBLE_RETRANSMISSION": "timeout", "SMALL_INIT_RWND": "timeout",
                "SMALL_RWND": "timeout", "SMALL_CWND": "timeout", "CONTINUOUS_LOSS": "timeout",
                "ACK_DELAY_LOSS": "timeout", "LARGE_DUPTHRES": "timeout", "ZERO_WINDOW": "zero_rwnd",
                "RESOURCE_CONSTRAINT": "resource_constraint", "DATA_UNAVAILABLE": "resource_constraint",
                "CLIENT_IDLE": "resource_constraint", "PACKET_DELAY": "packet_delay", "UNDETERMINED": "other"}
# TAPO's use-after-free is harmless without glibc's tcache (see the module comment).
TAPO_ENV = {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"}


def run_tapo(binary: str, pcap: Path, server: str, port: int, workaround: bool = True) -> tuple[dict, int]:
    """Per client port, TAPO's stalls in order as (start s after the flow's first packet,
    duration s, class); and TAPO's exit status."""
    import os

    env = {**os.environ, **(TAPO_ENV if workaround else {})}
    p = subprocess.run([binary, "-f", str(pcap), "-s", server, "-p", str(port)], capture_output=True, text=True,
                       errors="replace", timeout=600, env=env)
    stalls, cur, state = {}, None, None
    for line in p.stdout.splitlines():
        m = re.match(r"name: [\d.]+\.(\d+)", line)
        if m:
            cur = int(m.group(1))
            stalls[cur] = []
            continue
        m = re.search(r"cur_time = ([\d.]+), duration = ([\d.]+)", line)
        if m:
            state = (float(m.group(1)), float(m.group(2)))
            continue
        for c in TAPO_CLASSES:
            if line.startswith(c + ":") and cur is not None:
                stalls[cur].append((*(state or (float("nan"), float("nan"))), c))
                state = None
    return stalls, p.returncode


def run_tcpvideo(pcap: Path, floor_ms: float = 0.0) -> dict:
    """Per client port, tcpvideo's stalls in order as (start s after the flow's first packet,
    duration s, class)."""
    import pandas as pd

    out = Path(tempfile.mkdtemp(prefix="tapo-vs-tv-"))
    subprocess.run([sys.executable, "-m", "tcpvideo.cli", "analyze", str(pcap), "--out", str(out),
                    "--stall-floor-ms", str(floor_ms)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    flows = pd.read_csv(out / "flows.csv")
    st = pd.read_csv(out / "stalls.csv").sort_values("start_ns")
    port = dict(zip(flows["flow_id"], flows["client_port"]))
    t0 = dict(zip(flows["flow_id"], flows["start_ns"]))
    res = {int(p): [] for p in flows["client_port"]}
    for r in st.itertuples():
        res[int(port[r.flow_id])].append(((r.start_ns - t0[r.flow_id]) / 1e9, r.duration_ns / 1e9, r.kind))
    return res


def pair(tapo: dict, ours: dict, match_ms: float) -> list[dict]:
    """Rows of the side-by-side table: by order per flow, plus the time-matched TAPO stall."""
    rows = []
    for port in sorted(set(tapo) | set(ours)):
        t, o = tapo.get(port, []), ours.get(port, [])
        for k in range(max(len(t), len(o))):
            a = o[k] if k < len(o) else None
            b = t[k] if k < len(t) else None
            near = None
            if a is not None:
                near = min(t, key=lambda x: abs(x[0] - a[0]), default=None)
                if near is not None and abs(near[0] - a[0]) * 1e3 > match_ms:
                    near = None
            rows.append({"port": port, "k": k,
                         "tcpvideo_start_s": a and round(a[0], 4), "tcpvideo_duration_s": a and round(a[1], 4),
                         "tcpvideo_class": a and a[2],
                         "tapo_start_s": b and b[0], "tapo_duration_s": b and b[1], "tapo_class": b and b[2],
                         "tapo_class_as_seed": b and TAPO_AS_SEED[b[2]],
                         "time_matched_tapo_class": near and near[2]})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tapo", required=True, help="path of the TAPO binary")
    ap.add_argument("captures", nargs="+", type=Path)
    ap.add_argument("--server", default="10.0.0.1", help="the front-end's IPv4 address (TAPO -s)")
    ap.add_argument("--port", type=int, default=80, help="the front-end's port (TAPO -p)")
    ap.add_argument("--stall-floor-ms", type=float, default=0.0, help="tcpvideo's stall floor (TAPO has none)")
    ap.add_argument("--match-ms", type=float, default=20.0, help="start-time tolerance of the time pairing")
    ap.add_argument("--no-workaround", action="store_true", help="run TAPO with glibc's tcache (it may crash)")
    ap.add_argument("--out", type=Path, help="write the paired table (CSV) here")
    a = ap.parse_args()
    if not Path(a.tapo).is_file():
        print(f"--tapo {a.tapo}: no such file", file=sys.stderr)
        return 2
    import pandas as pd

    tables = []
    for pcap in a.captures:
        tapo, rc = run_tapo(a.tapo, pcap, a.server, a.port, workaround=not a.no_workaround)
        ours = run_tcpvideo(pcap, a.stall_floor_ms)
        print(f"== {pcap}: TAPO exit status {rc}" + ("" if rc == 0 else " (crashed; flows after the crash are missing)"))
        print(f"{'client port':>11} {'TAPO stalls':>11} {'tcpvideo':>8}  TAPO classes | tcpvideo classes")
        for port in sorted(set(tapo) | set(ours)):
            t = tapo.get(port)
            print(f"{port:>11} {('—' if t is None else len(t)):>11} {len(ours.get(port, [])):>8}  "
                  f"{dict(Counter(x[2] for x in t or []))} | {dict(Counter(x[2] for x in ours.get(port, [])))}")
        both = [p for p in tapo if p in ours]
        rows = pair({p: tapo[p] for p in both}, {p: ours[p] for p in both}, a.match_ms)
        df = pd.DataFrame(rows)
        df.insert(0, "capture", str(pcap))
        tables.append(df)
        print(f"flows both report: {len(both)}; stalls TAPO {sum(len(tapo[p]) for p in both)}, "
              f"tcpvideo {sum(len(ours[p]) for p in both)} (floor {a.stall_floor_ms} ms)")
        m = df.dropna(subset=["tcpvideo_class", "time_matched_tapo_class"])
        if len(m):
            seed = m["time_matched_tapo_class"].map(TAPO_AS_SEED)
            print(f"time-matched pairs: {len(m)}; same class (TAPO mapped to the seed's): "
                  f"{(seed == m['tcpvideo_class']).mean():.1%}")
            print(pd.crosstab(m["tcpvideo_class"], m["time_matched_tapo_class"]).to_string())
    if a.out and tables:
        pd.concat(tables).to_csv(a.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
