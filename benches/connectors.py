"""Managed connectors: sync throughput against the fake providers, and memory on a big sync.

usage: python3 benches/connectors.py target/release/memvault [records_per_provider=2000] [big=20000]

Needs the fake provider example (built separately):
    cargo build --release -p memvault-fake-providers --example fake_provider
which this script expects at target/release/examples/fake_provider (next to BINARY).

Phase 1: starts one fake per provider (slack, notion, gdrive, gmail, linear, confluence,
hubspot) with N records each and each provider's real page size, then ONE server whose
connectors point at them (MEMVAULT__CONNECTORS__<P>__BASE_URL; confluence takes the
connection's config.base_url, with ALLOW_PRIVATE_TARGETS). One tenant, one connection per
provider in its own collection. Per provider, one after the other: a first sync (timed:
records/s including the server's own embedding), then a no-op incremental sync (timed: the
content-hash skip). The requests each sync made are counted by the fake itself.

The server's production pacing (http.rs Budget::default_for) is left as it is: it is a real
part of a sync's wall time. A provider whose first sync would need more than PACED_CAP_SECS
(default 180) of pure pacing at N records gets fewer records, and the output says so.

Phase 2: a fresh server and a fresh fake (linear; BIG_PROVIDER=hubspot to change) with `big`
records; one first sync, sampling the server's RSS every 0.5 s: the baseline before the
sync, the samples, the peak (VmHWM) and the RSS at the end. big=0 skips it.

ONLY=slack,linear limits phase 1 to those providers.
"""
import json, math, os, shutil, socket, subprocess, sys, tempfile, threading, time
import urllib.error, urllib.request

if len(sys.argv) < 2:
    sys.exit(__doc__)
binary = sys.argv[1]
per_provider = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
big = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
PACED_CAP_SECS = float(os.environ.get("PACED_CAP_SECS", "180"))
BIG_PROVIDER = os.environ.get("BIG_PROVIDER", "linear")
fake_binary = os.path.join(os.path.dirname(os.path.abspath(binary)), "examples", "fake_provider")
if not os.access(fake_binary, os.X_OK):
    sys.exit(f"{fake_binary} is missing; build it first with\n"
             "    cargo build --release -p memvault-fake-providers --example fake_provider")
if not os.access(binary, os.X_OK):
    sys.exit(f"{binary} is missing; build it with cargo build --release")

# Per provider: the page size the fake answers with (the provider's own maximum, which is
# also what the client asks for; confluence's client asks 25), the production budget
# (requests/s, burst; actors/connectors/src/http.rs), the content calls per record a first
# sync makes, and the page size of the reconciliation's id listing.
PROVIDERS = {
    #            page  asks  rate         burst content ids-page
    "slack":      (200, 200, 50 / 60,      10, 0, 200),
    "notion":     (100, 100, 3.0,           6, 2, 100),  # blocks/children: top + one nested
    "gdrive":     (100, 100, 20.0,         20, 1, 1000),
    "gmail":      (100, 100, 40.0,         40, 1, 500),
    "linear":     (100, 100, 5000 / 3600,  20, 0, 100),
    "confluence": (100, 25, 10.0,          10, 0, 100),
    "hubspot":    (100, 100, 4.0,           4, 0, 100),
}


def planned_requests(provider, n):
    page, asks, _, _, content, ids_page = PROVIDERS[provider]
    listing = math.ceil(n / min(page, asks)) or 1
    # The first sync also reconciles (lists every id) once its cursor moved.
    ids = math.ceil(n / min(page, ids_page)) or 1
    return listing + content * n + ids


def paced_secs(provider, n):
    _, _, rate, burst, _, _ = PROVIDERS[provider]
    return max(0.0, planned_requests(provider, n) - burst) / rate


def records_for(provider, n):
    """N, or fewer (a multiple of 50) when pacing alone would take over PACED_CAP_SECS."""
    if paced_secs(provider, n) <= PACED_CAP_SECS:
        return n
    low, high = 0, n
    while low < high:
        mid = (low + high + 1) // 2
        if paced_secs(provider, mid) <= PACED_CAP_SECS:
            low = mid
        else:
            high = mid - 1
    return max(50, low // 50 * 50)


class FakeProvider:
    def __init__(self, provider, records):
        page = PROVIDERS[provider][0]
        self.provider, self.records = provider, records
        self.proc = subprocess.Popen([fake_binary, provider, str(records), str(page)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            sys.exit(f"the {provider} fake did not start")
        info = json.loads(line)
        self.base_url, self.credentials, self.config = info["base_url"], info["credentials"], info["config"]
        self.start_secs = info["start_secs"]

    def stats(self):
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


KEY = "mv_measure_admin_key_0123456789abcdef"


class Server:
    def __init__(self, fakes):
        self.port, self.data = free_port(), tempfile.mkdtemp(prefix="mv-conn-bench-")
        env = dict(os.environ, MEMVAULT_BOOTSTRAP_KEY=KEY, MEMVAULT__RATE_LIMIT__ENABLED="false",
                   MEMVAULT__SERVER__BIND=f"127.0.0.1:{self.port}",
                   MEMVAULT__SERVER__DATA_DIR=self.data,
                   MEMVAULT__CONNECTORS__ALLOW_PRIVATE_TARGETS="true",
                   # No scheduled run may race the measured manual ones.
                   MEMVAULT__CONNECTORS__TICK_SECS="86400")
        for fake in fakes:
            env[f"MEMVAULT__CONNECTORS__{fake.provider.upper()}__BASE_URL"] = fake.base_url
        self.log = open(os.path.join(self.data, "server.log"), "w")
        self.proc = subprocess.Popen([binary, "serve", "--bind", f"127.0.0.1:{self.port}",
                                      "--data-dir", self.data],
                                     env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{self.port}"
        for _ in range(1200):
            if self.proc.poll() is not None:
                sys.exit(f"the server exited with {self.proc.returncode}; see {self.log.name}")
            try:
                self.call("GET", "/v1/memory/health")
                break
            except Exception:
                time.sleep(0.5)
        else:
            sys.exit("the server did not come up in 10 minutes")
        self.key = self.call("POST", "/v1/memory/admin/tenants",
                             {"name": "bench", "email": "bench@example.com", "tier": "pro"})["api_key"]

    def call(self, method, path, body=None, token=None):
        payload = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=payload, method=method, headers={
            "Authorization": f"Bearer {token or KEY}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=7200) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as error:
            raise RuntimeError(f"{method} {path}: {error.code} {error.read()[:500]!r}") from None

    def status(self, field):
        try:
            for line in open(f"/proc/{self.proc.pid}/status"):
                if line.startswith(field):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def connect(self, fake):
        config = dict(fake.config, sync_interval_minutes=10080)
        return self.call("POST", "/v1/memory/connections", {
            "provider": fake.provider, "name": f"bench {fake.provider}",
            "collection": f"conn-{fake.provider}", "container_tag": "bench",
            "config": config, "credentials": fake.credentials}, token=self.key)["id"]

    def sync(self, fake, connection):
        before = fake.stats()
        t0 = time.time()
        answer = self.call("POST", f"/v1/memory/connections/{connection}/sync", {}, token=self.key)
        secs = time.time() - t0
        after = fake.stats()
        calls = {k: after[k] - before[k] for k in after}
        if answer.get("error") or answer.get("status") not in ("active",):
            print(f"  !! {fake.provider} sync: status {answer.get('status')} error {answer.get('error')}",
                  flush=True)
        return answer, secs, calls

    def count(self, collection):
        """The collection's memory_count, and the distinct ids listed page by page."""
        info = self.call("GET", f"/v1/memory/collections/{collection}", token=self.key)
        ids, offset = set(), 0
        while True:
            page = self.call("GET", f"/v1/memory/collections/{collection}/memories?limit=200&offset={offset}",
                             token=self.key)
            ids.update(m["id"] for m in page)
            offset += len(page)
            if len(page) < 200:
                break
        return info["memory_count"], len(ids)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.data, ignore_errors=True)


def table(headers, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    line = lambda cells: "  ".join(str(c).rjust(w) for c, w in zip(cells, widths))
    print(line(headers))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line(row))
    sys.stdout.flush()


print(f"memvault connectors bench: {per_provider} records per provider (paced cap {PACED_CAP_SECS:.0f} s), "
      f"big sync {big} on {BIG_PROVIDER}; {os.cpu_count()} cpus", flush=True)

# ---- Phase 1: every provider, one server ----
only = [p for p in os.environ.get("ONLY", "").split(",") if p]
unknown = [p for p in only if p not in PROVIDERS]
if unknown:
    sys.exit(f"ONLY names unknown providers: {unknown}")
counts = {p: records_for(p, per_provider) for p in PROVIDERS if not only or p in only}
for p, n in counts.items():
    if n < per_provider:
        print(f"note: {p} gets {n} records, not {per_provider}: at its production budget "
              f"({PROVIDERS[p][2]:.2f} req/s, burst {PROVIDERS[p][3]}) its first sync of {per_provider} would "
              f"need ~{planned_requests(p, per_provider)} requests, ~{paced_secs(p, per_provider) / 60:.0f} min "
              f"of pacing alone", flush=True)
fakes = [FakeProvider(p, n) for p, n in counts.items()]
server = Server(fakes)
print(f"server up: RSS {server.status('VmRSS'):.0f} MiB (peak {server.status('VmHWM'):.0f} MiB)", flush=True)
rows, problems = [], []
for fake in fakes:
    connection = server.connect(fake)
    first, first_s, first_calls = server.sync(fake, connection)
    memory_count, listed = server.count(f"conn-{fake.provider}")
    again, again_s, again_calls = server.sync(fake, connection)
    n = fake.records
    if first["synced"] != n or memory_count != n or listed != n:
        problems.append(f"{fake.provider}: {n} records, first sync synced {first['synced']}, "
                        f"memory_count {memory_count}, listed {listed}")
    if again["synced"] != 0 or again["deleted"] != 0:
        problems.append(f"{fake.provider}: the no-op sync answered synced {again['synced']}, "
                        f"unchanged {again['unchanged']}, deleted {again['deleted']}")
    paced = max(0.0, first_calls["total"] - PROVIDERS[fake.provider][3]) / PROVIDERS[fake.provider][2]
    rows.append([fake.provider, n, PROVIDERS[fake.provider][1] if fake.provider == "confluence" else
                 PROVIDERS[fake.provider][0], f"{first_s:.1f}", f"{n / first_s:.1f}",
                 f"{first_calls['list']}+{first_calls['content']}+{first_calls['meta']}",
                 f"{paced:.0f}", f"{first['synced']}/{memory_count}",
                 f"{again_s:.2f}", f"{again_calls['list']}+{again_calls['content']}+{again_calls['meta']}",
                 f"{again['synced']}/{again['unchanged']}"])
    print(f"{fake.provider}: first sync {n} in {first_s:.1f} s, no-op in {again_s:.2f} s; "
          f"RSS {server.status('VmRSS'):.0f} MiB, peak {server.status('VmHWM'):.0f} MiB", flush=True)
phase1_peak = server.status("VmHWM")
server.stop()
for fake in fakes:
    fake.stop()
print()
print("First sync (records/s includes fetching, hashing, embedding, storing) and a no-op incremental sync.")
print("requests = list+content+meta calls the fake received; paced-s = the wall time the production")
print("budget alone imposes on that many requests (max(0, requests - burst) / rate).")
table(["provider", "records", "page", "first-s", "rec/s", "requests", "paced-s", "synced/stored",
       "noop-s", "noop-requests", "noop-synced/unchanged"], rows)
print(f"server peak RSS over phase 1: {phase1_peak:.0f} MiB")

# ---- Phase 2: one big sync in a fresh server ----
print()


def finish():
    if problems:
        print("\nPROBLEMS:")
        for problem in problems:
            print("  " + problem)
        sys.exit(1)


if big <= 0:
    finish()
    sys.exit(0)
fake = FakeProvider(BIG_PROVIDER, big)
server = Server([fake])
connection = server.connect(fake)
time.sleep(1)
baseline = server.status("VmRSS")
baseline_hwm = server.status("VmHWM")
samples, done = [], threading.Event()


def sample():
    t0 = time.time()
    while not done.is_set():
        samples.append((time.time() - t0, server.status("VmRSS")))
        done.wait(0.5)


sampler = threading.Thread(target=sample)
sampler.start()
answer, secs, calls = server.sync(fake, connection)
done.set()
sampler.join()
end_rss, peak = server.status("VmRSS"), server.status("VmHWM")
memory_count, listed = server.count(f"conn-{BIG_PROVIDER}")
if answer["synced"] != big or memory_count != big or listed != big:
    problems.append(f"big {BIG_PROVIDER}: {big} records, synced {answer['synced']}, memory_count "
                    f"{memory_count}, listed {listed}")
print(f"Big sync: {big} {BIG_PROVIDER} records in {secs:.1f} s = {big / secs:.1f} records/s; "
      f"requests {calls['list']}+{calls['content']}+{calls['meta']}; synced {answer['synced']}, "
      f"stored {memory_count} (listed {listed})")
quarter = [samples[min(len(samples) - 1, int(len(samples) * f))] for f in (0, 0.25, 0.5, 0.75, 1.0)] if samples else []
table(["baseline RSS", "peak RSS (VmHWM)", "max sampled RSS", "end RSS", "baseline HWM", "samples"],
      [[f"{baseline:.0f} MiB", f"{peak:.0f} MiB", f"{max(r for _, r in samples):.0f} MiB",
        f"{end_rss:.0f} MiB", f"{baseline_hwm:.0f} MiB", len(samples)]])
print("RSS over the sync: " + ", ".join(f"{t:.0f}s {r:.0f} MiB" for t, r in quarter))
server.stop()
fake.stop()
finish()
