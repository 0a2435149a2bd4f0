"""The ViT & MAE station in a real browser: the page opens with a reconstruction and its
PSNR curve, a deep link sets the ratio, the attention panel shows heads, and a text file
renamed .png gets a clear message."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SLOW_MS = 90_000


def test_reconstruction_curve_attention_and_a_bad_upload(app_url, browser, tmp_path):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.set_default_timeout(SLOW_MS)
    # A deep link: block masking at 50%, pressed as a speaker's bookmark would.
    page.goto(app_url + "?tab=mae&mask_ratio=0.5&masking=block&seed=3", wait_until="domcontentloaded")
    tab = page.locator("#tab-vit_mae")
    page.wait_for_selector("#tab-vit_mae :text('32 of 64 hidden (block, seed 3)')")
    assert tab.locator("img[alt]").count() >= 4 or tab.locator("img").count() >= 4
    # The PSNR curve is drawn without a click: three lines (MAE and two baselines).
    page.wait_for_function("""() => [...document.querySelectorAll('#tab-vit_mae .js-plotly-plot')]
        .some((gd) => gd._fullData && gd._fullData.length >= 3)""")
    # Every figure can be saved as PNG: Plotly's own download button is on the curve,
    # and each image panel has Gradio's download button.
    # (Waited for, not counted at once: the curve is re-drawn as the link's events finish.)
    page.wait_for_selector("#tab-vit_mae .modebar-btn[data-title*='png' i]", state="attached")
    page.wait_for_function("""() => document.querySelectorAll(
        '#tab-vit_mae a[download], #tab-vit_mae button[aria-label*="ownload"], #tab-vit_mae button[title*="ownload"]')
        .length >= 4""")

    tab.get_by_role("tab", name="ViT attention", exact=True).click()
    tab.get_by_role("button", name="Show attention", exact=True).click()
    page.wait_for_selector("#tab-vit_mae :text('layer 11 of 0…11')")
    page.wait_for_function("document.querySelector('#tab-vit_mae').innerText.includes('head 5')")

    bad = tmp_path / "notes.png"
    bad.write_text("this is not a picture")
    tab.locator("input[type=file]").first.set_input_files(str(bad))
    page.wait_for_selector(":text('is not an image PIL can read')")
    page.wait_for_timeout(1500)
    # One message per upload (Gradio fires `change` twice on an upload), not one per panel.
    assert page.locator(":text('is not an image PIL can read')").count() <= 2
    page.close()
