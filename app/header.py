"""The header's stage controls: talk mode, the language switch and "copy link to this view".

`app.main` calls `controls()` beside the title, passes `PAGE_JS` and `CSS` to launch, and
adds `MODULES` to the i18n tables.
"""

from __future__ import annotations

import sys

import gradio as gr

from app import deeplinks, language, talk_mode
from app.i18n import translator
from app.tabs import overview

KEY = "header"
tr = translator(KEY)
STRINGS = {
    "en": {"copy": "Copy link to this view", "link": "Link to this view"},
    "zh": {"copy": "复制本页链接", "link": "本页链接"},
}

CSS = talk_mode.CSS + """
#ptx-header-row { align-items: center; gap: 8px; }
#ptx-header h1 { margin: 0 0 2px 0; font-size: 26px; }
#ptx-header p { margin: 0; }
#ptx-controls { align-items: center; justify-content: flex-end; gap: 6px; flex-wrap: wrap; }
#ptx-controls button { white-space: nowrap; min-width: max-content !important; flex: 0 0 auto !important; }
body.ptx-talk #ptx-controls button { font-size: 17px !important; }
#ptx-link-box textarea, #ptx-link-box input { font-size: 13px; }
body.ptx-talk #ptx-link-box textarea, body.ptx-talk #ptx-link-box input { font-size: 16px; }
"""


def _page_js(*snippets: str) -> str:
    """One page-load function that runs each snippet (each is `() => {...}`) in turn."""
    calls = "\n".join(f"  try {{ ({s.strip()})(); }} catch (e) {{ console.warn(e); }}" for s in snippets)
    return "() => {\n" + calls + "\n}"


PAGE_JS = _page_js(talk_mode.ON_LOAD_JS, language.ON_LOAD_JS, overview.ON_LOAD_JS)
MODULES = (talk_mode, language, sys.modules[__name__])


def controls() -> None:
    """Talk mode, English/中文, and the copy-link button with the box that shows the link."""
    with gr.Row(elem_id="ptx-controls", equal_height=True):
        talk_mode.toggle()
        language.switch()
        deeplinks.copy_link_controls(tr("copy"), tr("link"))

