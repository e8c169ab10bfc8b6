#!/usr/bin/env python3
"""Latency of remember?sync=true without an LLM (the rule-based extractor): starts the
release binary on a fresh data dir, makes 300 sequential calls (the first 20 are warm-up)
and prints p50/p95/p99. Usage: python3 benches/remember_latency.py [path/to/memvault]"""
import json, subprocess, tempfile, time, urllib.request, statistics, os, sys
key="mv_latency_key_0123456789abcdef"
env=dict(os.environ, MEMVAULT_BOOTSTRAP_KEY=key)
p=subprocess.Popen([sys.argv[1] if len(sys.argv) > 1 else "target/release/memvault","serve","--bind","127.0.0.1:18431","--data-dir",tempfile.mkdtemp()],env=env,stdout=subprocess.PIPE,stderr=subprocess.DEVNULL)
base="http://127.0.0.1:18431"
for _ in range(600):
    try:
        urllib.request.urlopen(base+"/v1/memory/health"); break
    except Exception: time.sleep(0.2)
def post(path, body):
    req=urllib.request.Request(base+path, data=json.dumps(body).encode(), headers={"Authorization":"Bearer "+key,"Content-Type":"application/json"})
    t=time.perf_counter(); r=urllib.request.urlopen(req); r.read(); return (time.perf_counter()-t)*1000
sentences=["My favorite color is {c}.","I live in {city}. I work at {co}.","Yesterday I ran {n} km.","I like {food} and I don't like {food2}.","I'm in {city} for the next {n} days."]
colors=["blue","green","red","teal","amber"]; cities=["Lisbon","Porto","Paris","Berlin","Rome"]; foods=["sushi","pasta","tacos","curry","salad"]
lat=[]
for i in range(300):
    s=sentences[i%5].format(c=colors[i%5],city=cities[(i//5)%5],co=f"Acme{i%7}",n=i%20+1,food=foods[i%5],food2=foods[(i+2)%5])
    lat.append(post(f"/v1/memory/collections/c{i%3}/remember?sync=true",{"content":s}))
lat=lat[20:]
lat.sort()
q=lambda f: lat[int(f*(len(lat)-1))]
print(f"remember?sync=true without LLM, n={len(lat)} sequential: p50 {q(0.5):.1f} ms, p95 {q(0.95):.1f} ms, p99 {q(0.99):.1f} ms, mean {statistics.mean(lat):.1f} ms")
p.terminate(); p.wait()
