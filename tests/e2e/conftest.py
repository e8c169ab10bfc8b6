"""Fixtures for the dashboard's browser tests.

* ``server``: one memvault process for the session (``$MEMVAULT_BIN serve`` on a free
  port and a temp data dir, a bootstrap admin key, webhooks to loopback allowed, Notion's
  OAuth app and API pointed at ``notion``, the local fake of fakes.py).
* ``browser``: one headless Chromium for the session, the system one
  (``/usr/bin/chromium``, or ``$MEMVAULT_E2E_CHROMIUM``), driven by Playwright's sync API;
  ``context`` and ``page`` are new for each test (1280x800); ``watch`` records what its
  pages said (every ``confirm()`` is accepted and its message kept; console errors).
* ``admin_page``: ``page`` signed in through the form with the bootstrap admin's owner
  key; ``admin``: the REST API as that key; ``new_tenant(server)``: another tenant's
  owner key (``new_named_tenant``: its name too).
* ``shot(page, label)``: a full-page screenshot into ``$MEMVAULT_E2E_SHOTS``, named
  ``<test>__<nn>-<label>.png``; a failed test also leaves ``<test>__FAILED.png``.
* ``receiver``: a webhook receiver on 127.0.0.1 (fakes.Receiver).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from fakes import FakeNotion, Receiver


STARTUP_TIMEOUT_S = 120.0
SHOTS = Path(os.environ.get("MEMVAULT_E2E_SHOTS", "target/e2e-screenshots"))
CHROMIUM = os.environ.get("MEMVAULT_E2E_CHROMIUM", "/usr/bin/chromium")
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}

# This machine may be busy compiling: give the pages time (the xfail tests pass their own).
expect.set_options(timeout=10_000)


@dataclass
class Server:
    base_url: str
    admin_key: str
    log_path: Path

    def url(self, path: str) -> str:
        return self.base_url + path


class Api:
    """The REST API as one key."""

    def __init__(self, server: Server, key: str | None):
        self.base_url = server.base_url
        self.key = key

    def call(self, method: str, path: str, body=None) -> tuple[int, object]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        request.add_header("content-type", "application/json")
        if self.key:
            request.add_header("authorization", f"Bearer {self.key}")
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                return error.code, json.loads(raw)
            except ValueError:
                return error.code, raw.decode(errors="replace")

    def ok(self, method: str, path: str, body=None):
        status, answer = self.call(method, path, body)
        assert 200 <= status < 300, f"{method} {path}: {status} {answer}"
        return answer


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def notion() -> FakeNotion:
    fake = FakeNotion()
    yield fake
    fake.close()


@pytest.fixture(scope="session")
def server(notion: FakeNotion):
    binary = os.environ.get("MEMVAULT_BIN", "target/release/memvault")
    if not Path(binary).exists():
        pytest.exit(f"{binary} does not exist; run tests/e2e/run", returncode=3)
    port = _free_port()
    data_dir = tempfile.TemporaryDirectory(prefix="memvault-e2e-")
    admin_key = "mv_e2e_admin_" + secrets.token_hex(12)
    env = dict(os.environ)
    env.update(
        {
            "MEMVAULT_BOOTSTRAP_KEY": admin_key,
            "RUST_LOG": "warn",
            "MEMVAULT__WEBHOOKS__ALLOW_PRIVATE_TARGETS": "true",
            "MEMVAULT__CONNECTORS__NOTION__BASE_URL": notion.base_url,
            "MEMVAULT__CONNECTORS__NOTION__CLIENT_ID": notion.client_id,
            "MEMVAULT__CONNECTORS__NOTION__CLIENT_SECRET": notion.client_secret,
            "MEMVAULT__CONNECTORS__NOTION__AUTHORIZE_URL": notion.base_url + "/v1/oauth/authorize",
            "MEMVAULT__CONNECTORS__NOTION__TOKEN_URL": notion.base_url + "/v1/oauth/token",
        }
    )
    log_path = Path(data_dir.name) / "server.log"
    log = open(log_path, "wb")
    process = subprocess.Popen(
        [binary, "serve", "--bind", f"127.0.0.1:{port}", "--data-dir", data_dir.name],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    healthy = False
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"{base_url}/v1/memory/health", timeout=2) as answer:
                if answer.status == 200:
                    healthy = True
                    break
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    if not healthy:
        process.kill()
        pytest.fail("memvault did not start:\n" + log_path.read_text(errors="replace")[-4000:])
    yield Server(base_url, admin_key, log_path)
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()
    data_dir.cleanup()


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield chromium
        chromium.close()


@dataclass
class Watch:
    """What the pages of one context said: confirm() messages, console errors."""

    dialogs: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)

    def attach(self, page: Page) -> None:
        def on_dialog(dialog) -> None:
            self.dialogs.append(dialog.message)
            dialog.accept()

        page.on("dialog", on_dialog)
        page.on(
            "console",
            lambda message: message.type == "error"
            and self.console_errors.append(f"{page.url}: {message.text}"),
        )
        page.on("pageerror", lambda error: self.console_errors.append(f"{page.url}: {error}"))


@pytest.fixture
def watch() -> Watch:
    return Watch()


@pytest.fixture
def context(browser, watch, request):
    context = browser.new_context(viewport=DESKTOP, accept_downloads=True)
    context.set_default_timeout(15_000)
    context.on("page", watch.attach)
    yield context
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        for i, page in enumerate(context.pages):
            try:
                SHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(
                    path=str(SHOTS / f"{request.node.name}__FAILED{i or ''}.png"), full_page=True
                )
            except Exception:  # noqa: BLE001 (a best effort)
                pass
    context.close()


@pytest.fixture
def page(context) -> Page:
    return context.new_page()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.rep_call = report
    return report


class Shooter:
    """Full-page screenshots named after the test and the page."""

    def __init__(self, test: str):
        # test_tour[390x844] -> test_tour-390x844
        self.test = re.sub(r"[^A-Za-z0-9_.-]+", "-", test).strip("-")
        self.count = 0

    def __call__(self, page: Page, label: str | None = None) -> Path:
        self.count += 1
        if label is None:
            path = page.url.split("://", 1)[-1].split("/", 1)[-1].split("?")[0]
            label = path.removeprefix("dashboard/").strip("/") or "overview"
        label = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-")[:80]
        SHOTS.mkdir(parents=True, exist_ok=True)
        target = SHOTS / f"{self.test}__{self.count:02d}-{label}.png"
        page.screenshot(path=str(target), full_page=True)
        return target


@pytest.fixture
def shot(request) -> Shooter:
    return Shooter(request.node.name)


def sign_in(page: Page, server: Server, key: str) -> None:
    """Through the sign-in form; lands on the overview."""
    page.goto(server.url("/dashboard/"))
    assert page.url == server.url("/dashboard/login"), page.url
    page.fill("input[name=key]", key)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(server.url("/dashboard/"))


@pytest.fixture
def admin_page(page, server) -> Page:
    sign_in(page, server, server.admin_key)
    return page


@pytest.fixture
def admin(server) -> Api:
    return Api(server, server.admin_key)


def new_named_tenant(server: Server) -> tuple[str, str]:
    """A fresh tenant made by the admin; (its name, its owner key)."""
    name = "t" + secrets.token_hex(5)
    answer = Api(server, server.admin_key).ok(
        "POST", "/v1/memory/admin/tenants", {"name": name, "email": f"{name}@example.com"}
    )
    return name, answer["api_key"]


def new_tenant(server: Server) -> str:
    """A fresh tenant made by the admin; its owner key."""
    return new_named_tenant(server)[1]


def shoot(page: Page, name: str) -> None:
    """A full-page screenshot named `name` (without the test's name)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


@pytest.fixture
def receiver():
    hook = Receiver()
    yield hook
    hook.close()
