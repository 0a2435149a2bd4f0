"""Contextual station: watch a contextual model separate the senses of "bank", layer by layer.

Endpoint `/contextual` (API.md). The maths lives in `engine.contextual`; this module lays
out the page and draws plotly figures from what the engine returns.
"""

from __future__ import annotations

import html
from typing import Any

import gradio as gr
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app import deeplinks
from app.common import DEVICE_QUEUE, announce_loading, api, guarded
from app.i18n import translator
from engine import contextual as ctx

TITLE = "Contextual"
KEY = "contextual"
tr = translator(KEY)

STRINGS = {
    "en": {
        "intro": "**One vector per word fails:** GloVe gives *bank* one point for a river bank and a savings "
                 "bank alike. A **contextual** model reads the sentence and gives every *use* its own vector, "
                 "at every layer. Move the layer slider and watch the uses part by meaning.",
        "how": "Each dot is one occurrence (hover for its sentence). **Colour**: an automatic two-way split "
               "(2-means, no labels used). **Shape**: the true sense (presets, or your [sense] tags). Layer 0 is the input "
               "embedding; in BERT it also carries the word's *position*, so a split there follows where the "
               "word stands, not what it means.",
        "preset": "Sentence set",
        "free": "my own sentences",
        "word": "Word to follow",
        "model": "Model",
        "run": "Show",
        "sentences": "Sentences, one per line (whole words only; end a line with [sense] to label it)",
        "sentences_info": f"Up to {ctx.MAX_SENTENCES} lines; a line longer than the model reads is cut there.",
        "layer": "Layer (0 = input embeddings)",
        "method": "Map",
        "mix_title": "ELMo's scalar mix: feature-based vs fine-tuning",
        "mix_explain": "**Two ways to use a pretrained model.** *Feature-based* (ELMo): the pretrained model "
                       "stays frozen; each task learns only how to mix its layers, "
                       "γ · Σⱼ softmax(a)ⱼ · hⱼ, and trains its own model on top. *Fine-tuning* (BERT): add a "
                       "small output layer and keep training every pretrained weight on the task. "
                       "The weights a₀, a₁, a₂ are softmax-normalised (they always sum to 1); γ scales the "
                       "whole vector, which matters to the model trained on top but not to cosine similarity.",
        "a0": "a₀ (token layer)",
        "a1": "a₁ (layer 1)",
        "a2": "a₂ (layer 2)",
        "gamma": "γ (scale)",
    },
    "zh": {
        "intro": "**一词一向量不够：** GloVe 给 *bank* 只有一个点，河岸和银行都一样。**上下文**模型读完整个句子，"
                 "给词的每一次*使用*各自的向量，每一层都有。拖动层滑块，看同一个词的用法按意思分开。",
        "how": "每个点是一次出现（鼠标悬停可看句子）。**颜色**：自动二分（2-means，不使用标签）。"
               "**形状**：真实词义（预设句子，或你加的 [词义] 标注）。第 0 层是输入嵌入；在 BERT 中它还带着词的*位置*，"
               "所以那里的划分跟随词所在的位置，而不是词义。",
        "preset": "句子集",
        "free": "我自己的句子",
        "word": "要追踪的词",
        "model": "模型",
        "run": "显示",
        "sentences": "句子，每行一句（只匹配整词；行尾加 [词义] 可标注）",
        "sentences_info": f"最多 {ctx.MAX_SENTENCES} 行；超过模型最大长度的句子在那里截断。",
        "layer": "层（0 = 输入嵌入）",
        "method": "降维",
        "mix_title": "ELMo 的标量混合：基于特征 vs 微调",
        "mix_explain": "**使用预训练模型的两种方式。** *基于特征*（ELMo）：预训练模型保持冻结，每个任务只学习如何混合"
                       "各层，γ · Σⱼ softmax(a)ⱼ · hⱼ，并在其上训练自己的模型。*微调*（BERT）：加一个小输出层，"
                       "在任务上继续训练全部预训练权重。权重 a₀、a₁、a₂ 经过 softmax 归一化（总和恒为 1）；"
                       "γ 缩放整个向量，它影响上层模型的学习，但不改变余弦相似度。",
        "a0": "a₀（词元层）",
        "a1": "a₁（第 1 层）",
        "a2": "a₂（第 2 层）",
        "gamma": "γ（缩放）",
    },
}

GROUP_COLOURS = ("#4f46e5", "#f59e0b")  # 2-means groups
SENSE_SYMBOLS = ("circle", "diamond", "square", "x")
MODEL_COLOURS = {"bert": "#4f46e5", "elmo": "#059669", "static": "#94a3b8"}
FONT = dict(size=14)


# ---------------------------------------------------------------- API
def contextual(sentences: str, word: str, model: str) -> dict:
    """Occurrences of `word` in `sentences` (one a line) and their cosine similarity at every
    layer of `model` ("bert", "elmo" or "static"; "" = bert). See API.md."""
    return ctx.contextual(sentences, word, model)


# ---------------------------------------------------------------- figures
def _hover(o: dict[str, Any]) -> str:
    sense = f"<br>sense: {html.escape(o['sense'])}" if o.get("sense") else ""
    return (f"sentence {o['sentence'] + 1}: {html.escape(o['left'])} <b>{html.escape(o['word'])}</b> "
            f"{html.escape(o['right'])}{sense}")


def _senses(a: ctx.Analysis) -> list[str]:
    return list(dict.fromkeys(label for label in a.labels if label is not None))


def _scatter_traces(a: ctx.Analysis, points, groups, showlegend: bool = True, size: int = 13) -> list[go.Scatter]:
    """One trace per (2-means group, true sense): colour = group, shape = sense."""
    senses = _senses(a)
    traces = []
    for g in (0, 1):
        for s_i, sense in enumerate(senses or [None]):
            idx = [i for i in range(len(a.occurrences)) if groups[i] == g and (sense is None or a.labels[i] == sense)]
            if not idx:
                continue
            name = f"split {'AB'[g]}" + (f" · {sense}" if sense else "")
            traces.append(go.Scatter(
                x=[float(points[i][0]) for i in idx], y=[float(points[i][1]) for i in idx],
                mode="markers+text", name=name, showlegend=showlegend,
                text=[str(a.occurrences[i]["sentence"] + 1) for i in idx], textposition="top center",
                textfont=dict(size=11, color="#334155"),
                marker=dict(size=size, color=GROUP_COLOURS[g], symbol=SENSE_SYMBOLS[s_i % len(SENSE_SYMBOLS)],
                            line=dict(width=1, color="white")),
                hovertext=[_hover(a.occurrences[i]) for i in idx], hoverinfo="text",
            ))
    return traces


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(title=dict(text=title, font=dict(size=15)), height=height, font=FONT,
                      margin=dict(l=40, r=20, t=60, b=40), template="plotly_white",
                      legend=dict(orientation="h", y=-0.12))
    return fig


def map_figure(a: ctx.Analysis, layer: int, method: str, height: int = 400) -> tuple[go.Figure, str]:
    """The occurrences at one layer, in 2-D; returns the figure and a note (UMAP fallback)."""
    points, used, note = ctx.analysis_map(a, layer, method)
    fig = go.Figure(_scatter_traces(a, points, a.groups[layer]))
    if a.similarity[layer].min() > 1 - 1e-6:
        fig.update_traces(mode="markers")
        fig.add_annotation(text=f"all {len(a.occurrences)} occurrences are one point", showarrow=False,
                           x=0.5, y=0.1, xref="paper", yref="paper", font=dict(size=14))
    fig.update_xaxes(showticklabels=False, title=f"{used.upper()} 1")
    fig.update_yaxes(showticklabels=False, title=f"{used.upper()} 2")
    sil = a.curves["silhouette"][layer]
    acc = a.curves["split_accuracy"][layer]
    extra = f" · split matches senses {acc:.0%}" if acc is not None else ""
    if a.n_layers == 1:  # the static baseline, drawn small beside the layers
        title = f"{a.model}: one vector<br><sup>{a.provenance}</sup>"
        fig.update_layout(showlegend=False)
    else:
        title = f"“{a.word}”, {a.model}, {a.layer_names[layer]}<br><sup>silhouette {sil:.2f}{extra} · {a.provenance}</sup>"
    return _layout(fig, title, height), note


def heatmap_figure(a: ctx.Analysis, layer: int) -> go.Figure:
    """Cosine similarity between the occurrences at one layer (colour range fitted to it)."""
    sim = a.similarity[layer]
    ticks = [f"{o['sentence'] + 1}" + (f" {o['sense']}" if o.get("sense") else "") for o in a.occurrences]
    n = len(ticks)
    low = min(float(sim.min()), 0.99)  # the diagonal is 1, so this is the lowest pair
    fig = go.Figure(go.Heatmap(
        z=sim, x=list(range(n)), y=list(range(n)), zmin=low, zmax=1.0, colorscale="Viridis",
        colorbar=dict(title="cos", thickness=12),
        hovertemplate="%{customdata}<extra></extra>",
        customdata=[[f"{ticks[i]} · {ticks[j]}: cos {sim[i, j]:.3f}" for j in range(n)] for i in range(n)],
    ))
    step = max(1, n // 16)
    fig.update_xaxes(tickvals=list(range(0, n, step)), ticktext=ticks[::step], tickangle=-60, tickfont=dict(size=10))
    fig.update_yaxes(tickvals=list(range(0, n, step)), ticktext=ticks[::step], autorange="reversed", tickfont=dict(size=10))
    title = f"Cosine similarity, {a.layer_names[layer]}<br><sup>{a.model} · colours span {low:.2f} to 1</sup>"
    return _layout(fig, title, 400)


def layers_figure(a: ctx.Analysis) -> go.Figure:
    """Small multiples: a PCA map of every layer, side by side (colour = 2-means at that layer)."""
    maps = ctx.all_layer_maps(a)
    cols = a.n_layers
    fig = make_subplots(rows=1, cols=cols, subplot_titles=[f"{k}: {a.layer_names[k]}" if cols <= 3 else str(k)
                                                           for k in range(cols)], horizontal_spacing=0.015)
    for k in range(cols):
        for trace in _scatter_traces(a, maps[k], a.groups[k], showlegend=False, size=9):
            trace.mode = "markers"
            fig.add_trace(trace, row=1, col=k + 1)
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False)
    title = f"Every layer of {a.model} (PCA per layer; colour = 2-means split, shape = true sense)"
    fig = _layout(fig, title, 280)
    fig.update_layout(margin=dict(l=10, r=10, t=70, b=10))
    return fig


CURVES = (("split_accuracy", "2-means split vs true senses"),
          ("within_minus_across", "within − across cosine"),
          ("silhouette", "silhouette of the 2-means split"))


def curves_figure(results: list[dict[str, Any]], word: str, best: int | None = None) -> go.Figure:
    """Separation by layer, one line per model; a one-layer (static) model is drawn flat;
    a dotted vertical line marks `best`, the chosen model's clearest layer."""
    fig = make_subplots(rows=1, cols=3, subplot_titles=[t for _, t in CURVES], horizontal_spacing=0.07)
    xmax = max([r["analysis"].n_layers - 1 for r in results if r["available"]] + [1])
    missing, unlabelled = [], set()
    for r in results:
        if not r["available"]:
            missing.append(f"{r['kind']}: {_short(r['reason'])}")
            continue
        a: ctx.Analysis = r["analysis"]
        for c, (key, _) in enumerate(CURVES):
            ys = a.curves[key]
            if all(y is None for y in ys):
                unlabelled.add(c)
                continue
            xs = list(range(a.n_layers))
            if a.n_layers == 1:
                xs, ys = [0, xmax], [ys[0], ys[0]]
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="lines+markers" if a.n_layers > 1 else "lines", name=a.model,
                legendgroup=a.kind, showlegend=c == 0,
                line=dict(color=MODEL_COLOURS.get(a.kind, "#0f172a"), width=3, dash="dot" if a.n_layers == 1 else None),
                hovertemplate=f"{a.model}<br>layer %{{x}}: %{{y:.3f}}<extra></extra>",
            ), row=1, col=c + 1)
    for c in sorted(unlabelled):
        fig.add_annotation(text="needs sentences with known senses<br>(pick a preset)", showarrow=False,
                           xref=f"x{c + 1} domain", yref=f"y{c + 1} domain", x=0.5, y=0.5, font=dict(size=13))
    if best is not None:
        for c in range(3):
            fig.add_vline(x=best, line=dict(color="#64748b", width=1, dash="dot"), row=1, col=c + 1)
        fig.add_annotation(text="clearest split", x=best, y=0.02, xref="x", yref="y domain", showarrow=False,
                           xanchor="left", yanchor="bottom", font=dict(size=11, color="#64748b"))
    fig.update_xaxes(title="layer", dtick=1)
    fig.update_yaxes(range=[0.4, 1.02], row=1, col=1)
    sub = "; ".join(missing) if missing else "the first two need the preset's labels; the silhouette needs none"
    fig = _layout(fig, f"How well “{word}” separates, layer by layer<br><sup>{html.escape(sub)}</sup>", 380)
    fig.update_layout(margin=dict(l=40, r=20, t=80, b=90), legend=dict(orientation="h", y=-0.3, x=0.5,
                                                                      xanchor="center", yanchor="top"))
    return fig


def _short(reason: str) -> str:
    """The first clause of a long unavailability message, for a figure subtitle."""
    if "could be loaded" in reason or "unavailable" in reason.lower():
        return "not available here (see the Models tab)"
    return reason[:80] + ("…" if len(reason) > 80 else "")


def mix_figure(a: ctx.Analysis, view: dict[str, Any]) -> go.Figure:
    """The softmax weights as bars, and the mixed vectors' PCA map."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.3, 0.7],
                        subplot_titles=["softmax(a)", "mixed vectors (PCA)"])
    fig.add_trace(go.Bar(x=a.layer_names, y=view["weights"], marker_color="#059669", showlegend=False,
                         text=[f"{w:.2f}" for w in view["weights"]], textposition="outside"), row=1, col=1)
    for trace in _scatter_traces(a, view["points"], view["groups"]):
        fig.add_trace(trace, row=1, col=2)
    fig.update_yaxes(range=[0, 1.15], row=1, col=1)
    fig.update_xaxes(showticklabels=False, row=1, col=2)
    fig.update_yaxes(showticklabels=False, row=1, col=2)
    acc = view["split_accuracy"]
    extra = f" · split matches senses {acc:.0%}" if acc is not None else ""
    title = (f"Scalar mix of {a.model}: γ = {view['gamma']:.2f}, mean norm {view['norm']:.1f}<br>"
             f"<sup>silhouette {view['silhouette']:.2f}{extra}</sup>")
    fig = _layout(fig, title, 400)
    fig.update_layout(margin=dict(l=40, r=20, t=95, b=40))
    return fig


def _layer_list(a: ctx.Analysis, layers: list[int]) -> str:
    """ "layers 2, 3, 4" when the names are plain layer numbers, else the names."""
    names = [a.layer_names[k] for k in layers]
    if all(n.startswith("layer ") for n in names):
        return "layer" + ("s " if len(names) > 1 else " ") + ", ".join(n.removeprefix("layer ") for n in names)
    return ", ".join(names)


def _status(a: ctx.Analysis, map_note: str = "") -> str:
    n_sent = len({o["sentence"] for o in a.occurrences})
    best = a.best_layer
    acc = a.curves["split_accuracy"][best]
    parts = [f"**{len(a.occurrences)}** occurrence(s) of **{a.word}** in {n_sent} sentence(s) · "
             f"{a.provenance} · {a.n_layers} layer{'s' if a.n_layers > 1 else ''}."]
    if a.n_layers > 1 and len(a.occurrences) > 2:
        perfect = [k for k, v in enumerate(a.curves["split_accuracy"]) if v == 1.0]
        parts.append(f"Clearest split at **{a.layer_names[best]}**"
                     + (f": the 2-means split matches the true senses {acc:.0%}" if acc is not None else "")
                     + (f"; perfect at {_layer_list(a, perfect)}" if perfect else "") + ".")
    parts += a.notes + ([map_note] if map_note else [])
    return "\n\n".join(parts)


# ---------------------------------------------------------------- callbacks
def _empty() -> go.Figure:
    return _layout(go.Figure(), "", 200)


def run(preset_key: str, text: str, word: str, model: str, method: str, progress=gr.Progress()):
    """Analyse and draw everything; the slider jumps to the clearest layer."""
    kind = ctx.MODEL_ALIASES.get(model or "", model or "bert")
    if kind in ctx.MODEL_ROLES:
        announce_loading(ctx.MODEL_ROLES[kind], "", progress)
    a = ctx.analyse(text, word, model)
    results = ctx.compare(text, word)
    # The chosen model's own analysis replaces its kind's entry (it may be a specific model id).
    results = [{"kind": a.kind, "available": True, "analysis": a} if r["kind"] == a.kind else r for r in results]
    static = next((r["analysis"] for r in results if r["kind"] == "static" and r["available"]), None)
    layer = a.best_layer
    fig_map, note = map_figure(a, layer, method)
    mix_visible = a.n_layers == 3
    return (
        a, _status(a, note),
        # A one-layer (static) model still needs maximum > minimum; the slider is then locked.
        gr.update(maximum=max(1, a.n_layers - 1), value=layer, interactive=a.n_layers > 1),
        gr.update(value=map_figure(static, 0, "pca", 280)[0], visible=True)
        if static is not None and a.kind != "static" else gr.update(visible=False),
        fig_map, heatmap_figure(a, layer), layers_figure(a), curves_figure(results, a.word, a.best_layer if a.n_layers > 1 else None),
        gr.update(visible=mix_visible),
        mix_figure(a, ctx.mix_view(a, [0.0] * 3, 1.0)) if mix_visible else _empty(),
        "" if mix_visible else f"The sliders appear for a three-layer model (ELMo); {a.model} has {a.n_layers} "
                               f"layer(s)." + (" BERT-style models are usually fine-tuned whole instead."
                                               if a.kind == "bert" else ""),
    )


def on_layer(a: ctx.Analysis | None, layer: float, method: str):
    if a is None:
        return gr.update(), gr.update(), gr.update()
    layer = int(min(max(0, layer), a.n_layers - 1))
    fig_map, note = map_figure(a, layer, method)
    return fig_map, heatmap_figure(a, layer), _status(a, note)


def on_mix(a: ctx.Analysis | None, a0: float, a1: float, a2: float, gamma: float):
    if a is None or a.n_layers != 3:
        return gr.update()
    return mix_figure(a, ctx.mix_view(a, [a0, a1, a2], gamma))


def on_preset(key: str):
    preset = ctx.presets().get(key)
    if preset is None:
        return gr.update(), gr.update()
    return preset.text, preset.word


def build() -> None:
    presets = ctx.presets()
    default = next(iter(presets.values()))
    gr.Markdown(tr("intro"), elem_classes=["ptx-explain"])
    with gr.Row():
        with gr.Column(scale=1, min_width=300):
            preset = gr.Dropdown([(p.title["en"], k) for k, p in presets.items()] + [("my own sentences", "")],
                                 value=default.key, label=tr("preset"))
            model = gr.Dropdown(ctx.model_choices(), value="bert", label=tr("model"))
            with gr.Row():
                word = gr.Textbox(default.word, label=tr("word"), max_lines=1, min_width=100)
                method = gr.Radio([("PCA", "pca"), ("UMAP", "umap")], value="pca", label=tr("method"),
                                  min_width=150)
            go_btn = gr.Button(tr("run"), variant="primary")
            text = gr.Textbox(default.text, lines=7, max_lines=7, label=tr("sentences"), info=tr("sentences_info"))
        with gr.Column(scale=3):
            layer = gr.Slider(0, 6, value=3, step=1, label=tr("layer"))
            with gr.Row():
                map_plot = gr.Plot(show_label=False)
                heat_plot = gr.Plot(show_label=False)
            status = gr.Markdown()
    gr.Markdown(tr("how"), elem_classes=["ptx-explain"])
    with gr.Row():
        static_plot = gr.Plot(show_label=False, scale=1)
        layers_plot = gr.Plot(show_label=False, scale=4)
    curves_plot = gr.Plot(show_label=False)
    with gr.Accordion(tr("mix_title"), open=True):
        gr.Markdown(tr("mix_explain"), elem_classes=["ptx-explain"])
        mix_note = gr.Markdown()
        with gr.Column(visible=False) as mix_row:
            with gr.Row():
                a0 = gr.Slider(-3, 3, value=0, step=0.1, label=tr("a0"))
                a1 = gr.Slider(-3, 3, value=0, step=0.1, label=tr("a1"))
                a2 = gr.Slider(-3, 3, value=0, step=0.1, label=tr("a2"))
                gamma = gr.Slider(0.1, 3, value=1, step=0.1, label=tr("gamma"))
            mix_plot = gr.Plot(show_label=False)
    state = gr.State()

    outputs = [state, status, layer, static_plot, map_plot, heat_plot, layers_plot, curves_plot,
               mix_row, mix_plot, mix_note]
    inputs = [preset, text, word, model, method]
    preset.change(on_preset, preset, [text, word], api_visibility="private").then(
        guarded(run), inputs, outputs, api_visibility="private", **DEVICE_QUEUE)
    gr.on([go_btn.click, word.submit, model.change], guarded(run), inputs, outputs,
          api_visibility="private", **DEVICE_QUEUE)
    # The first preset is drawn as the page opens (no inputs: this fires on load only).
    # A deep link that runs this tab makes its own view instead (deeplinks.page_open).
    def first():
        return run(default.key, default.text, default.word, "bert", "pca")

    gr.on(None, guarded(deeplinks.page_open(KEY, first, len(outputs))), None, outputs, api_visibility="private",
          **DEVICE_QUEUE)
    gr.on([layer.change, method.change], guarded(on_layer), [state, layer, method], [map_plot, heat_plot, status],
          api_visibility="private", trigger_mode="always_last")
    gr.on([s.change for s in (a0, a1, a2, gamma)], guarded(on_mix), [state, a0, a1, a2, gamma], mix_plot,
          api_visibility="private", trigger_mode="always_last")
    # Deep links: ?tab=contextual&word=bank&model=elmo (or &preset=play, &sentences=...).
    deeplinks.register(KEY, {"preset": preset, "word": word, "model": model, "sentences": text}, run=go_btn)
    api(contextual, "contextual")


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
