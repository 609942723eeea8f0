"""A large capture without root: 8 bulk flows through 1 Gbit/s access links for DURATION, captured
by the simulator at the server with snaplen 96 (about 0.8 M packets per simulated second).
Used for `bench/analyze_speed.py --capture` when the real-Linux capture cannot be made (issue 16):

    python3 bench/sim_big_capture.py OUT_DIR 7s      # ~5.5 M packets in OUT_DIR/big.pcap
    python3 bench/analyze_speed.py --capture OUT_DIR/big.pcap --tapo /work/peers/tapo/tapo
"""

import sys
import time

import tcpvideo

out, duration = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "7s")
nodes = [{"name": "srv"}, {"name": "r", "kind": "router"}] + [{"name": f"c{i}"} for i in range(8)]
links = [{"name": "srv_link", "a": "srv", "b": "r", "rate": "10Gbps", "delay": "1ms"}]
links += [{"name": f"l{i}", "a": "r", "b": f"c{i}", "rate": "1Gbps", "delay": f"{5 + i}ms", "queue": 500} for i in range(8)]
flows = [{"client": f"c{i}", "server": "srv", "app": "bulk"} for i in range(8)]
sc = {"name": "bigcap", "duration": duration, "seed": 1, "node": nodes, "link": links, "flow": flows,
      "record": {"pcap": [{"link": "srv_link", "at": "srv", "file": "big.pcap"}], "snaplen": 96}}
t = time.time()
tcpvideo.simulate(sc, out=out)
print(f"simulated in {time.time() - t:.0f} s → {out}/big.pcap")
