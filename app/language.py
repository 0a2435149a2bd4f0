"""The visible English / Chinese switch in the header.

Gradio's i18n (app/i18n.py) picks the language from the browser, and its Settings panel
(footer) can change it. This button flips between the two in one press: it calls the
`changeLocale` that Gradio's own front-end module exports (the same function its
Settings panel uses). If a future Gradio moves that function, the button says where the
Settings panel is instead of failing silently. `?lang=zh` in a link picks Chinese.
"""

from __future__ import annotations

import gradio as gr

from app.i18n import translator

KEY = "lang"
tr = translator(KEY)
STRINGS = {
    # The label names the language it switches TO, in that language, so a person who
    # cannot read the current one still finds it.
    "en": {"switch": "中文"},
    "zh": {"switch": "English"},
}

BUTTON_ID = "ptx-lang-switch"

# Finds Gradio's loaded front-end module that exports changeLocale, and keeps it.
_FIND_LOCALE_JS = """
  window.ptxSetLang = async (lang) => {
    if (!window.ptxLocaleModule) {
      const urls = performance.getEntriesByType('resource').map((e) => e.name)
        .filter((n) => /\\/assets\\/[^/]*\\.js(\\?|$)/.test(n));
      for (const u of urls.filter((n) => /core-/.test(n)).concat(urls.filter((n) => !/core-/.test(n)))) {
        try { const m = await import(u); if (m && typeof m.changeLocale === 'function') { window.ptxLocaleModule = m; break; } }
        catch (e) {}
      }
    }
    if (!window.ptxLocaleModule) return false;
    window.ptxLocaleModule.changeLocale(lang);
    window.ptxLang = lang;
    document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en';
    return true;
  };
"""

ON_LOAD_JS = """
() => {""" + _FIND_LOCALE_JS + """
  const asked = new URLSearchParams(location.search).get('lang');
  window.ptxLang = (navigator.language || 'en').toLowerCase().startsWith('zh') ? 'zh' : 'en';
  if (asked && ['en', 'zh'].includes(asked.toLowerCase())) setTimeout(() => window.ptxSetLang(asked.toLowerCase()), 300);
}
"""

SWITCH_JS = """
async () => {
  const next = (window.ptxLang || 'en') === 'zh' ? 'en' : 'zh';
  const ok = window.ptxSetLang ? await window.ptxSetLang(next) : false;
  if (!ok) alert('Use Settings (at the foot of the page) > Language.\\n请在页面底部的"设置"中选择语言。');
  return [];
}
"""


def switch() -> gr.Button:
    """The header's language button (English <-> 中文); no server call."""
    button = gr.Button(tr("switch"), size="sm", elem_id=BUTTON_ID, scale=0, min_width=90)
    button.click(fn=None, js=SWITCH_JS, api_visibility="private")
    return button
