"""The grid of a sweep: ``--set KEY=V1,V2`` and ``--seeds 1-10`` turned into a list of points.

A point is one scenario (the base scenario with each swept key set to one of its values) and one
seed. Keys are dotted paths into the scenario's tables, as docs/scenario.md names them
(``dumbbell.clients``, ``dumbbell.flow.tcp.cc``, ``flow[0].cwnd_clamp``); an intermediate table
that does not exist yet is created. Points come out in a fixed order (the ``--set`` keys in the
order given, the last one varying fastest, then the seeds), so two runs of the same command list
the same points and the results table has the same rows in the same order.

Bad input raises :class:`SweepInputError` (a ``ValueError``) with one line naming the option,
e.g. ``--seeds 5-2: range runs backwards``.
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

# A value of --set is read as a bool, an integer, a float, or kept as a string (rates, durations
# and names stay strings: the scenario parser reads their units).
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
_KEY_PART = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((\[\d+\])*)$")


class SweepInputError(ValueError):
    """A ``--set``/``--seeds`` value (or a swept scenario) that cannot be used; one line."""


@dataclass(frozen=True)
class SweptKey:
    """One ``--set``: a dotted scenario key and the values it takes, in the order given."""

    key: str
    values: tuple


@dataclass
class Point:
    """One run of a sweep: the swept values, the full scenario they give, and the seed."""

    params: dict
    scenario: dict
    seed: int
    labels: dict = field(default_factory=dict)  # extra columns for the results table (studies)


def parse_value(text: str) -> Any:
    t = text.strip()
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    if _INT.match(t):
        return int(t)
    if _FLOAT.match(t):
        return float(t)
    return t


def parse_set(expr: str) -> SweptKey:
    """``"dumbbell.clients=50,100,150"`` → SweptKey("dumbbell.clients", (50, 100, 150))."""
    if "=" not in expr:
        raise SweepInputError(f"--set {expr}: expected KEY=V1,V2,... (e.g. dumbbell.clients=50,100)")
    key, _, raw = expr.partition("=")
    key = key.strip()
    _split_key(key, f"--set {expr}")
    parts = [p for p in raw.split(",")]
    if not raw.strip() or any(not p.strip() for p in parts):
        raise SweepInputError(f"--set {key}: empty value in {raw!r} (expected V1,V2,...)")
    values = tuple(parse_value(p) for p in parts)
    if len(set(map(repr, values))) != len(values):
        raise SweepInputError(f"--set {key}: a value is listed twice in {raw!r}")
    return SweptKey(key, values)


def parse_seeds(expr: str) -> list[int]:
    """``"1-10"``, ``"1,3,5"`` or ``"1-3,7"`` → the seeds in the order given, each once."""
    seeds: list[int] = []
    if not expr or not expr.strip():
        raise SweepInputError("--seeds: empty (expected e.g. 1-10 or 1,3,5)")
    for part in expr.split(","):
        p = part.strip()
        m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", p)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise SweepInputError(f"--seeds {expr}: range {p} runs backwards")
            seeds.extend(range(lo, hi + 1))
        elif re.fullmatch(r"\d+", p):
            seeds.append(int(p))
        else:
            raise SweepInputError(f"--seeds {expr}: {p!r} is not a seed (non-negative integer) or a range a-b")
    if len(set(seeds)) != len(seeds):
        raise SweepInputError(f"--seeds {expr}: a seed is listed twice")
    if any(s >= 2**64 for s in seeds):
        raise SweepInputError(f"--seeds {expr}: a seed does not fit in 64 bits")
    return seeds


def _split_key(key: str, where: str) -> list:
    """``"flow[0].tcp.cc"`` → ["flow", 0, "tcp", "cc"]."""
    if not key:
        raise SweepInputError(f"{where}: empty key")
    path: list = []
    for part in key.split("."):
        m = _KEY_PART.match(part)
        if not m:
            raise SweepInputError(f"{where}: {part!r} is not a key (letters, digits, _ and [index])")
        path.append(m.group(1))
        path.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2) or ""))
    return path


def set_key(scenario: Mapping, key: str, value: Any) -> dict:
    """A deep copy of ``scenario`` with the dotted ``key`` set to ``value``."""
    out = copy.deepcopy(dict(scenario))
    path = _split_key(key, f"--set {key}")
    node: Any = out
    for i, part in enumerate(path[:-1]):
        nxt = path[i + 1]
        if isinstance(part, int):
            if not isinstance(node, list) or part >= len(node):
                raise SweepInputError(f"--set {key}: index [{part}] is out of range")
            child = node[part]
        else:
            if not isinstance(node, dict):
                raise SweepInputError(f"--set {key}: {path[i - 1]!r} is not a table")
            child = node.get(part)
            if child is None:
                child = [] if isinstance(nxt, int) else {}
                node[part] = child
        if isinstance(nxt, int) and not isinstance(child, list):
            raise SweepInputError(f"--set {key}: {part!r} is not an array")
        if isinstance(nxt, str) and not isinstance(child, dict):
            raise SweepInputError(f"--set {key}: {part!r} is not a table")
        node = child
    last = path[-1]
    if isinstance(last, int):
        if last >= len(node):
            raise SweepInputError(f"--set {key}: index [{last}] is out of range")
    node[last] = value
    return out


def points(scenario: Mapping, swept: Iterable[SweptKey], seeds: Iterable[int]) -> list[Point]:
    """Every combination of the swept values (first key slowest), each with every seed."""
    swept = list(swept)
    seeds = list(seeds)
    keys = [s.key for s in swept]
    if len(set(keys)) != len(keys):
        raise SweepInputError("--set: a key is given twice")
    out = []
    for combo in itertools.product(*(s.values for s in swept)):
        sc = dict(scenario)
        for k, v in zip(keys, combo):
            sc = set_key(sc, k, v)
        for seed in seeds:
            out.append(Point(params=dict(zip(keys, combo)), scenario=sc, seed=seed))
    return out
