"""Local stand-ins the dashboard's browser tests talk to, each an http.server in a thread
on 127.0.0.1:

* ``Receiver``: a webhook endpoint that records every POST (path, headers, raw body).
* ``FakeNotion``: Notion's OAuth app and the slice of its API a sync reads, as
  actors/connectors/src/providers/notion.rs and oauth.rs speak them:
  ``GET /v1/oauth/authorize`` (consent: redirects straight back with a code and the
  state), ``POST /v1/oauth/token`` (HTTP Basic client credentials, a JSON body with the
  code and redirect_uri; answers an access token with the workspace), ``POST /v1/search``
  (one page of one page object), ``GET /v1/blocks/{id}/children`` (its paragraph) and
  ``GET /v1/users/{id}`` (404: a user the integration may not read). Every API call must
  carry an access token it issued and ``Notion-Version``.
* ``Site``: serves one fixed HTML page at ``/`` (another origin, for the cross-origin
  form test).
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class _Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: bytes, content_type: str, extra=()) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json.dumps(value).encode(), "application/json")


class _Served:
    def _serve(self, handler: type[BaseHTTPRequestHandler], host: str = "127.0.0.1") -> None:
        self._server = ThreadingHTTPServer((host, 0), handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Receiver(_Served):
    """A webhook receiver: 200 to every POST, each one kept."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        receiver = self

        class Handler(_Quiet):
            def do_POST(self) -> None:  # noqa: N802
                body = self._body()
                receiver.requests.append(
                    Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                self._send(200, b"{}", "application/json")

        self._serve(Handler)
        self.url = f"http://127.0.0.1:{self.port}/hooks/memvault"

    def wait_for(self, predicate, timeout: float = 20.0) -> Recorded:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for request in list(self.requests):
                if predicate(request):
                    return request
            time.sleep(0.1)
        raise AssertionError(f"no matching delivery in {timeout}s; got {self.requests!r}")


class Site(_Served):
    """One HTML page at `/`, on `host` (127.0.0.1 or localhost)."""

    def __init__(self, html: str, host: str = "127.0.0.1") -> None:
        page = html.encode()

        class Handler(_Quiet):
            def do_GET(self) -> None:  # noqa: N802
                self._send(200, page, "text/html; charset=utf-8")

        self._serve(Handler, "127.0.0.1")
        self.url = f"http://{host}:{self.port}/"


class FakeNotion(_Served):
    PAGE_TEXT = "The quarterly planning offsite is in Lisbon from May 12 to May 14."
    PAGE_TITLE = "Offsite plan"

    def __init__(self) -> None:
        self.client_id = "notion-e2e-client"
        self.client_secret = "notion-e2e-secret-" + secrets.token_hex(8)
        self.codes: dict[str, str] = {}  # code -> redirect_uri
        self.tokens: set[str] = set()
        self.calls: list[Recorded] = []
        self.token_requests: list[dict] = []
        self.page_id = str(uuid.uuid4())
        self.block_id = str(uuid.uuid4())
        self.user_id = str(uuid.uuid4())
        self.edited = time.strftime("%Y-%m-%dT%H:%M:00.000Z", time.gmtime())
        fake = self

        class Handler(_Quiet):
            def _authorized(self) -> bool:
                auth = self.headers.get("authorization", "")
                ok = auth.startswith("Bearer ") and auth[7:] in fake.tokens
                if not ok:
                    self._json(401, {"object": "error", "status": 401, "code": "unauthorized",
                                     "message": "API token is invalid."})
                elif not self.headers.get("notion-version"):
                    self._json(400, {"object": "error", "status": 400, "code": "missing_version",
                                     "message": "Notion-Version header is missing."})
                    ok = False
                return ok

            def do_GET(self) -> None:  # noqa: N802
                url = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                fake.calls.append(Recorded("GET", self.path, dict(self.headers), b""))
                if url.path == "/v1/oauth/authorize":
                    if query.get("client_id") != fake.client_id or query.get("response_type") != "code":
                        self._send(400, b"invalid_request", "text/plain")
                        return
                    code = "code-" + secrets.token_hex(8)
                    fake.codes[code] = query["redirect_uri"]
                    target = query["redirect_uri"] + "?" + urllib.parse.urlencode(
                        {"code": code, "state": query.get("state", "")}
                    )
                    self._send(302, b"", "text/plain", [("location", target)])
                    return
                if not self._authorized():
                    return
                if url.path == f"/v1/blocks/{fake.page_id}/children":
                    self._json(200, {
                        "object": "list",
                        "results": [{
                            "object": "block", "id": fake.block_id, "type": "paragraph",
                            "has_children": False,
                            "paragraph": {"rich_text": [{"type": "text", "plain_text": fake.PAGE_TEXT,
                                                         "text": {"content": fake.PAGE_TEXT}}]},
                        }],
                        "has_more": False, "next_cursor": None,
                    })
                    return
                self._json(404, {"object": "error", "status": 404, "code": "object_not_found",
                                 "message": "Could not find the object."})

            def do_POST(self) -> None:  # noqa: N802
                body = self._body()
                fake.calls.append(Recorded("POST", self.path, dict(self.headers), body))
                if self.path == "/v1/oauth/token":
                    basic = self.headers.get("authorization", "")
                    client = base64.b64decode(basic[6:]).decode() if basic.startswith("Basic ") else ""
                    params = json.loads(body or b"{}")
                    fake.token_requests.append(params)
                    if client != f"{fake.client_id}:{fake.client_secret}":
                        self._json(401, {"error": "invalid_client"})
                        return
                    if fake.codes.pop(params.get("code"), None) != params.get("redirect_uri"):
                        self._json(400, {"error": "invalid_grant"})
                        return
                    token = "ntn_e2e_" + secrets.token_hex(12)
                    fake.tokens.add(token)
                    self._json(200, {
                        "access_token": token, "token_type": "bearer", "bot_id": str(uuid.uuid4()),
                        "workspace_id": str(uuid.uuid4()), "workspace_name": "E2E Workspace",
                    })
                    return
                if not self._authorized():
                    return
                if self.path == "/v1/search":
                    self._json(200, {
                        "object": "list",
                        "results": [{
                            "object": "page", "id": fake.page_id,
                            "created_time": fake.edited, "last_edited_time": fake.edited,
                            "created_by": {"object": "user", "id": fake.user_id},
                            "in_trash": False, "archived": False,
                            "url": f"https://www.notion.so/Offsite-plan-{fake.page_id.replace('-', '')}",
                            "properties": {"title": {"id": "title", "type": "title", "title": [
                                {"type": "text", "plain_text": fake.PAGE_TITLE,
                                 "text": {"content": fake.PAGE_TITLE}}]}},
                        }],
                        "has_more": False, "next_cursor": None,
                    })
                    return
                self._json(404, {"object": "error", "status": 404, "code": "object_not_found",
                                 "message": "Could not find the object."})

        self._serve(Handler)
        self.base_url = f"http://127.0.0.1:{self.port}"

    def api_calls(self) -> list[str]:
        return [f"{call.method} {call.path}" for call in self.calls if "/oauth/" not in call.path]
