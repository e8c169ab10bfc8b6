"""Fixtures for the client tests: a memvault process per test module, tenants, and a fake
OpenAI-compatible upstream.

* ``start_server(extra_env)`` runs ``$MEMVAULT_BIN serve --bind 127.0.0.1:PORT
  --data-dir TMP`` with a bootstrap admin key and ``extra_env`` (``MEMVAULT__...``
  config overrides), waits for ``GET /v1/memory/health``, and stops it at the end of the
  module. It returns a ``Server`` (``base_url``, ``admin_key``).
* ``server``: the module's default server (webhook private targets allowed, nothing else).
* ``new_tenant(server)`` creates a tenant through the admin API; returns its owner key.
* ``FakeUpstream``: an OpenAI-compatible ``POST /v1/chat/completions`` on 127.0.0.1 that
  records each request (headers and JSON body) and answers with the next scripted
  response (default: a fixed assistant message).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

import httpx
import pytest

STARTUP_TIMEOUT_S = 120.0


@dataclass
class Server:
    base_url: str
    admin_key: str
    process: subprocess.Popen
    data_dir: tempfile.TemporaryDirectory


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _launch(extra_env: dict[str, str]) -> Server:
    binary = os.environ.get("MEMVAULT_BIN", "target/release/memvault")
    if not Path(binary).exists():
        pytest.exit(f"{binary} does not exist; run tests/clients/run", returncode=3)
    port = _free_port()
    data_dir = tempfile.TemporaryDirectory(prefix="memvault-clients-")
    admin_key = "mv_clients_admin_" + secrets.token_hex(12)
    env = dict(os.environ)
    env.update({"MEMVAULT_BOOTSTRAP_KEY": admin_key, "RUST_LOG": "warn"})
    env.update(extra_env)
    log = open(Path(data_dir.name) / "server.log", "wb")
    process = subprocess.Popen(
        [binary, "serve", "--bind", f"127.0.0.1:{port}", "--data-dir", data_dir.name],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            if httpx.get(f"{base_url}/v1/memory/health", timeout=2).status_code == 200:
                return Server(base_url, admin_key, process, data_dir)
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.kill()
    output = (Path(data_dir.name) / "server.log").read_text(errors="replace")[-4000:]
    pytest.fail(f"memvault did not become healthy:\n{output}")


def _stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.process.kill()
    server.data_dir.cleanup()


@pytest.fixture(scope="module")
def start_server():
    started: list[Server] = []

    def start(extra_env: dict[str, str] | None = None) -> Server:
        server = _launch(extra_env or {})
        started.append(server)
        return server

    yield start
    for server in started:
        _stop(server)


@pytest.fixture(scope="module")
def server(start_server) -> Server:
    return start_server({"MEMVAULT__WEBHOOKS__ALLOW_PRIVATE_TARGETS": "true"})


def new_tenant(server: Server, tier: str = "pro") -> str:
    """A fresh tenant on `server`; returns its owner key."""
    name = "t" + secrets.token_hex(6)
    response = httpx.post(
        f"{server.base_url}/v1/memory/admin/tenants",
        headers={"Authorization": f"Bearer {server.admin_key}"},
        json={"name": name, "email": f"{name}@example.com", "tier": tier},
        timeout=30,
    )
    assert response.status_code == 201, response.text
    return response.json()["api_key"]


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


def completion(content: str, model: str = "fake-model") -> dict:
    """An OpenAI chat.completion object with one assistant message."""
    return {
        "id": "chatcmpl-" + secrets.token_hex(8),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


@dataclass
class FakeUpstream:
    """Scripted OpenAI-compatible upstream. `script` items are (status, body) or a
    callable taking the request body and returning (status, body), or ("sleep", seconds)
    to stall; when empty, it answers 200 with `completion("Fake answer.")`."""

    script: list = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)

    def __post_init__(self) -> None:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode(errors="replace")
                upstream.requests.append(Recorded(self.path, dict(self.headers), body))
                step = upstream.script.pop(0) if upstream.script else (200, completion("Fake answer."))
                if callable(step):
                    step = step(body)
                if step[0] == "sleep":
                    time.sleep(step[1])
                    step = (200, completion("Too late."))
                status, payload = step
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture()
def fake_upstream():
    upstream = FakeUpstream()
    yield upstream
    upstream.close()
