"""The CNN station in a real browser: an example click classifies, the stepper steps,
and a text file renamed .png gets a clear message."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_example_click_classifies_and_bad_upload_is_explained(app_url, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(app_url, wait_until="domcontentloaded")
    page.wait_for_selector("#ptx-tabs", timeout=60_000)
    page.get_by_role("tab", name="CNN", exact=True).click()
    tab = page.locator("#tab-cnn")
    tab.locator(".gallery-item").nth(1).click()  # coffee
    page.wait_for_selector("#tab-cnn :text('espresso (967)')", timeout=60_000)
    tab.get_by_role("button", name="Next ▶").click()
    page.wait_for_selector("#tab-cnn :text('4 / 10: stage 3')", timeout=30_000)
    bad = tmp_path / "words.png"
    bad.write_text("not a picture at all")
    tab.locator("input[type=file]").first.set_input_files(str(bad))
    page.wait_for_selector(":text('is not an image PIL can read')", timeout=30_000)
    page.close()
