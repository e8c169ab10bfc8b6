"""Keys and grants, the webhook, and the account pages (usage cap, audit log, export,
import, deletion)."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from playwright.sync_api import expect

from conftest import Api, new_named_tenant, new_tenant, sign_in, unique


def button(page, name: str):
    return page.get_by_role("button", name=name, exact=True)


def notice(page):
    return page.locator("main [role=status]")


def test_an_agent_key_is_created_granted_and_revoked(admin_page, server, admin, watch, shot):
    page = admin_page
    collection = unique("crm")
    admin.ok("POST", "/v1/memory/collections", {"name": collection, "description": "Customer notes"})
    label = unique("sales-bot")

    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Keys & agents").click()
    expect(page.locator("h1")).to_have_text("Keys & agents")
    page.fill("form:has(input[name=label]) input[name=label]", label)
    button(page, "Create key").click()
    secret_box = page.locator("code#new-key")
    expect(secret_box).to_be_visible()
    secret = secret_box.inner_text().strip()
    assert secret.startswith("mv_"), secret
    expect(page.locator("main [role=status]")).to_contain_text("shown only this once")
    row = page.locator("tbody tr", has_text=label)
    expect(row.locator(".badge", has_text="active")).to_be_visible()
    expect(row).not_to_contain_text(secret)
    shot(page, "key-created")
    # Shown once: the list does not show it again.
    page.reload()
    expect(page.locator("code#new-key")).to_have_count(0)
    assert secret not in page.content()
    assert Api(server, secret).call("GET", "/v1/memory/collections")[0] == 200

    key_id = next(k["id"] for k in admin.ok("GET", "/v1/memory/keys")["keys"] if k["label"] == label)

    # Grant it the collection, read and write.
    page.goto(server.url(f"/dashboard/collections/{collection}"))
    page.select_option("select[name=agent_key_id]", key_id)
    page.locator("input[name=can_write]").check()
    button(page, "Grant").click()
    expect(notice(page)).to_have_text("Grant saved.")
    expect(page.locator("main .badge", has_text="restricted")).to_be_visible()
    grant_row = page.locator("tbody tr", has_text=key_id)
    expect(grant_row).to_contain_text(label)
    expect(grant_row.locator("td").nth(1)).to_have_text("yes")
    expect(grant_row.locator("td").nth(2)).to_have_text("yes")
    shot(page, "collection-granted")
    grants = admin.ok("GET", f"/v1/memory/collections/{collection}/grants")["grants"]
    assert [(g["agent_key_id"], g["can_read"], g["can_write"]) for g in grants] == [(key_id, True, True)]

    # The keys page lists the grant.
    page.goto(server.url("/dashboard/keys"))
    row = page.locator("tbody tr", has_text=label)
    expect(row).to_contain_text(f"{collection} (read+write)")

    # Revoke (after a confirm()).
    row.get_by_role("button", name="Revoke").click()
    expect(notice(page)).to_contain_text("Key revoked")
    assert any("Revoke this key" in message for message in watch.dialogs), watch.dialogs
    expect(page.locator("tbody tr", has_text=label).locator(".badge", has_text="revoked")).to_be_visible()
    expect(page.locator("tbody tr", has_text=label).get_by_role("button", name="Revoke")).to_have_count(0)
    shot(page, "key-revoked")
    status, body = Api(server, secret).call("GET", "/v1/memory/collections")
    assert status == 401, (status, body)


def test_an_agent_key_signs_in_to_what_it_may_see(browser, server, admin, shot):
    """An agent key's session: its label, no owner-only pages."""
    label = unique("reader")
    made = admin.ok("POST", "/v1/memory/keys", {"label": label, "read_only": True})
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        sign_in(page, server, made["key"])
        expect(page.get_by_role("navigation", name="Dashboard")).to_contain_text(f"{label} (read-only)")
        shot(page, "overview")
        answer = page.goto(server.url("/dashboard/keys"))
        assert answer.status == 403
        expect(page.get_by_role("alert")).to_contain_text("owner_key_required")
        page.goto(server.url("/dashboard/collections"))
        expect(page.locator("form[action=collections]")).to_have_count(0)  # read-only: no create form
        shot(page, "collections")
    finally:
        context.close()


def test_a_webhook_is_set_and_a_signed_delivery_arrives(page, server, receiver, watch, shot):
    key = new_tenant(server)
    sign_in(page, server, key)
    page.goto(server.url("/dashboard/webhook"))
    expect(page.locator("h1")).to_have_text("Webhook")
    shot(page, "webhook-empty")
    page.fill("input[name=url]", receiver.url)
    button(page, "Save and show the secret").click()
    secret_box = page.locator("code#webhook-secret")
    expect(secret_box).to_be_visible()
    secret = secret_box.inner_text().strip()
    assert secret.startswith("whsec_"), secret
    expect(page.locator("dl.facts")).to_contain_text(receiver.url)
    expect(page.locator("dl.facts")).to_contain_text("memory.created")
    shot(page, "webhook-set")
    page.reload()
    expect(page.locator("code#webhook-secret")).to_have_count(0)

    # A memory made in the dashboard is announced, signed with that secret.
    collection = unique("hooks")
    Api(server, key).ok("POST", "/v1/memory/collections", {"name": collection})
    page.goto(server.url(f"/dashboard/collections/{collection}/memories"))
    page.fill("#new-text", "The printer on floor two jams on A3 paper.")
    button(page, "Add").click()
    expect(notice(page)).to_have_text("Created.")
    delivery = receiver.wait_for(lambda r: b"memory.created" in r.body)
    signature = delivery.headers.get("x-service-signature")
    assert signature, delivery.headers
    expected = hmac.new(secret.encode(), delivery.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(signature, expected), (signature, expected)
    event = json.loads(delivery.body)
    assert "The printer on floor two" in json.dumps(event)

    # The webhook page lists the attempt and how it went.
    page.goto(server.url("/dashboard/webhook"))
    attempts = page.locator("#deliveries tbody tr")
    expect(attempts.first).to_contain_text("memory.created", timeout=15_000)
    expect(attempts.first).to_contain_text("delivered")
    expect(attempts.first).to_contain_text(delivery.headers.get("x-service-delivery"))
    shot(page, "webhook-deliveries")

    # Remove it (after a confirm()).
    page.goto(server.url("/dashboard/webhook"))
    button(page, "Remove the webhook").click()
    expect(notice(page)).to_have_text("Removed.")
    assert any("Remove the webhook" in message for message in watch.dialogs)
    expect(page.locator("main .empty")).to_contain_text("No webhook")
    shot(page, "webhook-removed")


def test_usage_cap_audit_log_export_import_and_account_deletion(page, server, tmp_path, shot):
    name, key = new_named_tenant(server)
    api = Api(server, key)
    api.ok("POST", "/v1/memory/collections/journal/memories", {"text": "Tide tables are posted at the harbour office."})
    sign_in(page, server, key)

    # Usage: set a monthly cap.
    page.goto(server.url("/dashboard/usage"))
    expect(page.locator("h1")).to_have_text("Usage & spend")
    page.fill("input[name=monthly_usd]", "12.5")
    button(page, "Save the cap").click()
    expect(page.locator("input[name=monthly_usd]")).to_have_value("12.50")
    expect(page.locator(".card", has_text="monthly cap")).to_contain_text("$12.50")
    assert api.ok("GET", "/v1/memory/spend-cap")["monthly_usd"] == 12.5
    shot(page, "usage")

    # Audit log: the changes just made, filterable.
    page.goto(server.url("/dashboard/audit"))
    expect(page.locator("h1")).to_have_text("Audit log")
    expect(page.locator("main table")).to_contain_text("journal")
    shot(page, "audit")
    actions = page.locator("select[name=action] option").all_inner_texts()
    picked = next(a for a in actions if a and a != "any")
    page.select_option("select[name=action]", picked)
    button(page, "Filter").click()
    page.wait_for_url("**action=**")
    cells = page.locator("main tbody tr td code").all_inner_texts()
    assert cells and all(cell == picked for cell in cells), (picked, cells)
    shot(page, "audit-filtered")

    # Account: who, export (a JSON download), import.
    page.goto(server.url("/dashboard/account"))
    expect(page.locator("dl.facts")).to_contain_text(name)
    shot(page, "account")
    # (Clicking the link is test_the_export_link_downloads; here, its target.)
    href = page.get_by_role("link", name="Download the export").get_attribute("href")
    export = page.request.get(server.url("/dashboard/" + href))
    assert export.status == 200
    assert export.headers["content-type"].startswith("application/json")
    assert "attachment" in export.headers["content-disposition"]
    assert "Tide tables" in json.dumps(export.json())

    upload = tmp_path / "import.json"
    upload.write_text(json.dumps({"memories": [{"text": "The harbour ferry leaves at 07:15 on weekdays."}]}))
    page.set_input_files("#import-file", str(upload))
    page.fill("#into", "imported")
    button(page, "Import").click()
    expect(page.locator("h1")).to_have_text("Import")
    expect(page.locator("main .notice.ok")).to_contain_text("Imported 1 memories")
    expect(page.get_by_role("link", name="imported")).to_be_visible()
    shot(page, "imported")
    listed = api.ok("GET", "/v1/memory/collections/imported/memories")
    assert "07:15" in json.dumps(listed)

    # A large import runs in the background; its page follows it to the end by itself.
    large = tmp_path / "large.json"
    large.write_text(json.dumps({"memories": [
        {"text": f"Berth {index} at the harbour is reserved for the pilot boat on day {index}."}
        for index in range(1_001)
    ]}))
    page.goto(server.url("/dashboard/account"))
    page.set_input_files("#import-file", str(large))
    page.fill("#into", "harbour")
    button(page, "Import").click()
    page.wait_for_url("**/dashboard/account/imports/**")
    expect(page.locator("h1")).to_have_text("Import")
    expect(page.locator("#import dl.facts")).to_contain_text("done", timeout=90_000)
    expect(page.locator("#import dl.facts")).to_contain_text("1001 of 1001 imported")
    expect(page.get_by_role("link", name="harbour")).to_be_visible()
    shot(page, "import-large-done")

    # Deletion with the account's name typed (a wrong name: test_refused_changes.py).
    page.goto(server.url("/dashboard/account"))
    page.fill("form[action='account/delete'] input[name=confirm]", name)
    button(page, "Delete the account").click()
    expect(page.locator("h1")).to_have_text("The account is being erased")
    shot(page, "deleted")
    assert api.call("GET", "/v1/memory/collections")[0] == 401
    page.goto(server.url("/dashboard/"))
    assert page.url == server.url("/dashboard/login")


def test_the_export_link_downloads(page, server, shot):
    key = new_tenant(server)
    Api(server, key).ok("POST", "/v1/memory/collections/journal/memories", {"text": "Export me."})
    sign_in(page, server, key)
    page.goto(server.url("/dashboard/account"))
    try:
        with page.expect_download(timeout=3000) as download:
            page.get_by_role("link", name="Download the export").click()
    finally:
        shot(page, "after-click")
    assert download.value.suggested_filename.endswith(".json"), download.value.suggested_filename
