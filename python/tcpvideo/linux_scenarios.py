"""Small real-Linux-TCP scenarios whose captures have known stalls and losses.

Each scenario builds a three-namespace line (``srv`` -- ``rtr`` -- ``cli``, see ``netns.py``),
runs a Python server in ``srv`` and a Python client in ``cli``, captures on the server's
interface (the vantage point of seed 000: traces "collected via tcpdump at one of the front-end
servers") and returns the pcap with what is known about it by construction. They exist to check
the analyzer (``tcpvideo analyze``) against the kernel and against tshark on real traffic, and
to seed the analyzer's fuzzer with realistic inputs. Each takes a few seconds.

| name          | what happens on the wire                                   | seed-000 class    |
|---------------|------------------------------------------------------------|-------------------|
| bulk_loss     | 3 MB, cubic, through tbf 20 Mbit/s with a 15 kB queue: the  | retransmissions   |
|               | queue overflows, tbf drops (counted by tc), the sender      | (fast, RTO)       |
|               | retransmits                                                 |                   |
| server_pause  | the server sends 256 kB, sleeps 1.5 s with nothing in       | resource          |
|               | flight, then sends 256 kB more                              | constraint        |
| zero_window   | the client (SO_RCVBUF 4 kB) reads 64 kB then stops reading  | zero rwnd         |
|               | for 2 s: zero window, persist probes, window update         |                   |
| keepalive     | 1 kB exchange, then 3.5 s idle with SO_KEEPALIVE,           | keep-alive        |
|               | TCP_KEEPIDLE=1 s, TCP_KEEPINTVL=1 s on the server           |                   |
| concurrent    | 4 connections of 1 MB at once through the tbf of bulk_loss  | retransmissions   |

Linux facts the scenarios rely on (tcp(7), net/ipv4/tcp_timer.c, tcp_output.c): a zero-window
probe and a keep-alive probe are the same packet, ``tcp_xmit_probe_skb``: no payload, sequence
number SND.UNA - 1, so tshark labels both ``tcp.analysis.keep_alive``; persist probes back off
from the RTO (min 200 ms); SO_RCVBUF is doubled by the kernel and clamped at 2304 bytes minimum.

The endpoint half of this file (``server`` and ``client``) uses the standard library only and
runs by path (``python3 linux_scenarios.py server ...``) inside a namespace; the orchestration
half (``run``) needs root and imports ``tcpvideo.netns``.
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

SCENARIOS = ("bulk_loss", "server_pause", "zero_window", "keepalive", "concurrent")
PORT = 5201
REQUEST = b"GET /segment\n"


# --------------------------------------------------------------------------------------------
# endpoints (run inside namespaces; stdlib only)
# --------------------------------------------------------------------------------------------
def _keepalive(sock: socket.socket, spec: str) -> None:
    idle, intvl, cnt = (int(x) for x in spec.split(","))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, idle)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, intvl)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, cnt)


def _serve_one(conn: socket.socket, a: argparse.Namespace) -> None:
    with conn:
        if a.keepalive:
            _keepalive(conn, a.keepalive)
        req = b""
        while not req.endswith(b"\n"):
            d = conn.recv(256)
            if not d:
                return
            req += d
        block = b"\x5a" * 65536
        sent = 0
        paused = a.pause_at <= 0
        while sent < a.size:
            n = min(len(block), a.size - sent)
            if not paused:
                n = min(n, a.pause_at - sent)
            conn.sendall(block[:n])
            sent += n
            if not paused and sent >= a.pause_at:
                paused = True
                time.sleep(a.pause)
        if a.idle_after > 0:
            time.sleep(a.idle_after)
        conn.shutdown(socket.SHUT_WR)
        while conn.recv(65536):  # wait for the client's FIN so we close second
            pass


def server(a: argparse.Namespace) -> None:
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if a.cc:
        # Set on the listener: accepted sockets inherit it (tcp(7) TCP_CONGESTION).
        ls.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, a.cc.encode())
    ls.bind(("0.0.0.0", a.port))
    ls.listen(64)
    print("READY", flush=True)
    threads = []
    for _ in range(a.conns):
        conn, _peer = ls.accept()
        t = threading.Thread(target=_serve_one, args=(conn, a))
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    ls.close()
    print("DONE", flush=True)


def _fetch(i: int, a: argparse.Namespace, got: list) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if a.rcvbuf:
        # Before connect, so the window scale offered in the SYN fits the small buffer.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, a.rcvbuf)
    if a.cc:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, a.cc.encode())
    s.connect((a.host, a.port))
    s.sendall(REQUEST)
    n = 0
    stalled = a.stall_at <= 0
    while True:
        want = 65536 if stalled else max(1, min(65536, a.stall_at - n))
        d = s.recv(want)
        if not d:
            break
        n += len(d)
        if not stalled and n >= a.stall_at:
            stalled = True
            time.sleep(a.stall)
    s.close()
    got[i] = n


def client(a: argparse.Namespace) -> None:
    got = [0] * a.conns
    threads = [threading.Thread(target=_fetch, args=(i, a, got)) for i in range(a.conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("GOT " + " ".join(map(str, got)), flush=True)


def _endpoint_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="role", required=True)
    s = sub.add_parser("server", help="serve --size bytes per connection to --conns clients")
    s.add_argument("--port", type=int, default=PORT)
    s.add_argument("--cc", default="")
    s.add_argument("--conns", type=int, default=1)
    s.add_argument("--size", type=int, default=1_000_000)
    s.add_argument("--pause-at", type=int, default=0, help="pause after this many bytes")
    s.add_argument("--pause", type=float, default=0.0, help="seconds of the pause")
    s.add_argument("--idle-after", type=float, default=0.0, help="idle seconds before FIN")
    s.add_argument("--keepalive", default="", help="IDLE,INTVL,CNT in seconds/count")
    c = sub.add_parser("client", help="fetch from the server on --conns parallel connections")
    c.add_argument("--host", required=True)
    c.add_argument("--port", type=int, default=PORT)
    c.add_argument("--cc", default="")
    c.add_argument("--conns", type=int, default=1)
    c.add_argument("--rcvbuf", type=int, default=0)
    c.add_argument("--stall-at", type=int, default=0, help="stop reading after this many bytes")
    c.add_argument("--stall", type=float, default=0.0, help="seconds without reading")
    g = sub.add_parser("generate", help="run every scenario (root) and write pcaps to OUTDIR")
    g.add_argument("outdir")
    g.add_argument("--snaplen", type=int, default=262144)
    g.add_argument("--only", nargs="*", default=list(SCENARIOS), choices=SCENARIOS)
    return p


# --------------------------------------------------------------------------------------------
# orchestration (root)
# --------------------------------------------------------------------------------------------
@dataclass
class ScenarioResult:
    name: str
    pcap: Path
    packets: int  # written by dumpcap
    capture_drops: int  # packets the capture itself lost (should be 0)
    server_ip: str
    client_ip: str
    port: int
    conns: int
    bytes_per_conn: int
    client_got: list[int]
    queue_drops: int  # packets dropped by the bottleneck tbf (tc -s), 0 without one
    facts: dict = field(default_factory=dict)  # what the scenario did, by construction


# per scenario: server args, client args, bottleneck (rate, limit) or None, facts
_SPECS: dict[str, tuple[list[str], list[str], tuple[str, int] | None, dict]] = {
    "bulk_loss": (["--cc", "cubic", "--size", "3000000"], [], ("20mbit", 15000),
                  {"cc": "cubic", "bottleneck": "tbf 20mbit limit 15000 B"}),
    "server_pause": (["--cc", "cubic", "--size", "524288", "--pause-at", "262144",
                      "--pause", "1.5"], [], None,
                     {"pause_after_bytes": 262144, "pause_s": 1.5}),
    "zero_window": (["--cc", "cubic", "--size", "1000000"],
                    ["--rcvbuf", "4096", "--stall-at", "65536", "--stall", "2.0"], None,
                    {"rcvbuf": 4096, "stall_after_bytes": 65536, "stall_s": 2.0}),
    "keepalive": (["--cc", "cubic", "--size", "1000", "--idle-after", "3.5",
                   "--keepalive", "1,1,9"], [], None,
                  {"keepidle_s": 1, "keepintvl_s": 1, "idle_s": 3.5}),
    "concurrent": (["--cc", "cubic", "--size", "1000000", "--conns", "4"], ["--conns", "4"],
                   ("20mbit", 15000), {"cc": "cubic", "bottleneck": "tbf 20mbit limit 15000 B"}),
}


def run(name: str, outdir: str | Path, snaplen: int = 262144,
        pcap_name: str | None = None, timeout: float = 30.0) -> ScenarioResult:
    """Run scenario ``name`` in fresh namespaces; write ``outdir/<name>.pcap``. Needs root."""
    from tcpvideo import netns

    if name not in _SPECS:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    srv_args, cli_args, bottleneck, facts = _SPECS[name]
    pcap = Path(outdir) / (pcap_name or f"{name}.pcap")
    me = Path(__file__).resolve()
    with netns.Network() as net:
        srv, rtr, cli = net.chain(["srv", "rtr", "cli"])
        if bottleneck:
            rate, limit = bottleneck
            rtr.tbf(net.dev(rtr, cli), rate=rate, burst="15kb", limit=limit)
        conns = int(srv_args[srv_args.index("--conns") + 1]) if "--conns" in srv_args else 1
        size = int(srv_args[srv_args.index("--size") + 1])
        server_ip, client_ip = net.ip(srv, rtr), net.ip(cli, rtr)
        sp = srv.python(me, ["server", "--port", PORT, *srv_args])
        sp.wait_for("^READY$")
        with srv.capture(net.dev(srv, rtr), pcap, snaplen=snaplen) as cap:
            cp = cli.python(me, ["client", "--host", server_ip, "--port", PORT, *cli_args])
            got_line = cp.wait_for(r"^GOT ", timeout=timeout)
            sp.wait_for("^DONE$", timeout=timeout)
            cp.wait(timeout=5)
        got = [int(x) for x in got_line.string.split()[1:]]
        drops = rtr.qdisc_stats(net.dev(rtr, cli)).get("dropped", 0) if bottleneck else 0
    if got != [size] * conns:
        raise RuntimeError(f"{name}: client received {got}, expected {conns} x {size}")
    st = cap.stats
    return ScenarioResult(name, pcap, st.packets, st.dropped, server_ip, client_ip, PORT, conns,
                          size, got, drops, dict(facts))


def main(argv: list[str] | None = None) -> None:
    a = _endpoint_parser().parse_args(argv)
    if a.role == "server":
        server(a)
    elif a.role == "client":
        client(a)
    else:
        for name in a.only:
            r = run(name, a.outdir, snaplen=a.snaplen)
            print(f"{r.name}: {r.pcap} {r.packets} packets, tbf drops {r.queue_drops}")


if __name__ == "__main__":
    if __package__ in (None, ""):
        # Run by path: make ``tcpvideo`` importable for the orchestration half.
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
