"""The whole app: one Blocks, one tab per station."""

from __future__ import annotations

import gradio as gr

from app import deeplinks, header, preset_cache
from app.i18n import build_i18n, translator
from app.stations import stations
from app.theme import CSS, THEME
from engine.timeline import load_timeline

TITLE = "Pretraining Explorer"
KEY = "main"
tr = translator(KEY)
STRINGS = {
    "en": {
        "intro": "# Pretraining Explorer\nHow pretraining works, with real pretrained models and real "
                 "training: from word vectors to BERT, from ImageNet CNNs to MAE.",
    },
    "zh": {
        "intro": "# 预训练探索器\n用真实的预训练模型和真实的训练，看懂预训练如何工作：从词向量到 BERT，"
                 "从 ImageNet 卷积网络到 MAE。",
    },
}


def _tab_label(module) -> str | object:
    """The tab's title, in the page's language when its STRINGS has a "title" (else TITLE)."""
    if "title" in getattr(module, "STRINGS", {}).get("en", {}):
        return translator(module.KEY)("title")
    return module.TITLE


def build_app() -> gr.Blocks:
    """Build (not launch) the app. No model loads here: each loads on first use."""
    with gr.Blocks(title=TITLE) as demo:
        with gr.Row(elem_id="ptx-header-row"):
            with gr.Column(scale=3, min_width=400):
                gr.Markdown(tr("intro"), elem_id="ptx-header")
            with gr.Column(scale=2, min_width=400):
                header.controls()
        with gr.Tabs(elem_id="ptx-tabs") as tabs:
            for module in stations():
                with gr.Tab(_tab_label(module), id=module.KEY, elem_id=f"tab-{module.KEY}"):
                    module.build()
        # The URL (?tab=...&...) selects a tab and fills its declared inputs (app/deeplinks.py).
        known = {module.KEY for module in stations()}
        deeplinks.wire(demo, tabs, known)
        # The Overview's presets answer their first click from a cache (app/preset_cache.py).
        preset_cache.install(demo, [(n.station, n.preset) for n in load_timeline().nodes], known)
    demo.queue(default_concurrency_limit=4)
    return demo


def launch_kwargs() -> dict:
    """Theme, CSS and the en/zh text (Gradio 6 takes them at launch)."""
    import sys

    station_css = "".join(getattr(module, "CSS", "") for module in stations())
    return {"theme": THEME, "css": CSS + header.CSS + station_css, "js": header.PAGE_JS,
            "i18n": build_i18n([sys.modules[__name__], *header.MODULES, *stations()])}
