#!/usr/bin/env python3
"""Owner-local against forwarded requests on several nodes (run it through scripts/cluster):

    scripts/cluster --nodes 3 -- python3 scripts/cluster_bench.py [SAMPLES]

Creates an account, finds the node that serves it (`x-memvault-node`), then times single
creates and searches sent straight to that node and sent to another node (which forwards
them), one after another, and prints p50/p95 in milliseconds; then the throughput of
creates from 4 clients over 4 accounts through the balancer. Numbers are printed, never
asserted. Standard library only.
"""

import json
import os
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request

BASE = os.environ["MEMVAULT_URL"]
ADMIN = os.environ["MEMVAULT_ADMIN_KEY"]
SAMPLES = int(sys.argv[1]) if len(sys.argv) > 1 else 200


def call(base, key, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("authorization", f"Bearer {key}")
    if data is not None:
        request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.headers.get("x-memvault-node"), json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        sys.exit(f"{method} {base}{path} -> {error.code}: {error.read().decode(errors='replace')}")


def node_ports():
    """node id -> base URL, from each node's own /v1/status (ports after the balancer's)."""
    port = int(BASE.rsplit(":", 1)[1])
    nodes = {}
    for offset in range(1, 10):
        base = f"http://127.0.0.1:{port + offset}"
        try:
            with urllib.request.urlopen(base + "/v1/status", timeout=5) as response:
                nodes[json.loads(response.read())["cluster"]["node"]] = base
        except (OSError, KeyError, TypeError):
            break
    # One node alone (no [cluster]): it serves everything.
    return nodes or {None: BASE}


def new_account(name):
    _, body = call(BASE, ADMIN, "POST", "/v1/memory/admin/tenants",
                   {"name": name, "email": f"{name}@example.com"})
    return body["api_key"]


def timed(base, key, method, path, body_of):
    times = []
    for index in range(SAMPLES):
        started = time.perf_counter()
        call(base, key, method, path, body_of(index))
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def main():
    nodes = node_ports()
    stamp = int(time.time())
    print(f"{len(nodes)} node(s)")
    create = lambda index: {"text": f"note {index} about harbours, ships and the tide {index % 7}"}
    search = lambda index: {"query": f"harbour ships tide {index % 7}", "limit": 10}
    # An account per measurement: the per-key rate limit (600 a minute on the free tier)
    # counts every request of a key, on whichever node it arrives.
    for label in ("owner-local", "forwarded"):
        key = new_account(f"bench-{stamp}-{label}")
        owner, _ = call(BASE, key, "POST", "/v1/memory/collections/bench/memories",
                        {"text": "the first note about harbours and lighthouses"})
        others = [base for node, base in nodes.items() if node != owner]
        if label == "forwarded" and not others:
            break
        base = nodes[owner] if label == "owner-local" else others[0]
        p50, p95 = timed(base, key, "POST", "/v1/memory/collections/bench/memories", create)
        print(f"create  {label:12} p50 {p50:6.2f} ms  p95 {p95:6.2f} ms")
        p50, p95 = timed(base, key, "POST", "/v1/memory/collections/bench/search", search)
        print(f"search  {label:12} p50 {p50:6.2f} ms  p95 {p95:6.2f} ms")
    keys = [new_account(f"bench-{stamp}-load-{index}") for index in range(4)]
    done = []

    def client(account_key):
        count = 0
        deadline = time.perf_counter() + 10
        while time.perf_counter() < deadline:
            call(BASE, account_key, "POST", "/v1/memory/collections/load/memories",
                 {"text": f"load note {count} about the harbour"})
            count += 1
        done.append(count)

    threads = [threading.Thread(target=client, args=(account_key,)) for account_key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(f"creates through the balancer, 4 clients on 4 accounts: {sum(done) / 10:.0f}/s")


if __name__ == "__main__":
    main()
