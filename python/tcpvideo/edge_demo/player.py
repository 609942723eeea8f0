"""A real player for the demo: hls.js in Debian's headless chromium, driven by playwright-core
(``player/driver.mjs``; no browser is downloaded at run time, /usr/bin/chromium is launched).

The numbers come from the player's own events (``player/page.html``):

* startup delay: ``hls.loadSource`` to the video element's first ``playing`` event;
* stalls: each ``waiting`` event after the first ``playing`` opens a stall, the next ``playing``
  closes it (a stall still open at the end counts with its length so far); hls.js's own
  ``BUFFER_STALLED_ERROR`` count is kept beside it. Each stall keeps what was buffered ahead of
  the playhead when it began: below ``STARVED_BELOW_S`` it is *starved* (the data came late, what
  ETHLE is about); with seconds of media buffered the element stopped for another reason
  (decoder or append hiccup on a loaded machine) and the network is not the cause;
* live latency: ``hls.latency`` (seconds from the playhead to the live edge of the playlist, as
  hls.js computes it: program-date-time not needed), sampled every second while playing, with
  the media buffered ahead of the playhead at the same instants (its minimum is the margin the
  delivery left: the network's part of a stall, apart from the element's).

The page is served by the driver's request interception from the stream's own origin, so neither
the origin nor the edge needs CORS headers. Node modules (``hls.js``, ``playwright-core``, pinned
in ``player/package.json``) are installed with ``npm install --prefix <this dir>/player``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

PLAYER_DIR = Path(__file__).resolve().parent / "player"
CHROMIUM = "/usr/bin/chromium"
STARVED_BELOW_S = 0.5  # buffered media ahead of the playhead (s) below which a stall is starved


def missing_player_parts() -> Optional[str]:
    """None when the player can run here, else one line saying what is missing."""
    if shutil.which("node") is None:
        return "node not installed (apt-get install nodejs npm)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} not installed (apt-get install chromium)"
    for module in ("hls.js", "playwright-core"):
        if not (PLAYER_DIR / "node_modules" / module / "package.json").exists():
            return f"node module {module} missing: npm install --prefix {PLAYER_DIR}"
    return None


@dataclass
class PlayerReport:
    """What hls.js reported for one playback (seconds throughout)."""

    startup_s: Optional[float]  # None: never started playing
    stalls: list[float]  # length of each stall after playback started
    stall_buffers_s: list[Optional[float]]  # media buffered ahead when each stall began
    hls_stalled_errors: int
    latency_samples: list[float]
    buffer_samples: list[float]  # media buffered ahead of the playhead, each second (s)
    played_s: float  # video.currentTime advance is not used: wall time since `playing`
    fatal: Optional[str]
    fragments: list[dict] = field(default_factory=list)
    hlsjs_version: str = ""
    # The start-up timeline (timeline.py): loadSource on the wall clock (epoch s), and hls.js's
    # playlist load and first fragment request in seconds since loadSource.
    t0_epoch_s: Optional[float] = None
    playlist_marks: Optional[dict] = None
    first_fragment_request: Optional[dict] = None

    @property
    def stall_count(self) -> int:
        return len(self.stalls)

    @property
    def stall_total_s(self) -> float:
        return sum(self.stalls)

    @property
    def starved_stall_count(self) -> int:
        """Stalls that began with (almost) nothing buffered: data arrived late."""
        return sum(1 for b in self.stall_buffers_s if b is None or b < STARVED_BELOW_S)

    @property
    def buffer_min_s(self) -> Optional[float]:
        """Least media buffered ahead in the 1 s samples, from the second one on (the first is
        taken while the first segment may still be appending)."""
        return min(self.buffer_samples[1:]) if len(self.buffer_samples) > 1 else None

    @property
    def latency_median_s(self) -> Optional[float]:
        return statistics.median(self.latency_samples) if self.latency_samples else None

    @classmethod
    def from_page(cls, rec: dict) -> "PlayerReport":
        start = rec.get("playingAt")
        return cls(
            startup_s=start,
            stalls=[float(s["seconds"]) for s in rec.get("stalls", [])],
            stall_buffers_s=[None if s.get("buffer") is None else float(s["buffer"])
                             for s in rec.get("stalls", [])],
            hls_stalled_errors=int(rec.get("hlsStalledErrors", 0)),
            latency_samples=[float(s["latency"]) for s in rec.get("latency", [])],
            buffer_samples=[float(s["buffer"]) for s in rec.get("latency", []) if "buffer" in s],
            played_s=max(0.0, float(rec.get("now", 0.0)) - start) if start is not None else 0.0,
            fatal=rec.get("fatal"),
            fragments=list(rec.get("fragments", [])),
            hlsjs_version=str(rec.get("hlsjs", "")),
            t0_epoch_s=float(rec["t0EpochMs"]) / 1000 if rec.get("t0EpochMs") is not None else None,
            playlist_marks=rec.get("playlist"),
            first_fragment_request=rec.get("firstFragLoading"),
        )


def play(argv_prefix: list[str], url: str, play_s: float, ran_kbps: int,
         startup_timeout_s: float = 60.0, log_path: Optional[Path] = None) -> PlayerReport:
    """Play ``url`` for ``play_s`` seconds after startup; ``argv_prefix`` places the browser
    (e.g. ``ip netns exec NS``). Raises RuntimeError with the driver's last output on failure."""
    argv = [*argv_prefix, "node", str(PLAYER_DIR / "driver.mjs"), "--url", url,
            "--play-s", str(play_s), "--ran-kbps", str(ran_kbps),
            "--startup-timeout-s", str(startup_timeout_s), "--chromium", CHROMIUM]
    timeout = startup_timeout_s + play_s + 60  # + browser launch and close
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    if log_path is not None:
        log_path.write_text(r.stdout + "\n--- stderr ---\n" + r.stderr)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    if r.returncode != 0 or not lines:
        tail = (r.stderr.strip() or r.stdout.strip()).splitlines()[-3:]
        raise RuntimeError(f"player (hls.js in chromium) failed, rc={r.returncode}: {' | '.join(tail)}")
    return PlayerReport.from_page(json.loads(lines[-1][len("RESULT "):]))
