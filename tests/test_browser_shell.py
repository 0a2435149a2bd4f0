"""The page in a real browser: every tab opens, no console error, no outside request."""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from app.stations import stations

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


def test_every_tab_opens_without_errors_or_outside_requests(app_url, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    errors: list[str] = []
    outside: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def on_request(request):
        parsed = urlparse(request.url)
        if parsed.scheme in ("http", "https", "ws", "wss") and parsed.hostname not in LOCAL_HOSTS:
            outside.append(request.url)

    page.on("request", on_request)
    page.set_default_timeout(120_000)  # generous: a busy 2-core machine renders slowly
    page.goto(app_url, wait_until="load")
    page.wait_for_selector("#ptx-tabs")
    for module in stations():
        page.get_by_role("tab", name=module.TITLE, exact=True).click()
        page.wait_for_timeout(300)
        assert page.locator(f"#tab-{module.KEY}").is_visible(), module.TITLE
    page.close()
    assert not outside, f"requests to outside hosts: {outside}"
    assert not errors, f"console errors: {errors}"
