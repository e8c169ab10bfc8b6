"""Connectors: an OAuth connection to the local fake of Notion (fakes.FakeNotion), synced
from its page; a connection made with a token."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from conftest import unique
from fakes import FakeNotion

# Where the OAuth callback sends the browser: the connection's dashboard page (before,
# the API's own landing page; both are accepted).
LANDED = re.compile(
    r"/dashboard/connectors/(?P<a>[^/?]+)\?connected=|/oauth/notion/connected\?connection=(?P<b>[^&]+)"
)


def button(page, name: str):
    return page.get_by_role("button", name=name, exact=True)


def connection_id(url: str) -> str:
    match = LANDED.search(url)
    assert match, url
    return match.group("a") or match.group("b")


def sync_and_check(page, server, admin, notion: FakeNotion, collection: str, id: str, shot) -> None:
    """On the connection's page: Sync now, a run with one record, the memory it made."""
    page.goto(server.url(f"/dashboard/connectors/{id}"))
    expect(page.locator("dl.facts")).to_contain_text("notion")
    expect(page.locator("dl.facts")).to_contain_text(collection)
    expect(page.locator("main")).to_contain_text("No run yet.")
    button(page, "Sync now").click()
    expect(page.locator("main [role=status]").first).to_have_text("Sync finished.", timeout=30_000)
    runs = page.locator("main table tbody tr")
    expect(runs).to_have_count(1)
    run = runs.first
    expect(run.locator("td").nth(1)).to_have_text("manual")
    expect(run.locator("td").nth(3)).to_have_text("1")  # synced
    expect(run.locator("td").nth(6)).to_have_text("")  # no error
    shot(page, "connection-synced")
    assert "POST /v1/search" in notion.api_calls()
    assert f"GET /v1/blocks/{notion.page_id}/children?page_size=100" in notion.api_calls()

    memories = admin.ok("GET", f"/v1/memory/collections/{collection}/memories")
    memories = memories if isinstance(memories, list) else memories.get("memories", [])
    made = [m for m in memories if "Lisbon" in m["text"]]
    assert made, memories
    page.goto(server.url(f"/dashboard/collections/{collection}/memories/{made[0]['id']}"))
    provenance = page.locator("main .panel", has_text="From a connector")
    expect(provenance).to_contain_text(FakeNotion.PAGE_TITLE)
    expect(provenance.get_by_role("link", name=id)).to_be_visible()
    shot(page, "memory-from-notion")


def test_oauth_from_the_dashboard_form_then_sync_now(admin_page, server, admin, notion, shot):
    page = admin_page
    collection = unique("wiki")
    page.goto(server.url("/dashboard/connectors"))
    expect(page.locator("h1")).to_have_text("Connectors & mail")
    shot(page, "connectors")
    form = page.locator("form[action='connectors/oauth']")
    form.locator("select[name=provider]").select_option("notion")
    form.locator("input[name=collection]").fill(collection)
    form.locator("input[name=name]").fill("Team wiki")
    form.get_by_role("button", name="Connect").click()
    # A link to the provider, not a redirect of the form post (the page's CSP allows
    # form posts to its own origin only).
    onward = page.get_by_role("link", name="Continue to notion")
    expect(onward).to_be_visible(timeout=15_000)
    shot(page, "continue")
    try:
        with page.expect_navigation(url=LANDED, timeout=15_000):
            onward.click()
    finally:
        shot(page, "after-connect")
    id = connection_id(page.url)
    if "/dashboard/connectors/" not in page.url:
        page.goto(server.url(f"/dashboard/connectors/{id}"))
    else:
        expect(page.locator("main [role=status]")).to_contain_text("Connected to notion")
    expect(page.locator("h1")).to_have_text("Connector Team wiki")
    shot(page, "connected")
    assert notion.token_requests and notion.token_requests[-1]["grant_type"] == "authorization_code"
    sync_and_check(page, server, admin, notion, collection, id, shot)

    # Disconnect (after a confirm()).
    page.goto(server.url(f"/dashboard/connectors/{id}"))
    button(page, "Disconnect").click()
    expect(page.locator("main [role=status]")).to_have_text("Removed.")
    expect(page.get_by_role("link", name="Team wiki")).to_have_count(0)
    assert admin.call("GET", f"/v1/memory/connections/{id}")[0] == 404


def test_oauth_started_through_the_api_lands_on_the_connection_page(admin_page, server, admin, notion, shot):
    """The consent round trip without the dashboard's form (the authorize URL opened
    directly), then the same connection page, Sync now and its run."""
    page = admin_page
    collection = unique("notes")
    started = admin.ok(
        "GET", f"/v1/memory/connections/oauth/notion/start?collection={collection}&name=Handbook"
    )
    page.goto(started["authorize_url"])
    page.wait_for_url(LANDED)
    id = connection_id(page.url)
    if "/dashboard/connectors/" in page.url:
        expect(page.locator("h1")).to_have_text("Connector Handbook")
        expect(page.locator("main [role=status]")).to_contain_text("Connected to notion")
    shot(page, "landed")
    sync_and_check(page, server, admin, notion, collection, id, shot)
    page.goto(server.url("/dashboard/connectors"))
    row = page.locator("tbody tr", has_text="Handbook")
    expect(row).to_contain_text(collection)
    expect(row.locator(".badge")).to_have_text("active")
    shot(page, "connectors")


def test_a_connection_made_with_a_token_shows_its_failed_run(admin_page, server, shot):
    """A Notion token the provider does not know: the run fails, its error shown."""
    page = admin_page
    collection = unique("tokens")
    page.goto(server.url("/dashboard/connectors"))
    form = page.locator("form[action=connectors]")
    form.locator("select[name=provider]").select_option("notion")
    form.locator("input[name=collection]").fill(collection)
    form.locator("input[name=name]").fill("Bad token")
    form.locator("input[name=token]").fill("ntn_not_a_token_the_fake_issued")
    button(page, "Create connection").click()
    expect(page.locator("h1")).to_have_text("Connector Bad token")
    expect(page.locator("main [role=status]")).to_have_text("Created.")
    # The sync answers when its run has ended; leaving before that would abandon the
    # answer (the run itself goes on), so wait for the page it leads to.
    button(page, "Sync now").click()
    expect(page.locator("main [role=status]").first).to_have_text("Sync finished.", timeout=30_000)
    page.goto(page.url.split("?")[0])
    expect(page.locator("main table tbody tr")).to_have_count(1)
    expect(page.locator("main table tbody tr")).to_contain_text("401")
    shot(page, "failed-run")
