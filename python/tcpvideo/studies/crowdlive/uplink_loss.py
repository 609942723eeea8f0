"""``python -m tcpvideo.studies.crowdlive.uplink_loss OUT [--seeds 1,2,3]``: the publishers' uplinks
with the per-packet chain and with the chain in time at its own scale (population.py
``publisher_chain_in_time``), at the study's ``--full`` scale and default server: upload
re-sends per data segment sent and upload RTOs, from the simulator's own flow table (issue 16,
session 21: the rule that switched the study's default is in docs/studies/crowdlive.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

RESENDS = ("retrans_fast", "retrans_timeout", "retrans_tlp")


def uplink_counts(run_dir: Path) -> dict:
    """Data segments the publishers sent (re-sends included), their re-sends and RTOs."""
    fl = pd.read_csv(run_dir / "flows.csv")
    pub = fl[fl["name"].str.startswith("pub")]
    return {"segments": int(pub["data_segments_sent"].sum()), "resends": int(pub[list(RESENDS)].sum().sum()),
            "rtos": int(pub["rto_count"].sum())}


def main(argv=None) -> None:
    import tcpvideo

    from . import FULL
    from .population import scenario

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--seeds", default="1,2,3")
    a = ap.parse_args(argv)
    rows = []
    for seed in (int(s) for s in a.seeds.split(",")):
        for in_time in (False, True):
            rd = a.out / f"s{seed}_{'in_time' if in_time else 'per_packet'}"
            tcpvideo.simulate(scenario(seed=seed, **{**FULL, "publisher_chain_in_time": in_time}), out=rd)
            rows.append({"seed": seed, "uplink chain": "in time" if in_time else "per packet", **uplink_counts(rd)})
            for f in rd.glob("*.pcap"):
                f.unlink()
    df = pd.DataFrame(rows)
    print(df.to_string(index=False))
    g = df.groupby("uplink chain")[["segments", "resends", "rtos"]].sum()
    g["re-sent"] = (g["resends"] / g["segments"]).map("{:.2%}".format)
    print(g.to_string())
    ratio = (g.loc["in time", "resends"] / g.loc["in time", "segments"]) / (g.loc["per packet", "resends"] / g.loc["per packet", "segments"])
    print(f"re-sent share, in time / per packet: {ratio:.3f}")


if __name__ == "__main__":
    main()
