"""Writing a study's report directory, the same way for every seed study (STYLE rule 15):

- ``tables/NAME.parquet`` and ``tables/NAME.csv`` for each table;
- ``figures/NAME.png``, one per figure;
- ``report.html``: self-contained (figures inlined as base64 PNG), opening with the
  "paper vs ours" table — each claim of the paper, reproduced or not, both numbers, and why;
- ``report.json``: the claims, the figures' captions, the tables' names and the run facts.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.csv as pacsv  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

REPRODUCED, NOT_REPRODUCED, PARTLY, NOT_RUN = "reproduced", "not reproduced", "partly", "not run"


@dataclass
class Claim:
    """One claim of the paper next to ours."""

    id: str
    figure: str
    claim: str  # the paper's statement, quoted or closely paraphrased
    test: str  # how we decide, with its threshold
    paper: str  # the paper's numbers (as read from its text/figures)
    ours: str = ""  # our numbers
    status: str = NOT_RUN
    why: str = ""  # where it differs: the experiment that shows why


@dataclass
class Figure:
    name: str
    caption: str
    png: bytes = field(default=b"", repr=False)


def png_of(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _clean(v):
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def write_report(out: Path, title: str, intro: str, claims: list[Claim], figures: list[Figure],
                 tables: dict[str, pa.Table], facts: dict, notes: Optional[list[str]] = None) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "tables").mkdir(exist_ok=True)
    (out / "figures").mkdir(exist_ok=True)
    for name, t in tables.items():
        pq.write_table(t, out / "tables" / f"{name}.parquet")
        pacsv.write_csv(t, out / "tables" / f"{name}.csv")
    for f in figures:
        (out / "figures" / f"{f.name}.png").write_bytes(f.png)
    doc = {"title": title, "facts": facts, "claims": [asdict(c) for c in claims],
           "figures": [{"name": f.name, "caption": f.caption, "file": f"figures/{f.name}.png"} for f in figures],
           "tables": {n: {"rows": t.num_rows, "columns": t.column_names, "files": [f"tables/{n}.parquet", f"tables/{n}.csv"]}
                      for n, t in tables.items()},
           "notes": notes or []}
    (out / "report.json").write_text(json.dumps(_clean(doc), indent=2) + "\n")
    (out / "report.html").write_text(_html(title, intro, claims, figures, facts, notes or []))
    return out


_STATUS_COLOUR = {REPRODUCED: "#d8f0d8", NOT_REPRODUCED: "#f6d6d6", PARTLY: "#f6eccc", NOT_RUN: "#e4e4e4"}


def _html(title, intro, claims, figures, facts, notes) -> str:
    e = html.escape
    rows = "".join(
        f"<tr style='background:{_STATUS_COLOUR.get(c.status, '#fff')}'><td>{e(c.figure)}</td><td>{e(c.claim)}"
        f"<div class='test'>{e(c.test)}</div></td><td>{e(c.paper)}</td><td>{e(c.ours)}</td>"
        f"<td><b>{e(c.status)}</b></td><td>{e(c.why)}</td></tr>" for c in claims)
    figs = "".join(
        f"<figure id='{e(f.name)}'><img src='data:image/png;base64,{base64.b64encode(f.png).decode()}'/>"
        f"<figcaption>{e(f.caption)}</figcaption></figure>" for f in figures)
    fact_rows = "".join(f"<tr><td>{e(str(k))}</td><td>{e(str(v))}</td></tr>" for k, v in facts.items())
    note_items = "".join(f"<li>{e(n)}</li>" for n in notes)
    return f"""<!doctype html><html><head><meta charset='utf-8'><title>{e(title)}</title><style>
body{{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}}
table{{border-collapse:collapse;font-size:0.9em}}td,th{{border:1px solid #bbb;padding:4px 6px;vertical-align:top}}
th{{background:#eee}}.test{{color:#555;font-size:0.85em;margin-top:3px}}figure{{margin:1.5em 0}}
img{{max-width:100%}}figcaption{{color:#444;font-size:0.9em}}</style></head><body>
<h1>{e(title)}</h1><p>{e(intro)}</p>
<h2>Paper vs ours</h2><table><tr><th>fig</th><th>claim (and our test)</th><th>paper</th><th>ours</th>
<th>status</th><th>why / explaining experiment</th></tr>{rows}</table>
<h2>Figures</h2>{figs}
<h2>Run</h2><table>{fact_rows}</table>
<h2>Notes and deviations</h2><ul>{note_items}</ul>
</body></html>
"""
