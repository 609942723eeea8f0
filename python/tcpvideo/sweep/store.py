"""Where a sweep keeps each run's result, under a key that says exactly what produced it.

The key is the SHA-256 of three things, so a result is reused only when rerunning would give
the same bytes:

- the canonical scenario: the scenario dict with its seed set, as JSON with sorted keys and no
  whitespace (two spellings of the same TOML give the same key; any changed value a new one);
- the seed;
- the code version: tcpvideo's version and the SHA-256 of the compiled core
  (``tcpvideo._core``'s shared library), so a rebuilt simulator never reuses an old result, and,
  for a custom reducer (what a study keeps of each run), its identity
  (:func:`reducer_identity`: name, arguments and the SHA-256 of its source file).

A result is a directory ``runs/<key>/`` holding ``summary.json`` and one Parquet file per kept
table. It is written to ``runs/.partial-<key>-<pid>/`` first and renamed into place (a rename
within one directory is atomic on POSIX), so after a SIGINT, a SIGKILL or a power cut a key
either has its complete directory or none; leftover partial directories are removed when the
next sweep opens the store.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Mapping

import pyarrow as pa
import pyarrow.parquet as pq

PARTIAL_PREFIX = ".partial-"


@lru_cache(maxsize=1)
def code_version() -> str:
    """``"<tcpvideo version>+core.<first 16 hex of SHA-256 of the compiled core>"``."""
    from tcpvideo import _core

    h = hashlib.sha256()
    with open(_core.__file__, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return f"{_core.__version__}+core.{h.hexdigest()[:16]}"


def reducer_identity(reducer) -> str:
    """What a custom reducer is: its qualified name, bound arguments, and the SHA-256 of the source
    file that defines it, so editing a study's metrics never reuses results kept by the old code."""
    import functools
    import inspect

    fn, bound = reducer, ""
    if isinstance(reducer, functools.partial):
        fn = reducer.func
        bound = json.dumps([repr(a) for a in reducer.args] + sorted(f"{k}={v!r}" for k, v in reducer.keywords.items()))
    try:
        source = inspect.getsourcefile(fn) or ""
        digest = hashlib.sha256(Path(source).read_bytes()).hexdigest()[:16] if source else "nosource"
    except (TypeError, OSError):
        digest = "nosource"
    h = hashlib.sha256(f"{fn.__module__}.{fn.__qualname__}|{bound}|{digest}".encode()).hexdigest()
    return h[:16]


def canonical_scenario(scenario: Mapping, seed: int) -> str:
    sc = dict(scenario)
    sc["seed"] = seed
    return json.dumps(sc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def run_key(scenario: Mapping, seed: int, code: str) -> str:
    """The store key of one run (40 hex digits)."""
    h = hashlib.sha256()
    for part in (canonical_scenario(scenario, seed), str(seed), code):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def table_bytes(table: pa.Table) -> bytes:
    """A table as Parquet bytes (same table ⇒ same bytes: no timestamps in the file)."""
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


class RunStore:
    """The ``runs/`` directory of a sweep."""

    def __init__(self, root: os.PathLike | str):
        self.root = Path(root) / "runs"
        self.root.mkdir(parents=True, exist_ok=True)

    def remove_partials(self) -> int:
        """Delete directories left by runs that were interrupted while being written."""
        n = 0
        for p in self.root.glob(PARTIAL_PREFIX + "*"):
            shutil.rmtree(p, ignore_errors=True)
            n += 1
        return n

    def path(self, key: str) -> Path:
        return self.root / key

    def is_done(self, key: str) -> bool:
        return (self.root / key / "summary.json").is_file()

    def commit(self, key: str, files: Mapping[str, bytes]) -> Path:
        """Write ``files`` (name → bytes) as the result of ``key``, atomically."""
        final = self.root / key
        if final.exists():  # another writer finished first; results are identical by construction
            return final
        tmp = self.root / f"{PARTIAL_PREFIX}{key}-{os.getpid()}"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir()
        for name, data in files.items():
            with open(tmp / name, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        os.rename(tmp, final)
        return final

    def summary(self, key: str) -> dict:
        return json.loads((self.root / key / "summary.json").read_text())

    def table(self, key: str, name: str) -> pa.Table:
        return pq.read_table(self.root / key / f"{name}.parquet")
