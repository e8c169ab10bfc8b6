"""Collections: create, describe and delete one; a change the API refuses shows its error."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from conftest import sign_in, unique


def button(page, name: str):
    return page.get_by_role("button", name=name, exact=True)


def notice(page):
    return page.locator("main [role=status]")


def test_a_collection_is_created_described_and_deleted(admin_page, server, admin, watch, shot):
    page = admin_page
    name = unique("projects")
    page.goto(server.url("/dashboard/collections"))
    page.fill("form[action=collections] input[name=name]", name)
    page.fill("form[action=collections] input[name=description]", "Everything about current projects")
    button(page, "Create").click()
    expect(page.locator("h1")).to_have_text(f"Collection {name}")
    expect(notice(page)).to_have_text("Created.")
    expect(page.locator("#description")).to_have_value("Everything about current projects")
    shot(page, "created")
    assert admin.ok("GET", f"/v1/memory/collections/{name}")["description"] == "Everything about current projects"

    page.fill("#description", "Projects of the platform team")
    button(page, "Save").click()
    expect(notice(page)).to_have_text("Saved.")
    expect(page.locator("#description")).to_have_value("Projects of the platform team")
    page.goto(server.url("/dashboard/collections"))
    expect(page.locator("tbody tr", has_text=name)).to_contain_text("Projects of the platform team")
    shot(page, "list")

    page.goto(server.url(f"/dashboard/collections/{name}"))
    page.fill("form[action$='/delete'] input[name=confirm]", name)
    button(page, "Delete collection").click()
    expect(page.locator("h1")).to_have_text("Collections")
    expect(notice(page)).to_have_text("Deleted.")
    assert any("Delete this collection" in message for message in watch.dialogs), watch.dialogs
    expect(page.get_by_role("link", name=name, exact=True)).to_have_count(0)
    assert admin.call("GET", f"/v1/memory/collections/{name}")[0] == 404


def refuse_a_deletion(page, server, admin, name: str) -> None:
    admin.ok("POST", "/v1/memory/collections", {"name": name})
    page.goto(server.url(f"/dashboard/collections/{name}"))
    page.fill("form[action$='/delete'] input[name=confirm]", name + "-typo")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        button(page, "Delete collection").click()
    assert answer.value.status == 422


def test_a_refused_change_shows_its_error_without_javascript(browser, server, admin, shot):
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        sign_in(page, server, server.admin_key)
        name = unique("keepme")
        refuse_a_deletion(page, server, admin, name)
        expect(page.locator("h1")).to_have_text("That did not work")
        expect(page.get_by_role("alert")).to_contain_text(f"type the collection's name ({name})")
        shot(page, "refused")
        assert admin.call("GET", f"/v1/memory/collections/{name}")[0] == 200
    finally:
        context.close()


def test_a_refused_change_shows_its_error_with_javascript(admin_page, server, admin, shot):
    page = admin_page
    name = unique("keepme")
    refuse_a_deletion(page, server, admin, name)
    page.wait_for_timeout(500)
    shot(page, "refused")
    assert admin.call("GET", f"/v1/memory/collections/{name}")[0] == 200
    expect(page.get_by_role("alert")).to_contain_text(f"type the collection's name ({name})", timeout=2000)
