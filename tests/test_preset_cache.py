"""Cached preset outputs (app/preset_cache.py): keys compare values, a hit never calls the
function, every Overview preset but the live training ones is planned, and in a browser
the first click of a preset is answered from the cache."""

from __future__ import annotations

import time

import gradio as gr
import pytest

from app.preset_cache import PresetCache, _fresh, key_of
from engine.timeline import load_timeline


def test_keys_compare_numbers_as_numbers_and_files_by_content(tmp_path):
    a, b, c = tmp_path / "a.png", tmp_path / "b.png", tmp_path / "c.png"
    a.write_bytes(b"same bytes")
    b.write_bytes(b"same bytes")
    c.write_bytes(b"other bytes")
    assert key_of([6, 0.75, "bank"]) == key_of([6.0, 0.7500000000001, "bank"])
    assert key_of([str(a)]) == key_of([str(b)]) != key_of([str(c)])
    assert key_of([{"path": str(a), "url": "x"}]) == key_of([str(b)])
    assert key_of([True]) != key_of([1])
    assert key_of(["bank", gr.Progress()]) == key_of(["bank"])


def test_a_hit_returns_fresh_containers_and_never_calls_the_function():
    calls = []

    def slow(word: str, k: float):
        calls.append(word)
        return {"value": f"{word} x{k}"}, [1, 2]

    cache = PresetCache()
    wrapped = cache.wrap(id(slow), slow)
    cache.outputs[(id(slow), key_of(["bank", 3]))] = slow("bank", 3)
    calls.clear()
    first = wrapped("bank", 3.0)
    first[0].pop("value")  # what gradio does to an update dict
    second = wrapped("bank", 3)
    assert second == ({"value": "bank x3"}, [1, 2]) and cache.hits == 2 and calls == []
    assert wrapped("river", 3) == ({"value": "river x3"}, [1, 2]) and calls == ["river"]
    assert _fresh((1, "a")) == (1, "a")


def test_every_preset_but_live_training_is_planned_with_its_values():
    from app.main import build_app

    demo = build_app()
    cache: PresetCache = demo.ptx_presets
    planned = {job.label for job in cache.jobs}
    for n in load_timeline().nodes:
        label = f"{n.station}: {n.preset}"
        assert (label in planned) == (n.station != "finetune"), label
    mae = next(j for j in cache.jobs if j.label.startswith("vit_mae: {'mask_ratio': 0.75"))
    assert 0.75 in mae.key and any(isinstance(k, tuple) and k[0] == "file" for k in mae.key)


@pytest.mark.slow
def test_prefetch_fills_the_cache_and_a_failing_preset_stays_uncached():
    from app.main import build_app

    demo = build_app()
    cache: PresetCache = demo.ptx_presets
    cache.jobs = [j for j in cache.jobs if j.label.startswith(("attention", "vit_mae: {'mask_ratio': 0.75"))]
    broken = type(cache.jobs[0])(label="broken", fn=lambda: 1 / 0, args=[], key=())
    cache.jobs.append(broken)
    report = cache.prefetch()
    assert isinstance(report["broken"], str) and report["broken"].startswith("not cached")
    assert len(cache.outputs) == 2 and all(isinstance(v, float) for k, v in report.items() if k != "broken")


@pytest.mark.browser
@pytest.mark.slow
def test_first_click_of_a_preset_is_answered_from_the_cache(app_url, app_demo, browser):
    cache: PresetCache = app_demo.ptx_presets
    saved = cache.jobs
    cache.jobs = [j for j in saved if j.label.startswith("vit_mae: {'mask_ratio': 0.4")]  # BEiT's preset
    try:
        cache.prefetch()
    finally:
        cache.jobs = saved
    hits = cache.hits
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(app_url + "?tab=overview&focus=beit", wait_until="domcontentloaded")
    page.wait_for_selector("#ptx-overview-open-beit", state="visible", timeout=60_000)
    page.click("#ptx-overview-open-beit")
    page.wait_for_selector("#tab-vit_mae", state="visible", timeout=60_000)
    deadline = time.time() + 30
    while cache.hits == hits and time.time() < deadline:
        time.sleep(0.1)
    assert cache.hits > hits
    page.wait_for_selector("#tab-vit_mae :text('hidden (block, seed 0)')", timeout=30_000)
    page.close()
