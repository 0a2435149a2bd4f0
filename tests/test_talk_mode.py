"""Talk mode and the language switch in a real browser: large type, keyboard, 1280 x 720."""

from __future__ import annotations

import pytest

from app.stations import stations

# A busy shared machine (or the app's first model loads) can make a page slow; never flaky.
SLOW_MS = 90_000

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _font_px(page, selector: str) -> float:
    return page.evaluate(f"parseFloat(getComputedStyle(document.querySelector('{selector}')).fontSize)")


def test_talk_mode_toggles_by_button_and_keyboard_and_nothing_overflows(app_url, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.set_default_timeout(SLOW_MS)
    page.goto(app_url + "?tab=overview&talk=0", wait_until="load")
    page.wait_for_selector("#ptx-talk-toggle", timeout=SLOW_MS)
    page.wait_for_function("typeof window.ptxTalk === 'function'", timeout=SLOW_MS)
    body_px = _font_px(page, "#ptx-header p")
    assert not page.evaluate("document.body.classList.contains('ptx-talk')")

    page.click("#ptx-talk-toggle")
    assert page.evaluate("document.body.classList.contains('ptx-talk')")
    assert page.get_attribute("#ptx-talk-toggle", "aria-pressed") == "true"
    assert _font_px(page, "#ptx-header p") >= body_px * 1.25
    # The Overview map caps its own factor at 1 (its type is projector-sized already).
    page.wait_for_timeout(1500)
    assert page.evaluate("""() => [...document.querySelectorAll('#tab-overview .js-plotly-plot')]
        .every((gd) => gd._fullLayout.font.size === 15)""")
    # Nothing wider than the projector's 1280 pixels, and no header label cut off.
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    clipped = page.evaluate("""[...document.querySelectorAll('#ptx-controls button')]
        .filter((b) => b.scrollWidth > b.clientWidth + 1 || b.getBoundingClientRect().right > 1280)
        .map((b) => b.innerText)""")
    assert not clipped, f"header buttons cut off in talk mode: {clipped}"

    # Every tab, in talk mode, still fits the projector's width.
    for module in stations():
        page.get_by_role("tab", name=module.TITLE, exact=True).click()
        page.wait_for_selector(f"#tab-{module.KEY}", state="visible", timeout=SLOW_MS)
        page.wait_for_timeout(300)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 1280, f"{module.KEY} is {width} px wide in talk mode"
    # Other figures are scaled through Plotly: fonts grow by PLOT_SCALE (word vectors draws
    # its analogy chart as the page opens).
    page.wait_for_function("""() => [...document.querySelectorAll('#tab-word_vectors .js-plotly-plot')]
        .some((gd) => gd._fullLayout && gd._fullLayout.meta && gd._fullLayout.meta.ptxScale > 1)""")
    sizes = page.evaluate("""() => { const gd = [...document.querySelectorAll('#tab-word_vectors .js-plotly-plot')]
        .find((g) => g._fullLayout.meta && g._fullLayout.meta.ptxScale > 1);
        return [gd._fullLayout.font.size, gd._fullLayout.xaxis.tickfont.size]; }""")
    assert sizes[0] >= 12 * 1.25 and sizes[1] >= 12 * 1.25, sizes
    page.get_by_role("tab", name="Overview", exact=True).click()

    page.keyboard.press("Alt+t")
    assert not page.evaluate("document.body.classList.contains('ptx-talk')")
    page.wait_for_function("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .every((gd) => !gd._fullLayout || !gd._fullLayout.meta || !(gd._fullLayout.meta.ptxScale > 1))""")
    # Keyboard only: Tab reaches the button, Enter presses it.
    page.focus("#ptx-talk-toggle")
    page.keyboard.press("Enter")
    assert page.evaluate("document.body.classList.contains('ptx-talk')")
    # The choice survives a reload (localStorage); ?talk=0 in a link turns it off.
    page.goto(app_url + "?tab=overview", wait_until="load")
    page.wait_for_function("document.body.classList.contains('ptx-talk')", timeout=SLOW_MS)
    page.evaluate("window.ptxTalk(false)")
    page.close()


def test_language_switch_changes_the_ui_text(app_url, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 720}, locale="en-US")
    page.set_default_timeout(SLOW_MS)
    page.goto(app_url + "?tab=overview", wait_until="load")
    page.wait_for_selector("#ptx-lang-switch", timeout=SLOW_MS)
    page.wait_for_function("typeof window.ptxSetLang === 'function'", timeout=SLOW_MS)
    assert "Pretraining Explorer" in page.inner_text("#ptx-header")
    page.click("#ptx-lang-switch")
    page.wait_for_function("document.querySelector('#ptx-header').innerText.includes('预训练探索器')",
                           timeout=SLOW_MS)
    page.click("#ptx-lang-switch")
    page.wait_for_function("document.querySelector('#ptx-header').innerText.includes('Pretraining Explorer')",
                           timeout=SLOW_MS)
    page.close()
