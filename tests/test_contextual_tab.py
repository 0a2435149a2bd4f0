"""The Contextual tab's callbacks (fake models, no browser) and the page in a real browser."""

from __future__ import annotations

import pytest

from app.tabs import contextual as tab
from engine import contextual as ctx
from tests.test_contextual import BANK, fake_registry  # noqa: F401  (the fixture)


def test_run_draws_every_view_and_hides_the_mix_for_bert(fake_registry):  # noqa: F811
    out = tab.run("bank", BANK, "bank", "bert", "pca", progress=None)
    state, status, slider, static_fig, map_fig, heat_fig, layers_fig, curves_fig, mix_row, _, mix_note = out
    assert isinstance(state, ctx.Analysis) and state.n_layers == 4
    assert "16" in status and "Fake BERT" in status
    assert slider["maximum"] == 3 and slider["value"] == state.best_layer
    assert mix_row["visible"] is False and "three-layer" in mix_note
    assert "one vector" in static_fig["value"].layout.title.text and static_fig["visible"] is True
    assert len(map_fig.data) >= 2 and heat_fig.data[0].z.shape == (16, 16)
    assert len([t for t in layers_fig.data if t.x]) >= 4
    models = {t.name for t in curves_fig.data}
    assert {"Fake BERT", "Fake ELMo", "Fake GloVe"} <= models


def test_three_layer_model_shows_the_mix_sliders(fake_registry):  # noqa: F811
    out = tab.run("bank", BANK, "bank", "elmo", "pca", progress=None)
    state, mix_row, mix_fig = out[0], out[8], out[9]
    assert state.n_layers == 3 and mix_row["visible"] is True
    bars = mix_fig.data[0]
    assert list(bars.y) == pytest.approx([1 / 3] * 3)
    again = tab.on_mix(state, 2.0, 0.0, 0.0, 1.5)
    assert again.data[0].y[0] > 0.7 and "γ = 1.50" in again.layout.title.text
    fig_map, fig_heat, status = tab.on_layer(state, 0, "pca")
    assert "input" in fig_map.layout.title.text or "layer" in fig_map.layout.title.text


def test_static_model_alone_locks_the_slider(fake_registry):  # noqa: F811
    out = tab.run("bank", BANK, "bank", "static", "pca", progress=None)
    state, slider = out[0], out[2]
    assert state.n_layers == 1 and slider["maximum"] == 1 and slider["value"] == 0
    assert slider["interactive"] is False and out[3]["visible"] is False
    fig_map, _, _ = tab.on_layer(state, 1, "umap")  # clamped to the one layer; UMAP falls back
    assert "one vector" in fig_map.layout.title.text


def test_presets_fill_the_text_box():
    text, word = tab.on_preset("apple")
    assert word == "apple" and text.count("\n") == 15
    assert tab.on_preset("") == (tab.gr.update(), tab.gr.update())


@pytest.mark.browser
@pytest.mark.slow
def test_tab_draws_the_bank_preset_in_a_browser(app_url, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(app_url, wait_until="domcontentloaded")
    page.wait_for_selector("#ptx-tabs", timeout=60_000)
    page.get_by_role("tab", name=tab.TITLE, exact=True).click()
    panel = page.locator(f"#tab-{tab.KEY}")
    panel.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
    page.wait_for_function("() => document.querySelectorAll('#tab-contextual .js-plotly-plot').length >= 4",
                           timeout=60_000)
    assert "occurrence(s) of" in panel.inner_text(timeout=5_000)
    page.close()
