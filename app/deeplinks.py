"""Deep links: the page URL names a tab and its inputs, so every view can be bookmarked.

    http://127.0.0.1:7860/?tab=vit_mae&mask_ratio=0.75&seed=0

Opening such a link selects the tab, fills the named inputs and, when the tab declared a
run button, presses it. The header's "copy link to this view" button makes such a URL
from the tab on screen and the current values of its declared inputs.

Adopting it in a station is one call inside `build()`, after the components exist:

    from app import deeplinks

    deeplinks.register(KEY, {"expression": expression_box, "k": k_slider}, run=run_button)

- Parameter names: use the API.md argument names where one exists (`expression`, `word`,
  `words`, `sentences`, `model`, `text`, `k`, `mask_ratio`, `seed`, `layer`, `task`,
  `mode`, `steps`, `lr`), so a link reads like the API call it mirrors.
- Values are checked against the component before they reach it: Slider and Number are
  parsed and clamped to their range, Checkbox takes 1/0/true/false/yes/no/on/off,
  Dropdown and Radio only take one of their choices, Textbox text is cut at
  `MAX_TEXT` characters. A value that does not fit is skipped with a warning toast; the
  rest of the link still applies. For anything else (an image picked by name, say) pass
  `(component, parse)` where `parse(text) -> value` raises ValueError on bad input.
- `run` is the button a person would press; the link clicks it after filling the inputs,
  so the view comes up exactly as that click would make it. Add `run=0` to a link to
  only fill the inputs. A tab with several panels calls `register` once per panel, each
  with its own button; a link presses the button of the first input it names (or, when
  it names none, the button of a `register(KEY, run=button)` call without inputs).
- In-app links (the Overview's "open station" buttons) use `link_button(...)`: the same
  resolution, without reloading the page. The Overview's presets (assets/timeline.json)
  use these names: word_vectors `word`, `expression`, `words`; contextual `word`,
  `model` (`bert`/`elmo`); attention `text`; cnn `image` (a packaged image's name, e.g.
  `chelsea`: register `(image_input, parse)` with a parse that returns its path);
  vit_mae `layer`, `mask_ratio`, `masking`, `seed`; finetune `task`, `mode`. A name a
  station has not declared is skipped (logged), and the tab still opens.

`app.main.build_app` calls `wire(demo, tabs)` once, after every tab is built; standalone
tab launches (`python -m app.tabs.<key>`) have no deep links.
"""

from __future__ import annotations

import html
import json
import logging
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import gradio as gr
from gradio.context import Context

log = logging.getLogger("app.deeplinks")

MAX_TEXT = 2000
# Short names a speaker may type for a tab; the value is the tab KEY (app/stations.py).
TAB_ALIASES = {
    "mae": "vit_mae", "vit": "vit_mae", "word2vec": "word_vectors", "glove": "word_vectors",
    "words": "word_vectors", "bert": "contextual", "elmo": "contextual", "cloze": "attention",
    "fine_tune": "finetune", "fine-tune": "finetune", "map": "overview", "home": "overview",
}
# Query keys that belong to the page, not to a tab's inputs.
PAGE_KEYS = ("tab", "run", "talk", "lang")
TRUE_WORDS = {"1", "true", "yes", "on"}
FALSE_WORDS = {"0", "false", "no", "off"}

Parser = Callable[[str], Any]


@dataclass
class TabLinks:
    """The deep-linkable inputs of one tab, and the button that runs it."""

    key: str
    inputs: dict[str, tuple[gr.components.Component, Parser | None]] = field(default_factory=dict)
    run: gr.Button | None = None            # pressed when a link names no input of a panel
    runs: dict[str, gr.Button] = field(default_factory=dict)   # input name -> its panel's button
    panels: dict[str, tuple[gr.Tabs, str]] = field(default_factory=dict)  # input name -> (inner Tabs, tab id)


@dataclass
class _Registry:
    tabs: dict[str, TabLinks] = field(default_factory=dict)
    link_buttons: list[tuple[gr.Button, dict[str, str]]] = field(default_factory=list)
    copy: tuple[gr.Button, gr.Textbox] | None = None


# One registry per Blocks being built, so building the app twice (tests) never mixes them.
_REGISTRIES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_FALLBACK = _Registry()


def _registry() -> _Registry:
    root = Context.root_block
    if root is None:
        return _FALLBACK
    if root not in _REGISTRIES:
        _REGISTRIES[root] = _Registry()
    return _REGISTRIES[root]


def register(
    key: str,
    inputs: Mapping[str, gr.components.Component | tuple[gr.components.Component, Parser]] | None = None,
    run: gr.Button | None = None,
    panel: tuple[gr.Tabs, str] | None = None,
) -> None:
    """Declare which inputs of tab `key` a URL may set, and which button runs the tab.

    Call inside the tab's `build()`. `inputs` maps a query name to a component or to
    `(component, parse)`. Calling it again for the same tab adds another panel: its
    inputs, pressed by its own `run` button. When the panel is one tab of an inner
    `gr.Tabs`, pass `panel=(inner_tabs, tab_id)`: a link naming its inputs brings that
    tab to the front first (a button in a hidden tab is not on the page to be pressed).
    """
    links = _registry().tabs.setdefault(key, TabLinks(key))
    for name, value in (inputs or {}).items():
        if name in PAGE_KEYS:
            raise ValueError(f"deep-link name {name!r} is reserved for the page; choose another")
        component, parse = value if isinstance(value, tuple) else (value, None)
        links.inputs[name] = (component, parse)
        if panel is not None:
            links.panels[name] = panel
    if run is None:
        return
    if not run.elem_id:
        run.elem_id = f"ptx-run-{key}-{len(links.runs) + (links.run is not None)}"
    if inputs:
        links.runs.update({name: run for name in inputs})
    else:
        links.run = run


def link_button(label: Any, tab: str, params: Mapping[str, Any] | None = None, **button: Any) -> gr.Button:
    """A button that opens `tab` with `params` filled in, inside the running page (no reload).

    The same rules as a URL apply; it is wired by `wire()` once every tab is built."""
    btn = gr.Button(label, **button)
    query = {"tab": tab, **{k: str(v) for k, v in (params or {}).items()}}
    _registry().link_buttons.append((btn, query))
    return btn


def url_for(tab: str, params: Mapping[str, Any] | None = None) -> str:
    """The relative deep link (`?tab=...&...`) for a tab and its inputs."""
    return "?" + urlencode({"tab": tab, **{k: str(v) for k, v in (params or {}).items()}})


def opened_by_link(request: gr.Request | None, key: str) -> bool:
    """True when this page load came from a link that opens tab `key` and presses its run
    button (no `run=0`)."""
    query = dict(request.query_params) if request is not None else {}
    return (tab_key(query.get("tab"), {key}) == key
            and str(query.get("run", "1")).strip().lower() not in FALSE_WORDS)


def page_open(key: str, fn: Callable[[], Any], n_outputs: int) -> Callable[..., Any]:
    """The function of a tab's page-open event (its default view) that stands aside when a
    deep link runs the tab: both go through the same queue, and the default view finishing
    second would overwrite what the link asked for."""
    def on_open(request: gr.Request):
        if opened_by_link(request, key):
            return tuple(gr.skip() for _ in range(n_outputs)) if n_outputs > 1 else gr.skip()
        return fn()
    return on_open


def tab_key(name: str | None, known: set[str]) -> str | None:
    """A tab KEY from a query value (`vit_mae`, `MAE`, `ViT-MAE`), or None if it names no tab."""
    if not name:
        return None
    wanted = name.strip().lower().replace("-", "_").replace(" ", "_")
    if wanted in known:
        return wanted
    alias = TAB_ALIASES.get(wanted)
    return alias if alias in known else None


def _choice_values(component: gr.components.Component) -> list[Any]:
    out = []
    for choice in getattr(component, "choices", None) or []:
        out.append(choice[1] if isinstance(choice, (tuple, list)) else choice)
    return out


def parse_value(component: gr.components.Component, text: str) -> Any:
    """A query string value turned into what `component` accepts; ValueError if it can't be."""
    if isinstance(component, gr.Checkbox):
        word = text.strip().lower()
        if word in TRUE_WORDS | FALSE_WORDS:
            return word in TRUE_WORDS
        raise ValueError("expected 1 or 0")
    if isinstance(component, (gr.Slider, gr.Number)):
        number = float(text)
        if number != number or number in (float("inf"), float("-inf")):
            raise ValueError("not a finite number")
        low, high = getattr(component, "minimum", None), getattr(component, "maximum", None)
        if low is not None:
            number = max(number, float(low))
        if high is not None:
            number = min(number, float(high))
        step = getattr(component, "step", None)
        integral = getattr(component, "precision", None) == 0 or (
            isinstance(step, int) and isinstance(low, int) and not isinstance(step, bool))
        return int(round(number)) if integral else number
    if isinstance(component, (gr.Dropdown, gr.Radio, gr.CheckboxGroup)):
        choices = _choice_values(component)
        multi = isinstance(component, gr.CheckboxGroup) or getattr(component, "multiselect", False)
        wanted = [w.strip() for w in text.split(",")] if multi else [text.strip()]
        picked = []
        for w in wanted:
            match = next((c for c in choices if str(c) == w), None)
            if match is None:
                match = next((c for c in choices if str(c).lower() == w.lower()), None)
            if match is None and not getattr(component, "allow_custom_value", False):
                raise ValueError(f"expected one of {', '.join(map(str, choices[:12]))}")
            picked.append(w if match is None else match)
        return picked if multi else picked[0]
    if len(text) > MAX_TEXT:
        raise ValueError(f"longer than {MAX_TEXT} characters")
    return text


@dataclass
class Resolution:
    """What a query asks for: the tab, the values per component, the button to press."""

    tab: str | None = None
    values: dict[gr.components.Component, Any] = field(default_factory=dict)
    run_id: str = ""
    skipped: list[str] = field(default_factory=list)
    panel: tuple[gr.Tabs, str] | None = None


def _shown(text: str, limit: int = 40) -> str:
    """A piece of a URL as it may appear in a message: cut short and HTML-escaped (toasts
    render HTML, and a link is anyone's to write)."""
    text = str(text)
    return html.escape(text[:limit] + ("…" if len(text) > limit else ""))


def resolve(query: Mapping[str, str], tabs: Mapping[str, TabLinks], known: set[str]) -> Resolution:
    """Turn query parameters into a Resolution. Pure: no gradio event, easy to test."""
    out = Resolution()
    raw_tab = query.get("tab")
    out.tab = tab_key(raw_tab, known)
    if raw_tab and out.tab is None:
        out.skipped.append(f"tab={_shown(raw_tab)} (no such tab; tabs are {', '.join(sorted(known))})")
    links = tabs.get(out.tab or "")
    if links is None:
        return out
    press = links.run
    named = False
    for name, text in query.items():
        if name in PAGE_KEYS:
            continue
        if name not in links.inputs:
            out.skipped.append(f"{_shown(name)} (not a deep-link input of {out.tab})")
            continue
        component, parse = links.inputs[name]
        try:
            out.values[component] = parse(text) if parse else parse_value(component, text)
        except Exception as exc:  # a bad link must never break the page
            out.skipped.append(f"{_shown(name)}={_shown(text)} ({_shown(str(exc), 160)})")
            continue
        if not named and name in links.runs:
            press, named = links.runs[name], True
            out.panel = links.panels.get(name)
    if press is not None and str(query.get("run", "1")).strip().lower() not in FALSE_WORDS:
        out.run_id = press.elem_id or ""
    return out


# Presses the run button once the inputs hold their new values (the short wait lets the
# components take them). `id` comes from Python, never from the URL.
_PRESS_JS = """(id) => { if (id) {
  // Two frames let the components take their new values, then the queue settles a moment.
  const press = () => {
    const el = document.getElementById(id);
    const btn = el && (el.tagName === 'BUTTON' ? el : el.querySelector('button'));
    if (btn) btn.click();
  };
  requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(press, 400)));
} return []; }"""


def _copy_js(entries: list[tuple[str, str]]) -> str:
    """JS for the copy-link button: reads the visible tab and its inputs' current values
    (passed in the order of `entries`), builds the URL, copies it and shows it."""
    return "(...values) => {\n  const entries = " + json.dumps(entries) + """;
  // Tab panels carry id "tab-<key>" (app/main.py); their buttons "tab-<key>-button".
  const tabs = [...document.querySelectorAll('#ptx-tabs [id^="tab-"]')].filter((t) => !t.id.endsWith('-button'));
  const shown = tabs.find((t) => t.offsetParent !== null);
  const key = shown ? shown.id.slice(4) : '';
  const q = new URLSearchParams();
  if (key) q.set('tab', key);
  entries.forEach(([tab, name], i) => {
    const v = values[i];
    if (tab !== key || v === null || v === undefined || typeof v === 'object' && !Array.isArray(v)) return;
    q.set(name, Array.isArray(v) ? v.join(',') : typeof v === 'boolean' ? (v ? '1' : '0') : String(v));
  });
  if (document.body.classList.contains('ptx-talk')) q.set('talk', '1');
  const url = location.origin + location.pathname + '?' + q.toString();
  try { history.replaceState(null, '', url); } catch (e) {}
  const fallback = () => { const t = document.createElement('textarea'); t.value = url;
    document.body.appendChild(t); t.select(); try { document.execCommand('copy'); } catch (e) {} t.remove(); };
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(url).catch(fallback);
  else fallback();
  return url;
}"""


def copy_link_controls(label: Any, box_label: Any) -> tuple[gr.Button, gr.Textbox]:
    """The header's "copy link to this view" button and the box that shows the link.
    Wired by `wire()`, which knows every tab's inputs."""
    button = gr.Button(label, size="sm", elem_id="ptx-copy-link", scale=0, min_width=160)
    box = gr.Textbox(placeholder=box_label, show_label=False, container=False, interactive=False,
                     elem_id="ptx-link-box", lines=1, max_lines=1, scale=1, min_width=120)
    _registry().copy = (button, box)
    return button, box


def wire(demo: gr.Blocks, tabs: gr.Tabs, known: set[str]) -> None:
    """Connect everything registered while the tabs were built: the URL read on page load,
    the in-app link buttons and the copy-link button. Call once, inside `demo`."""
    reg = _registry()
    components: list[gr.components.Component] = []
    for links in reg.tabs.values():
        for component, _ in links.inputs.values():
            if component not in components:
                components.append(component)
    run_box = gr.Textbox(visible=False, elem_id="ptx-deeplink-run")
    inner = []
    for links in reg.tabs.values():
        for panel_tabs, _ in links.panels.values():
            if panel_tabs not in inner:
                inner.append(panel_tabs)
    outputs = [tabs, run_box, *inner, *components]

    def apply(query: Mapping[str, str], warn: bool) -> dict:
        res = resolve(query, reg.tabs, known)
        if res.skipped and warn:
            gr.Warning("This link's " + "; ".join(res.skipped) + " could not be applied; the rest was.")
        if res.skipped:
            log.info("deep link %s: skipped %s", dict(query), res.skipped)
        if res.tab is None:
            return {run_box: ""}
        shown = {res.panel[0]: gr.Tabs(selected=res.panel[1])} if res.panel else {}
        return {tabs: gr.Tabs(selected=res.tab), run_box: res.run_id, **shown, **res.values}

    def on_load(request: gr.Request) -> dict:
        try:
            query = dict(request.query_params) if request is not None else {}
            return apply(query, warn=True)
        except Exception:  # a link must never break the page: open it as if it had no query
            log.exception("deep link could not be applied")
            return {run_box: ""}

    demo.load(on_load, inputs=None, outputs=outputs, api_visibility="private", show_progress="hidden",
              queue=False).then(fn=None, inputs=[run_box], js=_PRESS_JS, api_visibility="private")
    def opener(query: dict[str, str]) -> Callable[[], dict]:
        # In-app presets: a station that has not declared an input yet still opens; the
        # skipped names go to the log rather than a toast.
        return lambda: apply(query, warn=False)

    for button, query in reg.link_buttons:
        button.click(opener(query), inputs=None, outputs=outputs, api_visibility="private",
                     show_progress="hidden", queue=False,
                     ).then(fn=None, inputs=[run_box], js=_PRESS_JS, api_visibility="private")
    copy = reg.copy
    if copy is not None:
        entries = [(links.key, name) for links in reg.tabs.values() for name in links.inputs]
        inputs = [component for links in reg.tabs.values() for component, _ in links.inputs.values()]
        copy[0].click(fn=None, inputs=inputs, outputs=[copy[1]], js=_copy_js(entries), api_visibility="private")
