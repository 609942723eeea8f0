"""Robustness sweep: run the analyzer over every file of one or more folders of public test
captures (Zeek's testing/btest/Traces, tcpdump's tests/, ...) and check that nothing panics or
raises, and that every byte of every capture is accounted for.

    python scripts/capture_sweep.py /work/captures/zeek /work/captures/tcpdump [--cli N]

For each file: files that are not captures (no pcap/pcapng magic) must be refused with one
clear line (a ValueError), never a traceback; captures must be analyzed. The byte account of
each capture must balance:

    uncompressed size = file/section headers and non-packet blocks + record bytes
                        + damaged bytes skipped + unknown-block bytes

and every damaged byte must show up in the summary (``read.skipped_bytes``) and in a warning.
A Rust panic surfaces in Python as ``pyo3_runtime.PanicException`` (a BaseException): it is
caught and counted here, so one bad file cannot hide the others. ``--cli N`` also runs the
``tcpvideo analyze`` command on the first N captures with damage (exit status 3 expected,
no traceback on stderr).
"""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
import time
from pathlib import Path

from tcpvideo.analysis import analyze_summary


def uncompressed_size(p: Path) -> int:
    with open(p, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        with gzip.open(p) as g:
            return sum(len(c) for c in iter(lambda: g.read(1 << 20), b""))
    return p.stat().st_size


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--cli", type=int, default=3, help="also run the CLI on this many damaged captures")
    args = ap.parse_args()
    files = sorted(Path(r) / f for folder in args.folders for r, _, fs in os.walk(folder) for f in fs)
    t0 = time.time()
    n_captures = n_refused = 0
    crashes, unbalanced, damaged, unwarned = [], [], [], []
    records = skipped = 0
    for p in files:
        try:
            s = analyze_summary(p, threads=1)
        except ValueError as e:  # not a capture: one clear line is the expected answer
            n_refused += 1
            if "\n" in str(e) or not str(e):
                crashes.append((p, f"unclear refusal: {e!r}"))
            continue
        except OSError as e:
            crashes.append((p, f"OSError {e}"))
            continue
        except BaseException as e:  # noqa: BLE001 (a panic is a BaseException; counted, the sweep goes on)
            if isinstance(e, KeyboardInterrupt):
                raise
            crashes.append((p, f"{type(e).__name__}: {e}"))
            continue
        n_captures += 1
        r = s["read"]
        records += r["records"]
        skipped += r["skipped_bytes"]
        size = uncompressed_size(p)
        accounted = r["meta_bytes"] + r["record_bytes"] + r["skipped_bytes"] + r["unknown_block_bytes"]
        if accounted != size:
            unbalanced.append((p, size, accounted, r))
        if r["skipped_bytes"] or r["corrupt_records"] or r["truncated_records"]:
            damaged.append((p, r["skipped_bytes"], r["records"]))
            if not any("damaged input" in w["message"] for w in s["warnings"]):
                unwarned.append(p)
    dt = time.time() - t0
    print(f"{len(files)} files in {dt:.1f} s: {n_captures} captures analyzed ({records} records), "
          f"{n_refused} refused as not a capture (one line each)")
    print(f"panics/exceptions: {len(crashes)}")
    for p, e in crashes:
        print(f"  {p}: {e}")
    print(f"captures whose byte account does not balance: {len(unbalanced)}")
    for p, size, acc, r in unbalanced[:20]:
        print(f"  {p}: size {size}, accounted {acc} ({r})")
    print(f"damaged captures: {len(damaged)}, {skipped} bytes skipped in all, each reported in the summary; "
          f"without a warning: {len(unwarned)}")
    for p, b, n in damaged:
        print(f"  {p}: {b} bytes skipped, {n} records read")
    bad_cli = 0
    for p, _, _ in damaged[: args.cli]:
        res = subprocess.run([sys.executable, "-m", "tcpvideo.cli", "analyze", "-q", str(p)], capture_output=True, text=True)
        ok = res.returncode == 3 and "Traceback" not in res.stderr and "damaged input" in res.stderr
        bad_cli += not ok
        print(f"  CLI on {p.name}: exit {res.returncode}; stderr: {res.stderr.strip().splitlines()[-1] if res.stderr.strip() else ''}")
    return 1 if crashes or unbalanced or unwarned or bad_cli else 0


if __name__ == "__main__":
    sys.exit(main())
