"""Talk mode: large type and high contrast for a projector, switched from the header.

The switch is a real <button> (Tab reaches it, Enter or Space presses it, `aria-pressed`
tells a screen reader its state) and the shortcut Alt+T. It puts the class `ptx-talk` on
<body>; `CSS` below does the rest, so no server round trip and no re-render. The choice
is remembered in the browser (localStorage) and a link can ask for it with `?talk=1`.
"""

from __future__ import annotations

import gradio as gr

from app.i18n import translator

KEY = "talk"
tr = translator(KEY)
STRINGS = {
    "en": {"toggle": "Talk mode (Alt+T)"},
    "zh": {"toggle": "演讲模式 (Alt+T)"},
}

STORAGE_KEY = "ptx-talk"
PLOT_SCALE = 1.3  # talk mode's factor for every font in every plotly figure
BUTTON_ID = "ptx-talk-toggle"

# Runs once when the page loads (launch(js=...)): restores the choice, reads ?talk=,
# installs Alt+T and defines window.ptxTalk(on?) for the button.
ON_LOAD_JS = r"""
() => {
  const KEY = '__STORAGE__';
  const mark = (on) => {
    const b = document.getElementById('__BUTTON__');
    if (b) b.setAttribute('aria-pressed', on ? 'true' : 'false');
  };
  // Plotly draws text into SVG with sizes of its own, so CSS cannot reach it without
  // clipping: each figure's fonts are scaled through Plotly itself (window.Plotly, set
  // by Gradio's plot component), which lays the figure out again. The factor applied
  // is kept in layout.meta.ptxScale, so a figure that a new result replaced is noticed;
  // a figure may cap it with layout.meta.ptxMaxScale.
  const scalePlot = (gd, want) => {
    const L = gd._fullLayout, P = window.Plotly;
    if (!P || !L || !gd._fullData) return;
    // A figure may cap its factor (layout.meta.ptxMaxScale) when its type is large already.
    if (L.meta && L.meta.ptxMaxScale) want = Math.min(want, L.meta.ptxMaxScale);
    const have = (L.meta && L.meta.ptxScale) || 1;
    if (Math.abs(want - have) < 1e-6) return;
    const r = want / have, up = {};
    const times = (v) => Array.isArray(v) ? v.map((x) => x * r) : v * r;
    const put = (path, font) => { if (font && font.size) up[path] = times(font.size); };
    put('font.size', L.font);
    // Titles keep their size (pinned, as they may inherit font.size): they are the largest
    // text already, and long ones would clip.
    if (L.title && L.title.font) up['title.font.size'] = L.title.font.size;
    if (L.legend) put('legend.font.size', L.legend.font);
    if (L.hoverlabel) put('hoverlabel.font.size', L.hoverlabel.font);
    for (const k of Object.keys(L)) {
      if (!/^[xy]axis\d*$/.test(k) || !L[k]) continue;
      put(k + '.tickfont.size', L[k].tickfont);
      if (L[k].title) put(k + '.title.font.size', L[k].title.font);
    }
    (L.annotations || []).forEach((a, i) => put(`annotations[${i}].font.size`, a.font));
    up.meta = Object.assign({}, L.meta || {}, { ptxScale: want });
    P.relayout(gd, up);
    gd._fullData.forEach((t, i) => {
      const tr = {};
      if (t.textfont && t.textfont.size && t.text !== undefined) tr['textfont.size'] = [times(t.textfont.size)];
      if (t.colorbar && t.colorbar.tickfont) tr['colorbar.tickfont.size'] = [times(t.colorbar.tickfont.size)];
      if (Object.keys(tr).length) P.restyle(gd, tr, [t.index !== undefined ? t.index : i]);
    });
  };
  const scaleAll = () => {
    const want = document.body.classList.contains('ptx-talk') ? __SCALE__ : 1;
    document.querySelectorAll('.js-plotly-plot').forEach((gd) => {
      try { scalePlot(gd, want); } catch (e) { /* a figure mid-redraw: next tick */ }
    });
  };
  window.ptxScalePlots = scaleAll;
  setInterval(scaleAll, 700);  // new results arrive as new figures; cheap when nothing changed
  const apply = (on) => {
    document.body.classList.toggle('ptx-talk', on);
    mark(on);
    try { localStorage.setItem(KEY, on ? '1' : '0'); } catch (e) {}
    window.dispatchEvent(new Event('resize'));  // plotly figures re-fit their boxes
    scaleAll();
  };
  window.ptxTalk = (on) => apply(on === undefined ? !document.body.classList.contains('ptx-talk') : !!on);
  const asked = new URLSearchParams(location.search).get('talk');
  let on = false;
  try { on = localStorage.getItem(KEY) === '1'; } catch (e) {}
  if (asked !== null) on = ['1', 'true', 'yes', 'on'].includes(asked.toLowerCase());
  apply(on);
  setTimeout(() => mark(document.body.classList.contains('ptx-talk')), 800);
  document.addEventListener('keydown', (e) => {
    if (e.altKey && !e.ctrlKey && !e.metaKey && e.code === 'KeyT') { e.preventDefault(); window.ptxTalk(); }
  });
}
""".replace("__STORAGE__", STORAGE_KEY).replace("__BUTTON__", BUTTON_ID).replace("__SCALE__", str(PLOT_SCALE))

TOGGLE_JS = "() => { if (window.ptxTalk) window.ptxTalk(); return []; }"

# Gradio's theme is built on CSS variables; talk mode raises the type scale, darkens text
# and borders, thickens the focus ring, and lets wide content wrap instead of overflowing
# at 1280 x 720.
CSS = """
body.ptx-talk .gradio-container, body.ptx-talk {
  --body-text-size: 21px; --text-sm: 17px; --text-md: 21px; --text-lg: 24px; --text-xl: 28px; --text-xxl: 34px;
  --block-title-text-size: 19px; --block-label-text-size: 17px; --block-info-text-size: 17px;
  --input-text-size: 21px; --button-large-text-size: 21px; --button-small-text-size: 18px;
  --section-header-text-size: 20px; --prose-text-size: 21px; --table-text-size: 18px;
  --checkbox-label-text-size: 18px;
  --body-text-color: #000; --body-text-color-subdued: #1e293b; --block-label-text-color: #000;
  --block-title-text-color: #000; --block-info-text-color: #1e293b; --input-placeholder-color: #334155;
  --block-border-color: #334155; --input-border-color: #334155;
  --body-background-fill: #fff; --background-fill-primary: #fff; --background-fill-secondary: #f1f5f9;
  --link-text-color: #1d4ed8; --link-text-color-hover: #1e3a8a;
  --button-primary-background-fill: #1e3a8a; --button-primary-text-color: #fff;
  --button-secondary-background-fill: #e2e8f0; --button-secondary-text-color: #000;
  --button-secondary-border-color: #334155;
}
body.ptx-talk .prose, body.ptx-talk .prose p, body.ptx-talk .prose li { font-size: 21px !important; line-height: 1.45; color: #000; }
body.ptx-talk .prose h1 { font-size: 32px !important; }
body.ptx-talk .prose h2 { font-size: 27px !important; }
body.ptx-talk .prose h3 { font-size: 24px !important; }
body.ptx-talk .ptx-provenance, body.ptx-talk .ptx-explain { font-size: 19px !important; color: #000 !important; }
body.ptx-talk button[role="tab"] { font-size: 19px !important; font-weight: 600; color: #000; }
body.ptx-talk button[role="tab"][aria-selected="true"] { border-bottom: 4px solid #1e3a8a !important; }
body.ptx-talk :focus-visible { outline: 4px solid #f59e0b !important; outline-offset: 2px; }
body.ptx-talk .gradio-container { max-width: 100% !important; }
body.ptx-talk .prose pre, body.ptx-talk .prose code { white-space: pre-wrap; word-break: break-word; }
body.ptx-talk img, body.ptx-talk svg.main-svg { max-width: 100%; }
/* Inner tab rows wrap to a second line rather than squeezing their labels. */
body.ptx-talk .tab-container[role="tablist"] { flex-wrap: wrap; height: auto !important; row-gap: 4px; }
body.ptx-talk .tab-container[role="tablist"] > button[role="tab"] { flex-shrink: 0; }
#ptx-talk-toggle[aria-pressed="true"] { background: #1e3a8a; color: #fff; border-color: #1e3a8a; }
"""


def toggle() -> gr.Button:
    """The header's talk-mode button; the page JS does the switching (no server call)."""
    button = gr.Button(tr("toggle"), size="sm", elem_id=BUTTON_ID, scale=0, min_width=150)
    button.click(fn=None, js=TOGGLE_JS, api_visibility="private")
    return button
