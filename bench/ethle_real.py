"""ETHLE end to end, the must-show run (issue 14 item 4): hls.js plays 3 minutes of a live
15 Mbit/s, 2 s HLS stream (ffmpeg) over a 302 ms backhaul, through tcpvideo-edge with x from the
ETHLE model and directly from the origin (E2E) on the same path; prints the demo's table and a
"paper vs ours" table, writes results.json.

After the table, each row's start-up timeline (python/tcpvideo/edge_demo/timeline.py): the
player's playlist request and arrival, the edge's first playlist request, backhaul measurement,
answer, the first segment's request, upstream fetch and first byte, the policy, the first byte
to the player, the player's first byte and first `playing` — where the seconds before playback
go (the E2E row has the player's milestones only).

Rows (python/tcpvideo/edge_demo/demo.py): "edge cold" (the player is the stream's first viewer at
the edge), "edge warm" (another viewer in the cell has been watching for 10 s: the ETHLE setting,
where the edge already serves the stream), "E2E" (no edge). Each row plays --play-s seconds after
its own first `playing` event; the live source runs through all rows.

Needs root, ffmpeg, /usr/bin/chromium, node and the player's node modules
(`npm install --prefix python/tcpvideo/edge_demo/player`), and the binaries
(`cargo build -p tcpvideo-origin -p tcpvideo-edge --release`). Timings are wall-clock by nature
(a live stream); the load average is printed beside them.

    sudo python bench/ethle_real.py [--play-s 180] [--out runs/ethle_real]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def paper_vs_ours(result) -> list[tuple[str, str, str, str, str]]:
    """(claim, paper, ours, reproduced, why) rows from the demo's rows."""
    rows = {r.mode: r for r in result.rows}
    out = []
    for label in ("edge cold", "edge warm"):
        r = rows.get(label)
        if r is None:
            continue
        p = r.player
        hiccups = p.stall_count - p.starved_stall_count
        out.append((f"hold-x (x={r.x}) plays without buffering ({label})", "0 buffering (Table II)",
                    f"{p.starved_stall_count} starved stalls; {p.stall_count} `waiting` events in "
                    f"all, {p.stall_total_s:.3f} s over {p.played_s:.0f} s",
                    "yes" if p.starved_stall_count == 0 and p.startup_s is not None else "no",
                    (f"{hiccups} `waiting` event(s) began with >= 0.5 s buffered: the element, not "
                     f"the network (buffer levels in results.json)") if hiccups else ""))
    e2e = rows.get("E2E")
    if e2e is not None:
        p = e2e.player
        worse = [f"{abs(p.startup_s - r.player.startup_s):.2f} s "
                 f"{'later' if p.startup_s > r.player.startup_s else 'earlier'} than {lab}"
                 for lab, r in rows.items() if lab != "E2E" and r.player.startup_s is not None
                 and p.startup_s is not None]
        stalls = p.starved_stall_count > 0
        started = [r.player.startup_s for lab, r in rows.items()
                   if lab != "E2E" and r.player.startup_s is not None]
        later = [p.startup_s is not None and p.startup_s > t for t in started]
        out.append(("E2E on the same path buffers or starts later", "buffers in 17 of 24 cells; "
                    "initial delay higher in all",
                    f"{p.starved_stall_count} starved stalls ({p.stall_count} `waiting`, "
                    f"{p.stall_total_s:.2f} s), startup "
                    f"{p.startup_s if p.startup_s is None else round(p.startup_s, 2)} s; "
                    + "; ".join(worse), "yes" if stalls or (later and all(later)) else "partly" if any(later) else "no",
                    "one receiver, loss-free emulated backhaul, BBR keeps its bandwidth estimate "
                    "on the player's persistent connection" if not stalls else ""))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--play-s", type=float, default=180.0)
    ap.add_argument("--out", default="runs/ethle_real")
    ap.add_argument("--mode", action="append", choices=["edge", "edge-warm", "e2e"])
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "python"))
    from tcpvideo.cli.edge import find_edge_binary
    from tcpvideo.cli.origin import find_origin_binary
    from tcpvideo.edge_demo import DemoConfig, format_table, missing_requirements, run_demo
    from tcpvideo.edge_demo.timeline import format_timelines

    why = missing_requirements()
    if why:
        raise SystemExit(f"cannot run: {why}")
    origin_bin, edge_bin = find_origin_binary(), find_edge_binary()
    if not origin_bin or not edge_bin:
        raise SystemExit("build first: cargo build -p tcpvideo-origin -p tcpvideo-edge --release")
    out = Path(args.out)
    config = DemoConfig(play_s=args.play_s)
    if args.mode:
        config.modes = tuple(args.mode)
    load_before = os.getloadavg()
    result = run_demo(config, origin_bin, edge_bin, run_dir=out, log=lambda s: print(s, flush=True))
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    print()
    print(format_table(result))
    print("\nstart-up timeline per row (edge: its JSON log; player: hls.js's loader stats and events; "
          "one clock, seconds since loadSource; negative: before this player started)")
    print(format_timelines([(r.mode, r.timeline) for r in result.rows]))
    print(f"load average before {load_before[0]:.1f}, after {result.load_average[0]:.1f}; CPU of "
          f"the children (ffmpeg, origin, edge, chromium, node): "
          f"{children.ru_utime + children.ru_stime:.1f} s")
    print("\npaper vs ours (seed 002 Table II; one stream, one location: 15 Mbit/s, 2 s, 302 ms)")
    table = paper_vs_ours(result)
    for claim, paper, ours, ok, why in table:
        print(f"- {claim}\n    paper: {paper}\n    ours: {ours}\n    reproduced: {ok}"
              + (f" ({why})" if why else ""))
    data = result.as_dict()
    data["paper_vs_ours"] = [dict(zip(("claim", "paper", "ours", "reproduced", "why"), t)) for t in table]
    data["load_before"] = list(load_before)
    (out / "results.json").write_text(json.dumps(data, indent=1, default=str))


if __name__ == "__main__":
    main()
