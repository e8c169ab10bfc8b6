"""A form posted from another origin changes nothing; hostile text stays text under a
strict Content-Security-Policy."""

from __future__ import annotations

import html

from playwright.sync_api import expect

from conftest import unique
from fakes import Site

HOSTILE = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'


def attacker_form(server, fields: dict[str, str]) -> str:
    inputs = "".join(
        f'<input name="{html.escape(name)}" value="{html.escape(value)}">' for name, value in fields.items()
    )
    return (
        "<!doctype html><title>Win a prize</title>"
        f'<form id="f" method="post" action="{server.url("/dashboard/collections")}">{inputs}</form>'
    )


def test_a_cross_origin_form_post_is_refused(admin_page, server, admin, shot):
    page = admin_page
    # The page's own token, so that only the origin check can stop the forged post.
    page.goto(server.url("/dashboard/collections"))
    token = page.locator("form[action=collections] input[name=csrf]").input_value()
    assert len(token) == 64

    # Cross-site (localhost vs 127.0.0.1): SameSite=Strict keeps the session cookie home.
    planted = unique("planted")
    site = Site(attacker_form(server, {"csrf": token, "name": planted}), host="localhost")
    try:
        page.goto(site.url)
        with page.expect_navigation():
            page.evaluate("document.getElementById('f').submit()")
        assert page.url == server.url("/dashboard/login"), page.url
        shot(page, "cross-site")
    finally:
        site.close()
    assert admin.call("GET", f"/v1/memory/collections/{planted}")[0] == 404

    # Same site, another origin (another port of 127.0.0.1): the cookie rides along, the
    # Origin check refuses.
    planted_too = unique("planted")
    site = Site(attacker_form(server, {"csrf": token, "name": planted_too}))
    try:
        page.goto(site.url)
        with page.expect_response(lambda r: r.url == server.url("/dashboard/collections")) as answer:
            page.evaluate("document.getElementById('f').submit()")
        assert answer.value.status == 403
        page.wait_for_load_state()
        expect(page.get_by_role("alert")).to_contain_text("cross_origin_refused")
        expect(page.get_by_role("alert")).to_contain_text(site.url.rstrip("/"))
        shot(page, "cross-origin")
    finally:
        site.close()
    assert admin.call("GET", f"/v1/memory/collections/{planted_too}")[0] == 404

    # The same form from the dashboard itself goes through.
    control = unique("control")
    page.goto(server.url("/dashboard/collections"))
    page.fill("form[action=collections] input[name=name]", control)
    page.get_by_role("button", name="Create", exact=True).click()
    expect(page.locator("h1")).to_have_text(f"Collection {control}")
    assert admin.call("GET", f"/v1/memory/collections/{control}")[0] == 200

    # And a stale token is refused even from the dashboard's origin.
    page.evaluate("document.querySelector('form[action$=\"/describe\"] input[name=csrf]').value = 'f'.repeat(64)")
    page.fill("#description", "forged")
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.get_by_role("button", name="Save", exact=True).click()
    assert answer.value.status == 403
    assert admin.ok("GET", f"/v1/memory/collections/{control}").get("description") in (None, "")


def test_hostile_text_renders_inert_under_a_strict_policy(admin_page, server, admin, watch, shot):
    page = admin_page
    collection = unique("xss")
    admin.ok("POST", "/v1/memory/collections", {"name": collection, "description": HOSTILE})
    memory = admin.ok(
        "POST",
        f"/v1/memory/collections/{collection}/memories",
        {"text": HOSTILE, "container_tag": "<b>tag</b>", "metadata": {"<i>k</i>": HOSTILE}},
    )

    answer = page.goto(server.url(f"/dashboard/collections/{collection}/memories"))
    policy = answer.headers["content-security-policy"]
    for directive in (
        "default-src 'self'",
        "script-src 'self'",
        "object-src 'none'",
        "frame-ancestors 'none'",
        "form-action 'self'",
        "base-uri 'self'",
    ):
        assert directive in policy, policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert answer.headers["x-frame-options"] == "DENY"
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["cache-control"] == "no-store"
    expect(page.locator("tbody tr").first.get_by_role("link")).to_have_text(HOSTILE)
    assert page.evaluate("window.__xss") is None
    shot(page, "memories")

    page.goto(server.url(f"/dashboard/collections/{collection}/memories/{memory['id']}"))
    expect(page.locator("p.text")).to_have_text(HOSTILE)
    expect(page.locator("main")).to_contain_text("<b>tag</b>")
    expect(page.locator("main")).to_contain_text("<i>k</i>")
    assert page.locator("main img, main script, main b, main i").count() == 0
    assert page.evaluate("window.__xss") is None
    shot(page, "memory")

    for path in ("/dashboard/collections", "/dashboard/", f"/dashboard/collections/{collection}"):
        page.goto(server.url(path))
        assert page.evaluate("window.__xss") is None, path
        assert page.locator("main img, main script").count() == 0, path
    expect(page.locator("#description")).to_have_value(HOSTILE)
    shot(page, "collection")
    assert not [e for e in watch.console_errors if "Content Security Policy" in e], watch.console_errors
