"""Tables between Rust and Arrow, and onto disk.

Reading: every runtime (simulator, analyzer) sends its tables as encoded whole columns
(crates/py/src/columns.rs); :func:`table_from_columns` turns them into pyarrow Tables without a
Python object per cell, typed by the Rust types (so empty tables keep their schema).

Writing: one function behind every result's ``write(out_dir, formats=...)``.

Each table becomes ``NAME.parquet`` and/or ``NAME.csv``, plus ``summary.json``. The files depend
only on the tables and the summary (no wall-clock time), so two identical runs write identical
files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence, Union

if TYPE_CHECKING:  # numpy + pyarrow cost ~0.8 s to import; only building tables needs them (issue 12: start-up)
    import numpy as np
    import pyarrow as pa

FORMATS = ("parquet", "csv")


def column_from_spec(spec) -> pa.Array:
    """Decode one column as sent by the Rust side (crates/py/src/columns.rs ``Column``).

    Built with ``from_buffers`` on the received bytes: no Python object per cell, and no
    ``pyarrow.compute`` (whose import alone costs about a second)."""
    import numpy as np
    import pyarrow as pa

    kind, data, extra = spec
    if kind == "dict":
        codes = np.frombuffer(data, dtype="<i4")
        valid = codes >= 0
        idx = _with_validity(pa.int32(), np.where(valid, codes, 0).astype("<i4"), valid)
        n, offsets, text = extra
        cats = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(text)])
        return pa.DictionaryArray.from_arrays(idx, cats).dictionary_decode()
    if kind == "bool":
        values = np.frombuffer(data, dtype="u1").astype(bool)
        packed = np.packbits(values, bitorder="little")
        valid = None if extra is None else np.frombuffer(extra, dtype="u1").astype(bool)
        return _from(pa.bool_(), len(values), packed, valid)
    dtype, t = {"i64": ("<i8", pa.int64()), "f64": ("<f8", pa.float64())}[kind]
    values = np.frombuffer(data, dtype=dtype)
    valid = None if extra is None else np.frombuffer(extra, dtype="u1").astype(bool)
    return _with_validity(t, values, valid)


def _from(t: pa.DataType, n: int, data: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    import numpy as np
    import pyarrow as pa

    if valid is None or valid.all():
        return pa.Array.from_buffers(t, n, [None, pa.py_buffer(data)])
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(t, n, [bitmap, pa.py_buffer(data)], null_count=int(n - valid.sum()))


def _with_validity(t: pa.DataType, values: np.ndarray, valid: np.ndarray | None) -> pa.Array:
    import numpy as np

    return _from(t, len(values), np.ascontiguousarray(values), valid)


def table_from_columns(cols: Mapping[str, tuple]) -> pa.Table:
    """A table from a dict of encoded columns (name → spec), in the order given."""
    import pyarrow as pa

    return pa.table({col: column_from_spec(spec) for col, spec in cols.items()})


def table_like(schema: pa.Schema, cols: Mapping[str, Sequence], extra_types: Mapping[str, pa.DataType] = {}) -> pa.Table:
    """A table from Python lists, typed by ``schema`` (a runtime's own table schema, e.g. the
    simulator's for ``tcpvideo emulate``), columns in ``cols``' order; columns not in the schema
    take ``extra_types`` or pyarrow's inference."""
    import pyarrow as pa

    types = {f.name: f.type for f in schema}
    types.update(extra_types)
    return pa.table({k: pa.array(v, type=types.get(k)) for k, v in cols.items()})


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
