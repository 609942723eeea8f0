"""Start-up timeline of one demo row: where the seconds before the player's first `playing` go.

Two records on one clock, in seconds since the player's ``hls.loadSource`` (the edge and
chromium run on the same host, so the edge's UTC log timestamps and the page's
``performance.timeOrigin`` share the wall clock; both are read to the microsecond / ~0.1 ms):

* the edge's JSON log (``tcpvideo-edge --log-format json``, tracing-subscriber's format: one
  object per line, ``timestamp`` RFC 3339 UTC, ``fields.message`` and the event's fields). The
  lines read are the ones `crates/edge/src/edge.rs` lists for this purpose: "first playlist
  request", "backhaul measured", "stream policy", "first playlist answered", "first segment
  request", "first segment answered", "segment fetch started", "upstream first byte";
* the player's record (``player/page.html``): hls.js's loader stats of the playlist
  (``MANIFEST_LOADED``) and of each fragment, the first ``FRAG_LOADING``, the first ``playing``.

Which edge lines belong to the measured player: its first playlist request is the first
"first playlist request" at or after loadSource (a warm row's other viewer was first seen
before); the player's other per-receiver lines carry the same receiver id. Stream-wide lines
("backhaul measured", "stream policy") are the stream's; in a warm row they come before
loadSource and show as negative times. The first segment's fetch is the last "segment fetch
started" for its path before the edge answered the player (a prefetch may have started it
before the player asked), and its upstream first byte the first such line after that start.

The E2E row has no edge lines: only the player's own milestones are filled.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Iterable, Optional

# Edge lines may be stamped up to this much before the page's loadSource stamp and still be
# the player's (two clocks read on one host; the request leaves after loadSource).
CLOCK_SLACK_S = 0.05

# (key, label) in the order they happen on a cold edge.
MILESTONES: tuple[tuple[str, str], ...] = (
    ("playlist_requested", "player asks for the playlist (hls.js)"),
    ("edge_playlist_request", "edge: player's first playlist request"),
    ("edge_backhaul_measured", "edge: backhaul measured (TCP_INFO)"),
    ("edge_playlist_answered", "edge: first playlist answered"),
    ("playlist_loaded", "player has the playlist (hls.js)"),
    ("segment_requested", "player asks for its first segment (hls.js)"),
    ("edge_segment_request", "edge: player's first segment request"),
    ("edge_fetch_started", "edge: that segment's upstream fetch started"),
    ("edge_upstream_first_byte", "edge: its upstream first byte"),
    ("edge_policy", "edge: stream policy decided (x)"),
    ("edge_first_byte_out", "edge: its first byte to the player"),
    ("segment_first_byte", "player: first byte of the first segment (hls.js)"),
    ("segment_loaded", "player: first segment loaded (hls.js)"),
    ("playing", "player: first `playing`"),
)


@dataclass
class EdgeEvent:
    at: float  # epoch seconds
    message: str
    fields: dict


def _epoch(stamp: str) -> float:
    # RFC 3339 with 'Z' and up to 9 fractional digits; datetime takes at most 6.
    stamp = stamp.replace("Z", "+00:00")
    if "." in stamp:
        head, rest = stamp.split(".", 1)
        digits = "".join(c for c in rest if c.isdigit())
        zone = rest[len(digits):]
        stamp = f"{head}.{digits[:6].ljust(6, '0')}{zone}"
    return datetime.fromisoformat(stamp).timestamp()


def parse_edge_log(lines: Iterable[str]) -> list[EdgeEvent]:
    """The JSON events of an edge log, in file order; other lines (text, partial) are skipped."""
    events = []
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
            fields = dict(obj.get("fields") or {})
            message = str(fields.pop("message", ""))
            events.append(EdgeEvent(_epoch(str(obj["timestamp"])), message, fields))
        except (ValueError, KeyError, TypeError):
            continue
    return events


def _first(events: list[EdgeEvent], message: str, after: float = float("-inf"), **match) -> Optional[EdgeEvent]:
    for e in events:
        if e.message == message and e.at >= after and all(str(e.fields.get(k)) == str(v) for k, v in match.items()):
            return e
    return None


def _last(events: list[EdgeEvent], message: str, before: float, **match) -> Optional[EdgeEvent]:
    found = None
    for e in events:
        if e.at > before:
            break
        if e.message == message and all(str(e.fields.get(k)) == str(v) for k, v in match.items()):
            found = e
    return found


def edge_marks(events: list[EdgeEvent], t0_epoch_s: float) -> dict[str, Optional[float]]:
    """The edge's milestones for the player that called loadSource at ``t0_epoch_s``, in seconds
    since then (see the module header for which lines are the player's)."""
    rel = lambda e: None if e is None else e.at - t0_epoch_s  # noqa: E731
    marks: dict[str, Optional[float]] = {}
    request = _first(events, "first playlist request", after=t0_epoch_s - CLOCK_SLACK_S)
    if request is None:
        return marks
    stream, receiver = request.fields.get("stream"), request.fields.get("receiver")
    marks["edge_playlist_request"] = rel(request)
    marks["edge_backhaul_measured"] = rel(_first(events, "backhaul measured", stream=stream))
    policy = _first(events, "stream policy", stream=stream)
    marks["edge_policy"] = rel(policy)
    if policy is not None:
        marks["x"] = policy.fields.get("x")
    answered = _first(events, "first playlist answered", after=request.at, stream=stream, receiver=receiver)
    marks["edge_playlist_answered"] = rel(answered)
    seg_request = _first(events, "first segment request", after=request.at, stream=stream, receiver=receiver)
    marks["edge_segment_request"] = rel(seg_request)
    if seg_request is None:
        return marks
    segment = seg_request.fields.get("segment")
    seg_answered = _first(events, "first segment answered", after=seg_request.at, receiver=receiver, segment=segment)
    marks["edge_segment_answered"] = rel(seg_answered)
    until = seg_answered.at if seg_answered is not None else float("inf")
    fetch = _last(events, "segment fetch started", before=until, segment=segment)
    marks["edge_fetch_started"] = rel(fetch)
    first_byte = _first(events, "upstream first byte", after=fetch.at, segment=segment) if fetch else None
    marks["edge_upstream_first_byte"] = rel(first_byte)
    if first_byte is not None:
        marks["edge_upstream_connection"] = first_byte.fields.get("connection")
    if seg_answered is not None:
        out = seg_answered.at
        if seg_answered.fields.get("from") == "fetch, before its first byte" and first_byte is not None:
            out = max(out, first_byte.at)  # the body leaves as its first byte arrives
        marks["edge_first_byte_out"] = out - t0_epoch_s
        marks["edge_segment_from"] = seg_answered.fields.get("from")
    return marks


def player_marks(player) -> dict[str, Optional[float]]:
    """The player's own milestones (a ``PlayerReport``), seconds since loadSource."""
    marks: dict[str, Optional[float]] = {}
    p = player.playlist_marks or {}
    marks["playlist_requested"] = p.get("requested")
    marks["playlist_loaded"] = p.get("loaded")
    first = player.first_fragment_request or {}
    marks["segment_requested"] = first.get("at")
    sn = first.get("sn")
    frag = next((f for f in player.fragments if f.get("sn") == sn), None)
    if frag is not None:
        marks["segment_first_byte"] = frag.get("first_byte_at_s")
        if frag.get("requested_s") is not None and frag.get("load_s") is not None:
            marks["segment_loaded"] = frag["requested_s"] + frag["load_s"]
    marks["playing"] = player.startup_s
    return marks


def row_timeline(player, edge_log: Optional[Path]) -> dict[str, Optional[float]]:
    """Every milestone of one row (edge ones only when ``edge_log`` is given and readable)."""
    marks = player_marks(player)
    if edge_log is not None and player.t0_epoch_s is not None and Path(edge_log).exists():
        events = parse_edge_log(Path(edge_log).read_text(errors="replace").splitlines())
        marks.update(edge_marks(events, player.t0_epoch_s))
    return marks


def format_timelines(rows: list[tuple[str, dict]]) -> str:
    """A table: one line per milestone, one column per row (mode), seconds since loadSource;
    '-' where the row has no such event (E2E has no edge)."""
    width = max(len(label) for _, label in MILESTONES)
    head = f"{'start-up, s since loadSource':{width}s} " + " ".join(f"{mode:>10s}" for mode, _ in rows)
    lines = [head]
    for key, label in MILESTONES:
        cells = []
        for _, marks in rows:
            v = marks.get(key)
            cells.append(f"{v:>10.3f}" if isinstance(v, (int, float)) else f"{'-':>10s}")
        lines.append(f"{label:{width}s} " + " ".join(cells))
    notes = []
    for mode, marks in rows:
        extra = [f"{k.removeprefix('edge_')}={marks[k]}" for k in ("x", "edge_upstream_connection", "edge_segment_from")
                 if marks.get(k) is not None]
        if extra:
            notes.append(f"{mode}: " + ", ".join(extra))
    return "\n".join(lines + notes)
