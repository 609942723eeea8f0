"""The real testbed's client (seed 001's VLC): one HTTP/1.1 GET of the video file over a real
Linux TCP socket, the body fed to the frame-deadline player as it is read.

Run inside the client's namespace by :mod:`tcpvideo.studies.ccplb.real` as a script
(``python -u real_client.py SPEC.json``, with the harness's Python, so that it imports only the
player: the model's, bound through ``tcpvideo._core``). It reads as data
arrives, like the simulated testbed's client (``progressive_client.rs``: every byte is read when
it comes, no push-back from a full VLC buffer), and stamps each read with ``CLOCK_MONOTONIC``;
the player's counts (picture discards, underflows) are then decided on those times by the same
code as the simulator's (:mod:`.frame_player`).

Spec keys: ``host``, ``port``, ``path``, ``rate_bps``, ``media_s``, ``chunk_s``,
``startup_threshold_s``, ``timeout_s``, ``out`` (where the JSON result goes). The result: the
player's summary, ``bytes_read``, ``file_bytes``, ``body_done``, ``status``, ``error`` (one line)
and the read start / end on the monotonic clock.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from frame_player import FramePlayer, progressive_frames  # noqa: E402


def fetch(spec: dict) -> dict:
    frames = progressive_frames(int(spec["rate_bps"]), float(spec["media_s"]), float(spec["chunk_s"]))
    player = FramePlayer(frames, startup_threshold_ns=round(float(spec["startup_threshold_s"]) * 1e9))
    out: dict = {"file_bytes": player.total_bytes, "bytes_read": 0, "body_done": False, "status": None, "error": None}
    deadline = time.monotonic() + float(spec["timeout_s"])
    t_start = time.monotonic_ns()
    try:
        s = socket.create_connection((spec["host"], int(spec["port"])), timeout=10.0)
        s.settimeout(max(0.1, deadline - time.monotonic()))
        s.sendall(f"GET {spec['path']} HTTP/1.1\r\nHost: {spec['host']}\r\nConnection: close\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed before the response head")
            head += chunk
        head, _, body = head.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        out["status"] = int(lines[0].split()[1])
        if out["status"] != 200:
            raise ConnectionError(f"HTTP status {out['status']}")
        length = next((int(v) for k, _, v in (x.partition(":") for x in lines[1:]) if k.lower() == "content-length"),
                      None)
        if length != player.total_bytes:
            raise ValueError(f"content-length {length} is not the player's file size {player.total_bytes}")
        got = 0
        if body:
            got = len(body)
            player.on_bytes(time.monotonic_ns(), got)
        buf = bytearray(262144)
        while got < length:
            if time.monotonic() > deadline:
                raise TimeoutError(f"timeout_s: body not complete after {spec['timeout_s']} s")
            n = s.recv_into(buf)
            if n == 0:
                raise ConnectionError("connection closed before the end of the body")
            got += n
            player.on_bytes(time.monotonic_ns(), n)
        out["body_done"] = True
        s.close()
    except (OSError, ValueError, ConnectionError, TimeoutError) as e:
        out["error"] = f"{type(e).__name__}: {e}"
    out["bytes_read"] = player.received_bytes
    out["t_start_ns"] = t_start
    out["t_end_ns"] = time.monotonic_ns()
    out.update(player.summary())
    return out


def main(argv: list[str]) -> int:
    spec = json.loads(Path(argv[1]).read_text())
    res = fetch(spec)
    Path(spec["out"]).write_text(json.dumps(res))
    return 0 if res["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
