"""linkem throughput (issue 11): 1500-byte packets through one linkem (one thread, so one core),
against the peer measured in the same run: the same traffic over a plain veth pair.

iperf3 (apt: iperf3) sends UDP datagrams of 1472 bytes (1500-byte IP packets) as fast as it can
from namespace A to B for ``--seconds``, once over a linkem link with no delay, rate or loss
(pure forwarding cost: two TUN devices and linkem's read → queue → write loop) and once over a
veth pair. Reported: received Gbit/s and packets/s for both, and their ratio, plus linkem's CPU
time and what it implies for one core: forwarded packets per CPU-second of linkem's thread
(this includes the receiving stack's work, which runs inside linkem's write(2) to the TUN
device), which does not depend on how busy the rest of the machine is. Goal: ≥ 2 Gbit/s. The sender and receiver need CPU too: on a 2-core machine
they compete with linkem, so a low number on a loaded machine says as much about the machine;
``uptime`` is printed with the result.

Run: ``python bench/linkem_throughput.py [--seconds 5] [--rt-priority 10]`` (root).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from linkem_common import B_IP, pair  # noqa: E402


def iperf(p: dict, seconds: float, length: int = 1472) -> dict:
    srv = subprocess.Popen(["ip", "netns", "exec", p["b"], "iperf3", "-s", "-1", "-B", B_IP], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    try:
        r = subprocess.run(["ip", "netns", "exec", p["a"], "iperf3", "-c", B_IP, "-u", "-b", "0", "-l", str(length),
                            "-t", str(seconds), "-J"], capture_output=True, text=True, timeout=seconds + 30)
        j = json.loads(r.stdout)
    finally:
        srv.kill()
        srv.wait()
    s = j["end"]["sum"]
    recv_pkts = s["packets"] - s["lost_packets"]
    secs = s["seconds"]
    return {"sent_packets": s["packets"], "received_packets": recv_pkts, "seconds": secs,
            "received_gbps": recv_pkts * (length + 28) * 8 / secs / 1e9, "received_pps": recv_pkts / secs,
            "lost_percent": s["lost_percent"]}


def thread_cpu_s(name: str = "tcpvideo-linkem") -> float:
    """CPU time of this process's linkem threads so far (utime + stime from /proc)."""
    tot = 0
    for t in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            if (t / "comm").read_text().strip() == name[:15]:
                f = (t / "stat").read_text().rsplit(")", 1)[1].split()
                tot += int(f[11]) + int(f[12])
        except OSError:
            pass
    return tot / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rt-priority", type=int, default=0)
    ap.add_argument("--json", default="bench/out/linkem_throughput.json")
    a = ap.parse_args()
    res = {"load_before": os.getloadavg()}
    with pair("veth") as p:
        res["veth"] = iperf(p, a.seconds)
    with pair("linkem", rt_priority=a.rt_priority) as p:
        c0 = thread_cpu_s()
        res["linkem"] = iperf(p, a.seconds)
        res["linkem"]["linkem_cpu_s"] = thread_cpu_s() - c0
        st = p["link"].stats()["a_to_b"]
        res["linkem"]["linkem_forwarded"] = st["packets"]
        res["linkem"]["linkem_write_errors"] = st["write_errors"]
    res["load_after"] = os.getloadavg()
    l, v = res["linkem"], res["veth"]
    print(f"load {res['load_before'][0]:.1f} → {res['load_after'][0]:.1f} (2 cores, shared)")
    print(f"linkem: {l['received_gbps']:.2f} Gbit/s ({l['received_pps']/1e3:.0f} kpkt/s of 1500 B), "
          f"linkem CPU {l['linkem_cpu_s']:.1f} s in {l['seconds']:.1f} s; goal >= 2 Gbit/s")
    per_core = l["linkem_forwarded"] / max(l["linkem_cpu_s"], 1e-9)
    l["one_core_pps"], l["one_core_gbps"] = per_core, per_core * 1500 * 8 / 1e9
    print(f"one core of linkem: {per_core/1e3:.0f} kpkt/s = {l['one_core_gbps']:.2f} Gbit/s of 1500-byte packets "
          f"(forwarded / linkem CPU time)")
    print(f"veth (peer, same run): {v['received_gbps']:.2f} Gbit/s ({v['received_pps']/1e3:.0f} kpkt/s)")
    print(f"ratio linkem / veth: {l['received_gbps'] / max(v['received_gbps'], 1e-9):.2f}")
    out = Path(a.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
