"""The fine-tuning tab in a real browser: a short frozen run ends with a held-out accuracy
and lands in the runs table; a long run stops when Cancel is pressed."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _setup(page, app_url: str, mode: str, steps: int):
    page.set_default_timeout(120_000)  # a busy shared CI machine can be slow to render the whole app
    page.goto(app_url, wait_until="domcontentloaded")
    page.wait_for_selector("#ptx-tabs")
    page.get_by_role("tab", name="Fine-tuning", exact=True).click()
    tab = page.locator("#tab-finetune")
    tab.locator("#ft-task input").click()
    page.get_by_role("option", name="Faces vs non-faces (LFW subset)").click()
    page.wait_for_function("document.querySelector('#ft-model input').value === 'ImageNet CNN'")
    tab.locator("#ft-mode").get_by_text(mode, exact=True).click()
    steps_box = tab.locator("#ft-steps input")
    steps_box.fill(str(steps))
    steps_box.press("Tab")
    return tab


def test_frozen_run_shows_held_out_accuracy_and_is_listed(app_url, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    tab = _setup(page, app_url, "frozen", 3)
    tab.locator("#ft-run").click()
    page.wait_for_selector("#ft-result :text('Held-out accuracy')", timeout=180_000)
    assert "80 test examples" in tab.locator("#ft-result").inner_text()
    assert "frozen" in tab.locator("#ft-runs").inner_text()
    assert tab.locator("#ft-loss .js-plotly-plot").count() == 1
    page.close()


def test_cancel_button_stops_a_long_run(app_url, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    tab = _setup(page, app_url, "scratch", 1000)
    tab.locator("#ft-run").click()
    page.wait_for_selector("#ft-status :text('step 1 /')", timeout=180_000)
    tab.locator("#ft-cancel").click()
    page.wait_for_selector("#ft-result :text('cancelled after')", timeout=30_000)
    assert "cancelled" in tab.locator("#ft-status").inner_text()
    page.close()
