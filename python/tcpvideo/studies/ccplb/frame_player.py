"""The frame-deadline player of seed 001's testbed, for the real client (python, no simulator).

A line-by-line restatement of the model's ``FramePlayer`` (crates/model/src/video/frame_player.rs)
in integer nanoseconds, so the real client counts **picture discards** and **buffer underflows**
("catch-up" events) by the same rules as the simulated client; there is no Python binding of the
Rust player, and the real client runs in a namespace as a plain script. The rules (the model's
doc has the reasoning):

- the file is the concatenation of frames; frame ``i`` is complete when the bytes received reach
  its end;
- playback starts once ``startup_threshold`` of media is complete (VLC's network caching); frame
  ``i``'s deadline is ``d_i = start + i·period`` and the clock is never moved;
- frame ``i`` is due at ``slot_i = max(d_i, p_prev + period / catch_up_speed)`` and shown at
  ``max(c_i, slot_i)``; later than ``discard_lateness`` after ``d_i`` it is discarded;
- an underflow starts when a frame is missing at its slot outside an underflow and ends at the
  first frame shown on time.

The file's frames: :func:`progressive_frames` is the model's ``Content::cbr`` +
``split_into_frames`` (one I-frame of ``i_to_p_ratio`` P-frames per chunk, the remainder of the
integer division to the I-frame). tests/test_ccplb_real.py checks both against the Rust tests'
worked examples.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

NS_PER_S = 1_000_000_000
DEFAULT_FRAME_RATE = 25  # crates/model/src/video/content.rs DEFAULT_FRAME_RATE
DEFAULT_I_TO_P_RATIO = 5.0  # crates/model/src/video/vbr.rs VbrModel::default


def split_into_frames(total_bytes: int, frames: int, i_to_p_ratio: float = DEFAULT_I_TO_P_RATIO) -> list[int]:
    """One chunk's frames: an I-frame then equal P-frames, adding up to ``total_bytes``."""
    frames = max(1, frames)
    if frames == 1:
        return [total_bytes]
    p = math.floor(total_bytes / (i_to_p_ratio + (frames - 1)))
    return [total_bytes - p * (frames - 1)] + [p] * (frames - 1)


def progressive_frames(rate_bps: int, media_s: float, chunk_s: float = 1.0,
                       frame_rate: int = DEFAULT_FRAME_RATE) -> list[int]:
    """Frame sizes of a CBR file of ``media_s`` at ``rate_bps`` cut in ``chunk_s`` pieces (the last
    one rounded up to a whole chunk), as the simulator's progressive server builds it."""
    chunk_ns = round(chunk_s * NS_PER_S)
    chunks = max(1, -(-round(media_s * NS_PER_S) // chunk_ns))
    chunk_bytes = rate_bps * chunk_ns // (8 * NS_PER_S)
    per_chunk = max(1, chunk_ns * frame_rate // NS_PER_S)
    return split_into_frames(chunk_bytes, per_chunk) * chunks


@dataclass
class Underflow:
    start_ns: int
    end_ns: Optional[int]
    frame: int


@dataclass
class FramePlayer:
    frame_sizes: list[int]
    frame_rate: int = DEFAULT_FRAME_RATE
    startup_threshold_ns: int = NS_PER_S
    catch_up_speed: float = 1.5
    discard_lateness_ns: int = 200_000_000
    received_bytes: int = 0
    next_frame: int = 0
    start_ns: Optional[int] = None
    last_shown_ns: Optional[int] = None
    shown: int = 0
    discarded: int = 0
    underflows: list[Underflow] = field(default_factory=list)
    waiting_for_start: int = 0

    def __post_init__(self) -> None:
        if self.frame_rate <= 0:
            raise ValueError(f"frame_rate: must be at least 1 frame per second, got {self.frame_rate}")
        if not (math.isfinite(self.catch_up_speed) and self.catch_up_speed >= 1.0):
            raise ValueError(f"catch_up_speed: must be >= 1, got {self.catch_up_speed}")
        self.period_ns = NS_PER_S // self.frame_rate
        self.frame_ends = []
        total = 0
        for s in self.frame_sizes:
            total += s
            self.frame_ends.append(total)

    @property
    def total_bytes(self) -> int:
        return self.frame_ends[-1] if self.frame_ends else 0

    def on_bytes(self, now_ns: int, n: int) -> None:
        """``n`` more bytes of the file arrived at ``now_ns``."""
        self.received_bytes += n
        ends = self.frame_ends
        while self.next_frame < len(ends) and ends[self.next_frame] <= self.received_bytes:
            self._on_frame_complete(self.next_frame, now_ns)
            self.next_frame += 1
        if self.start_ns is None and self.next_frame == len(ends) and self.next_frame > 0:
            self._start_playback(now_ns)  # the whole file before the threshold

    def _on_frame_complete(self, frame: int, now_ns: int) -> None:
        if self.start_ns is None:
            self.waiting_for_start += 1
            if self.period_ns * self.waiting_for_start >= self.startup_threshold_ns:
                self._start_playback(now_ns)
            return
        self._schedule(frame, now_ns, self.start_ns)

    def _start_playback(self, now_ns: int) -> None:
        self.start_ns = now_ns
        for f in range(self.waiting_for_start):
            self._schedule(f, now_ns, now_ns)

    def _schedule(self, frame: int, complete_ns: int, start_ns: int) -> None:
        deadline = start_ns + self.period_ns * frame
        slot = deadline
        if self.last_shown_ns is not None:
            # Duration::div_f64 in ns; rounding may differ from Rust's by one nanosecond
            slot = max(deadline, self.last_shown_ns + round(self.period_ns / self.catch_up_speed))
        shown_at = max(complete_ns, slot)
        in_underflow = bool(self.underflows) and self.underflows[-1].end_ns is None
        if complete_ns > slot and not in_underflow:
            self.underflows.append(Underflow(slot, None, frame))
        lateness = max(0, shown_at - deadline)
        if lateness > self.discard_lateness_ns:
            self.discarded += 1
            return
        self.shown += 1
        self.last_shown_ns = shown_at
        if lateness == 0 and self.underflows and self.underflows[-1].end_ns is None:
            self.underflows[-1].end_ns = shown_at

    @property
    def frames_missing(self) -> int:
        return len(self.frame_ends) - self.next_frame

    def summary(self) -> dict:
        return {"picture_discards": self.discarded, "underflows": len(self.underflows), "frames_shown": self.shown,
                "frames_missing": self.frames_missing,
                "playback_start_ns": self.start_ns}
