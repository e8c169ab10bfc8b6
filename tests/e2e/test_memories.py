"""Memories in the browser: find, edit, pin, archive and restore one; review a
contradiction; drop a file and open the memory it made."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from conftest import unique


def button(page, name: str):
    return page.get_by_role("button", name=name, exact=True)


def notice(page):
    return page.locator("main [role=status]")


def test_find_edit_pin_archive_and_restore_a_memory(admin_page, server, admin, watch, shot):
    page = admin_page
    collection = unique("notes")
    api_path = f"/v1/memory/collections/{collection}/memories"
    memory = admin.ok(
        "POST", api_path, {"text": "The staging database runs on host db-staging-7 in Frankfurt."}
    )
    admin.ok("POST", api_path, {"text": "Lunch for the team is ordered every Friday at noon."})
    admin.ok("POST", api_path, {"text": "The office plants are watered on Mondays."})

    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Collections").click()
    expect(page.locator("h1")).to_have_text("Collections")
    shot(page, "collections")
    page.get_by_role("link", name=collection, exact=True).click()
    expect(page.locator("h1")).to_have_text(f"Collection {collection}")
    shot(page, "collection")
    page.get_by_role("link", name="Browse and search memories").click()
    expect(page.locator("h1")).to_have_text(f"Memories of {collection}")
    expect(page.locator("tbody tr")).to_have_count(3)

    # Search by meaning (hybrid, the default mode).
    page.fill("input[name=q]", "where does the staging database run")
    button(page, "Apply").click()
    page.wait_for_url(re.compile(r"q=where"))
    first = page.locator("tbody tr").first
    expect(first).to_contain_text("db-staging-7")
    expect(page.locator("thead")).to_contain_text("Score")
    shot(page, "search")

    first.get_by_role("link").click()
    page.wait_for_url(f"**/memories/{memory['id']}")
    expect(page.locator("h1")).to_have_text("Memory")
    expect(page.locator("p.text")).to_have_text(memory["text"])
    expect(page.locator("dl.facts")).to_contain_text(memory["id"])
    shot(page, "memory")

    # Edit text, category and importance.
    edited = "The staging database runs on host db-staging-9 in Frankfurt."
    page.fill("#edit-text", edited)
    page.fill("form:has(#edit-text) input[name=category]", "infrastructure")
    page.fill("form:has(#edit-text) input[name=importance]", "0.8")
    button(page, "Save").click()
    expect(notice(page)).to_have_text("Saved.")
    expect(page.locator("p.text")).to_have_text(edited)
    facts = page.locator("dl.facts")
    expect(facts).to_contain_text("infrastructure")
    expect(facts).to_contain_text("0.80")
    shot(page, "memory-edited")

    button(page, "Pin").click()
    expect(notice(page)).to_have_text("Pinned.")
    expect(page.locator("main .panel .badge", has_text="pinned")).to_be_visible()
    expect(button(page, "Unpin")).to_be_visible()

    button(page, "Archive").click()
    expect(notice(page)).to_have_text("Archived.")
    expect(page.locator("main .panel .badge", has_text="archived")).to_be_visible()
    shot(page, "memory-pinned-archived")
    stored = admin.ok("GET", f"{api_path}/{memory['id']}")
    assert stored["text"] == edited and stored["category"] == "infrastructure"
    assert stored["pinned"] and stored["archived"] and abs(stored["importance"] - 0.8) < 1e-9

    # Archived: out of the default list, in the archived one.
    page.goto(server.url(f"/dashboard/collections/{collection}/memories"))
    expect(page.locator("tbody tr")).to_have_count(2)
    page.select_option("select[name=status]", "archived")
    button(page, "Apply").click()
    page.wait_for_url(re.compile(r"status=archived"))
    expect(page.locator("tbody tr")).to_have_count(1)
    expect(page.locator("tbody tr")).to_contain_text("db-staging-9")
    shot(page, "memories-archived")
    page.locator("tbody tr").get_by_role("link").click()
    button(page, "Restore").click()
    expect(notice(page)).to_have_text("Restored.")
    expect(page.locator("main .panel .badge", has_text="current")).to_be_visible()
    assert not admin.ok("GET", f"{api_path}/{memory['id']}")["archived"]

    # The edited text is what search finds now.
    page.goto(server.url(f"/dashboard/collections/{collection}/memories?q=db-staging-9&mode=text"))
    expect(page.locator("tbody tr")).to_have_count(1)
    expect(page.locator("tbody tr")).to_contain_text(edited)

    # Bulk: archive two, then restore them.
    page.goto(server.url(f"/dashboard/collections/{collection}/memories"))
    page.locator("tbody tr", has_text="Lunch").locator("input[name=ids]").check()
    page.locator("tbody tr", has_text="plants").locator("input[name=ids]").check()
    button(page, "Archive selected").click()
    expect(notice(page)).to_have_text("Archived.")
    expect(page.locator("tbody tr .badge", has_text="archived")).to_have_count(2)
    shot(page, "memories-bulk-archived")
    page.locator("input[data-select-all]").check()
    button(page, "Restore selected").click()
    expect(notice(page)).to_have_text("Restored.")
    expect(page.locator("tbody tr .badge", has_text="archived")).to_have_count(0)

    # Add one through the form, then delete it (a confirm() first).
    page.fill("#new-text", "The fire drill is on the first Thursday of each quarter.")
    button(page, "Add").click()
    expect(notice(page)).to_have_text("Created.")
    expect(page.locator("p.text")).to_have_text("The fire drill is on the first Thursday of each quarter.")
    added = page.url.split("/memories/")[1].split("?")[0]
    expect(page.locator("dl.facts")).to_contain_text("dashboard")  # its source
    button(page, "Delete").click()
    expect(notice(page)).to_have_text("Deleted.")
    assert any("Delete this memory" in message for message in watch.dialogs), watch.dialogs
    assert admin.call("GET", f"{api_path}/{added}")[0] == 404
    shot(page, "memories-after-delete")


def test_a_contradiction_is_reviewed_and_its_chain_shown(admin_page, server, admin, shot):
    page = admin_page
    collection = unique("prefs")
    for content in ("My favorite color is blue.", "My favorite color is green."):
        admin.ok("POST", f"/v1/memory/collections/{collection}/remember?sync=true", {"content": content})
    pairs = admin.ok("GET", f"/v1/memory/collections/{collection}/contradictions")["contradictions"]
    assert len(pairs) == 1, pairs
    newer, older = pairs[0]["current"], pairs[0]["superseded"]

    page.goto(server.url(f"/dashboard/collections/{collection}"))
    page.get_by_role("link", name="Contradictions").click()
    expect(page.locator("h1")).to_have_text(f"Contradictions in {collection}")
    pair = page.locator("div.pair")
    expect(pair).to_have_count(1)
    expect(pair.locator("> div").nth(0)).to_contain_text("newer, current")
    expect(pair.locator("> div").nth(0)).to_contain_text("My favorite color is green.")
    expect(pair.locator("> div").nth(1)).to_contain_text("older, superseded")
    expect(pair.locator("> div").nth(1)).to_contain_text("My favorite color is blue.")
    expect(page.locator("main")).to_contain_text("user/favorite_color")
    shot(page, "contradictions")

    # The older one: superseded, with the link to the newer and the slot's history.
    pair.locator("> div").nth(1).get_by_role("link", name="Open").click()
    page.wait_for_url(f"**/memories/{older['id']}")
    expect(page.locator("main .panel .badge").first).to_have_text("superseded")
    expect(page.locator("dl.facts")).to_contain_text("Superseded by")
    expect(page.locator("dl.facts").get_by_role("link", name=newer["id"])).to_be_visible()
    timeline = page.locator(".timeline .entry")
    expect(timeline).to_have_count(2)
    expect(page.locator(".timeline .entry.current")).to_contain_text("green")
    expect(page.locator("main h2", has_text="History of")).to_contain_text("user/favorite_color")
    shot(page, "older-with-history")

    # Archive the newer from the review.
    page.go_back()
    expect(page.locator("h1")).to_have_text(f"Contradictions in {collection}")
    button(page, "Archive the newer").click()
    expect(notice(page)).to_have_text("Archived.")
    page.wait_for_url(f"**/memories/{newer['id']}**")
    expect(page.locator("main .panel .badge", has_text="archived")).to_be_visible()
    expect(page.locator(".timeline .entry")).to_have_count(2)
    shot(page, "newer-archived")
    assert admin.ok("GET", f"/v1/memory/collections/{collection}/memories/{newer['id']}")["archived"]


def test_the_older_value_is_restored_and_the_chain_keeps_all_three(admin_page, server, admin, shot):
    page = admin_page
    collection = unique("prefs")
    for content in ("My favorite color is blue.", "My favorite color is green."):
        admin.ok("POST", f"/v1/memory/collections/{collection}/remember?sync=true", {"content": content})
    page.goto(server.url(f"/dashboard/collections/{collection}/contradictions"))
    button(page, "Restore the older").click()
    expect(notice(page)).to_contain_text("The older value is current again")
    expect(page.locator("main .panel .badge").first).to_have_text("current")
    expect(page.locator(".timeline .entry")).to_have_count(3)
    expect(page.locator(".timeline .entry.current")).to_contain_text("blue")
    shot(page, "older-restored")
    results = admin.ok("POST", f"/v1/memory/collections/{collection}/search",
                       {"query": "favorite color", "mode": "text"})["results"]
    texts = [result["text"] for result in results]
    assert texts == ["My favorite color is blue."], texts
    page.goto(server.url(f"/dashboard/collections/{collection}/contradictions"))
    expect(page.locator("div.pair")).to_have_count(2)


def test_a_dropped_file_is_read_and_its_batch_finishes(admin_page, server, admin, tmp_path, shot):
    page = admin_page
    collection = unique("docs")
    admin.ok("POST", "/v1/memory/collections", {"name": collection})
    runbook = tmp_path / "backup-runbook.md"
    runbook.write_text(
        "# Backup runbook\n\nThe backup job runs nightly at 02:30 UTC and keeps fourteen days "
        "of snapshots in the cold bucket.\n"
    )

    page.get_by_role("navigation", name="Dashboard").get_by_role("link", name="Files & ingest").click()
    page.select_option("select[name=collection]", collection)
    button(page, "Choose").click()
    page.wait_for_url(re.compile(rf"collection={collection}"))
    expect(page.locator("label[for=files]")).to_contain_text(collection)
    page.set_input_files("input#files", str(runbook))
    shot(page, "files")
    button(page, "Upload").click()
    page.wait_for_url(re.compile(r"/dashboard/files/batches/[^/?]+$"))
    expect(page.locator("h1")).to_contain_text("Batch ")
    # The panel polls itself (htmx, every 2 s) until the batch is complete.
    expect(page.locator("#batch .badge", has_text="complete")).to_be_visible(timeout=60_000)
    row = page.locator("#batch tbody tr", has_text="backup-runbook.md")
    expect(row.locator(".badge")).to_have_text("done")
    expect(page.locator("#batch .card", has_text="done")).to_contain_text("1")
    shot(page, "batch-complete")

    # (Clicking the link inside the panel is test_a_batch_links_to_its_memories.)
    href = row.get_by_role("link", name="memory 1").get_attribute("href")
    page.goto(server.url("/dashboard/" + href))
    expect(page.locator("h1")).to_have_text("Memory")
    expect(page.locator("p.text")).to_contain_text("02:30 UTC")
    expect(page.locator("main .panel", has_text="From a file")).to_contain_text("backup-runbook.md")
    shot(page, "memory-from-file")
    page.get_by_role("link", name="its ingest").click()
    expect(page.locator("h1")).to_have_text("Files & ingest")
    expect(page.locator("main table")).to_contain_text("backup-runbook.md")


def test_a_batch_links_to_its_memories(admin_page, server, admin, tmp_path, shot):
    page = admin_page
    collection = unique("drop")
    admin.ok("POST", "/v1/memory/collections", {"name": collection})
    note = tmp_path / "parking.txt"
    note.write_text("Visitor parking is on level minus two, spaces 40 to 55.\n")
    page.goto(server.url(f"/dashboard/files?collection={collection}"))
    page.set_input_files("input#files", str(note))
    button(page, "Upload").click()
    page.wait_for_url(re.compile(r"/dashboard/files/batches/[^/?]+$"))
    expect(page.locator("#batch .badge", has_text="complete")).to_be_visible(timeout=60_000)
    page.get_by_role("link", name="memory 1").click()
    page.wait_for_url("**/memories/**")
    shot(page, "after-click")
    expect(page.locator("h1")).to_have_text("Memory", timeout=3000)


def test_health_cards_count_the_memories(admin_page, server, admin, shot):
    page = admin_page
    collection = unique("health")
    for content in ("My favorite color is blue.", "My favorite color is green."):
        admin.ok("POST", f"/v1/memory/collections/{collection}/remember?sync=true", {"content": content})
    health = admin.ok("GET", f"/v1/memory/collections/{collection}/health")
    assert health["total"] == 2 and health["supersessions"] == 1, health
    page.goto(server.url(f"/dashboard/collections/{collection}"))
    shot(page, "collection")
    cards = page.locator(".cards .card")
    expect(cards.filter(has_text="memories").locator(".n")).to_have_text("2", timeout=2000)
    expect(cards.filter(has_text="superseded").locator(".n")).to_have_text("1", timeout=2000)
    page.goto(server.url("/dashboard/"))
    shot(page, "overview")
    expect(page.locator("main")).not_to_contain_text("Nothing: no stale", timeout=2000)
