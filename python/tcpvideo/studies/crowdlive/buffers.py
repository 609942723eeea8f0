"""Table 4's I-frame loss against the viewers' bottleneck buffers: the share of viewer paths whose
access queue is BDP-sized (the rest keep the drawn 30/60/100-packet, over-provisioned queues),
with every other draw of the population unchanged, over a few seeds.

Seed 000 explains the higher I-frame loss with "routers are likely to drop burst packets" (§3.2,
its ref. [16]): a drop-tail queue shorter than an I frame's burst. The default population mixes
both kinds of last mile (``bdp_queue_share``, population.py); this sensitivity shows how the
per-type loss depends on that mix, so a reader sees what the default's trend rests on. Per-type
loss is the seed's per-packet rate (re-sent / sent download data packets of the type) from the
run's truth, split into each download's join burst (the GOP cache) and the steady state
(``_loss_by_phase``). The mix is not chosen from this result (issue 16): the default's ½ is
stated in population.py before it was measured.
"""

from __future__ import annotations

from pathlib import Path

SHARES = (0.0, 0.25, 0.5, 1.0)


def sensitivity(out: Path, scale: dict, seed: int, seeds: int = 3, shares=SHARES) -> list[dict]:
    """One row per BDP-queue share: retransmitted and sent download packets per frame type and
    phase, pooled over `seeds` seeds (seed, seed+1, ...), and the rates in %."""
    import tcpvideo

    from . import _loss_by_phase
    from .population import scenario

    rows = []
    for share in shares:
        pooled: dict = {}
        for s in range(seed, seed + seeds):
            paced = "" if scale.get("viewer_pacing", "none") == "none" else f"_{scale['viewer_pacing']}"
            run_dir = out / f"share_{share:g}_loss{scale.get('viewer_loss_p')}{paced}_seed{s}"
            tcpvideo.simulate(scenario(seed=s, **{**scale, "bdp_queue_share": share}), out=run_dir)
            for phase, by_type in _loss_by_phase(run_dir).items():
                for kind, r in by_type.items():
                    acc = pooled.setdefault((phase, kind), [0, 0])
                    acc[0] += r["retrans"]
                    acc[1] += r["packets"]
        row = {"bdp_queue_share": share, "viewer_loss_p": scale.get("viewer_loss_p"), "seeds": seeds}
        for kind in ("I", "P", "V"):
            for phase in ("steady", "join", "all"):
                if phase == "all":
                    n = sum(pooled.get((ph, kind), [0, 0])[0] for ph in ("steady", "join"))
                    d = sum(pooled.get((ph, kind), [0, 0])[1] for ph in ("steady", "join"))
                else:
                    n, d = pooled.get((phase, kind), [0, 0])
                row[f"{phase}_{kind}_pct"] = round(100 * n / d, 2) if d else None
        rows.append(row)
    return rows


def describe(rows: list[dict]) -> str:
    """One line per share: steady and whole-run rates per type."""
    def rates(r, phase):
        return "/".join(f"{r[f'{phase}_{k}_pct']:.2f}" if r[f"{phase}_{k}_pct"] is not None else "—" for k in "IPV")

    return "; ".join(f"share {r['bdp_queue_share']:g}: steady {rates(r, 'steady')}, all {rates(r, 'all')}"
                     for r in rows)


def main(argv=None) -> None:
    """`python -m tcpvideo.studies.crowdlive.buffers OUT [--viewer-loss 0,0.002,...] [--shares
    0,1] [--seed 1 --seeds 3] [--pacing fq]`: the sensitivity at the study's default scale for each viewer
    random-loss level (session 7's question: does random loss keep the I burst inside the queue?)."""
    import argparse

    from . import DEFAULT

    ap = argparse.ArgumentParser(prog="python -m tcpvideo.studies.crowdlive.buffers")
    ap.add_argument("out", type=Path)
    ap.add_argument("--viewer-loss", default=str(DEFAULT["viewer_loss_p"]))
    ap.add_argument("--shares", default=",".join(f"{x:g}" for x in SHARES))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--pacing", default="none", choices=("none", "fq"),
                    help="fq: the front-end paces every download at sk_pacing_rate (population.py viewer_pacing)")
    a = ap.parse_args(argv)
    for loss in (float(x) for x in a.viewer_loss.split(",")):
        rows = sensitivity(a.out, {**DEFAULT, "viewer_loss_p": loss, "viewer_pacing": a.pacing}, a.seed, a.seeds,
                           tuple(float(x) for x in a.shares.split(",")))
        print(f"viewer random loss {loss:g}: {describe(rows)}", flush=True)


if __name__ == "__main__":
    main()
