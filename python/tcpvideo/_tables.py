"""Writing a result's tables: one function behind every result's ``write(out_dir, formats=...)``.

Each table becomes ``NAME.parquet`` and/or ``NAME.csv``, plus ``summary.json``. The files depend
only on the tables and the summary (no wall-clock time), so two identical runs write identical
files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence, Union

if TYPE_CHECKING:  # pyarrow costs ~0.4 s to import; only writing needs it (issue 12: start-up)
    import pyarrow as pa

FORMATS = ("parquet", "csv")


def write_tables(
    out_dir: Union[str, os.PathLike],
    tables: Mapping[str, pa.Table],
    summary: dict,
    formats: Sequence[str] = FORMATS,
    sort_summary_keys: bool = False,
) -> list[Path]:
    """Write ``tables`` (in their order) and ``summary`` into ``out_dir``; return the paths written.

    Raises ``ValueError`` naming the unknown format before anything is written."""
    bad = set(formats) - set(FORMATS)
    if bad:
        raise ValueError(f"unknown output format(s) {sorted(bad)}; use parquet and/or csv")
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, t in tables.items():
        if "parquet" in formats:
            p = out / f"{name}.parquet"
            pq.write_table(t, p)
            written.append(p)
        if "csv" in formats:
            p = out / f"{name}.csv"
            pacsv.write_csv(t, p)
            written.append(p)
    p = out / "summary.json"
    p.write_text(json.dumps(summary, indent=2, sort_keys=sort_summary_keys) + "\n")
    written.append(p)
    return written
