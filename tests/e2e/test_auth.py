"""Signing in and out, the operator's pages and who may see them, and the dashboard with
JavaScript off."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from conftest import new_tenant, sign_in, unique

TENANT_NAV = [
    ("Overview", "/dashboard/"),
    ("Collections", "/dashboard/collections"),
    ("Files & ingest", "/dashboard/files"),
    ("Connectors & mail", "/dashboard/connectors"),
    ("Keys & agents", "/dashboard/keys"),
    ("Webhook", "/dashboard/webhook"),
    ("Audit log", "/dashboard/audit"),
    ("Usage & spend", "/dashboard/usage"),
    ("Account", "/dashboard/account"),
]
OPERATOR_NAV = [
    ("Metrics", "/dashboard/operator/metrics"),
    ("Tenants", "/dashboard/operator/tenants"),
    ("Memory health", "/dashboard/operator/health"),
    ("Analytics", "/dashboard/operator/analytics"),
    ("Status", "/dashboard/operator/status"),
]
NOT_OPERATOR = "owner key of an admin-flagged tenant"


def nav(page):
    return page.get_by_role("navigation", name="Dashboard")


def test_sign_in_with_a_bad_key_then_in_and_out(page, server, shot):
    page.goto(server.url("/dashboard/collections"))
    assert page.url == server.url("/dashboard/login"), "no session: every page leads to sign-in"
    expect(page.locator("input[name=key]")).to_have_attribute("type", "password")
    shot(page, "login")

    page.fill("input[name=key]", "mv_this_key_does_not_exist_0000000000")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.get_by_role("button", name="Sign in").click()
    assert answer.value.status == 401
    expect(page.get_by_role("alert")).to_be_visible()
    expect(page.get_by_role("alert")).to_contain_text("(")  # the API's error code
    assert not [c for c in page.context.cookies() if c["name"] == "mv_session"]
    shot(page, "login-bad-key")

    page.fill("input[name=key]", server.admin_key)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(server.url("/dashboard/"))
    expect(page.locator("h1")).to_have_text("Overview")
    cookie = next(c for c in page.context.cookies() if c["name"] == "mv_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict", cookie
    assert page.evaluate("document.cookie") == "", "scripts cannot read the session"
    for label, _ in TENANT_NAV + OPERATOR_NAV:
        expect(nav(page).get_by_role("link", name=label, exact=True)).to_be_visible()
    expect(nav(page)).to_contain_text("Signed in as bootstrap")
    shot(page, "overview")

    nav(page).get_by_role("button", name="Sign out").click()
    page.wait_for_url(server.url("/dashboard/login"))
    assert not [c for c in page.context.cookies() if c["name"] == "mv_session"]
    page.goto(server.url("/dashboard/keys"))
    assert page.url == server.url("/dashboard/login"), "signed out: the session is gone"
    shot(page, "signed-out")


def test_operator_pages_for_the_admin_and_403_for_another_tenant(browser, page, server, shot):
    sign_in(page, server, server.admin_key)
    for label, path in OPERATOR_NAV:
        nav(page).get_by_role("link", name=label, exact=True).click()
        page.wait_for_url(server.url(path))
        expect(page.locator("h1")).to_be_visible()
        expect(page.get_by_role("alert")).to_have_count(0)
        shot(page, f"operator-{label}")
    answer = page.goto(server.url(path))
    assert answer.status == 200
    answer = page.goto(server.url("/status"))
    assert answer.status == 200 and "text/html" in answer.headers["content-type"]
    shot(page, "public-status")

    key = new_tenant(server)
    other = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        tenant_page = other.new_page()
        sign_in(tenant_page, server, key)
        expect(nav(tenant_page).get_by_role("link", name="Account", exact=True)).to_be_visible()
        for label, _ in OPERATOR_NAV:
            expect(nav(tenant_page).get_by_role("link", name=label, exact=True)).to_have_count(0)
        for label, path in OPERATOR_NAV:
            answer = tenant_page.goto(server.url(path))
            assert answer.status == 403, (path, answer.status)
            expect(tenant_page.get_by_role("alert")).to_contain_text(NOT_OPERATOR)
            expect(tenant_page.get_by_role("alert")).to_contain_text("admin_key_required")
        shot(tenant_page, "operator-refused")
        # The public status page needs no one.
        assert tenant_page.goto(server.url("/status")).status == 200
    finally:
        other.close()


def test_operator_refusal_says_operator_pages(browser, server, shot):
    """The refusal on a page is the API's own (admin_key_required)."""
    key = new_tenant(server)
    context = browser.new_context()
    try:
        page = context.new_page()
        sign_in(page, server, key)
        page.goto(server.url("/dashboard/operator/metrics"))
        shot(page, "operator-refused")
        expect(page.get_by_role("alert")).to_contain_text(
            "needs the owner key of an admin-flagged tenant", timeout=2000
        )
    finally:
        context.close()


def test_javascript_off_sign_in_and_browse(browser, server, admin, shot):
    collection = unique("nojs")
    memory = admin.ok(
        "POST",
        f"/v1/memory/collections/{collection}/memories",
        {"text": "The espresso machine on floor three needs descaling every month."},
    )
    admin.ok(
        "POST",
        f"/v1/memory/collections/{collection}/memories",
        {"text": "Visitors sign in at the front desk before 9am."},
    )
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        sign_in(page, server, server.admin_key)
        expect(page.locator("h1")).to_have_text("Overview")
        shot(page, "overview")
        nav(page).get_by_role("link", name="Collections", exact=True).click()
        page.get_by_role("link", name=collection, exact=True).click()
        expect(page.locator("h1")).to_have_text(f"Collection {collection}")
        shot(page, "collection")
        page.get_by_role("link", name="Browse and search memories").click()
        expect(page.locator("h1")).to_have_text(f"Memories of {collection}")
        expect(page.locator("tbody tr")).to_have_count(2)
        shot(page, "memories")

        page.fill("input[name=q]", "espresso")
        page.select_option("select[name=mode]", "text")
        page.get_by_role("button", name="Apply").click()
        page.wait_for_url("**q=espresso**")
        expect(page.locator("tbody tr")).to_have_count(1)
        shot(page, "search")

        page.get_by_role("link", name="The espresso machine").click()
        expect(page.locator("p.text")).to_have_text(memory["text"])
        shot(page, "memory")
        # A change is a plain form post without script too.
        page.get_by_role("button", name="Pin", exact=True).click()
        expect(page.get_by_role("status")).to_have_text("Pinned.")
        expect(page.get_by_role("button", name="Unpin", exact=True)).to_be_visible()
        shot(page, "memory-pinned")
        assert admin.ok("GET", f"/v1/memory/collections/{collection}/memories/{memory['id']}")["pinned"]
    finally:
        context.close()
