"""The frame-deadline player of seed 001's testbed for the real client: the model's
``FramePlayer`` (crates/model/src/video/frame_player.rs) bound through ``tcpvideo._core``, so the
real client counts **picture discards** and **buffer underflows** ("catch-up" events) by the very
code the simulated client runs. The rules are in that file's doc.

:func:`progressive_frames` is the file the simulator's progressive server serves (the model's
``Content::cbr`` in one quality, frames by ``split_into_frames``: one I-frame of ``i_to_p_ratio``
P-frames per chunk, the remainder of the integer division to the I-frame).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from tcpvideo import _core

NS_PER_S = 1_000_000_000
split_into_frames = _core.split_into_frames
progressive_frames = _core.progressive_frames


@dataclass(frozen=True)
class Underflow:
    start_ns: int
    end_ns: Optional[int]
    frame: int


class FramePlayer:
    """The model's player; times are nanoseconds on any monotonic clock."""

    def __init__(self, frame_sizes: list[int], frame_rate: int = 25, startup_threshold_ns: int = NS_PER_S,
                 catch_up_speed: float = 1.5, discard_lateness_ns: int = 200_000_000) -> None:
        self._p = _core.FramePlayer(list(frame_sizes), frame_rate, startup_threshold_ns, catch_up_speed,
                                    discard_lateness_ns)
        self.received_bytes = 0

    def on_bytes(self, now_ns: int, n: int) -> None:
        """``n`` more bytes of the file arrived at ``now_ns``."""
        self.received_bytes += n
        self._p.on_bytes(now_ns, n)

    total_bytes = property(lambda self: self._p.total_bytes)
    start_ns = property(lambda self: self._p.start_ns)
    shown = property(lambda self: self._p.shown)
    discarded = property(lambda self: self._p.discarded)
    frames_missing = property(lambda self: self._p.frames_missing)

    @property
    def underflows(self) -> list[Underflow]:
        return [Underflow(*u) for u in self._p.underflows]

    def summary(self) -> dict:
        return {"picture_discards": self.discarded, "underflows": len(self._p.underflows), "frames_shown": self.shown,
                "frames_missing": self.frames_missing, "playback_start_ns": self.start_ns}
