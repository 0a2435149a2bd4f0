"""Deep links: query values are checked against their components; a URL opens its tab."""

from __future__ import annotations

import gradio as gr
import pytest

from app import deeplinks
from app.deeplinks import TabLinks, parse_value, resolve

# A busy shared machine (or the app's first model loads) can make a page slow; never flaky.
SLOW_MS = 90_000

KNOWN = {"overview", "word_vectors", "vit_mae", "models"}


def test_parse_value_checks_each_kind_of_input():
    slider = gr.Slider(0, 0.95, value=0.75, step=0.05, render=False)
    assert parse_value(slider, "0.5") == 0.5
    assert parse_value(slider, "7") == 0.95            # clamped to the slider's range
    with pytest.raises(ValueError):
        parse_value(slider, "lots")
    with pytest.raises(ValueError):
        parse_value(slider, "nan")
    seed = gr.Slider(0, 100, value=0, step=1, render=False)
    assert parse_value(seed, "3.7") == 4 and isinstance(parse_value(seed, "3"), int)
    assert parse_value(gr.Checkbox(render=False), "yes") is True
    assert parse_value(gr.Checkbox(render=False), "0") is False
    with pytest.raises(ValueError):
        parse_value(gr.Checkbox(render=False), "maybe")
    method = gr.Dropdown([("PCA", "pca"), ("UMAP", "umap")], value="pca", render=False)
    assert parse_value(method, "UMAP") == "umap"
    with pytest.raises(ValueError):
        parse_value(method, "tsne")
    text = gr.Textbox(render=False)
    assert parse_value(text, "国王 - 男人 + 女人 🙂") == "国王 - 男人 + 女人 🙂"
    with pytest.raises(ValueError):
        parse_value(text, "x" * (deeplinks.MAX_TEXT + 1))


def _links() -> dict[str, TabLinks]:
    ratio = gr.Slider(0, 0.95, value=0.75, render=False)
    seed = gr.Number(value=0, precision=0, render=False)
    run = gr.Button(render=False, elem_id="run-mae")
    layer = gr.Slider(-1, 11, value=-1, step=1, render=False)
    run_vit = gr.Button(render=False, elem_id="run-vit")
    links = TabLinks("vit_mae", {"mask_ratio": (ratio, None), "seed": (seed, None), "layer": (layer, None)})
    links.runs = {"mask_ratio": run, "seed": run, "layer": run_vit}
    return {"vit_mae": links}


def test_resolve_picks_the_tab_fills_inputs_and_presses_run():
    links = _links()
    ratio, seed, _ = (c for c, _ in links["vit_mae"].inputs.values())
    res = resolve({"tab": "mae", "mask_ratio": "0.9", "seed": "7"}, links, KNOWN)
    assert res.tab == "vit_mae"                      # alias
    assert res.values == {ratio: 0.9, seed: 7}
    assert res.run_id == "run-mae" and not res.skipped
    assert resolve({"tab": "vit_mae", "seed": "1", "run": "0"}, links, KNOWN).run_id == ""
    # Each panel has its own button: a link presses the one of the first input it names.
    assert resolve({"tab": "vit_mae", "layer": "3"}, links, KNOWN).run_id == "run-vit"
    assert resolve({"tab": "vit_mae"}, links, KNOWN).run_id == ""


def test_resolve_skips_what_does_not_fit_and_keeps_the_rest():
    links = _links()
    res = resolve({"tab": "vit_mae", "mask_ratio": "abc", "seed": "2", "colour": "red"}, links, KNOWN)
    assert res.tab == "vit_mae" and len(res.values) == 1
    assert any("mask_ratio" in s for s in res.skipped) and any("colour" in s for s in res.skipped)
    nowhere = resolve({"tab": "no-such-tab", "seed": "2"}, links, KNOWN)
    assert nowhere.tab is None and not nowhere.values and "no such tab" in nowhere.skipped[0]
    assert resolve({}, links, KNOWN).tab is None
    hostile = resolve({"tab": "<img src=x onerror=alert(1)>" + "x" * 5000}, links, KNOWN)
    assert "<img" not in hostile.skipped[0] and len(hostile.skipped[0]) < 300
    # A tab without declared inputs still opens; its parameters are reported as skipped.
    assert resolve({"tab": "models", "x": "1"}, links, KNOWN).tab == "models"


def test_register_is_per_app_and_gives_the_run_button_an_id():
    with gr.Blocks():
        box = gr.Textbox()
        run = gr.Button()
        deeplinks.register("word_vectors", {"word": box}, run=run)
        assert deeplinks._registry().tabs["word_vectors"].inputs["word"][0] is box
        with pytest.raises(ValueError):
            deeplinks.register("word_vectors", {"tab": box})
        find, other = gr.Button(), gr.Button()
        deeplinks.register("word_vectors", {"neighbor": gr.Textbox()}, run=find)
        deeplinks.register("word_vectors", run=other)
        links = deeplinks._registry().tabs["word_vectors"]
        assert links.runs == {"word": run, "neighbor": find} and links.run is other
    assert len({run.elem_id, find.elem_id, other.elem_id}) == 3
    assert run.elem_id.startswith("ptx-run-word_vectors")
    with gr.Blocks():
        assert "word_vectors" not in deeplinks._registry().tabs


def test_url_for_encodes_the_inputs():
    assert deeplinks.url_for("word_vectors", {"expression": "king - man + woman"}) == \
        "?tab=word_vectors&expression=king+-+man+%2B+woman"


# --- in a real browser -------------------------------------------------------------------

def _open(browser, url: str):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.set_default_timeout(SLOW_MS)
    page.goto(url, wait_until="load")
    page.wait_for_selector("#ptx-tabs", timeout=SLOW_MS)
    return page


@pytest.mark.browser
@pytest.mark.slow
def test_models_link_opens_the_models_tab(app_url, browser):
    page = _open(browser, app_url + "?tab=models")
    page.wait_for_selector("#tab-models", state="visible", timeout=SLOW_MS)
    assert not page.locator("#tab-overview").is_visible()
    assert page.get_by_role("tab", name="Models", exact=True).get_attribute("aria-selected") == "true"
    page.close()


@pytest.mark.browser
@pytest.mark.slow
def test_overview_link_restores_the_milestone_and_copy_link_reproduces_it(app_url, browser):
    page = _open(browser, app_url + "?tab=overview&focus=mae")
    page.wait_for_selector("#ptx-card-mae", state="visible", timeout=SLOW_MS)
    page.click("#ptx-overview-next")  # the last milestone stays the last
    page.click("#ptx-overview-prev")
    page.wait_for_selector("#ptx-card-beit", state="visible", timeout=SLOW_MS)
    page.click("#ptx-copy-link")
    box = page.locator("#ptx-link-box textarea, #ptx-link-box input").first
    page.wait_for_function("(el) => el.value.includes('focus=')", arg=box.element_handle(), timeout=SLOW_MS)
    link = box.input_value()
    assert "tab=overview" in link and "focus=beit" in link
    assert page.evaluate("location.search").startswith("?tab=overview")   # the address bar too
    page.close()
    again = _open(browser, link)
    again.wait_for_selector("#ptx-card-beit", state="visible", timeout=SLOW_MS)
    again.close()


@pytest.mark.browser
@pytest.mark.slow
def test_overview_button_opens_a_station_without_reloading(app_url, browser):
    page = _open(browser, app_url)
    page.wait_for_selector("#tab-overview", state="visible", timeout=SLOW_MS)
    page.evaluate("window.__same_page = true")
    page.click("#ptx-overview-go-vit_mae")
    page.wait_for_selector("#tab-vit_mae", state="visible", timeout=SLOW_MS)
    assert page.evaluate("window.__same_page === true")
    page.close()


def test_a_panel_in_inner_tabs_is_brought_to_the_front():
    with gr.Blocks():
        with gr.Tabs() as panels:
            with gr.Tab("A", id="a"):
                first = gr.Textbox()
                run_a = gr.Button(elem_id="run-a")
            with gr.Tab("B", id="b"):
                word = gr.Textbox()
                run_b = gr.Button(elem_id="run-b")
    links = {"word_vectors": TabLinks("word_vectors", inputs={"expression": (first, None), "word": (word, None)},
                                      runs={"expression": run_a, "word": run_b},
                                      panels={"expression": (panels, "a"), "word": (panels, "b")})}
    res = resolve({"tab": "word_vectors", "word": "river"}, links, {"word_vectors"})
    assert res.run_id == "run-b" and res.panel == (panels, "b") and res.values == {word: "river"}


def test_a_tab_default_view_stands_aside_when_a_link_runs_the_tab():
    from types import SimpleNamespace

    from app.deeplinks import opened_by_link, page_open

    def req(**query):
        return SimpleNamespace(query_params=query)

    assert opened_by_link(req(tab="mae", seed="3"), "vit_mae")
    assert not opened_by_link(req(tab="mae", seed="3", run="0"), "vit_mae")
    assert not opened_by_link(req(tab="cnn"), "vit_mae") and not opened_by_link(req(), "vit_mae")
    assert not opened_by_link(None, "vit_mae")
    default = page_open("vit_mae", lambda: ("view", "caption"), 2)
    assert default(req()) == ("view", "caption")
    skipped = default(req(tab="vit_mae"))
    assert len(skipped) == 2 and all(isinstance(s, type(gr.skip())) for s in skipped)
