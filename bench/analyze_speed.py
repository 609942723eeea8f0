#!/usr/bin/env python3
"""Analyzer speed: `tcpvideo analyze` against tshark, tcptrace and `cat` on one big real capture.

Issue 4's benchmark. The capture is real Linux TCP: cubic bulk flows between two network
namespaces over veth (offloads off, so every packet is MSS-sized as on a real wire), captured by
dumpcap with snaplen 96 -- the kind of capture the machine notes measured the peers on
(6.35 M packets, 693 MB: cat 0.07 s, tcptrace -l 1.49 s, tshark -q -z conv,tcp 58.7 s). It is
made once (needs root) and cached, never committed: bench/out/ is git-ignored.

Then, with the page cache warm, one run times each tool on the same file and reads each one's
peak resident memory from the kernel (os.wait4 rusage of that very child):

    cat FILE > /dev/null                 the floor: reading the bytes
    tcptrace -l FILE                     a C peer that also tracks every connection
    tshark -q -z conv,tcp -r FILE        Wireshark's full dissection
    tcpvideo analyze FILE                ours (CLI, end to end, Python start-up included); then
                                         `--timings` runs, with and without --out, print a
                                         "phases" line: start-up, analysis, printing, writing,
                                         report, exit (where the CLI's time goes)
    tcpvideo.analyze(FILE)               ours, in-process (import excluded), when the API exists
    trace example (Rust)                 ours without Python: crates/trace/examples/analyze.rs,
                                         built here with cargo (--no-rust to skip)

Goals (issue 4): within 2x of cat, at least 30x tshark; issue 16: >= 10 M packets/s with the
full classification. Packets per second use the packet count dumpcap reported when it wrote the
file (or capinfos). Each row also gives CPU seconds (user + system of that child, from GNU time
or rusage) and packets per CPU second: on the shared 2-core machine the wall clock mostly
measures the other engineers' load (printed with the table), CPU time what the tool costs. The
Rust example runs with --threads 1 and --threads 2 (two threads each scan the mapped capture and
analyse half of the flows: more CPU in total, less wall time on an idle machine).

    python3 bench/analyze_speed.py                      # make/reuse the capture, run all
    python3 bench/analyze_speed.py --skip-tshark        # without the ~60 s tshark run
    python3 bench/analyze_speed.py --capture F.pcap     # any existing capture
    python3 bench/analyze_speed.py --tapo /work/peers/tapo/tapo   # server -s/-p from the capture's .json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
DEFAULT = ROOT / "bench" / "out" / "veth_cubic_s96.pcap"


def make_capture(path: Path, packets: int, flows: int, rate: str, timeout: float) -> dict:
    """Capture ``packets`` packets of ``flows`` cubic bulk flows over veth, snaplen 96.

    The server's egress is shaped by tbf at ``rate`` with a deep queue: dumpcap on a shared
    2-core machine cannot keep up with unshaped veth (it lost half the packets at ~400 k pkts/s),
    and a capture with holes makes every tool do different work. Local qdisc backpressure (TCP
    small queues) means the shaping itself drops nothing; the flows stay real cubic flows."""
    from tcpvideo import netns
    from tcpvideo.linux_scenarios import PORT

    ok, why = netns.available(need_capture=True)
    if not ok:
        sys.exit(f"cannot make the capture: {why}")
    me = ROOT / "python" / "tcpvideo" / "linux_scenarios.py"
    t0 = time.monotonic()
    with netns.Network() as net:
        srv, cli = net.chain(["srv", "cli"])
        srv.tbf(net.dev(srv, cli), rate=rate, burst="256kb", limit=8_000_000)
        sp = srv.python(me, ["server", "--cc", "cubic", "--size", str(10**13),
                             "--conns", str(flows)])
        sp.wait_for("^READY$")
        # returns once dumpcap's socket is bound (its 512 MiB ring takes up to a second to
        # build): the client's SYNs are in the file (netns.wait_until_dumpcap_captures)
        cap = srv.capture(net.dev(srv, cli), path, snaplen=96, buffer_mib=512,
                          max_packets=packets)
        cli.python(me, ["client", "--host", net.ip(srv, cli), "--conns", str(flows)])
        st = cap.wait(timeout)
        server_ip = net.ip(srv, cli)
    # the server's address and port go with the capture: TAPO filters on them (-s, -p)
    meta = {"packets": st.packets, "capture_drops": st.dropped, "bytes": path.stat().st_size,
            "flows": flows, "cc": "cubic", "snaplen": 96, "server_ip": server_ip, "server_port": PORT,
            "link": f"veth, offloads off, tbf {rate} at the sender",
            "seconds_to_capture": round(time.monotonic() - t0, 1)}
    path.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    return meta


def handshakes_in(path: Path, limit: int = 2_000_000) -> int:
    """SYNs (without ACK) among the capture's first ``limit`` packets (tcpdump)."""
    out = subprocess.run(["tcpdump", "-nn", "-r", str(path), "-c", str(limit),
                          "tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn"],
                         capture_output=True, text=True, check=False).stdout
    return len(out.splitlines())


def timed(argv: list[str], stdout=subprocess.DEVNULL) -> tuple[float, int, int, float]:
    """Run argv; return (wall seconds, peak RSS in kB of that child, exit code, CPU seconds).

    Peak RSS comes from GNU time (``/usr/bin/time -f %M``), whose child is forked from a small
    process: a child forked from this Python interpreter would report the interpreter's pages
    as its own high-water mark (ru_maxrss survives exec). Without GNU time, os.wait4's rusage
    is used (an over-estimate for small tools)."""
    gnu_time = Path("/usr/bin/time")
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss_file:
        cmd = ([str(gnu_time), "-f", "%M %U %S", "-o", rss_file.name, *argv] if gnu_time.exists()
               else argv)
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t0
        rc = os.waitstatus_to_exitcode(status)
        p.returncode = rc
        rss, cpu = ru.ru_maxrss, ru.ru_utime + ru.ru_stime
        if gnu_time.exists():
            last = (rss_file.read().strip().splitlines() or [""])[-1].split()
            if len(last) == 3 and last[0].isdigit():
                rss, cpu = int(last[0]), float(last[1]) + float(last[2])
    return dt, rss, rc, cpu


def best_of(n: int, argv: list[str]) -> tuple[float, int, int, float]:
    runs = [timed(argv) for _ in range(n)]
    return (min(r[0] for r in runs), max(r[1] for r in runs), max(r[2] for r in runs),
            min(r[3] for r in runs))


_PHASE = re.compile(r"([\w-]+) ([\d.]+|\?) s \(([\d.]+) CPU\)")


def cli_phases(cli: list[str], path: Path, repeat: int, out_dir: Path | None = None) -> dict | None:
    """Where the CLI's time goes (issue 16): `tcpvideo analyze --timings FILE [--out DIR]`
    `repeat` times; the fastest run by wall, with the phases the CLI printed on stderr (start-up =
    interpreter + imports + argument parsing, analysis, printing, and with --out writing and
    report) and what follows the last phase (interpreter exit: process wall minus the phases)."""
    best = None
    for _ in range(repeat):
        argv = [*cli, "analyze", "--timings", str(path)] + (["--out", str(out_dir)] if out_dir else [])
        t0 = time.perf_counter()
        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        total = time.perf_counter() - t0
        line = next((ln for ln in p.stderr.splitlines() if ln.startswith("timings:")), None)
        if p.returncode != 0 or line is None:
            return None
        phases = [(n, None if w == "?" else float(w), float(c)) for n, w, c in _PHASE.findall(line)]
        if best is None or total < best["total_s"]:
            known = sum(w for _, w, _ in phases if w is not None)
            best = {"total_s": total, "phases": phases,
                    "exit_s": total - known if all(w is not None for _, w, _ in phases) else None}
    return best


def phases_line(name: str, ph: dict, repeat: int) -> str:
    parts = [f"{n} {'?' if w is None else f'{w:.3f}'} s ({c:.3f} CPU)" for n, w, c in ph["phases"]]
    if ph["exit_s"] is not None:
        parts.append(f"exit {ph['exit_s']:.3f} s (process wall minus the phases)")
    return f"phases, {name} (fastest of {repeat}, {ph['total_s']:.3f} s wall): " + ", ".join(parts)


def rust_example() -> str | None:
    """Build crates/trace's `analyze` example (release) and return its path, or None."""
    if shutil.which("cargo") is None or not (ROOT / "crates/trace/examples/analyze.rs").exists():
        return None
    b = subprocess.run(["cargo", "build", "--release", "-q", "-p", "tcpvideo-trace", "--example",
                        "analyze"], cwd=ROOT, capture_output=True, text=True)
    if b.returncode != 0:
        print(f"(could not build the trace example: {b.stderr.strip()[-300:]})")
        return None
    meta = subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    exe = Path(json.loads(meta.stdout)["target_directory"]) / "release" / "examples" / "analyze"
    return str(exe) if exe.exists() else None


def inprocess_probe(path: Path) -> list[str] | None:
    """A child that imports tcpvideo, then times tcpvideo.analyze(path) alone. pyarrow is
    imported first: tcpvideo imports it lazily on the first analysis, which cost ~0.5 s of CPU
    (more than the whole analysis of the 55 k-packet study capture) and is start-up, not speed."""
    code = (
        "import sys,time,resource\n"
        "import tcpvideo, pyarrow\n"
        "f=getattr(tcpvideo,'analyze',None)\n"
        "if f is None: sys.exit(3)\n"
        "r0=resource.getrusage(resource.RUSAGE_SELF)\n"
        "t=time.perf_counter(); f(sys.argv[1]); dt=time.perf_counter()-t\n"
        "r1=resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(r1.ru_utime-r0.ru_utime+r1.ru_stime-r0.ru_stime, dt)\n"
    )
    return [sys.executable, "-c", code, str(path)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--capture", type=Path, default=DEFAULT)
    ap.add_argument("--packets", type=int, default=5_500_000)
    ap.add_argument("--flows", type=int, default=4)
    ap.add_argument("--rate", default="600mbit", help="tbf rate at the sender while capturing")
    ap.add_argument("--repeat", type=int, default=3, help="runs of the fast tools (best kept)")
    ap.add_argument("--skip-tshark", action="store_true")
    ap.add_argument("--no-rust", action="store_true", help="do not build/time the Rust example")
    ap.add_argument("--remake", action="store_true", help="make the capture again")
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "out" / "analyze_speed.json")
    ap.add_argument("--tapo", help="TAPO binary (the seed-000 authors' analyzer, built outside the repo: "
                    "bench/tapo_vs_tcpvideo.py has the recipe) to time as a peer")
    ap.add_argument("--server-ip", help="server address for TAPO's -s (default: the one the capture's "
                    ".json records, i.e. the capture this bench made)")
    ap.add_argument("--server-port", type=int, help="server port for TAPO's -p (default: as --server-ip)")
    a = ap.parse_args()

    path: Path = a.capture
    meta_path = path.with_suffix(".json")
    if a.remake or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"making the capture {path} ({a.packets} packets, {a.flows} cubic flows)...",
              flush=True)
        meta = make_capture(path, a.packets, a.flows, a.rate, timeout=900)
        syns = handshakes_in(path)
        if syns < a.flows:
            sys.exit(f"the capture holds {syns} of {a.flows} handshakes: TAPO would skip the flows "
                     "without one; rerun with --remake")
        if meta["capture_drops"] > meta["packets"] // 100:
            print(f"WARNING: dumpcap lost {meta['capture_drops']} packets: the machine was too "
                  "busy; rerun with --remake and a lower --rate", flush=True)
    elif meta_path.exists():
        meta = json.loads(meta_path.read_text())
    else:
        n = subprocess.run(["capinfos", "-M", "-c", "-r", str(path)], capture_output=True,
                           text=True).stdout.split()
        meta = {"packets": int(n[-1]), "bytes": path.stat().st_size}
    pkts = meta["packets"]
    print(f"capture: {path} {pkts} packets, {path.stat().st_size / 1e6:.0f} MB "
          f"(capture drops {meta.get('capture_drops', '?')})")

    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # warm the cache

    rows: list[tuple[str, str, float | None, int | None, float | None, str]] = []
    load_before = os.getloadavg()[0]

    def add(name: str, cmd: str, res: tuple[float, int, int, float] | None, note: str = "") -> None:
        if res is None:
            rows.append((name, cmd, None, None, None, note or "missing"))
            return
        dt, rss, rc, cpu = res
        if rc != 0:  # a failed run has no speed worth printing
            rows.append((name, cmd, None, None, None, f"FAILED (exit {rc}) {note}".strip()))
            return
        rows.append((name, cmd, dt, rss, cpu, note))

    add("cat", "cat FILE > /dev/null", best_of(a.repeat, ["cat", str(path)]))
    if shutil.which("tcptrace"):
        add("tcptrace", "tcptrace -l FILE", best_of(1, ["tcptrace", "-l", str(path)]))
    else:
        add("tcptrace", "tcptrace -l FILE", None, "not installed")

    tv = shutil.which("tcpvideo")
    cli = [tv] if tv else [sys.executable, "-m", "tcpvideo.cli"]
    probe = subprocess.run([*cli, "analyze", "--help"], capture_output=True, text=True)
    phases = {}
    if probe.returncode == 0:
        add("tcpvideo", "tcpvideo analyze FILE", best_of(a.repeat, [*cli, "analyze", str(path)]))
        if "--timings" in probe.stdout:
            phases["tcpvideo analyze FILE"] = (cli_phases(cli, path, a.repeat), a.repeat)
            with tempfile.TemporaryDirectory(prefix="analyze_speed_") as tmp:
                # --out: Arrow tables, Parquet + CSV, report.html (matplotlib); twice, best kept.
                phases["tcpvideo analyze FILE --out DIR"] = (cli_phases(cli, path, 2, Path(tmp) / "out"), 2)
    else:
        add("tcpvideo", "tcpvideo analyze FILE", None, "missing: no `analyze` sub-command yet")
    # In process: the analysis alone, without interpreter start-up and imports.
    r = subprocess.run(inprocess_probe(path), capture_output=True, text=True)
    if r.returncode == 0:
        cpus, times = [float(r.stdout.split()[-2])], [float(r.stdout.split()[-1])]
        for _ in range(a.repeat - 1):
            rr = subprocess.run(inprocess_probe(path), capture_output=True, text=True)
            cpus.append(float(rr.stdout.split()[-2]))
            times.append(float(rr.stdout.split()[-1]))
        _, rss, rc, _ = timed(inprocess_probe(path))
        add("tcpvideo.analyze()", "tcpvideo.analyze(FILE), in process", (min(times), rss, rc, min(cpus)))
    else:
        add("tcpvideo.analyze()", "tcpvideo.analyze(FILE)", None,
            "missing: no tcpvideo.analyze yet" if r.returncode == 3
            else "error: " + (r.stderr.strip().splitlines() or ["?"])[-1][:120])

    exe = None if a.no_rust else rust_example()
    if exe:
        for th in (1, 2):
            add(f"trace example -t{th}", f"analyze --threads {th} FILE (crates/trace example)",
                best_of(a.repeat, [exe, "--threads", str(th), str(path)]))
    else:
        add("trace example (Rust)", "crates/trace example", None,
            "skipped (--no-rust)" if a.no_rust else "missing")

    if a.tapo:
        # TAPO only follows connections of the server it is given: with a wrong -s/-p it reads the
        # file and tracks nothing, and its time means nothing (it once "ran" at 13.8 M pkts/s so).
        recorded = json.loads(path.with_suffix(".json").read_text()) if path.with_suffix(".json").exists() else {}
        a.server_ip = a.server_ip or recorded.get("server_ip")
        a.server_port = a.server_port or recorded.get("server_port")
        if not (a.server_ip and a.server_port):
            sys.exit(f"--tapo needs --server-ip and --server-port: {path} has no .json recording its server")
        # TAPO tracks every connection and classifies its stalls (the same job as ours); it
        # prints per-flow text only when a connection closes.
        add("TAPO", "tapo -f FILE -s IP -p PORT",
            # TAPO frees list entries before unlinking them (bench/tapo_vs_tcpvideo.py's header has
            # the backtrace); with glibc's tcache off the freed entry keeps its next pointer and the
            # run finishes. `env` execs TAPO, so the rusage is still TAPO's own.
            best_of(1, ["env", "GLIBC_TUNABLES=glibc.malloc.tcache_count=0", a.tapo, "-f", str(path),
                        "-s", a.server_ip, "-p", str(a.server_port)]))
    if a.skip_tshark:
        add("tshark", "tshark -q -z conv,tcp -r FILE", None, "skipped (--skip-tshark)")
    else:
        add("tshark", "tshark -q -z conv,tcp -r FILE",
            timed(["tshark", "-q", "-z", "conv,tcp", "-r", str(path)]))

    t_cat = rows[0][2]
    t_tshark = next((r[2] for r in rows if r[0] == "tshark"), None)
    cpu_of = {r[0]: r[4] for r in rows if r[4]}
    load = f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, {os.cpu_count()} cores"
    print()
    print(load)
    print(f"{'tool':<20} {'seconds':>9} {'M pkts/s':>9} {'CPU s':>7} {'M pkts/CPU s':>13} "
          f"{'x cat time':>11} {'x tshark':>9} {'x tcptrace':>10} {'peak RSS':>10}  note")
    out = []
    for name, cmd, dt, rss, cpu, note in rows:
        if dt is None:
            print(f"{name:<20} {'-':>9} {'-':>9} {'-':>7} {'-':>13} {'-':>11} {'-':>9} {'-':>10} {'-':>10}  {note}")
            out.append({"tool": name, "command": cmd, "note": note})
            continue
        vs_cat = dt / t_cat if t_cat else float("nan")
        vs_ts = (t_tshark / dt) if t_tshark else None
        # CPU-time ratio to tcptrace (single-threaded C): the load-independent comparison.
        vs_tt = (cpu_of["tcptrace"] / cpu) if cpu and cpu_of.get("tcptrace") else None
        cpu_rate = pkts / cpu / 1e6 if cpu else None
        print(f"{name:<20} {dt:>9.3f} {pkts / dt / 1e6:>9.2f} {cpu or 0:>7.2f} "
              f"{(f'{cpu_rate:.2f}' if cpu_rate else '-'):>13} {vs_cat:>11.1f} "
              f"{(f'{vs_ts:.1f}' if vs_ts else '-'):>9} {(f'{vs_tt:.1f}' if vs_tt else '-'):>10} "
              f"{rss / 1024:>8.0f}MB  {note}")
        out.append({"tool": name, "command": cmd, "seconds": dt, "pkts_per_s": pkts / dt,
                    "cpu_seconds": cpu, "pkts_per_cpu_s": pkts / cpu if cpu else None,
                    "times_cat": vs_cat, "speedup_vs_tshark": vs_ts,
                    "cpu_speedup_vs_tcptrace": vs_tt, "peak_rss_kb": rss, "note": note})
    for name in ("tcpvideo", "tcpvideo.analyze()", "trace example -t1", "trace example -t2"):
        r = next((o for o in out if o["tool"] == name and "seconds" in o), None)
        if r is None:
            continue
        goals = [f"within 2x of cat: {'yes' if r['times_cat'] <= 2 else 'NO'} "
                 f"({r['times_cat']:.1f}x)"]
        if r["speedup_vs_tshark"]:
            goals.append(f">=30x tshark: {'yes' if r['speedup_vs_tshark'] >= 30 else 'NO'} "
                         f"({r['speedup_vs_tshark']:.0f}x)")
        rate = r["pkts_per_s"] / 1e6
        cpu_rate = (r["pkts_per_cpu_s"] or 0) / 1e6
        goals.append(f">=10 M pkts/s (issue 16): {'yes' if rate >= 10 else 'NO'} ({rate:.1f} M wall, "
                     f"{cpu_rate:.1f} M per CPU second)")
        print(f"goals, {name}: " + "; ".join(goals))
    for name, (ph, n) in phases.items():
        if ph is not None:
            print(phases_line(name, ph, n))
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps({"capture": str(path), "meta": meta, "load": load, "rows": out,
                                  "cli_phases": {k: v for k, (v, _) in phases.items()}}, indent=1))
    print(f"\nwritten {a.json}")


if __name__ == "__main__":
    main()
