"""``tcpvideo score ANALYSIS_DIR --truth RUN_DIR``: the analyzer's stall classes, timeout types
and frame types against a simulated run's ground truth (confusion matrices, one example per
disagreement as a Wireshark display filter); written to ANALYSIS_DIR/score/ or ``--out``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command("score")
    def score_cmd(
        analysis_dir: Path = typer.Argument(..., help="output directory of `tcpvideo analyze --out`"),
        truth: Path = typer.Option(..., "--truth", help="the simulated run's --out directory (truth_*.csv)"),
        out: Optional[Path] = typer.Option(None, "--out", help="where to write the matrices (default ANALYSIS_DIR/score)"),
    ) -> None:
        """Score the analyzer against the simulator's ground truth."""
        from rich.console import Console

        from tcpvideo.score import score

        console = Console()
        try:
            s = score(analysis_dir, truth)
        except (FileNotFoundError, KeyError, ValueError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        for c in (s.stalls, s.timeouts, s.frames):
            ag = c.agreement()
            console.print(f"[bold]{c.name}[/bold]: agreement {'—' if ag is None else f'{100 * ag:.1f} %'}")
            console.print(c.matrix().to_string())
            d = c.disagreements()
            if len(d):
                console.print(d.to_string(index=False))
        console.print(s.frame_packets.to_string())
        s.write(out or analysis_dir / "score")
