#!/usr/bin/env python3
"""Golden outputs: run a fixed set of simulations and analyses and compare the SHA-256 of every
table, summary and pcap they produce with the hashes recorded in tests/golden/hashes.json.

Why: refactoring (issue 9) must leave every output byte-identical, and later work must say so
in its commit when it changes an output on purpose. Same scenario + seed => identical outputs
(DESIGN.md), so any difference here is a behaviour change.

What runs (each a "case"; the record keeps what each case ran):
- every file in scenarios/ (long ones shortened by a `duration` override, recorded in the case);
- the demo (`tcpvideo demo`'s embedded scenario, run in progress chunks as the demo runs it);
- one small lossy dumbbell per registered congestion control, plus non-default parameters of the
  algorithms with typed parameters and a TCP without SACK/timestamps/RACK/F-RTO (recovery paths);
- the analyzer on the capture tests/test_analyze_capture.py builds (several option sets) and on
  every pcap the simulations above wrote.

How a table is hashed: its Arrow schema (column names and types) followed by its CSV bytes as
pyarrow writes them. Parquet files are not hashed byte for byte: their bytes carry the writing
library's version ("created_by"), so they would differ between two venvs while the content is
the same. Summaries are hashed as canonical JSON (sorted keys); pcaps byte for byte.

    python scripts/golden.py            # compare; exit 1 and list every differing output
    python scripts/golden.py --update   # rewrite the record (a deliberate behaviour change:
                                        # say which outputs changed and why in the commit)
    python scripts/golden.py --only cc/  # only the cases whose name starts with this
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import io
import json
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "tests" / "golden" / "hashes.json"

# Scenario files longer than this many simulated seconds are cut to it (keeps the whole script
# well under a minute on 2 cores; the pcaps of a 60 s 10-client run alone are ~60 MB).
MAX_SCENARIO_S = 60.0

# One small lossy dumbbell per congestion control: 4 bulk flows + 1 segment client, 4 s.
CC_SECONDS = 4.0


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def table_hash(t) -> str:
    import pyarrow.csv as pacsv

    buf = io.BytesIO()
    pacsv.write_csv(t, buf)
    return sha(str(t.schema).encode() + b"\n" + buf.getvalue())


# Counters of the engine's own work, not results of the simulated network: an engine change that
# schedules fewer events for the same packets (e.g. cut-through hops) must not read as a change.
ENGINE_WORK_KEYS = ("events_processed",)


def summary_hash(summary: dict) -> str:
    kept = {k: v for k, v in summary.items() if k not in ENGINE_WORK_KEYS}
    return sha(json.dumps(kept, sort_keys=True, indent=1).encode())


def sim_outputs(res) -> dict[str, str]:
    from tcpvideo.simulation import TABLES

    out = {name: table_hash(getattr(res, name)) for name in TABLES}
    out["summary"] = summary_hash(res.summary)
    for p in sorted(res.pcaps):
        out[f"pcap:{p.name}"] = sha(p.read_bytes())
    return out


def analysis_outputs(res) -> dict[str, str]:
    from tcpvideo.analysis import TABLES

    out = {name: table_hash(res.table(name)) for name in TABLES}
    out["summary"] = summary_hash(res.summary)
    return out


def shortened(path: Path) -> tuple[dict, str]:
    """The scenario of `path` as a dict, its duration cut to MAX_SCENARIO_S; and what ran."""
    from tcpvideo._core import scenario_check

    sc = tomllib.loads(path.read_text())
    secs = scenario_check(path.read_text(), "toml", None)["duration_ns"] / 1e9
    if secs > MAX_SCENARIO_S:
        sc["duration"] = f"{MAX_SCENARIO_S:g}s"
        return sc, f"{path.name} with duration {MAX_SCENARIO_S:g}s (file: {secs:g}s)"
    return sc, f"{path.name} as is"


def cc_scenario(cc: str, params: dict | None = None, tcp: dict | None = None) -> dict:
    """4 bulk flows and one 2-second-segment client through a 20 Mbit/s, 60-packet bottleneck
    with 0.5 % random loss, base RTT 40 ± 8 ms: slow start, recovery, RTOs, undo all happen."""
    t = {"cc": cc, **(tcp or {})}
    if params:
        t["cc_params"] = dict(params)
    return {
        "name": f"golden_{cc}",
        "duration": f"{CC_SECONDS:g}s",
        "seed": 11,
        "tcp": t,
        "dumbbell": {
            "clients": 5, "bottleneck_rate": "20Mbps", "queue": 60, "rtt": "40ms", "rtt_std": "8ms",
            "loss": {"model": "bernoulli", "p": 0.005},
            "flow": {"app": "bulk", "start_jitter": "0.5s"},
        },
        "flow": [],
        "record": {"sample_interval": "100ms", "pcap": [{"link": "bottleneck", "at": "r1"}]},
    }


def cc_cases() -> list[tuple[str, dict, str]]:
    import tcpvideo

    cases = []
    for c in tcpvideo.cc_list():
        name = c["name"]
        cases.append((f"cc/{name}", cc_scenario(name), f"5-flow lossy dumbbell, {CC_SECONDS:g}s, {name} defaults"))
    variants = {
        "cc/cubic+params": ("cubic", {"hystart": 0, "beta": 0.8, "fast_convergence": 0, "tcp_friendliness": 0}),
        "cc/bic+params": ("bic", {"smooth_part": 5, "low_window": 4, "fast_convergence": 0}),
        "cc/vegas+params": ("vegas", {"alpha": 3, "beta": 6, "gamma": 2}),
    }
    have = {c["name"]: {p["name"] for p in c["params"]} for c in tcpvideo.cc_list()}
    for case, (cc, params) in variants.items():
        params = {k: v for k, v in params.items() if k in have.get(cc, ())}
        cases.append((case, cc_scenario(cc, params), f"as cc/{cc} with {params}"))
    plain = {"sack": False, "timestamps": False, "rack_tlp": False, "frto": False}
    cases.append(("cc/reno+plain_tcp", cc_scenario("reno", tcp=plain), f"as cc/reno with {plain}"))
    return cases


def reader_case() -> tuple[str, dict, str]:
    """Segment downloads whose reader pauses (zero window, persist probes) and throttles."""
    sc = {
        "name": "golden_reader",
        "duration": "6s",
        "seed": 5,
        "node": [{"name": "s"}, {"name": "r", "kind": "router"}, {"name": "c"}],
        "link": [
            {"a": "s", "b": "r", "rate": "1Gbps", "delay": "1ms"},
            {"name": "wan", "a": "r", "b": "c", "rate": "10Mbps", "delay": "19ms", "queue": 40},
        ],
        "flow": [
            {"name": "paused", "client": "c", "server": "s", "app": "reqresp", "period": "1s", "count": 5,
             "response_bytes": "400kB", "tcp": {"rcv_buf": "64KiB", "keepalive_idle": "1s"},
             "reader": {"pauses": [{"at": "0.5s", "duration": "1.5s"}]}},
            {"name": "throttled", "client": "c", "server": "s", "bytes": "2MB",
             "reader": {"rate": "4Mbps"}, "cwnd_clamp_schedule": [{"at": "1s", "packets": 8}, {"at": "3s", "packets": 0}]},
        ],
        "record": {"sample_interval": "50ms", "pcap": [{"link": "wan", "at": "r"}]},
    }
    return "sim/reader_pause_and_clamp", sc, "zero window, keep-alive, rate-limited reader, clamp schedule"


def tail_loss_case() -> tuple[str, dict, str]:
    """Short responses over lossy paths: tail losses (TLP, RTO), bursts (Gilbert-Elliott)."""
    sc = {
        "name": "golden_tail_loss",
        "duration": "8s",
        "seed": 9,
        "node": [{"name": "s"}, {"name": "r", "kind": "router"}, {"name": "a"}, {"name": "b"}],
        "link": [
            {"a": "s", "b": "r", "rate": "1Gbps", "delay": "1ms"},
            {"name": "wa", "a": "r", "b": "a", "rate": "20Mbps", "delay": "29ms", "queue": 30,
             "loss": {"model": "bernoulli", "p": 0.03}},
            {"name": "wb", "a": "r", "b": "b", "rate": "5Mbps", "delay": "49ms", "queue": 20,
             "loss": {"model": "gilbert_elliott", "p": 0.01, "r": 0.3, "loss_bad": 0.8}},
        ],
        "flow": [
            {"name": "short-a", "client": "a", "server": "s", "app": "reqresp", "period": "0.25s", "count": 30,
             "response_bytes": "20kB"},
            {"name": "short-b", "client": "b", "server": "s", "app": "reqresp", "period": "0.5s", "count": 15,
             "response_bytes": "60kB", "tcp": {"cc": "bbr"}},
            {"name": "bulk-b", "client": "b", "server": "s", "bytes": "1MB", "start": "1s", "tcp": {"cc": "vegas"}},
        ],
        "record": {"sample_interval": "100ms", "pcap": [{"link": "wa", "at": "r"}, {"link": "wb", "at": "b"}]},
    }
    return "sim/tail_loss", sc, "short responses over Bernoulli and Gilbert-Elliott loss (TLP, RTO)"


def test_capture() -> bytes:
    """The capture tests/test_analyze_capture.py builds (imported, not copied)."""
    spec = importlib.util.spec_from_file_location("_golden_capture", ROOT / "tests" / "test_analyze_capture.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build()


def run_all(only: str, work: Path) -> dict[str, dict]:
    """Every case: {name: {"ran": what ran, "outputs": {output: sha256}}}."""
    import tcpvideo
    from tcpvideo.cli.demo import DEMO_SCENARIO

    cases: dict[str, dict] = {}
    pcaps: list[tuple[str, Path]] = []

    def want(name: str) -> bool:
        return name.startswith(only)

    def sim(name: str, sc: dict, ran: str, progress: Callable | None = None) -> None:
        needs_pcap = bool(sc.get("record", {}).get("pcap"))
        if not want(name) and not (needs_pcap and want("analyze/")):
            return
        out = work / name.replace("/", "_")
        res = tcpvideo.simulate(sc, out=out if needs_pcap else None, progress=progress)
        if want(name):
            cases[name] = {"ran": ran, "outputs": sim_outputs(res)}
        pcaps.extend((name, p) for p in sorted(res.pcaps))

    for path in sorted((ROOT / "scenarios").iterdir()):
        if path.suffix == ".toml":
            sc, ran = shortened(path)
            sim(f"scenario/{path.stem}", sc, ran)
    sim("demo", DEMO_SCENARIO, "tcpvideo demo's scenario in 200 progress chunks", progress=lambda now, total: None)
    for name, sc, ran in [*cc_cases(), reader_case(), tail_loss_case()]:
        sim(name, sc, ran)

    cap = work / "test_analyze_capture.pcap"
    cap.write_bytes(test_capture())
    analyses = [
        ("analyze/test_capture", [cap], {"threads": 1}, "tests/test_analyze_capture.py build(), defaults"),
        ("analyze/test_capture+threads2", [cap], {"threads": 2}, "same, 2 threads"),
        ("analyze/test_capture+tau100", [cap], {"threads": 1, "tau": 100.0}, "same, tau 100"),
        ("analyze/test_capture+client_as_server", [cap], {"threads": 1, "server_ports": [40000]},
         "same, server_ports [40000]"),
        ("analyze/test_capture+linux_rto", [cap], {"threads": 1, "rto_style": "linux", "burst_min_packets": 2},
         "same, rto_style linux, burst_min_packets 2"),
    ]
    for case, p in pcaps:
        analyses.append((f"analyze/{case}/{p.name}", [p], {"threads": 1}, f"the pcap {p.name} of {case}, defaults"))
    for name, paths, opts, ran in analyses:
        if want(name):
            cases[name] = {"ran": ran, "outputs": analysis_outputs(tcpvideo.analyze(paths, **opts))}
    return cases


def compare(record: dict, now: dict) -> list[str]:
    """One line per output that differs, is missing or is new."""
    lines = []
    for case in sorted(set(record) | set(now)):
        if case not in now:
            lines.append(f"{case}: not run (in the record)")
            continue
        if case not in record:
            lines.append(f"{case}: new case (not in the record)")
            continue
        a, b = record[case]["outputs"], now[case]["outputs"]
        for out in sorted(set(a) | set(b)):
            if a.get(out) != b.get(out):
                what = "missing" if out not in b else "new" if out not in a else "differs"
                lines.append(f"{case}: {out} {what}")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--update", action="store_true", help=f"rewrite {RECORD.relative_to(ROOT)}")
    p.add_argument("--only", default="", metavar="PREFIX", help="only the cases whose name starts with PREFIX")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tcpvideo-golden-") as tmp:
        now = run_all(a.only, Path(tmp))
    wall = time.perf_counter() - t0
    n = sum(len(c["outputs"]) for c in now.values())
    record = json.loads(RECORD.read_text())["cases"] if RECORD.exists() else {}
    if a.update:
        if a.only:
            record = {k: v for k, v in record.items() if not k.startswith(a.only)}
        record.update(now)
        RECORD.parent.mkdir(parents=True, exist_ok=True)
        RECORD.write_text(json.dumps({"cases": dict(sorted(record.items()))}, indent=1) + "\n")
        print(f"golden: recorded {n} outputs of {len(now)} cases in {RECORD.relative_to(ROOT)} ({wall:.1f} s)")
        return 0
    if a.only:
        record = {k: v for k, v in record.items() if k.startswith(a.only)}
    diff = compare(record, now)
    for line in diff:
        print(f"golden: {line}")
    if diff:
        print(f"golden: {len(diff)} of {n} outputs differ from {RECORD.relative_to(ROOT)} ({wall:.1f} s); "
              "a deliberate change reruns with --update and says so in its commit")
        return 1
    print(f"golden: {len(now)} cases, {n} outputs (tables, summaries, pcaps), all identical to "
          f"{RECORD.relative_to(ROOT)} ({wall:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
