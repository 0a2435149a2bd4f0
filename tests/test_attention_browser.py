"""Attention & cloze station in a real browser: grid clicks open a head, the head view draws,
clicking a word masks it."""

from __future__ import annotations

import re

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _open(browser, app_url):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(app_url)
    page.get_by_role("tab", name="Attention & cloze").click()
    page.locator("text=/Layer 2, head 0/").first.wait_for(timeout=90_000)
    return page


def test_grid_click_opens_that_head_and_head_view_draws(browser, app_url):
    from engine.attention_views import grid_layout

    page = _open(browser, app_url)
    img = page.locator("#ptx-attention-grid img").first
    box = img.bounding_box()
    natural = img.evaluate("i => [i.naturalWidth, i.naturalHeight]")
    layout = grid_layout(6, 12)
    scale = min(box["width"] / natural[0], box["height"] / natural[1])  # object-fit: contain
    off_x, off_y = (box["width"] - natural[0] * scale) / 2, (box["height"] - natural[1] * scale) / 2
    x = off_x + (layout.left + 7 * (layout.tile + layout.gap) + layout.tile / 2) * scale
    y = off_y + (layout.top + 4 * (layout.tile + layout.gap) + layout.tile / 2) * scale
    img.click(position={"x": x, "y": y})
    page.locator("text=/Layer 4, head 7/").first.wait_for(timeout=30_000)

    page.get_by_role("tab", name="Head view").click()
    frame = page.frame_locator("#ptx-head-view-frame iframe")
    frame.locator("svg line").first.wait_for(state="attached", timeout=30_000)
    all_lines = frame.locator("svg line").count()
    frame.locator("svg g[data-side=q]", has_text=re.compile(r"^animal$")).first.hover()
    assert 0 < frame.locator("svg line").count() < all_lines
    page.close()


def test_clicking_a_word_masks_it(browser, app_url):
    page = _open(browser, app_url)
    page.get_by_role("tab", name="Cloze (masked LM)").click()
    page.locator("#ptx-cloze-words").get_by_text("capital", exact=True).click()
    box = page.locator("#ptx-cloze-text textarea")
    page.wait_for_function(
        "() => document.querySelector('#ptx-cloze-text textarea').value.startsWith('The [MASK] of France')",
        timeout=60_000)
    assert box.input_value() == "The [MASK] of France is [MASK]."
    page.close()
