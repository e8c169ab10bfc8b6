"""A tour: every page of the navigation (and the pages one level below) at a laptop's
1280x800 and a phone's 390x844, each one screenshotted (these feed the README)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from conftest import DESKTOP, PHONE, Api, sign_in
from test_auth import OPERATOR_NAV, TENANT_NAV

COLLECTION = "handbook"
SEED = [
    "New engineers get a laptop on day one and meet their onboarding buddy on day two.",
    "The staging database is backed up nightly at 02:00 UTC and kept for fourteen days.",
    "Customer Acme renews its support contract every March.",
    "The on-call rotation changes every Monday at 10:00.",
]


@pytest.fixture(scope="module")
def seeded(server) -> str:
    """A collection with a few memories and a contradiction; the id of one memory."""
    admin = Api(server, server.admin_key)
    if admin.call("GET", f"/v1/memory/collections/{COLLECTION}")[0] == 404:
        admin.ok("POST", "/v1/memory/collections", {"name": COLLECTION, "description": "How the team works"})
        for text in SEED:
            admin.ok("POST", f"/v1/memory/collections/{COLLECTION}/memories", {"text": text, "container_tag": "team"})
        for content in ("I live in Berlin.", "I moved to Lisbon."):
            admin.ok("POST", f"/v1/memory/collections/{COLLECTION}/remember?sync=true", {"content": content})
    listed = admin.ok("GET", f"/v1/memory/collections/{COLLECTION}/memories")
    listed = listed if isinstance(listed, list) else listed["memories"]
    return next(m["id"] for m in listed if m["text"] == SEED[0])


def pages(memory_id: str) -> list[tuple[str, str]]:
    below = [
        ("collection", f"/dashboard/collections/{COLLECTION}"),
        ("memories", f"/dashboard/collections/{COLLECTION}/memories"),
        ("memory", f"/dashboard/collections/{COLLECTION}/memories/{memory_id}"),
        ("contradictions", f"/dashboard/collections/{COLLECTION}/contradictions"),
    ]
    return [(label, path) for label, path in TENANT_NAV + OPERATOR_NAV] + below


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280x800", "390x844"])
def test_tour_of_every_page(browser, server, seeded, viewport, shot):
    context = browser.new_context(viewport=viewport)
    errors: list[str] = []
    overflow: list[str] = []
    try:
        page = context.new_page()
        page.on("console", lambda m: m.type == "error" and errors.append(f"{page.url}: {m.text}"))
        page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
        page.goto(server.url("/dashboard/login"))
        shot(page, "login")
        sign_in(page, server, server.admin_key)
        for label, path in pages(seeded):
            answer = page.goto(server.url(path))
            assert answer.status == 200, (path, answer.status)
            expect(page.locator("h1")).to_have_count(1)
            expect(page.locator("h1")).to_be_visible()
            expect(page.get_by_role("alert")).to_have_count(0)
            wide = page.evaluate("document.documentElement.scrollWidth")
            if wide > viewport["width"]:
                overflow.append(f"{path}: {wide}px")
            shot(page, label)
        page.goto(server.url("/status"))
        shot(page, "public-status")
    finally:
        context.close()
    print(f"\ntour {viewport}: console errors {errors}; wider than the viewport: {overflow}")
    assert not [e for e in errors if "Content Security Policy" in e], errors


def test_no_page_is_wider_than_a_phone(browser, server, seeded, shot):
    """Every page of the tour fits 390px (tables scroll inside their .table-wrap)."""
    context = browser.new_context(viewport=PHONE)
    try:
        page = context.new_page()
        sign_in(page, server, server.admin_key)
        wide = {}
        for _, path in pages(seeded):
            page.goto(server.url(path))
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > PHONE["width"]:
                wide[path] = width
                shot(page, path.strip("/").replace("/", "-") or "overview")
        assert not wide, f"wider than {PHONE['width']}px: {wide}"
    finally:
        context.close()
