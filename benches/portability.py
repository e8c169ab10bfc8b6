"""Export/import throughput and peak RSS of a memvault server for N memories.

usage: python3 benches/portability.py target/release/memvault N
Starts BINARY on a temp data dir, fills one tenant with N memories in bulk (100 per
call, 4 collections), then times GET admin/export and POST admin/import of that export
into a fresh tenant (one request; over 1,000 memories it is a job, followed through
GET admin/import/{id} until done), and reads the server's peak RSS (VmHWM) after each
phase.
"""
import json, os, subprocess, sys, tempfile, time, urllib.request, socket

binary, n = sys.argv[1], int(sys.argv[2])
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); port = sock.getsockname()[1]; sock.close()
data = tempfile.mkdtemp()
key = "mv_measure_admin_key_0123456789abcdef"
env = dict(os.environ, MEMVAULT_BOOTSTRAP_KEY=key, MEMVAULT__RATE_LIMIT__ENABLED="false",
           MEMVAULT__SERVER__MAX_BODY_BYTES=str(256 * 1024 * 1024))
proc = subprocess.Popen([binary, "serve", "--bind", f"127.0.0.1:{port}", "--data-dir", data],
                        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
base = f"http://127.0.0.1:{port}"

def call(method, path, body=None, token=key, raw=False):
    data_ = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data_, method=method,
                                 headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=3600) as r:
        payload = r.read()
        return payload if raw else json.loads(payload)

def hwm():
    for line in open(f"/proc/{proc.pid}/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return 0.0

for _ in range(600):
    try:
        call("GET", "/v1/memory/health"); break
    except Exception:
        time.sleep(0.5)
words = "lighthouse bakery ferry orchard observatory harbour keeper bread island apples telescope crane fog oven noon ladder comet tide horn flour".split()
def tenant(name):
    return call("POST", "/v1/memory/admin/tenants", {"name": name, "email": f"{name}@example.com", "tier": "pro"})["api_key"]
source, target = tenant("source"), tenant("target")
t0 = time.time()
for start in range(0, n, 100):
    items = [{"text": f"Note {i}: " + " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(6 + i % 9))}
             for i in range(start, min(n, start + 100))]
    call("POST", f"/v1/memory/collections/c{start % 4}/memories/bulk", items, token=source)
fill = time.time() - t0
print(f"filled {n} memories in {fill:.1f} s ({n / fill:.0f}/s); peak RSS {hwm():.0f} MiB", flush=True)
t0 = time.time()
raw = call("GET", "/v1/memory/admin/export", token=source, raw=True)
export_s = time.time() - t0
print(f"export: {len(raw) / 1e6:.1f} MB in {export_s:.2f} s ({n / export_s:.0f} memories/s); peak RSS {hwm():.0f} MiB", flush=True)
body = json.loads(raw)
assert len(body["memories"]) == n, len(body["memories"])
t0 = time.time()
answer = call("POST", "/v1/memory/admin/import",
              {"memories": body["memories"], "collections": body["collections"]}, token=target)
accepted_s = time.time() - t0
if "import_id" in answer:
    print(f"import accepted as {answer['import_id']} in {accepted_s:.2f} s; peak RSS {hwm():.0f} MiB", flush=True)
    while answer["state"] not in ("done", "failed"):
        time.sleep(1)
        answer = call("GET", f"/v1/memory/admin/import/{answer['import_id']}", token=target)
    assert answer["state"] == "done", answer
imported = answer["imported"]
import_s = time.time() - t0
print(f"import: {imported} memories in {import_s:.1f} s ({imported / import_s:.0f} memories/s); peak RSS {hwm():.0f} MiB", flush=True)
proc.terminate(); proc.wait()
