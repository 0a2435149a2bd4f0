"""The map of pretraining: the timeline data is complete and every node links to a real tab."""

from __future__ import annotations

import json

import pytest

from app.deeplinks import PAGE_KEYS
from app.stations import STATION_MODULES
from app.tabs import overview
from engine.timeline import TIMELINE_FILE, load_timeline, year_to_x

# A busy shared machine (or the app's first model loads) can make a page slow; never flaky.
SLOW_MS = 90_000

# The two lines of the seeds, with the year of each milestone's first paper.
EXPECTED = {
    "bow": ("nlp", None), "nnlm": ("nlp", 2003), "word2vec": ("nlp", 2013), "glove": ("nlp", 2014),
    "elmo": ("nlp", 2018), "gpt": ("nlp", 2018), "bert": ("nlp", 2018), "transformer": ("meet", 2017),
    "imagenet_cnn": ("vision", 2012), "contrastive": ("vision", 2019), "igpt": ("vision", 2020),
    "vit": ("vision", 2020), "beit": ("vision", 2021), "mae": ("vision", 2021),
}
STATIONS = set(STATION_MODULES) - {"overview", "models"}


def test_timeline_has_both_lines_with_years_and_text_in_both_languages():
    tl = load_timeline()
    assert {n.id for n in tl.nodes} == set(EXPECTED)
    for n in tl.nodes:
        lane, year = EXPECTED[n.id]
        assert n.lane == lane, n.id
        if year is not None:
            assert n.year == year and int(n.date) == year, n.id
        for field in (n.name, n.solved, n.open):
            assert field["en"].strip() and field["zh"].strip(), n.id
        # Two or three sentences in all: short enough for a slide.
        sentences = (n.solved["en"] + " " + n.open["en"]).count(". ") + 1
        assert 2 <= sentences <= 4, (n.id, sentences)
        assert any("\u4e00" <= ch <= "\u9fff" for ch in n.solved["zh"]), f"{n.id}: zh text has no Chinese"


def test_every_node_links_to_an_existing_tab_and_every_station_is_linked():
    tl = load_timeline()
    for n in tl.nodes:
        assert n.station in STATION_MODULES, f"{n.id} links to {n.station!r}, not a tab KEY"
        assert not set(n.preset) & set(PAGE_KEYS), f"{n.id}: preset uses a reserved name"
    assert STATIONS <= {n.station for n in tl.nodes}, "the map must link to every station"


def test_edges_follow_time_and_the_lines_meet_at_the_transformer():
    tl = load_timeline()
    date = {n.id: n.date for n in tl.nodes}
    for a, b, _ in tl.edges:
        assert date[a] <= date[b], f"{a} -> {b} goes back in time"
    assert {"transformer", "elmo", "word2vec", "nnlm", "bow"} <= tl.ancestors("bert")
    assert {"transformer", "imagenet_cnn", "vit", "beit"} <= tl.ancestors("mae")
    assert tl.ancestors("bow") == set()


def test_year_axis_is_monotone():
    xs = [year_to_x(y / 4) for y in range(1999 * 4, 2023 * 4)]
    assert all(b >= a for a, b in zip(xs, xs[1:], strict=False))
    assert year_to_x(1954) == year_to_x(2000)


def test_timeline_file_is_plain_json_with_the_documented_fields():
    raw = json.loads(TIMELINE_FILE.read_text(encoding="utf-8"))
    assert {"lanes", "nodes", "edges", "about"} <= set(raw)


@pytest.mark.parametrize("focus", ["", "mae", "bert", "no-such-node"])
def test_map_figure_draws_every_milestone(focus):
    fig = overview.map_figure(focus)
    assert fig.layout.height == overview.HEIGHT
    names = [t for trace in fig.data if trace.mode == "markers+text" for t in trace.text]
    assert len(names) == len(EXPECTED)
    if focus == "mae":
        assert "MAE" in fig.layout.title.text


def test_strings_have_a_card_and_a_button_per_milestone_in_both_languages():
    en, zh = overview.STRINGS["en"], overview.STRINGS["zh"]
    assert set(en) == set(zh)
    for node_id in EXPECTED:
        assert f"card_{node_id}" in en and f"open_{node_id}" in en
    assert set(overview.STORY) == set(EXPECTED)


def test_step_walks_the_story_and_stops_at_the_ends():
    assert overview.step("", 1) == overview.STORY[0]
    assert overview.step("", -1) == overview.STORY[-1]
    assert overview.step(overview.STORY[0], -1) == overview.STORY[0]
    assert overview.step("bow", 1) == "nnlm"


@pytest.mark.browser
@pytest.mark.slow
def test_clicking_a_milestone_on_the_map_focuses_it(app_url, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.set_default_timeout(SLOW_MS)
    page.goto(app_url + "?tab=overview", wait_until="load")
    page.wait_for_selector("#ptx-overview-map .js-plotly-plot", timeout=SLOW_MS)
    page.wait_for_function("!!document.querySelector('#ptx-overview-map .js-plotly-plot').__ptxLayout",
                           timeout=SLOW_MS)
    # Where plotly drew the ViT marker, in page pixels.
    x, y = page.evaluate("""() => {
      const gd = document.querySelector('#ptx-overview-map .js-plotly-plot');
      const box = gd.getBoundingClientRect(), fl = gd._fullLayout;
      for (const t of gd._fullData) { const i = (t.customdata || []).indexOf('vit');
        if (i >= 0) return [box.left + fl._size.l + fl.xaxis.l2p(t.x[i]), box.top + fl._size.t + fl.yaxis.l2p(t.y[i])]; }
    }""")
    page.mouse.click(x, y)
    page.wait_for_selector("#ptx-card-vit", state="visible", timeout=SLOW_MS)
    # A presenter's clicker: PageDown steps to the next milestone of the story.
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("PageDown")
    page.wait_for_selector("#ptx-card-beit", state="visible", timeout=SLOW_MS)
    page.close()
