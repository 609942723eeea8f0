"""Timeout types by frame type on one connection per viewer, analyzer and truth (issue 16, sessions
10–11; docs/studies/crowdlive.md). Since session 11 both use the seed's taxonomy (tail = the flow's
last three packets, less packet = fewer than 4 packets out at the RTO).

    python -m tcpvideo.studies.crowdlive.single OUT [--full] [--seeds 1,2,3] [--tlp off,on]
        [--set separate_audio=false --set nodelay=false ...]

Runs the study's population (DEFAULT or FULL, overrides by ``--set``) with the server's TLP/RACK
on or off, analyzes and scores each run as the study does, and prints, pooled over the seeds:
the analyzer's timeout types per frame (counts and shares), the truth's, the scoring agreement
(per run and pooled), the whole-run loss rate per frame
type (analyzer) and the steady-state one (truth), and how the voice frames leave (segments under
300 bytes; which frame's segment is the last before each gap ≥ 200 ms). Pcaps are deleted.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from . import DEFAULT, FULL, _analyze, _loss_by_phase
from .population import scenario


def _voice_shape(run_dir: Path) -> dict:
    p = pd.read_csv(run_dir / "truth_packets.csv")
    fl = pd.read_csv(run_dir / "truth_flows.csv").set_index("flow")
    p = p[(p["flow"].map(fl["role"]) == "subscribe") & ~p["retransmission"]]
    v = p[p["frame"] == "V"]
    last = []
    for _, g in p.groupby("flow"):
        ts, fr = g["ts_ns"].to_numpy(), g["frame"].to_numpy()
        last += list(fr[:-1][np.diff(ts) > 200e6])
    return {"voice_segments": int(len(v)), "voice_small_share": float((v["len"] < 300).mean()) if len(v) else None,
            "last_before_gap": pd.Series(last, dtype=object).value_counts().to_dict()}


def _timeouts_per_loss(run_dir: Path, an_dir: Path) -> pd.DataFrame:
    """Per frame type of the downloads: re-sent data packets ("lost packets", the seed's Table 4
    loss rate counts re-sends) and the RTOs among them (the first re-send of each RTO; TLP probes
    apart), by the truth and by the analyzer — the seed's Table 4 "Timeout/loss" column."""
    p = pd.read_csv(run_dir / "truth_packets.csv")
    fl = pd.read_csv(run_dir / "truth_flows.csv").set_index("flow")
    sub = fl.index[fl["role"] == "subscribe"]
    tp = p[p["flow"].isin(sub) & p["retransmission"]]
    tt = pd.read_csv(run_dir / "truth_timeouts.csv")
    tt = tt[tt["flow"].isin(sub) & (tt["timeout_type"] != "tlp_probe")]
    af = pd.read_csv(an_dir / "flows.csv").set_index("flow_id")
    rt = pd.read_csv(an_dir / "retransmissions.csv")
    rt = rt[rt["flow_id"].map(af["direction"]) == "download"]
    rows = {}
    for k in ("I", "P", "V"):
        rows[k] = {"truth_lost": int((tp["frame"] == k).sum()), "truth_rto": int((tt["frame"] == k).sum()),
                   "an_lost": int((rt["frame"] == k).sum()),
                   "an_rto": int(((rt["frame"] == k) & (rt["kind"] == "timeout")).sum())}
    return pd.DataFrame(rows).T


def main(argv=None) -> None:
    import tcpvideo
    from tcpvideo.score import score

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--tlp", default="off,on")
    ap.add_argument("--set", action="append", default=[], help="population override KEY=VALUE (JSON value)")
    a = ap.parse_args(argv)
    scale = dict(FULL if a.full else DEFAULT)
    for kv in a.set:
        k, v = kv.split("=", 1)
        scale[k] = json.loads(v)
    for tlp in a.tlp.split(","):
        labels, truth, agree, per_loss = [], [], [0.0, 0], []
        for s in (int(x) for x in a.seeds.split(",")):
            name = f"tlp{tlp}_s{s}"
            rd, ad = a.out / "runs" / name, a.out / "analysis" / name
            tcpvideo.simulate(scenario(seed=s, tcp={} if tlp == "on" else {"rack_tlp": False}, **scale), out=rd)
            _analyze(rd / "fe.pcap", ad)
            sc = score(ad, rd).summary()
            if sc["timeout_pairs"]:
                agree[0] += sc["timeout_type_agreement"] * sc["timeout_pairs"]
                agree[1] += sc["timeout_pairs"]
            rt = pd.read_csv(ad / "retransmissions.csv")
            labels.append(rt[rt["kind"] == "timeout"][["frame", "timeout_type"]])
            tr = pd.read_csv(rd / "truth_timeouts.csv")
            truth.append(tr[tr["timeout_type"] != "tlp_probe"][["frame", "timeout_type"]])
            per_loss.append(_timeouts_per_loss(rd, ad))
            ft = pd.read_csv(ad / "frame_types.csv").set_index("frame")
            steady = _loss_by_phase(rd).get("steady", {})
            print(f"{name}: stalls {sc['stall_class_agreement']:.4f} of {sc['stall_pairs']}, timeouts "
                  f"{sc['timeout_type_agreement']} of {sc['timeout_pairs']}; loss whole run (analyzer) "
                  + " / ".join(f"{k} {100 * ft.loc[k, 'loss_rate']:.2f}" for k in ("I", "P", "V") if k in ft.index)
                  + " %, steady (truth) " + " / ".join(f"{k} {100 * steady.get(k, {}).get('rate', 0):.2f}" for k in ("I", "P", "V"))
                  + f" %; voice {_voice_shape(rd)}", flush=True)
            for pc in rd.glob("*.pcap"):
                pc.unlink()
            shutil.rmtree(rd / "pcaps", ignore_errors=True)
        print(f"== TLP {tlp}, seeds {a.seeds} pooled; timeout types agree "
              + (f"{100 * agree[0] / agree[1]:.1f} % of {agree[1]}" if agree[1] else "(no pairs)"))
        pl = sum(per_loss)
        print("RTOs per re-sent download packet (seed Table 4: I 11.8, P 11.3, V 14 %): "
              + "; ".join(f"{k} truth {r.truth_rto} of {r.truth_lost} ({100 * r.truth_rto / max(r.truth_lost, 1):.2f} %), "
                          f"analyzer {r.an_rto} of {r.an_lost} ({100 * r.an_rto / max(r.an_lost, 1):.2f} %)"
                          for k, r in pl.iterrows()))
        for lab, d in (("analyzer:", labels), ("truth:", truth)):
            d = pd.concat(d)
            print(lab)
            if not len(d):
                print("no timeouts")
                continue
            ct = pd.crosstab(d["frame"], d["timeout_type"])
            print(ct.to_string())
            print((100 * ct.div(ct.sum(axis=1), axis=0)).round(1).to_string())


if __name__ == "__main__":
    main()
