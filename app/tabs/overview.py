"""Overview: the map of pretraining, the two lines meeting at the Transformer, linking
every station. Data: assets/timeline.json through engine/timeline.py."""

from __future__ import annotations

import textwrap
from functools import lru_cache

import gradio as gr
import plotly.graph_objects as go

from app import deeplinks
from app.i18n import translator
from engine.timeline import Milestone, Timeline, load_timeline, year_to_x

TITLE = "Overview"
KEY = "overview"
tr = translator(KEY)

# Station names for the "open" buttons (the tab titles are English only).
STATION_NAMES = {
    "word_vectors": {"en": "Word vectors", "zh": "词向量"},
    "contextual": {"en": "Contextual embeddings", "zh": "上下文词向量"},
    "attention": {"en": "Attention & cloze", "zh": "注意力与完形填空"},
    "cnn": {"en": "CNN features", "zh": "CNN 特征"},
    "vit_mae": {"en": "ViT & MAE", "zh": "ViT 与 MAE"},
    "finetune": {"en": "Fine-tuning lab", "zh": "微调实验室"},
    "models": {"en": "Models", "zh": "模型"},
}
# The order a talk walks through the map (the ◀ / ▶ buttons follow it).
STORY = ("bow", "nnlm", "word2vec", "glove", "elmo", "transformer", "gpt", "bert",
         "imagenet_cnn", "contrastive", "igpt", "vit", "beit", "mae")

LANE_COLOUR = {"nlp": "#4338ca", "meet": "#047857", "vision": "#b45309"}
LANE_BAND = {"nlp": "rgba(99,102,241,0.09)", "vision": "rgba(245,158,11,0.11)"}
LANE_Y = {"nlp": (1.0, 1.75), "meet": (0.0, 0.0), "vision": (-1.0, -1.75)}
EDGE_STYLE = {  # kind -> (dash, width, colour or None for the lane's colour)
    "line": ("solid", 2.5, None),
    "transformer": ("dash", 2.0, LANE_COLOUR["meet"]),
    "idea": ("dot", 2.0, "#64748b"),
}
FONT = "Inter, ui-sans-serif, system-ui, Segoe UI, Helvetica Neue, Arial, Noto Sans CJK SC, sans-serif"
HEIGHT = 470
X_RANGE = (-1.45, 10.95)


def _xy(n: Milestone) -> tuple[float, float]:
    return year_to_x(n.date), LANE_Y[n.lane][min(n.level, 1)]


def _label_position(n: Milestone) -> str:
    """Labels sit on the outer side of each lane's zig-zag, away from the arrows."""
    if n.lane == "meet":
        return "middle left"
    outer = (n.lane == "nlp") == (n.level == 1)
    return "top center" if outer else "bottom center"


def _wrap(text: str, lang: str) -> str:
    if lang == "zh":
        return "<br>".join(text[i:i + 26] for i in range(0, len(text), 26))
    return "<br>".join(textwrap.wrap(text, 62))


def _short(name: str) -> str:
    """Long names break at the middle space so neighbouring labels don't touch."""
    if len(name) <= 14 or " " not in name:
        return name
    cut = min((i for i, c in enumerate(name) if c == " "), key=lambda i: abs(i - len(name) / 2))
    return name[:cut] + "<br>" + name[cut + 1:]


def _hover(n: Milestone) -> str:
    parts = [f"<b>{n.name['en']}</b> · {n.year_label} · {n.who}"]
    for lang, solved, left in (("en", "Solved", "Left open"), ("zh", "解决了", "留下的问题")):
        parts.append(f"<b>{solved}:</b> " + _wrap(n.solved[lang], lang))
        parts.append(f"<b>{left}:</b> " + _wrap(n.open[lang], lang))
    return "<br>".join(parts)


def map_figure(focus: str = "", timeline: Timeline | None = None) -> go.Figure:
    """The map as a plotly figure; `focus` (a milestone id) highlights it and its lineage.

    Cached per focus (15 possible figures, ~0.2 s each to build): nobody mutates them."""
    tl = timeline or load_timeline()
    return _map_figure(focus if focus in {n.id for n in tl.nodes} else "", tl)


@lru_cache(maxsize=32)
def _map_figure(focus: str, tl: Timeline) -> go.Figure:
    ids = {n.id for n in tl.nodes}
    lit = ({focus} | tl.ancestors(focus)) if focus else ids
    fig = go.Figure()
    # Lane bands and names.
    for lane, (y0, y1) in (("nlp", (0.5, 2.45)), ("vision", (-2.62, -0.5))):
        fig.add_shape(type="rect", x0=X_RANGE[0], x1=X_RANGE[1], y0=y0, y1=y1, fillcolor=LANE_BAND[lane],
                      line={"width": 0}, layer="below")
        names = tl.lanes[lane]
        fig.add_annotation(x=X_RANGE[0] + 0.08, y=(y0 + y1) / 2, xanchor="left", yanchor="middle", showarrow=False,
                           text=f"<b>{names['en']}</b><br>{names['zh']}", align="left",
                           font={"size": 16, "color": LANE_COLOUR[lane]})
    # Edges: the body as a line (solid, dashed or dotted), the head as a short arrow at the end.
    pos = {n.id: _xy(n) for n in tl.nodes}
    lane_of = {n.id: n.lane for n in tl.nodes}
    for a, b, kind in tl.edges:
        dash, width, colour = EDGE_STYLE[kind]
        colour = colour or LANE_COLOUR[lane_of[b]]
        on = a in lit and b in lit
        alpha = (0.95 if kind == "line" else 0.7) if on else 0.15
        (xa, ya), (xb, yb) = pos[a], pos[b]
        fig.add_trace(go.Scatter(x=[xa, xb], y=[ya, yb], mode="lines", hoverinfo="skip", showlegend=False,
                                 line={"dash": dash, "width": width if on else 1.2, "color": colour},
                                 opacity=alpha))
        fig.add_annotation(x=xb, y=yb, ax=xb - 0.4 * (xb - xa), ay=yb - 0.4 * (yb - ya), xref="x", yref="y",
                           axref="x", ayref="y", text="", showarrow=True, arrowhead=2, arrowsize=1.2,
                           arrowwidth=width if on else 1.2, arrowcolor=colour, standoff=13, opacity=alpha)
    # Nodes, one trace per lane so the legend names the lanes.
    for lane in ("nlp", "meet", "vision"):
        nodes = [n for n in tl.nodes if n.lane == lane]
        fig.add_trace(go.Scatter(
            x=[pos[n.id][0] for n in nodes], y=[pos[n.id][1] for n in nodes], mode="markers+text",
            name=f"{tl.lanes[lane]['en']} · {tl.lanes[lane]['zh']}", showlegend=False,
            text=[f"<b>{_short(n.name['en'])}</b><br>{n.year_label}" for n in nodes],
            textposition=[_label_position(n) for n in nodes],
            textfont={"size": [18 if n.id == focus else 16 for n in nodes], "color": "#0f172a"},
            marker={"size": [34 if n.id == focus else 22 for n in nodes], "color": LANE_COLOUR[lane],
                    "opacity": [1.0 if n.id in lit else 0.3 for n in nodes],
                    "line": {"width": [5 if n.id == focus else 2 for n in nodes],
                             "color": ["#f59e0b" if n.id == focus else "white" for n in nodes]}},
            customdata=[n.id for n in nodes], hovertext=[_hover(n) for n in nodes], hoverinfo="text",
        ))
    # Legend for the kinds of arrows.
    for kind, label in (("line", "line of work · 演进"), ("transformer", "built on the Transformer · 基于 Transformer"),
                        ("idea", "borrowed idea · 借鉴")):
        dash, width, colour = EDGE_STYLE[kind]
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=label,
                                 line={"dash": dash, "width": width, "color": colour or "#334155"}))
    ticks = [2000, 2003, 2012, 2014, 2017, 2018, 2019, 2020, 2021, 2022]
    title = "<b>The map of pretraining</b> · 预训练地图"
    if focus:
        n = tl.node(focus)
        title += f"  —  <b>{n.name['en']}</b> {n.year_label} and what led to it"
    fig.update_layout(
        height=HEIGHT, margin={"l": 10, "r": 10, "t": 44, "b": 56}, plot_bgcolor="white", paper_bgcolor="white",
        title={"text": title, "x": 0.01, "y": 0.985, "font": {"size": 20}},
        font={"family": FONT, "size": 15, "color": "#0f172a"},
        xaxis={"range": list(X_RANGE), "tickvals": [year_to_x(y) for y in ticks],
               "ticktext": ["earlier", *map(str, ticks[1:])], "showgrid": True, "gridcolor": "#e2e8f0",
               "zeroline": False, "fixedrange": True, "tickfont": {"size": 14}, "tickangle": 0},
        yaxis={"range": [-2.85, 2.5], "visible": False, "fixedrange": True},
        legend={"orientation": "h", "x": 0.5, "xanchor": "center", "y": -0.06, "yanchor": "top",
                "font": {"size": 13}, "bgcolor": "rgba(255,255,255,0)"},
        hoverlabel={"font": {"size": 14, "family": FONT}, "align": "left", "bgcolor": "white"},
        showlegend=True, modebar={"orientation": "v"},
        # Its type is projector-sized already and its labels are placed by hand: talk mode
        # (app/talk_mode.py) leaves this figure's fonts as they are.
        meta={"ptxMaxScale": 1},
    )
    return fig


def _station(key: str, lang: str) -> str:
    return STATION_NAMES.get(key, {}).get(lang, key)


def _card(n: Milestone, lang: str) -> str:
    lane = load_timeline().lanes[n.lane][lang]
    solved, left = ("Solved", "Left open") if lang == "en" else ("解决了", "留下的问题")
    link = deeplinks.url_for(n.station, n.preset)
    shareable = "Link to this demo" if lang == "en" else "这个演示的链接"
    return (f"### {n.name[lang]} · {n.year_label}\n"
            f"<span class='ptx-card-who'>{n.who} · {lane}</span>\n\n"
            f"**{solved}:** {n.solved[lang]}\n\n**{left}:** {n.open[lang]}\n\n"
            f"<span class='ptx-card-link'>[{shareable}]({link})</span>")


def _strings() -> dict[str, dict[str, str]]:
    """UI text, with one card and one button label per milestone built from the timeline."""
    out = {
        "en": {
            "title": TITLE,
            "lead": "Pretraining grew along two lines, **language** (top) and **vision** (bottom), that meet in the "
                    "**Transformer**. Hover a dot for what it solved; click it (or step with ◀ ▶, PageUp / PageDown) to "
                    "trace what led to it, then open its station.",
            "focus": "Milestone", "whole": "The whole map", "prev": "◀ Earlier", "next": "Later ▶",
            "intro_card": "### How to read the map\nEach dot is a milestone at the year of its first paper; solid "
                          "arrows follow a line of work, dashed ones come from the Transformer, dotted ones mark an "
                          "idea borrowed across the lines (GPT → iGPT, BERT → BEiT and MAE). The axis stretches the "
                          "crowded years after 2012.\n\n**The stations:**",
        },
        "zh": {
            "title": "总览",
            "lead": "预训练沿两条路线发展：上方是**语言**，下方是**视觉**，两者在 **Transformer** 交汇。鼠标停在圆点上可看它解决了"
                    "什么；点击它（或用 ◀ ▶、PageUp / PageDown 逐个前进），看它从何而来，再打开对应的演示站。",
            "focus": "里程碑", "whole": "整张地图", "prev": "◀ 更早", "next": "更晚 ▶",
            "intro_card": "### 怎么看这张图\n每个圆点是一个里程碑，位置是它首篇论文的年份；实线箭头沿着一条研究脉络，虚线来自 "
                          "Transformer，点线表示跨路线借鉴的想法（GPT → iGPT，BERT → BEiT 和 MAE）。2012 年之后的"
                          "年份较密集，横轴在那里被拉宽。\n\n**各个演示站：**",
        },
    }
    for n in load_timeline().nodes:
        for lang in ("en", "zh"):
            out[lang][f"card_{n.id}"] = _card(n, lang)
            verb = "Open" if lang == "en" else "打开"
            out[lang][f"open_{n.id}"] = f"{verb}: {_station(n.station, lang)} →"
    for key in STATION_NAMES:
        for lang in ("en", "zh"):
            out[lang][f"station_{key}"] = _station(key, lang)
    return out


STRINGS = _strings()


def _choices() -> list[tuple[str, str]]:
    tl = load_timeline()
    return [("—", "")] + [(f"{tl.node(i).name['en']} · {tl.node(i).year_label}", i) for i in STORY]


def step(focus: str, delta: int) -> str:
    """The next (delta=1) or previous (delta=-1) milestone in story order."""
    if focus not in STORY:
        return STORY[0] if delta > 0 else STORY[-1]
    return STORY[max(0, min(len(STORY) - 1, STORY.index(focus) + delta))]


# Page JS (run once at load through app/header.py): a click on a milestone in the map
# writes its id into a hidden textbox, whose change event focuses that milestone. Plotly
# replaces its plot on every new figure, so the handler is re-attached when that happens.
ON_LOAD_JS = """
() => {
  const bind = () => {
    const gd = document.querySelector('#ptx-overview-map .js-plotly-plot');
    if (!gd || typeof gd.on !== 'function' || gd.__ptxLayout === gd._fullLayout) return;
    gd.__ptxLayout = gd._fullLayout;
    if (gd.removeAllListeners) gd.removeAllListeners('plotly_click');
    gd.on('plotly_click', (ev) => {
      const id = ev && ev.points && ev.points[0] && ev.points[0].customdata;
      const box = document.querySelector('#ptx-overview-clicked textarea, #ptx-overview-clicked input');
      if (!id || typeof id !== 'string' || !box) return;
      box.value = id;
      box.dispatchEvent(new Event('input', { bubbles: true }));
    });
  };
  setInterval(bind, 700);
  // A presenter's clicker sends PageDown / PageUp (some send the arrow keys): step through
  // the story while the Overview is on screen and no text field, slider or tab has focus.
  document.addEventListener('keydown', (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const step = { PageDown: 'next', ArrowRight: 'next', PageUp: 'prev', ArrowLeft: 'prev' }[e.key];
    const panel = document.getElementById('tab-overview');
    if (!step || !panel || panel.offsetParent === null) return;
    const a = document.activeElement;
    if (a && a !== document.body && (a.matches('input, textarea, select, [contenteditable], [role=tab], [role=slider]')
        || !panel.contains(a) && a.tagName !== 'BUTTON')) return;
    const btn = document.getElementById('ptx-overview-' + step);
    if (btn) { e.preventDefault(); btn.click(); }
  });
}
"""


def build() -> None:
    tl = load_timeline()
    gr.Markdown(tr("lead"), elem_classes=["ptx-explain"])
    with gr.Row(equal_height=False):
        with gr.Column(scale=7, min_width=600):
            plot = gr.Plot(map_figure(""), show_label=False, elem_id="ptx-overview-map")
            clicked = gr.Textbox(visible="hidden", elem_id="ptx-overview-clicked")
        with gr.Column(scale=3, min_width=320, elem_id="ptx-overview-side"):
            focus = gr.Dropdown(_choices(), value="", label=tr("focus"), elem_id="ptx-overview-focus")
            with gr.Row():
                prev_btn = gr.Button(tr("prev"), size="sm", elem_id="ptx-overview-prev", min_width=80)
                next_btn = gr.Button(tr("next"), size="sm", elem_id="ptx-overview-next", min_width=80)
            cards: list[gr.Column] = []
            with gr.Column(visible=True, variant="panel", elem_classes=["ptx-node-card"]) as intro:
                gr.Markdown(tr("intro_card"))
                with gr.Row(elem_classes=["ptx-station-row"]):
                    for key in ("word_vectors", "contextual", "attention", "cnn", "vit_mae", "finetune"):
                        deeplinks.link_button(tr(f"station_{key}"), key, size="sm", min_width=120,
                                              elem_id=f"ptx-overview-go-{key}")
            for node_id in STORY:
                n = tl.node(node_id)
                with gr.Column(visible=False, variant="panel", elem_classes=["ptx-node-card"],
                              elem_id=f"ptx-card-{node_id}") as card:
                    gr.Markdown(tr(f"card_{node_id}"))
                    deeplinks.link_button(tr(f"open_{node_id}"), n.station, n.preset, variant="primary",
                                          size="md", elem_id=f"ptx-overview-open-{node_id}")
                cards.append(card)

    def show(node_id: str) -> list:
        node_id = node_id if node_id in STORY else ""
        return [map_figure(node_id), gr.Column(visible=not node_id),
                *[gr.Column(visible=i == node_id) for i in STORY]]

    # Cheap (a plotly figure from a small JSON), so no queue: instant even while models load.
    quick = {"api_visibility": "private", "show_progress": "hidden", "queue": False}
    focus.change(show, inputs=focus, outputs=[plot, intro, *cards], **quick)
    prev_btn.click(lambda f: step(f, -1), inputs=focus, outputs=focus, **quick)
    next_btn.click(lambda f: step(f, 1), inputs=focus, outputs=focus, **quick)
    clicked.change(lambda c: c if c in STORY else gr.skip(), inputs=clicked, outputs=focus, **quick)
    deeplinks.register(KEY, {"focus": focus})


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
