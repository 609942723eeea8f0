"""The demo's live source: ffmpeg encoding a test pattern in real time into a sliding-window HLS
playlist (RFC 8216 §6.2.2 live playlist), the stream of ETHLE's testbed (seed 002 §V: 15 Mbit/s,
2 s segments).

ffmpeg (apt) reads lavfi's ``testsrc2`` at its native rate (``-re``), encodes it with libx264 in
constant bitrate (``nal-hrd=cbr``, min = max = target rate, a VBV buffer of one second) with a
keyframe exactly every segment (``-g``/``-keyint_min`` = fps·segment, no scene-cut keyframes), so
every segment starts with a keyframe and lasts exactly ``segment_s``; the HLS muxer keeps the last
``list_size`` segments, deletes older files, and writes each file under a temporary name first
(``temp_file``), so the origin never serves a half-written segment or playlist.

Deviations from the paper's source: 1280x720 rather than 4K (the bitrate is what the transport
sees; a 4K encode would not keep up in real time on this 2-core machine), no audio track, MPEG-TS
segments (~2 % container overhead: a "15 Mbit/s" segment is ~3.8 MB on the wire).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

PLAYLIST = "stream.m3u8"


def ffmpeg_argv(out_dir: Path, bitrate_kbps: int, segment_s: int, list_size: int,
                size: str = "1280x720", fps: int = 30) -> list[str]:
    """The ffmpeg command line writing ``out_dir/stream.m3u8`` and its segments."""
    gop = fps * segment_s
    return [
        "ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-re",
        "-f", "lavfi", "-i", f"testsrc2=size={size}:rate={fps}",
        "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-pix_fmt", "yuv420p",
        "-b:v", f"{bitrate_kbps}k", "-minrate", f"{bitrate_kbps}k", "-maxrate", f"{bitrate_kbps}k",
        "-bufsize", f"{bitrate_kbps}k", "-x264-params", "nal-hrd=cbr:force-cfr=1",
        "-g", str(gop), "-keyint_min", str(gop), "-sc_threshold", "0", "-an",
        "-f", "hls", "-hls_time", str(segment_s), "-hls_list_size", str(list_size),
        "-hls_flags", "delete_segments+temp_file",
        "-hls_segment_filename", str(out_dir / "seg%05d.ts"), str(out_dir / PLAYLIST),
    ]


def segments_listed(playlist: Path) -> int:
    """How many segments the playlist lists now (0 when it does not exist yet)."""
    try:
        text = playlist.read_text()
    except FileNotFoundError:
        return 0
    return len(re.findall(r"^#EXTINF:", text, flags=re.M))


def wait_for_segments(playlist: Path, count: int, timeout_s: float, alive=lambda: True) -> None:
    """Block until the live playlist lists ``count`` segments; ``alive()`` false = ffmpeg died."""
    deadline = time.monotonic() + timeout_s
    while segments_listed(playlist) < count:
        if not alive():
            raise RuntimeError("ffmpeg (live source) exited before writing the playlist; "
                               "see ffmpeg.log in the run directory")
        if time.monotonic() > deadline:
            raise TimeoutError(f"live source: {playlist.name} lists {segments_listed(playlist)} "
                               f"segments after {timeout_s:.0f} s, wanted {count}")
        time.sleep(0.25)
