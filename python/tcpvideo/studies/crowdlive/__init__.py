"""Seed 000 (Zhou et al., "A study on TCP performance of crowdsourced live streaming", 2016):
the front-end's captures of a simulated crowdsourced live service, through the analyzer, next to
the paper's tables — and the analyzer scored against the simulator's ground truth.

Steps: simulate the population (:mod:`.population`) with a pcap at the front-end; ``tcpvideo
analyze`` it; ``tcpvideo score`` it against the run's truth tables; the paper's Tables 1–5 and
Figs 3–4 from the analysis; the mitigations the paper proposes (TLP, a more aggressive RTO) as
variants of the same population. Default scale runs in well under 3 minutes on 2 cores; ``--full``
is a larger population over a longer run.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa

from tcpvideo.studies.report import NOT_REPRODUCED, PARTLY, REPRODUCED, Claim, Figure, png_of, write_report

from .population import scenario

DEFAULT = dict(publishers=8, subscribers=20, duration_s=60.0, loss_p=0.02)
FULL = dict(publishers=30, subscribers=120, duration_s=300.0, loss_p=0.02)
# name → (tcp keys of every flow, population overrides). `queue_loss_only` removes random loss so
# that only drop-tail queues drop: the experiment behind Table 4's "routers drop bursts".
VARIANTS = {
    "baseline": ({}, {}),
    "tlp_off": ({"rack_tlp": False}, {}),
    "aggressive_rto": ({"min_rto": "50ms"}, {}),
    "queue_loss_only": ({}, {"loss_p": 0.0}),
}


def _analyze(pcap: Path, out: Path) -> None:
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "tcpvideo.cli", "analyze", str(pcap), "--out", str(out)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _truth_pairing(run_dir: Path) -> float | None:
    """Share of upload stalls with a download stall of the same channel starting within ±1 s,
    over channels that have both an upload and a download flow (the analyzer's definition,
    crates/trace/src/output.rs `pair_channels`), from the truth stalls."""
    st = pd.read_csv(run_dir / "truth_stalls.csv")
    fl = pd.read_csv(run_dir / "truth_flows.csv").set_index("flow")
    st["channel"] = st["flow"].map(fl["channel"])
    both = set(fl.loc[fl["role"] == "publish", "channel"]) & set(fl.loc[fl["role"] == "subscribe", "channel"])
    st = st[st["channel"].isin(both)]
    up = st[st["direction"] == "upload"]
    down = st[st["direction"] == "download"]
    if len(up) == 0:
        return None
    hits = 0
    for _, u in up.iterrows():
        d = down[down["channel"] == u["channel"]]
        hits += bool(((d["start_ns"] - u["start_ns"]).abs() <= 1_000_000_000).any())
    return hits / len(up)


def run(full: bool = False, out: os.PathLike | str = "studies/crowdlive", jobs=None, ray_address=None,
        progress: bool = True, seed: int = 1) -> dict:
    import tcpvideo
    from tcpvideo.score import score

    scale = FULL if full else DEFAULT
    out = Path(out)
    t0 = time.perf_counter()
    results = {}
    for name, (tcp, over) in VARIANTS.items():
        run_dir, ana_dir = out / "runs" / name, out / "analysis" / name
        tcpvideo.simulate(scenario(seed=seed, tcp=tcp, **{**scale, **over}), out=run_dir)
        _analyze(run_dir / "fe.pcap", ana_dir)
        s = score(ana_dir, run_dir)
        s.write(ana_dir / "score")
        results[name] = {"run": run_dir, "analysis": ana_dir, "score": s,
                         "summary": json.loads((ana_dir / "summary.json").read_text())}
    base = results["baseline"]
    summ = base["summary"]
    from tcpvideo.score import Confusion, Score

    def pooled(attr):
        c = Confusion(getattr(base["score"], attr).name)
        for r in results.values():  # every variant: more timeouts to score
            src = getattr(r["score"], attr)
            c.counts.update(src.counts)
            for k, v in src.examples.items():
                c.examples.setdefault(k, v)
        return c

    pool = Score(pooled("stalls"), pooled("timeouts"), pooled("frames"), base["score"].frame_packets)
    pool.write(out / "score_all_variants")
    sc = pool.summary()
    flows = pd.read_csv(base["analysis"] / "flows.csv")
    up_types = summ["upload"]["stall_types_by_time"]
    down_types = summ["download"]["stall_types_by_time"]
    ft = pd.read_csv(base["analysis"] / "frame_types.csv").set_index("frame")
    tt = summ.get("timeout_types", {})
    truth_pair = _truth_pairing(base["run"])
    ours_pair = summ.get("pairing", {}).get("share_causing")

    def share(d, k):
        return d.get(k, {}).get("share", 0.0) if isinstance(d.get(k), dict) else 0.0

    claims = []
    ag_s, ag_t, ag_f = sc["stall_class_agreement"], sc["timeout_type_agreement"], sc["frame_agreement"]
    pct = lambda x: "—" if x is None else f"{100 * x:.1f} %"  # noqa: E731
    claims.append(Claim("score-stalls", "issue 16", "analyzer stall classes agree with the simulator's truth",
                        "≥ 95 % of paired stalls", "—",
                        f"{pct(ag_s)} of {sc['stall_pairs']} pairs; {sc['stalls_missed']} missed, {sc['stalls_extra']} extra",
                        REPRODUCED if (ag_s or 0) >= 0.95 else NOT_REPRODUCED,
                        "all four variants pooled; disagreements with examples in score_all_variants/disagreements_stalls.csv"))
    claims.append(Claim("score-timeouts", "issue 16", "analyzer timeout types agree with the truth", "≥ 95 %", "—",
                        f"{pct(ag_t)} of {sc['timeout_pairs']} pairs",
                        REPRODUCED if (ag_t or 0) >= 0.95 else NOT_REPRODUCED,
                        "all four variants pooled; see score_all_variants/disagreements_timeouts.csv"))
    claims.append(Claim("score-frames", "issue 16", "frame attribution of retransmitted data packets", "100 %", "—",
                        pct(ag_f), REPRODUCED if ag_f == 1.0 else NOT_REPRODUCED, "disagreements_frames.csv"))
    normal = share(up_types, "normal")
    claims.append(Claim("up-normal", "§2.1", "normal stalls dominate upload stall time", "normal share > 50 %",
                        "93.5 % normal, 1.3 % reordering, 5.2 % keep-alive",
                        f"{pct(normal)} normal, {pct(share(up_types, 'reordering'))} reordering, {pct(share(up_types, 'keep_alive'))} keep-alive",
                        REPRODUCED if normal > 0.5 else NOT_REPRODUCED,
                        "while streaming, normal stalls are the encoder pauses (population: one every ~15 s, 0.5–3 s); "
                        "the keep-alive time is the publishers that end in silence (30 %): each adds four 5-s keep-alive "
                        "gaps before the 20 s close, more than a whole stream's pauses; the paper's uploads rarely end that way"))
    claims.append(Claim("pairing", "Table 3", "upload→download stall pairing (±1 s) within 5 points of truth",
                        "|ours − truth| ≤ 5 points", "37.2 % of upload stalls cause download stalls",
                        f"analyzer {pct(ours_pair)}, truth {pct(truth_pair)}",
                        REPRODUCED if ours_pair is not None and truth_pair is not None and abs(ours_pair - truth_pair) <= 0.05 else NOT_REPRODUCED,
                        "truth: same channel, a truth download stall starting within ±1 s of a truth upload stall"))
    loss = ft["loss_rate"] if "loss_rate" in ft else pd.Series(dtype=float)
    i_high = len(loss) and loss.get("I", 0) >= max(loss.get("P", 0), loss.get("V", 0))
    qft = pd.read_csv(results["queue_loss_only"]["analysis"] / "frame_types.csv").set_index("frame")["loss_rate"]
    q_high = qft.get("I", 0) >= max(qft.get("P", 0), qft.get("V", 0)) and qft.get("I", 0) > 0
    claims.append(Claim("i-loss", "Table 4", "I frames have the highest loss rate", "I ≥ P, V",
                        "I 1.1 %, P 0.6 %, V 0.61 %",
                        "random + queue loss: " + ", ".join(f"{k} {100 * loss.get(k, 0):.2f} %" for k in ("I", "P", "V"))
                        + "; queue loss only: " + ", ".join(f"{k} {100 * qft.get(k, 0):.2f} %" for k in ("I", "P", "V")),
                        REPRODUCED if i_high else (PARTLY if q_high else NOT_REPRODUCED),
                        "download loss rate = retransmitted / sent data packets per frame type. Our access links add "
                        "random (Gilbert–Elliott) loss, which hits every packet alike. With drop-tail queues alone "
                        "(variant queue_loss_only) I frames are still not the most lost: not explained yet; candidates "
                        "are the join burst (the GOP cache, mostly P frames, sent at once) and I frames of 14–70 "
                        "packets fitting our 30–100-packet access queues"))
    tv = tt.get("V", {}) if isinstance(tt, dict) else {}
    def tshare(frame, kind):
        v = (tt.get(frame, {}) or {}).get(kind, 0.0)
        return v.get("share", 0.0) if isinstance(v, dict) else v

    less = {k: tshare(k, "less_packet") for k in ("I", "P", "V")}
    cont_v = tshare("V", "continuous_loss")
    n_v = sum((v.get("count", 0) if isinstance(v, dict) else 0) for v in (tt.get("V", {}) or {}).values())
    claims.append(Claim("v-less", "Table 5", "voice frames: highest less-packet share, no continuous loss",
                        "V less-packet ≥ I, P and V continuous loss = 0", "less pkt I 11.4, P 20.2, V 30.8 %; continuous V 0",
                        ", ".join(f"{k} {100 * v:.1f} %" for k, v in less.items()) + f"; V continuous {100 * cont_v:.1f} %",
                        (REPRODUCED if less["V"] > 0 and less["V"] >= max(less["I"], less["P"]) and cont_v == 0 else NOT_REPRODUCED) if n_v else PARTLY,
                        f"{n_v} voice-frame timeout retransmissions in the baseline run: too few to rank at the default "
                        "scale (run --full)"))
    mit = []
    for name, r in ((k, v) for k, v in results.items() if k != "queue_loss_only"):
        d = r["summary"]["download"]
        mit.append({"variant": name, "download_stall_share": d["stall_share_of_fct"],
                    "timeout_stall_share": share(d["stall_types_by_time"], "timeout"),
                    "timeout_retrans": int(pd.read_csv(r["analysis"] / "flows.csv")["timeout_retrans"].sum())})
    mit_df = pd.DataFrame(mit)
    claims.append(Claim("mitigation", "§4", "TLP / aggressive RTO cut timeout stalls", "fewer timeout retransmissions than TLP off",
                        "proposed, not measured", mit_df.to_string(index=False).replace("\n", "; "),
                        PARTLY, "one connection per frame type not built (see open_items)"))
    up = flows[flows["direction"] == "upload"]
    down = flows[flows["direction"] == "download"]
    import matplotlib.pyplot as plt
    import numpy as np

    figs = []
    for col, title, scale_x, xl in (("fct_ns", "Fig 3: flow completion time", 1e9, "FCT (s)"),
                                    ("throughput_bps", "Fig 4: throughput", 8e3, "throughput (kB/s)")):
        fig, ax = plt.subplots(figsize=(5, 3.2))
        for df, lab in ((up, "upload"), (down, "download")):
            v = np.sort(df[col].dropna().to_numpy() / scale_x)
            if len(v):
                ax.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=lab)
        ax.set_xlabel(xl)
        ax.set_ylabel("CDF")
        ax.legend()
        ax.set_title(title)
        figs.append(Figure(col.split("_")[0], title, png_of(fig)))
    tables = {
        "flows": pa.Table.from_pandas(flows, preserve_index=False),
        "upload_by_reordering": pa.Table.from_pandas(pd.DataFrame(summ.get("upload_by_reordering", [])), preserve_index=False),
        "download_stall_types": pa.Table.from_pandas(pd.DataFrame(down_types).T.reset_index(names="kind"), preserve_index=False),
        "upload_stall_types": pa.Table.from_pandas(pd.DataFrame(up_types).T.reset_index(names="kind"), preserve_index=False),
        "frame_types": pa.Table.from_pandas(ft.reset_index().drop(columns=[c for c in ft.columns if c == "timeout_types"], errors="ignore"), preserve_index=False),
        "mitigations": pa.Table.from_pandas(mit_df, preserve_index=False),
        "score_stalls": pa.Table.from_pandas(pool.stalls.matrix().reset_index(), preserve_index=False),
        "score_timeouts": pa.Table.from_pandas(pool.timeouts.matrix().reset_index(), preserve_index=False),
    }
    facts = {"scale": "full" if full else "default", **scale, "seed": seed,
             "wall_s": round(time.perf_counter() - t0, 1), "score": sc}
    write_report(out / "report", "seed 000: crowdsourced live streaming at the front-end", __doc__ or "", claims, figs,
                 tables, facts)
    return {"claims": claims, "facts": facts}
