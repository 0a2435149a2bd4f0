"""English and Chinese UI text through Gradio's i18n.

Each tab module defines `STRINGS = {"en": {...}, "zh": {...}}` with short keys and
builds its components with `tr = translator(KEY)`, e.g. `gr.Button(tr("run"))`; the
browser's language (or Gradio's Settings panel) picks the language. Keys are
namespaced by the tab's KEY, so tabs never collide. Text computed at run time (results)
is not translated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from types import ModuleType

import gradio as gr
from gradio.i18n import I18nData

LANGUAGES = ("en", "zh")


def translator(namespace: str) -> Callable[[str], I18nData]:
    """`tr("run")` -> the i18n key "<namespace>.run", resolved in the browser."""

    def tr(key: str) -> I18nData:
        return I18nData(f"{namespace}.{key}")

    return tr


def build_i18n(modules: Iterable[ModuleType]) -> gr.I18n:
    """Merge every module's STRINGS into one gr.I18n; a key missing in Chinese falls back
    to English so nothing shows as a raw key."""
    merged: dict[str, dict[str, str]] = {lang: {} for lang in LANGUAGES}
    for module in modules:
        strings = getattr(module, "STRINGS", None)
        if not strings:
            continue
        ns = module.KEY
        english = strings.get("en", {})
        for lang in LANGUAGES:
            table = {**english, **strings.get(lang, {})}
            merged[lang].update({f"{ns}.{k}": v for k, v in table.items()})
    return gr.I18n(**merged)
