#!/usr/bin/env python3
"""A/B of simulator builds on one full-scale onoff configuration (issue 10's speed work).

Each variant is a copy of the `tcpvideo` package (with its own `_core` .so) on PYTHONPATH, given as
TAG=DIR (`TAG=` for the installed one). Runs alternate between variants so load drifts hit all
alike; each prints the CPU seconds of `tcpvideo.simulate`, the events processed and a hash of the
flows, links and video-client tables (equal hashes = identical results).

    python bench/sim_ab.py adapt_buffers 175 300 4 old=/tmp/ab_old new=
"""
import json, os, subprocess, sys, statistics
from tcpvideo.studies.onoff.plan import FULL, configs
from tcpvideo.studies.onoff.scenario import scenario
group, clients, dur, reps = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
variants = [a.split("=", 1) for a in sys.argv[5:]]
cfg = next(c for c in configs(FULL)[group] if c.clients == clients)
sc = scenario(cfg, 1); sc["duration"] = dur
CH = ("import json,sys,time,hashlib,tcpvideo; sc=json.loads(sys.argv[1]); c=time.process_time(); r=tcpvideo.simulate(sc, seed=1); "
      "cpu=time.process_time()-c; h=hashlib.sha256(); [h.update(str(getattr(r,n)).encode()) for n in ('flows','links','video_clients')]; "
      "print(json.dumps({'cpu':cpu,'ev':r.summary['events_processed'],'h':h.hexdigest()[:10]}))")
res = {t: [] for t, _ in variants}
for i in range(reps):
    for tag, path in variants:
        env = dict(os.environ); env.pop("PYTHONPATH", None)
        if path: env["PYTHONPATH"] = path
        o = subprocess.run([sys.executable, "-c", CH, json.dumps(sc)], capture_output=True, text=True, env=env)
        if o.returncode:
            sys.exit(f"{tag}: {o.stderr.strip().splitlines()[-1]}")
        r = json.loads(o.stdout.strip().splitlines()[-1])
        res[tag].append(r["cpu"])
        print(f"{tag:6} cpu {r['cpu']:.3f} s  events {r['ev']:,}  tables {r['h']}  load {os.getloadavg()[0]:.1f}", flush=True)
for t, v in res.items(): print(f"{t:6} CPU s median {statistics.median(v):.3f} min {min(v):.3f}")
