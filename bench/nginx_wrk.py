"""Shared set-up of the benches that put a tcpvideo server next to nginx on loopback and load
both with wrk (`origin_vs_nginx.py`, `edge_vs_nginx.py`): free ports, waiting for a server to
answer, nginx started from a config with the common head (2 workers, pid/error log in the
bench's scratch folder), one wrk run parsed into numbers, and the servers' CPU time from /proc.

The peers are apt's nginx and wrk; the caller writes only what differs (its `http { }` block).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]

# wrk's load: 2 threads (one per core here), 64 keep-alive connections.
WRK_THREADS, WRK_CONNECTIONS = 2, 64


def require_nginx_and_wrk() -> None:
    """Stop with the apt command to run when nginx or wrk is missing."""
    for tool in ("nginx", "wrk"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            raise SystemExit(f"{tool} not found: apt-get install -y nginx wrk")


def release_binary(crate: str, env_var: str) -> str:
    """The server under test: `$env_var` if set, else the workspace's release build of `crate`
    (whose binary has the crate's name); stops with the cargo command when it is not built."""
    binary = os.environ.get(env_var, str(ROOT / "target/release" / crate))
    if not os.access(binary, os.X_OK):
        raise SystemExit(f"{crate} not built: cargo build -p {crate} --release")
    return binary


def scratch_site(prefix: str) -> tuple[Path, Path]:
    """A fresh temp folder (the caller removes it) and its `www/live/`, where the segments go;
    nginx and the tcpvideo server both serve `www/`."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    live = work / "www/live"
    live.mkdir(parents=True)
    return work, live


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(url: str, deadline_s: float = 15) -> None:
    end = time.time() + deadline_s
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError:
            if time.time() > end:
                raise SystemExit(f"{url} did not come up")
            time.sleep(0.1)


def start_nginx(work: Path, http_block: str) -> subprocess.Popen:
    """Write `work/nginx.conf` (the common head, then `http { <http_block> }`) and run nginx in
    the foreground; the caller terminates it. `http_block` is the block's inside, one directive a
    line, each line indented and ending in a newline."""
    conf = work / "nginx.conf"
    # As root, nginx's workers would switch to an unprivileged user that cannot read the temp dir.
    user_line = "user root;" if os.geteuid() == 0 else ""
    conf.write_text(f"""
{user_line}
worker_processes 2;
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 4096; }}
http {{
{http_block}}}
""")
    return subprocess.Popen(["nginx", "-c", str(conf), "-g", "daemon off;"])


def stop(*servers: subprocess.Popen) -> None:
    """Terminate every server first, then wait for each (at most 15 s each)."""
    for server in servers:
        server.terminate()
    for server in servers:
        server.wait(timeout=15)


def cpu_seconds(pids: list[int]) -> float:
    """user + system CPU seconds of these processes and their live children (nginx workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry.name), int(fields[1])
        if pid in pids or ppid in pids:
            total += int(fields[11]) + int(fields[12])
    return total / tick


def wrk(url: str, seconds: int, server_pids: Optional[list[int]] = None) -> dict:
    """One `wrk --latency` run on `url`: {"rps", "gbps", "p99_ms"}, plus "cpu_us" (the servers'
    CPU µs per request) when `server_pids` is given. Error responses stop the bench: a req/s
    that counts them would flatter a failing server."""
    cpu0 = cpu_seconds(server_pids) if server_pids is not None else 0.0
    out = subprocess.run(["wrk", f"-t{WRK_THREADS}", f"-c{WRK_CONNECTIONS}", f"-d{seconds}s",
                          "--latency", url],
                         capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    transfer = re.search(r"Transfer/sec:\s+([\d.]+)(\w+)", out)
    scale = {"B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30}[transfer.group(2)]
    gbps = float(transfer.group(1)) * scale * 8 / 1e9
    p99 = re.search(r"99%\s+([\d.]+)(\w+)", out)
    unit = {"us": 1e-3, "ms": 1.0, "s": 1e3}[p99.group(2)]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise SystemExit(f"{url}: {errors.group(1)} error responses\n{out}")
    result = {"rps": rps, "gbps": gbps, "p99_ms": float(p99.group(1)) * unit}
    if server_pids is not None:
        requests = int(re.search(r"(\d+) requests in", out).group(1))
        result["cpu_us"] = (cpu_seconds(server_pids) - cpu0) * 1e6 / max(requests, 1)
    return result
