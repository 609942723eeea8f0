"""Score the capture analyzer against the simulator's ground truth (issue 16).

``score(analysis_dir, run_dir)`` reads the analyzer's tables (``tcpvideo analyze --out``) and the
truth tables a crowdlive run writes (``truth_*.csv``, crates/sim/src/app/crowd/truth.rs) and
returns confusion matrices:

- **stall classes**: each truth stall is paired with the analyzer stall of the same connection
  whose interval overlaps it (one-to-one, in time order). Pairs with different classes are
  disagreements; truth stalls without a partner are ``missed``, analyzer stalls without one
  ``extra`` (both are threshold disagreements: the analyzer's SRTT/RTO estimate from the capture
  differs from the socket's own). Agreement = same class / pairs.
- **timeout types**: truth timeout retransmissions (the segment an RTO firing resent) against the
  analyzer's ``timeout`` retransmissions of the same connection, stream offset and time (±2 ms).
  Truth rows of type ``tlp_probe`` are tail-loss probes (timer-driven, no RTO); the analyzer's
  ``tlp`` retransmissions carry the same label, so a probe typed as a timeout (or the reverse)
  is a disagreement. Truth timeouts the analyzer calls something else are
  ``missed`` (with the analyzer's kind),
  analyzer timeouts with no truth are ``extra`` (with the simulator's reason when known).
- **frame types**: every retransmitted data packet the analyzer lists, against the truth frame of
  its stream offset; and per frame type, the data packets of download flows in both.

Connections are matched by the client port (the simulator gives flow f port 32768 + f).
Every disagreement keeps an example: the connection's port and the time range, as a Wireshark
display filter for the capture.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd


@dataclass
class Confusion:
    """Counts of (truth, analyzer) pairs and one example per off-diagonal cell."""

    name: str
    counts: Counter = field(default_factory=Counter)
    examples: dict = field(default_factory=dict)

    def add(self, truth: str, ours: str, example: str) -> None:
        self.counts[(truth, ours)] += 1
        if truth != ours and (truth, ours) not in self.examples:
            self.examples[(truth, ours)] = example

    def agreement(self) -> float | None:
        """Share of pairs with equal labels, over pairs where both sides have a label."""
        both = {k: v for k, v in self.counts.items() if "missed" not in k and "extra" not in k}
        n = sum(both.values())
        return None if n == 0 else sum(v for (a, b), v in both.items() if a == b) / n

    def matrix(self) -> pd.DataFrame:
        rows = sorted({a for a, _ in self.counts})
        cols = sorted({b for _, b in self.counts})
        return pd.DataFrame([[self.counts.get((r, c), 0) for c in cols] for r in rows],
                            index=pd.Index(rows, name="truth \\ analyzer"), columns=cols)

    def disagreements(self) -> pd.DataFrame:
        return pd.DataFrame([{"truth": a, "analyzer": b, "count": self.counts[(a, b)], "example": e}
                             for (a, b), e in sorted(self.examples.items())],
                            columns=["truth", "analyzer", "count", "example"])


def _example(port: int, t0_ns: int, t1_ns: int) -> str:
    return (f"tcp.port=={port} && frame.time_epoch>={t0_ns / 1e9:.6f} "
            f"&& frame.time_epoch<={t1_ns / 1e9:.6f}")


def _flow_ports(analysis: Path) -> dict:
    flows = pd.read_csv(analysis / "flows.csv")
    return dict(zip(flows["flow_id"], flows["client_port"]))


def _ports(analysis: Path, truth_dir: Path) -> tuple[dict, dict]:
    """Client port of every analyzer flow id and of every truth flow: the key both sides share."""
    truth_flows = pd.read_csv(truth_dir / "truth_flows.csv")
    return _flow_ports(analysis), dict(zip(truth_flows["flow"], truth_flows["client_port"]))


def score_stalls(analysis: Path, truth_dir: Path) -> Confusion:
    c = Confusion("stall class")
    ports, port_of = _ports(analysis, truth_dir)
    truth = pd.read_csv(truth_dir / "truth_stalls.csv")
    ours = pd.read_csv(analysis / "stalls.csv")
    ours["port"] = ours["flow_id"].map(ports)
    truth["port"] = truth["flow"].map(port_of)
    for port in sorted(set(truth["port"]) | set(ours["port"].dropna().astype(int))):
        ts = truth[truth["port"] == port].sort_values("start_ns").to_dict("records")
        os_ = ours[ours["port"] == port].sort_values("start_ns").to_dict("records")
        used = set()
        for t in ts:
            hit = None
            for k, o in enumerate(os_):
                if k in used:
                    continue
                if o["start_ns"] < t["end_ns"] and o["end_ns"] > t["start_ns"]:
                    hit = k
                    break
            if hit is None:
                c.add(t["kind"], "missed", _example(port, t["start_ns"], t["end_ns"]))
            else:
                used.add(hit)
                c.add(t["kind"], os_[hit]["kind"], _example(port, t["start_ns"], t["end_ns"]))
        for k, o in enumerate(os_):
            if k not in used:
                c.add("extra", o["kind"], _example(port, o["start_ns"], o["end_ns"]))
    return c


def score_timeouts(analysis: Path, truth_dir: Path) -> Confusion:
    c = Confusion("timeout type")
    ports, port_of = _ports(analysis, truth_dir)
    truth = pd.read_csv(truth_dir / "truth_timeouts.csv")
    rt = pd.read_csv(analysis / "retransmissions.csv")
    rt["port"] = rt["flow_id"].map(ports)
    records = rt.to_dict("records")
    by_key = defaultdict(list)
    for r in records:
        by_key[(int(r["port"]), int(r["seq"]))].append(r)
    matched = set()
    for t in truth.to_dict("records"):
        port = port_of[t["flow"]]
        cands = [r for r in by_key.get((port, int(t["offset"])), []) if abs(r["ts_ns"] - t["ts_ns"]) <= 2_000_000]
        ex = _example(port, t["ts_ns"] - 1_000_000, t["ts_ns"] + 1_000_000)
        if not cands:
            c.add(t["timeout_type"], "missed", ex)
            continue
        r = cands[0]
        matched.add(id(r))
        if r["kind"] == "tlp":
            ours = "tlp_probe"  # the analyzer's own kind for a tail-loss probe (crates/trace/src/tlp.rs)
        elif r["kind"] == "timeout" and isinstance(r["timeout_type"], str):
            ours = r["timeout_type"]
        else:
            ours = f"not timeout ({r['kind']})"
        c.add(t["timeout_type"], ours, ex)
    for r in records:
        if r["kind"] in ("timeout", "tlp") and id(r) not in matched and not pd.isna(r["port"]):
            label = "tlp_probe" if r["kind"] == "tlp" else str(r["timeout_type"])
            c.add("extra", label, _example(int(r["port"]), r["ts_ns"] - 1_000_000, r["ts_ns"] + 1_000_000))
    return c


def score_frames(analysis: Path, truth_dir: Path) -> tuple[Confusion, pd.DataFrame]:
    c = Confusion("frame type (retransmitted packets)")
    ports = _flow_ports(analysis)
    truth_flows = pd.read_csv(truth_dir / "truth_flows.csv")
    flow_of_port = dict(zip(truth_flows["client_port"], truth_flows["flow"]))
    packets = pd.read_csv(truth_dir / "truth_packets.csv")
    frame_at = {(int(f), int(o)): fr for f, o, fr in zip(packets["flow"], packets["offset"], packets["frame"])}
    rt = pd.read_csv(analysis / "retransmissions.csv")
    # A truth without packets (tcpvideo.linux_scenarios.write_truth) does not score frames.
    for r in rt.to_dict("records") if frame_at else []:
        port = ports.get(r["flow_id"])
        f = flow_of_port.get(port)
        if f is None:
            continue
        truth = frame_at.get((int(f), int(r["seq"])), "no such packet")
        c.add(truth, r["frame"], _example(int(port), r["ts_ns"] - 1_000_000, r["ts_ns"] + 1_000_000))
    # Per frame type: data packets of download flows, as sent (truth) and as captured (analyzer).
    down = set(truth_flows.loc[truth_flows["role"] == "subscribe", "flow"])
    tp = packets[packets["flow"].isin(down)].groupby("frame").size()
    ft = pd.read_csv(analysis / "frame_types.csv").set_index("frame")["packets"]
    side = pd.DataFrame({"truth_packets": tp, "analyzer_packets": ft}).fillna(0).astype(int)
    return c, side


@dataclass
class Score:
    stalls: Confusion
    timeouts: Confusion
    frames: Confusion
    frame_packets: pd.DataFrame

    def summary(self) -> dict:
        return {
            "stall_class_agreement": self.stalls.agreement(),
            "stall_pairs": sum(v for k, v in self.stalls.counts.items() if "missed" not in k and "extra" not in k),
            "stalls_missed": sum(v for (a, b), v in self.stalls.counts.items() if b == "missed"),
            "stalls_extra": sum(v for (a, b), v in self.stalls.counts.items() if a == "extra"),
            "timeout_type_agreement": self.timeouts.agreement(),
            "timeout_pairs": sum(v for k, v in self.timeouts.counts.items() if "missed" not in k and "extra" not in k),
            "frame_agreement": self.frames.agreement(),
        }

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        for c, stem in ((self.stalls, "stalls"), (self.timeouts, "timeouts"), (self.frames, "frames")):
            c.matrix().to_csv(out / f"confusion_{stem}.csv")
            c.disagreements().to_csv(out / f"disagreements_{stem}.csv", index=False)
        self.frame_packets.to_csv(out / "frame_packets.csv")
        import json

        (out / "score.json").write_text(json.dumps(self.summary(), indent=2) + "\n")


def score(analysis_dir, run_dir) -> Score:
    """Score the analysis in ``analysis_dir`` against the truth tables in ``run_dir``."""
    a, t = Path(analysis_dir), Path(run_dir)
    for need in (a / "stalls.csv", a / "retransmissions.csv", a / "flows.csv", t / "truth_stalls.csv"):
        if not need.exists():
            raise FileNotFoundError(f"{need}: missing (run `tcpvideo analyze ... --out` / a crowdlive simulation with --out)")
    frames, side = score_frames(a, t)
    return Score(score_stalls(a, t), score_timeouts(a, t), frames, side)
