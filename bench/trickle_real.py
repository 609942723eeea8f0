"""Trickle on real Linux TCP: tcpvideo-origin with its BPF cwnd clamp, through a tbf bottleneck
and a 50 ms delay line, read by a player-like client; the capture goes through tcpvideo's analyzer.

Topology (python/tcpvideo/netns.py, delayline.py — the pieces `tcpvideo emulate` and
linux_dumbbell.py use):

    srv ns [tcpvideo-origin, dumpcap] ==veth== rtr ns [tbf RATE] tun0 ~~delay line RTT/2 each way~~ tun0 cli ns [player]

The origin serves a progressive file with `?mode=M&rate_kbps=R` and a startup burst of
`--startup-s` media seconds (default 10; the paper's 30-40 s only lengthen the run). Server
settings, each for a reason seen in the first runs: CUBIC (the paper's stack) set by the origin
on its listener, because a socket born BBR (this machine's default) keeps TCP's internal pacing
after switching and paced 64 kB blocks into pairs 1.45 ms apart; `tcp_slow_start_after_idle` 0
so cwnd survives ustreamer's idle gaps between blocks, as the paper's 64 kB bursts imply; a fixed
1 MiB send buffer (`--sndbuf-kib 1024`) so a whole block enters the socket in one write. Bursts,
cwnd and the delivered rate are measured over the throttling phase (bursts and cwnd from 1 s
after the client has the startup bytes; delivered = bytes after the startup burst / response
time), as the paper's A/B comparison is. The client reads the socket as fast as the data come (a
browser's progressive download) and plays it out at R after 2 s of media (rebuffer count).
Measured per run:

- bursts (Trickle §5.2: ≥ 4 data packets ≤ 1 ms apart) by `tcpvideo.analyze` on the capture
  at the server's veth (the server's vantage, as the paper's captures), share ≤ 10 packets and
  median size;
- retransmission rate (retransmitted / data packets, analyzer) and srtt at the end (analyzer);
- `ss -tin` on the server every 0.25 s: cwnd vs the clamp the origin applied (its debug log:
  "cwnd clamp applied"), share of samples with cwnd ≤ clamp;
- delivered rate at the client vs the target R.

Must-show case (default): 1 Mbit/s over 10 Mbit/s, 50 ms, 70 s (~66 s of throttling), Trickle and 64 kB pacing
(`baseline`). `--matrix`: three bandwidths × two RTTs, Trickle and baseline, shorter runs.
The simulated column: the same case in tcpvideo's simulator (`app = "progressive"`, the same
`Ustreamer` model the origin drives): server —10 Gbit/s— router —BW, RTT/2 each way, drop-tail
queue of max(BDP, 50) packets (the tbf's limit)— client; CUBIC, the same 1 MiB send buffer,
slow start after idle off, the same startup; the same analyzer on the server's capture and the
same throttling-phase window (from 1 s after the startup bytes are acknowledged). `--no-sim` skips
it; `--sim-only` runs only it (no root needed).

Needs root; build first: `cargo build -p tcpvideo-origin --release`.

    sudo python bench/trickle_real.py [--seconds 70] [--matrix] [--out runs/trickle_real]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import signal
import socket
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUN_RTR, TUN_CLI = "10.97.0.1", "10.97.0.2"
PORT = 8000


# ---------------------------------------------------------------- the client (runs in cli ns)

def client_main(url_host: str, path: str, seconds: float, rate_bps: float,
                startup_bytes: int) -> None:
    """Read like a browser's progressive download; print RESULT {json}."""
    s = socket.create_connection((url_host, PORT), timeout=10)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: origin\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            raise SystemExit("closed before the response head")
        head += chunk
    head, body = head.split(b"\r\n\r\n", 1)
    status = int(head.split(b" ")[1])
    t0 = time.monotonic()
    wall0 = time.time()
    got = len(body)
    arrivals = [(0.0, got)]
    cross = None  # (t, bytes) when the startup burst's bytes had all arrived
    s.settimeout(1.0)
    while True:
        now = time.monotonic() - t0
        if now >= seconds:
            break
        try:
            chunk = s.recv(262144)
        except socket.timeout:
            continue
        if not chunk:
            break
        got += len(chunk)
        arrivals.append((time.monotonic() - t0, got))
        if cross is None and got >= startup_bytes:
            cross = arrivals[-1]
    elapsed = time.monotonic() - t0
    s.close()
    # Playout at R after 2 s of media; a rebuffer when the buffer empties (then 2 s again).
    bytes_per_s = rate_bps / 8
    playing, played_media, rebuffers, last_t = False, 0.0, 0, 0.0
    for t, total in arrivals:
        if playing:
            played_media += t - last_t
            buffered = total / bytes_per_s - played_media
            if buffered < 0:
                rebuffers += 1
                played_media = total / bytes_per_s
                playing = False
        elif total / bytes_per_s - played_media >= 2.0:
            playing = True
        last_t = t
    cross = cross or (0.0, 0)
    throttle_s = elapsed - cross[0]
    # The server's throttling schedule starts when it has written the startup burst, which is at
    # the first byte (it writes it at once): bytes beyond the burst over the whole response time
    # are what the throttling phase delivered.
    print("RESULT " + json.dumps({
        "status": status, "bytes": got, "seconds": elapsed, "delivered_bps": got * 8 / elapsed,
        "throttle_start_wall": wall0 + cross[0], "throttle_seconds": throttle_s,
        "throttle_bps": max(got - startup_bytes, 0) * 8 / elapsed if elapsed > 0 else None,
        "rebuffers": rebuffers}), flush=True)


# ---------------------------------------------------------------- one run (root ns driver)

def run_case(mode: str, rate_kbps: int, bw_mbit: float, rtt_ms: float, seconds: float,
             out: Path, origin_bin: str, startup_s: float = 10.0, log=print) -> dict:
    from tcpvideo import netns
    from tcpvideo.delayline import DelayLine, TunPair
    import tcpvideo

    out.mkdir(parents=True, exist_ok=True)
    media = out / "media"
    media.mkdir(exist_ok=True)
    startup_bytes = int(rate_kbps * 1000 / 8 * startup_s)
    size = int(rate_kbps * 1000 / 8 * 1.5 * seconds) + startup_bytes + 2_000_000
    video = media / "video.mp4"
    if not video.exists() or video.stat().st_size < size:
        video.write_bytes(os.urandom(size))
    pcap = out / f"{mode}.pcap"
    with netns.Network() as net:
        srv, rtr = net.chain(["srv", "rtr"])
        cli = net.add_namespace("cli")
        srv_ip, rtr_ip = net.ip(srv, rtr), net.ip(rtr, srv)
        rtr.sysctl("net.ipv4.ip_forward", 1)
        for ns in (srv, rtr, cli):
            for k, v in (("net.ipv4.conf.all.rp_filter", 0), ("net.ipv4.conf.default.rp_filter", 0),
                         ("net.ipv4.tcp_no_metrics_save", 1),
                         # cwnd kept over ustreamer's idle gaps between blocks, as the paper's
                         # 64 kB / ~43-packet bursts imply (Linux's default would restart from
                         # IW10 after each idle RTO and split a block into slow-start rounds).
                         ("net.ipv4.tcp_slow_start_after_idle", 0)):
                ns.run(["sysctl", "-q", "-w", f"{k}={v}"], check=False)
        with TunPair(net, rtr, cli, TUN_RTR, TUN_CLI) as pair:
            cli.run(["ip", "route", "add", f"{srv_ip}/32", "dev", pair.b_dev])
            srv.run(["ip", "route", "add", f"{TUN_CLI}/32", "via", rtr_ip])
            # tbf: the bottleneck; queue of one BDP at the highest rate (>= 50 packets).
            bdp = max(int(bw_mbit * 1e6 / 8 * rtt_ms / 1e3), 50 * 1514)
            rtr.tbf(pair.a_dev, f"{bw_mbit}mbit", burst="15000", limit=str(bdp))
            one_way = rtt_ms / 2e3
            line = DelayLine(pair, default_a_to_b=one_way, default_b_to_a=one_way, rt_priority=10)
            line.start()
            try:
                env = dict(os.environ, RUST_LOG="tcpvideo_origin=debug")
                origin = srv.popen([origin_bin, str(media), "--listen", f"{srv_ip}:{PORT}",
                                    "--congestion-control", "cubic", "--log-format", "json",
                                    "--startup-s", str(startup_s), "--sndbuf-kib", "1024"],
                                   env=env)
                origin.wait_for("origin listening", timeout=60)
                bpf = not any("approximate the cwnd clamp" in line for line in origin.lines)
                cap = srv.capture(net.dev(srv, rtr), pcap, snaplen=128)
                samples: list[tuple[float, int, float]] = []  # (wall time, cwnd, rtt ms)
                stop = threading.Event()

                def sample_ss() -> None:
                    while not stop.is_set():
                        r = srv.run(["ss", "-tinH", "state", "established", f"sport = :{PORT}"],
                                    check=False).stdout
                        m = re.search(r"\bcwnd:(\d+)", r)
                        rt = re.search(r"\brtt:([\d.]+)/", r)
                        if m:
                            samples.append((time.time(), int(m.group(1)),
                                            float(rt.group(1)) if rt else math.nan))
                        time.sleep(0.25)

                sampler = threading.Thread(target=sample_ss, daemon=True)
                sampler.start()
                path = f"/video.mp4?mode={mode}&rate_kbps={rate_kbps}"
                cp = cli.python(Path(__file__).resolve(),
                                ["client", "--host", srv_ip, "--path", path, "--seconds", seconds,
                                 "--rate-bps", rate_kbps * 1000, "--startup-bytes", startup_bytes])
                res = json.loads(cp.wait_for("^RESULT ", timeout=seconds + 60).string[7:])
                stop.set()
                sampler.join()
                cap.stop()
                origin.popen.send_signal(signal.SIGTERM)
                origin.wait(timeout=20)  # drains its log into origin.lines
                clamps = []  # (wall time, packets or None when lifted), as the origin logged them
                for ln in origin.lines:
                    if "cwnd clamp applied" in ln:
                        try:
                            rec = json.loads(ln)
                            t = datetime.datetime.fromisoformat(rec["timestamp"].replace("Z", "+00:00"))
                            clamps.append((t.timestamp(), rec["fields"]["clamp_packets"] or None))
                        except (ValueError, KeyError):
                            pass
            finally:
                line.stop()
    a = tcpvideo.analyze(str(pcap))
    # The throttling phase: from when the client had the startup burst's bytes (+1 s for the
    # send buffer's startup tail to drain), on the same wall clock as the capture.
    t_throttle = res["throttle_start_wall"] + 1.0
    bursts = [b for b in a.bursts.to_pylist() if b["direction"] == "download"
              and b["start_ns"] >= t_throttle * 1e9]
    flows = [f for f in a.flows.to_pylist() if f.get("data_packets", 0) > 100]
    flow = max(flows, key=lambda f: f["data_packets"]) if flows else {}
    sizes = sorted(b["packets"] for b in bursts)
    clamp = max((c for _, c in clamps if c), default=None)
    throttled = [(t, c, rtt) for t, c, rtt in samples if t >= t_throttle]
    # The clamp in force for an ss sample: a change takes effect at the next ACK and a larger
    # cwnd comes down at the next congestion-avoidance step, so within 2 srtt of a change either
    # value may show; a lifted clamp (None) bounds nothing and such samples are not counted.
    def bound(t: float, rtt_ms: float):
        grace = 2 * (rtt_ms if rtt_ms == rtt_ms else 100.0) / 1e3
        in_force = [c for tc, c in clamps if tc <= t - grace][-1:]
        recent = [c for tc, c in clamps if t - grace < tc <= t]
        values = in_force + recent
        return None if not values or None in values else max(values)
    bounded = [(c, bound(t, rtt)) for t, c, rtt in throttled]
    bounded = [(c, b) for c, b in bounded if b is not None]
    within = (sum(1 for c, b in bounded if c <= b) / len(bounded)) if bounded else None
    result = {
        "mode": mode, "rate_kbps": rate_kbps, "bw_mbit": bw_mbit, "rtt_ms": rtt_ms,
        "seconds": seconds, "bpf_clamp": bpf, "clamps_applied": [c or 0 for _, c in clamps][:20],
        "bursts": len(sizes),
        "bursts_le10_share": (sum(1 for n in sizes if n <= 10) / len(sizes)) if sizes else None,
        "burst_median_packets": sizes[len(sizes) // 2] if sizes else None,
        "burst_max_packets": sizes[-1] if sizes else None,
        "retrans_rate": (flow.get("retrans_packets", 0) / flow["data_packets"]) if flow else None,
        "srtt_end_ms": (flow.get("srtt_end_ns") or 0) / 1e6 if flow else None,
        "ss_samples": len(samples), "ss_clamped_samples": len(bounded),
        "ss_cwnd_max": max(c for _, c, _ in throttled) if throttled else None,
        "ss_cwnd_le_clamp_share": within,
        "delivered_bps": res["delivered_bps"], "throttle_seconds": res["throttle_seconds"],
        "delivered_vs_target": (res["throttle_bps"] or 0) / (rate_kbps * 1000),
        "startup_s": startup_s,
        "rebuffers": res["rebuffers"], "status": res["status"],
    }
    log(f"  {mode:9s} R={rate_kbps} kbit/s {bw_mbit} Mbit/s {rtt_ms} ms: bursts {len(sizes)}, "
        f"<=10 pkts {fmt(result['bursts_le10_share'], pct=True)}, median {result['burst_median_packets']}, "
        f"retrans {fmt(result['retrans_rate'], pct=True)}, srtt {fmt(result['srtt_end_ms'])} ms, "
        f"cwnd max {result['ss_cwnd_max']} (clamp {clamp}), delivered {result['delivered_vs_target']:.3f} x R")
    return result


def sim_case(mode: str, rate_kbps: int, bw_mbit: float, rtt_ms: float, seconds: float,
             out: Path, startup_s: float = 10.0) -> dict:
    """The same case in the simulator; the same measures from its capture."""
    import tcpvideo

    out.mkdir(parents=True, exist_ok=True)
    queue = max(int(bw_mbit * 1e6 / 8 * rtt_ms / 1e3 / 1514), 50)
    media_s = math.ceil(startup_s + 1.5 * seconds)
    scenario = {
        "name": f"trickle-real-sim-{mode}", "duration": f"{seconds}s", "seed": 1,
        "node": [{"name": "server"}, {"name": "router", "kind": "router"}, {"name": "client"}],
        "link": [
            {"name": "access", "a": "server", "b": "router", "rate": "10Gbps", "delay": "10us"},
            {"name": "last", "a": "router", "b": "client", "rate": f"{bw_mbit}Mbps",
             "delay": f"{rtt_ms / 2}ms", "queue": queue},
        ],
        "flow": [{
            "name": mode, "client": "client", "server": "server", "app": "progressive",
            "progressive": {"mode": mode, "rate": f"{rate_kbps}kbps", "media": f"{media_s}s",
                            "startup_media": f"{startup_s}s"},
            "tcp": {"cc": "cubic", "snd_buf": "1MB", "slow_start_after_idle": False},
        }],
        "record": {"pcap": [{"link": "access", "at": "server"}]},
    }
    r = tcpvideo.simulate(scenario, out=out)
    row = r.progressive.to_pylist()[0]
    a = tcpvideo.analyze(str(out / "access@server.pcap"))
    t_throttle = ((row["throttle_start_s"] or 0) + 1.0) * 1e9
    sizes = sorted(b["packets"] for b in a.bursts.to_pylist()
                   if b["direction"] == "download" and b["start_ns"] >= t_throttle)
    flows = [f for f in a.flows.to_pylist() if f.get("data_packets", 0) > 100]
    flow = max(flows, key=lambda f: f["data_packets"]) if flows else {}
    return {
        "bursts": len(sizes),
        "bursts_le10_share": (sum(1 for n in sizes if n <= 10) / len(sizes)) if sizes else None,
        "burst_median_packets": sizes[len(sizes) // 2] if sizes else None,
        "retrans_rate": (flow.get("retrans_packets", 0) / flow["data_packets"]) if flow else None,
        "srtt_end_ms": (flow.get("srtt_end_ns") or 0) / 1e6 if flow else None,
        "delivered_vs_target": (row["throttle_goodput_kbps"] or 0) / rate_kbps,
        "unclamped_share": row["unclamped_share"],
    }


def share_le10(r: dict) -> str:
    """The ≤ 10-packet share, or "no bursts" when the run had none (a share of nothing)."""
    return "no bursts" if r.get("bursts") == 0 else fmt(r.get("bursts_le10_share"), pct=True)


def fmt(v, pct=False) -> str:
    if v is None:
        return "n/a"
    return f"{v * 100:.1f} %" if pct else f"{v:.1f}"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "client":
        ap = argparse.ArgumentParser()
        ap.add_argument("client")
        ap.add_argument("--host")
        ap.add_argument("--path")
        ap.add_argument("--seconds", type=float)
        ap.add_argument("--rate-bps", type=float)
        ap.add_argument("--startup-bytes", type=int)
        a = ap.parse_args()
        client_main(a.host, a.path, a.seconds, a.rate_bps, a.startup_bytes)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=70,
                    help="run length; the throttling phase is the run minus the startup burst")
    ap.add_argument("--startup-s", type=float, default=10,
                    help="media seconds in the startup burst (paper: 30-40)")
    ap.add_argument("--matrix", action="store_true", help="3 bandwidths x 2 RTTs (shorter runs)")
    ap.add_argument("--matrix-seconds", type=float, default=30)
    ap.add_argument("--out", default="runs/trickle_real")
    ap.add_argument("--no-sim", action="store_true", help="skip the simulated column")
    ap.add_argument("--sim-only", action="store_true", help="only the simulated column (no root)")
    args = ap.parse_args()
    cases = [("trickle", 10, 50, args.seconds), ("baseline", 10, 50, args.seconds)]
    if args.matrix:
        cases += [(mode, bw, rtt, args.matrix_seconds)
                  for bw in (2, 10, 50) for rtt in (20, 100) for mode in ("trickle", "baseline")]
    out = Path(args.out)
    sims = {}
    if not args.no_sim:
        for mode, bw, rtt, secs in cases:
            sims[(mode, bw, rtt)] = sim_case(mode, 1000, bw, rtt, secs, out / "sim" / f"{mode}_{bw}m_{rtt}ms",
                                             args.startup_s)
    if args.sim_only:
        print(f"simulated only (load {os.getloadavg()[0]:.1f})")
        print(f"{'mode':9s} {'path':>13s} | {'bursts<=10':>10s} {'median':>6s} {'retrans':>8s} "
              f"{'srtt ms':>8s} {'rate/R':>7s}")
        for (mode, bw, rtt), r in sims.items():
            print(f"{mode:9s} {bw:>5g}M/{rtt:>4g}ms | {share_le10(r):>10s} "
                  f"{str(r['burst_median_packets']):>6s} {fmt(r['retrans_rate'], pct=True):>8s} "
                  f"{fmt(r['srtt_end_ms']):>8s} {r['delivered_vs_target']:7.3f}")
        out.mkdir(parents=True, exist_ok=True)
        (out / "sim_results.json").write_text(json.dumps(
            [{"mode": m, "bw_mbit": b, "rtt_ms": t, **r} for (m, b, t), r in sims.items()], indent=1))
        return
    from tcpvideo import netns
    ok, why = netns.available(need_capture=True)
    if not ok:
        raise SystemExit(f"cannot run: {why}")
    origin_bin = os.environ.get("TCPVIDEO_ORIGIN_BIN", str(ROOT / "target/release/tcpvideo-origin"))
    if not os.access(origin_bin, os.X_OK):
        raise SystemExit("tcpvideo-origin not built: cargo build -p tcpvideo-origin --release")
    results = []
    print(f"must-show: 1 Mbit/s over 10 Mbit/s, 50 ms, {args.seconds:g} s (load {os.getloadavg()[0]:.1f})")
    for mode in ("trickle", "baseline"):
        results.append(run_case(mode, 1000, 10, 50, args.seconds, out / f"{mode}_10m_50ms", origin_bin,
                                args.startup_s))
    if args.matrix:
        print(f"matrix: 3 bandwidths x 2 RTTs, R = 1 Mbit/s, {args.matrix_seconds:g} s each")
        for bw in (2, 10, 50):
            for rtt in (20, 100):
                for mode in ("trickle", "baseline"):
                    results.append(run_case(mode, 1000, bw, rtt, args.matrix_seconds,
                                            out / f"{mode}_{bw}m_{rtt}ms", origin_bin,
                                            args.startup_s))
    out.mkdir(parents=True, exist_ok=True)
    for r in results:
        r["sim"] = sims.get((r["mode"], r["bw_mbit"], r["rtt_ms"]))
    (out / "results.json").write_text(json.dumps(results, indent=1))
    print("\nsimulated vs real (real | sim)")
    print(f"{'mode':9s} {'path':>13s} | {'bursts<=10':>10s} {'median':>6s} {'retrans':>8s} "
          f"{'srtt ms':>8s} {'cwnd<=clamp':>11s} {'rate/R':>7s} | {'bursts<=10':>10s} {'median':>6s} "
          f"{'retrans':>8s} {'srtt ms':>8s} {'rate/R':>7s}")
    for r in results:
        sim = r["sim"] or {}
        print(f"{r['mode']:9s} {r['bw_mbit']:>5g}M/{r['rtt_ms']:>4g}ms | "
              f"{fmt(r['bursts_le10_share'], pct=True):>10s} {str(r['burst_median_packets']):>6s} "
              f"{fmt(r['retrans_rate'], pct=True):>8s} {fmt(r['srtt_end_ms']):>8s} "
              f"{fmt(r['ss_cwnd_le_clamp_share'], pct=True):>11s} {r['delivered_vs_target']:7.3f} | "
              f"{share_le10(sim) if sim else 'n/a':>10s} {str(sim.get('burst_median_packets')):>6s} "
              f"{fmt(sim.get('retrans_rate'), pct=True):>8s} {fmt(sim.get('srtt_end_ms')):>8s} "
              + (f"{sim['delivered_vs_target']:7.3f}" if sim else "    n/a"))


if __name__ == "__main__":
    main()
