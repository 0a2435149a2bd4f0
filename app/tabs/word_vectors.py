"""Word vectors station: what a table of word vectors learns (analogies, neighbours, maps),
what came before it (bag of words), what it cannot do (one vector for every sense of
"bank"), and training one yourself (word2vec on the packaged text).

Endpoints `/analogy`, `/neighbors`, `/word_map` (API.md). The maths lives in
`engine.word_vectors`, `engine.bow` and `engine.word2vec_training`; this module lays out
the page and draws plotly figures from what the engine returns.
"""

from __future__ import annotations

import html
import json
from typing import Any

import gradio as gr
import plotly.graph_objects as go

from app import deeplinks
from app.common import DEVICE_QUEUE, TRAIN_QUEUE, announce_loading, api, guarded
from app.i18n import translator
from engine import analogy_set, bow, paths
from engine import word2vec_training as w2v
from engine import word_vectors as wv

TITLE = "Word vectors"
KEY = "word_vectors"
tr = translator(KEY)
PRIVATE = {"api_visibility": "private"}
LIMITS = {"10,000": 10_000, "30,000": 30_000, "100,000": 100_000, "all": 0}
FONT = {"size": 15}

STRINGS = {
    "en": {
        "story": "**From a lookup table to word vectors.** A neural language model (Bengio, 2003) turns each "
                 "word into a row of a table *C* before predicting the next word; the table is learned with "
                 "the rest, and similar words end up with similar rows. **word2vec** (2013) keeps only the "
                 "table and two cheap tasks: *CBOW* guesses a word from its neighbours, *skip-gram* guesses the "
                 "neighbours from the word, scored with *negative sampling* or a *hierarchical softmax*. "
                 "**GloVe** (2014) fits the vectors to how often words occur together in the whole corpus.",
        "model": "Word vectors",
        "refresh": "Rescan models",
        "t_analogy": "Analogies",
        "t_neighbors": "Neighbours",
        "t_map": "Word map",
        "t_bow": "Before vectors: bag of words",
        "t_limit": "The limit: “bank”",
        "t_train": "Train your own word2vec",
        "analogy_explain": "An analogy is vector arithmetic: *king − man + woman* lands near *queen* because the "
                           "step from *man* to *woman* is roughly the step from *king* to *queen*. The answer is "
                           "the word whose vector points most nearly the same way (cosine). The input words are "
                           "left out, or they would often win. The vocabulary limit searches only the N most "
                           "frequent words; rare words drop out.",
        "expression": "Expression (king - man + woman, or man : king :: woman : ?)",
        "preset": "Preset by category",
        "k": "How many answers",
        "examples": "Examples",
        "scores": "How good are these vectors? Our analogy set",
        "scores_explain": "About 1,100 questions we wrote in seven categories (capitals, gender, plural, "
                          "comparative, tense, currency, nationality). An answer counts if it is among the top 1 "
                          "or top 5 words, input words left out, searching the vocabulary limit chosen above.",
        "score": "Score the selected model",
        "limit": "Vocabulary limit (most frequent words)",
        "solve": "Solve",
        "neighbors_explain": "The nearest words are those whose vectors point the same way. Type one word, or an "
                             "expression such as *bank + river*.",
        "word": "Word or expression",
        "one_word": "Word",
        "find": "Find neighbours",
        "map_explain": "Each word is a point; `a:b` draws an arrow from *a* to *b*. **PCA** is a linear "
                       "projection: with pairs, its horizontal axis is fitted on the pair differences, so equal "
                       "offsets show as parallel arrows. **UMAP** keeps who is near whom but bends space, so it "
                       "does not keep offsets and the arrows need not be parallel. Hover a point for its "
                       "nearest words.",
        "words": "Words (comma or space separated; a:b makes an arrow)",
        "method": "Projection",
        "draw": "Draw map",
        "bow_explain": "**Bag of words** counts words: each sentence is a vector with one slot per vocabulary "
                       "word. Two sentences with no word in common score 0, whatever they mean. **Averaging word "
                       "vectors** lets synonyms meet, but both ignore word order: *dog bites man* = *man bites "
                       "dog*. Averages of word vectors always share a common direction, so compare with random "
                       "sentence pairs, not with 0.",
        "sentence_a": "Sentence A",
        "sentence_b": "Sentence B",
        "compare": "Compare",
        "limit_explain": "A static model has **one vector per word**, learned from every context at once. "
                         "*bank* of a river and *bank* of money share it, and the more frequent sense wins the "
                         "neighbours. The other sense is still in the vector: add a context word by hand and it "
                         "appears. A **contextual** model does that adding for you, from the sentence.",
        "sense_a": "Sense A words",
        "sense_b": "Sense B words",
        "probe": "Look inside",
        "to_contextual": "See it in context → Contextual station",
        "train_explain": "Train word2vec on the packaged English text (Wikipedia lead sections, the World English "
                         "Bible, tweets: about 2.2 million words). Every 50th sentence is held out; the curve is "
                         "the model's own loss on those. The result is saved under `checkpoints/trained/` and "
                         "appears in the model list. A few million words are a tiny corpus next to GloVe's six "
                         "billion tokens: expect Bible names among the neighbours.",
        "name": "Name",
        "arch": "Task",
        "objective": "Output layer",
        "window": "Window (words each side)",
        "dim": "Dimensions",
        "epochs": "Epochs",
        "min_count": "Minimum count",
        "texts": "Texts",
        "train": "Train",
        "cancel": "Cancel",
        "compare_explain": "The same questions to GloVe and to your model.",
        "accuracy": "Analogy set",
        "trained": "Trained here",
        "show": "Show beside GloVe",
    },
    "zh": {
        "story": "**从查找表到词向量。** 神经网络语言模型（Bengio，2003）在预测下一个词之前，先把每个词换成表 *C* "
                 "中的一行；这张表和网络一起学习，意思相近的词得到相近的行。**word2vec**（2013）只保留这张表和两个"
                 "简单的任务：*CBOW* 用周围的词猜中间的词，*skip-gram* 用中间的词猜周围的词，输出层用*负采样*或"
                 "*层次 softmax*。**GloVe**（2014）让向量去拟合整个语料中词与词一起出现的次数。",
        "model": "词向量模型",
        "refresh": "重新查找模型",
        "t_analogy": "类比",
        "t_neighbors": "近邻",
        "t_map": "词地图",
        "t_bow": "词向量之前：词袋",
        "t_limit": "局限：“bank”",
        "t_train": "自己训练 word2vec",
        "analogy_explain": "类比就是向量运算：*king − man + woman* 落在 *queen* 附近，因为从 *man* 到 *woman* 的一步"
                           "大致等于从 *king* 到 *queen* 的一步。答案是方向最接近（余弦）的词。输入的词不参与排名，"
                           "否则它们常常排第一。词表上限只在最常见的 N 个词中查找，罕见词会消失。",
        "expression": "表达式（king - man + woman，或 man : king :: woman : ?）",
        "preset": "按类别的预设",
        "k": "答案个数",
        "examples": "示例",
        "scores": "这些向量有多好？我们的类比测试集",
        "scores_explain": "我们自己写的约 1,100 道题，分七类（首都、性别、复数、比较级、时态、货币、国籍）。"
                          "正确答案排在前 1 或前 5 个词中（不含输入词）即算对，在上面选定的词表上限内查找。",
        "score": "给所选模型打分",
        "limit": "词表上限（最常见的词）",
        "solve": "求解",
        "neighbors_explain": "最近的词就是向量方向最接近的词。输入一个词，或像 *bank + river* 这样的表达式。",
        "word": "词或表达式",
        "one_word": "词",
        "find": "查找近邻",
        "map_explain": "每个词是一个点；`a:b` 画一条从 *a* 指向 *b* 的箭头。**PCA** 是线性投影：有词对时，横轴由词对"
                       "之差拟合，相同的偏移显示为平行的箭头。**UMAP** 保留谁和谁相近，但会弯曲空间，不保留偏移，"
                       "箭头不一定平行。鼠标悬停可看最近的词。",
        "words": "词（用逗号或空格分隔；a:b 画箭头）",
        "method": "投影方法",
        "draw": "画地图",
        "bow_explain": "**词袋**只数词：每个句子是一个向量，词表中每个词占一格。两个句子没有共同的词，得分就是 0，"
                       "不管意思多接近。**平均词向量**让同义词相遇，但两者都不看词序：*狗咬人* = *人咬狗*。"
                       "词向量的平均总有一个共同方向，所以要和随机句子对比较，而不是和 0 比较。",
        "sentence_a": "句子 A",
        "sentence_b": "句子 B",
        "compare": "比较",
        "limit_explain": "静态模型**每个词只有一个向量**，由所有上下文一起学出来。河岸的 *bank* 和银行的 *bank* "
                         "共用它，更常见的词义占据了近邻。另一个词义仍在向量里：手动加上一个上下文词，它就出现了。"
                         "**上下文**模型根据句子自动完成这一步。",
        "sense_a": "词义 A 的词",
        "sense_b": "词义 B 的词",
        "probe": "看看里面",
        "to_contextual": "在上下文中看 → 上下文一站",
        "train_explain": "在打包的英文文本上训练 word2vec（维基百科条目开头、World English Bible 圣经译本、推文："
                         "约 220 万词）。每 50 句留出一句不参与训练；曲线是模型自己的损失在这些句子上的值。结果保存在 "
                         "`checkpoints/trained/`，并出现在模型列表中。几百万词和 GloVe 的六十亿词相比很小："
                         "近邻里会出现圣经人名。",
        "name": "名称",
        "arch": "任务",
        "objective": "输出层",
        "window": "窗口（每侧词数）",
        "dim": "维度",
        "epochs": "轮数",
        "min_count": "最少出现次数",
        "texts": "文本",
        "train": "训练",
        "cancel": "取消",
        "compare_explain": "同样的问题问 GloVe 和你的模型。",
        "accuracy": "类比测试集",
        "trained": "本地训练的模型",
        "show": "与 GloVe 并排",
    },
}


# ---------------------------------------------------------------- the API (API.md)
def analogy(expression: str, k: int = 10, model: str = "") -> dict:
    """Top-k words for `king - man + woman` or `man : king :: woman : ?`, input words left out."""
    return wv.analogy(expression, k, model)


def neighbors(word: str, k: int = 10, model: str = "") -> dict:
    """Nearest words to a word (or to an expression such as `bank + river`)."""
    return wv.neighbors(word, k, model)


def word_map(words: str, method: str = "pca", model: str = "") -> dict:
    """2-D map (PCA or UMAP) of words; `a:b` pairs become arrows."""
    return wv.word_map(words, method, model)


# ---------------------------------------------------------------- figures
def _bars(results: list[dict[str, Any]], title: str, marks: set[str] = frozenset()) -> go.Figure:
    words = [r["word"] for r in results][::-1]
    scores = [r["score"] for r in results][::-1]
    colors = ["#f59e0b" if w in marks else "#4f46e5" for w in words]
    fig = go.Figure(go.Bar(x=scores, y=words, orientation="h", marker_color=colors,
                           text=[f"{s:.3f}" for s in scores], textposition="auto",
                           hovertemplate="%{y}: cosine %{x:.3f}<extra></extra>"))
    lo = min(scores + [0.0])
    fig.update_layout(title=title, height=max(260, 34 * len(words) + 90), margin=dict(l=10, r=10, t=60, b=30),
                      xaxis=dict(title="cosine similarity", range=[min(lo, 0), 1]), font=FONT)
    return fig


def _map_figure(out: dict[str, Any]) -> go.Figure:
    pts = {p["word"]: p for p in out["points"]}
    fig = go.Figure(go.Scatter(
        x=[p["x"] for p in out["points"]], y=[p["y"] for p in out["points"]],
        mode="markers+text", text=list(pts), textposition="top center",
        marker=dict(size=10, color="#4f46e5"), textfont=dict(size=15),
        customdata=[[", ".join(p["neighbors"]), p["rank"]] for p in out["points"]],
        hovertemplate="<b>%{text}</b> (frequency rank %{customdata[1]:,})<br>nearest among the "
                      f"{wv.HOVER_VOCAB:,} most frequent words: %{{customdata[0]}}<extra></extra>",
    ))
    for a, b in out["pairs"]:
        fig.add_annotation(x=pts[b]["x"], y=pts[b]["y"], ax=pts[a]["x"], ay=pts[a]["y"], xref="x", yref="y",
                           axref="x", ayref="y", showarrow=True, arrowhead=3, arrowsize=1.3, arrowwidth=2,
                           arrowcolor="#f59e0b", standoff=6, startstandoff=6)
    name = "PCA" if out["method"] == "pca" else "UMAP"
    fig.update_layout(title=f"{name} map · {out['model']}", height=560, margin=dict(l=10, r=10, t=60, b=30),
                      font=FONT, xaxis=dict(zeroline=False, showticklabels=out["method"] == "pca"),
                      yaxis=dict(zeroline=False, showticklabels=out["method"] == "pca"))
    return fig


def _bow_figure(out: dict[str, Any]) -> go.Figure:
    names = ["bag of words", "averaged vectors"]
    values = [out["bow_cosine"], out["avg_cosine"] if out["avg_cosine"] is not None else 0.0]
    fig = go.Figure(go.Bar(x=names, y=values, marker_color=["#94a3b8", "#4f46e5"],
                           text=[f"{v:.2f}" for v in values], textposition="outside", width=0.5))
    fig.add_hrect(y0=out["random_pairs_cosine"], y1=out["random_pairs_p95"], fillcolor="#f59e0b", opacity=0.18,
                  line_width=0, annotation_text="random sentence pairs (median to 95th pct.)",
                  annotation_position="top left")
    fig.update_layout(title=f"Cosine of A and B · {out['model']}", height=380, yaxis=dict(range=[0, 1.12]),
                      margin=dict(l=10, r=10, t=60, b=30), font=FONT)
    return fig


def _loss_figure(history: list[dict[str, Any]], title: str) -> go.Figure:
    fig = go.Figure(go.Scatter(x=[h["epoch"] for h in history], y=[h["loss"] for h in history],
                               mode="lines+markers", line=dict(color="#4f46e5", width=3)))
    fig.update_layout(title=title, height=320, margin=dict(l=10, r=10, t=60, b=30), font=FONT,
                      xaxis=dict(title="epoch (0 = before training)", dtick=1),
                      yaxis=dict(title="held-out loss (nats per word)"))
    return fig


def _words_list(rows: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['word']} ({r['score']:.2f})" for r in rows)


# ---------------------------------------------------------------- callbacks (thin: engine does the work)
def _model_update(rescan: bool = False, value: str | None = None) -> dict:
    rows = wv.available_models(rescan=rescan)
    choices = [(f"{r['title']} · {r['source']}" + ("" if r["available"] else " (unavailable)"), r["id"]) for r in rows]
    ids = [r["id"] for r in rows]
    default = next((r["id"] for r in rows if r["default"]), ids[0] if ids else "")
    return gr.update(choices=choices, value=value if value in ids else default)


def _provenance(model: str) -> str:
    rows = {r["id"]: r for r in wv.available_models()}
    r = rows.get(model)
    return f"*{html.escape(r['note'])}*" if r else ""


def run_analogy(expression: str, k: float, limit: str, model: str, progress=gr.Progress()):
    announce_loading("static_vectors", model, progress)
    n = LIMITS.get(limit, 0)
    small = wv.analogy(expression, int(k), model, limit=n or None)
    full = wv.analogy(expression, int(k), model) if n else small
    inside = {r["word"] for r in small["results"]}
    outside = [r for r in full["results"] if r["word"] not in inside]
    lines = [f"**{small['expression']}** · {small['model']}"]
    if small["left_out"]:
        lines.append("Left out (input words): " + ", ".join(
            f"*{d['word']}* would be #{d['would_be']} ({d['score']:.2f})" for d in small["left_out"]))
    if n:
        lines.append(f"Searching the {small['vocab_limit']:,} most frequent of {small['vocab_size']:,} words.")
        if outside:
            lines.append("With the whole vocabulary these would enter: " + ", ".join(
                f"*{r['word']}* ({r['score']:.2f}, frequency rank {r['rank']:,})" for r in outside))
        else:
            lines.append("The whole vocabulary gives the same answers.")
    title = f"{small['expression']} · {small['model']}"
    if outside:  # the limit's effect, drawn: amber bars are answers that only the whole vocabulary has
        merged = sorted(small["results"] + outside, key=lambda r: -r["score"])
        title += f"<br><sup>amber: beyond the {small['vocab_limit']:,} most frequent words</sup>"
        return _bars(merged, title, {r["word"] for r in outside}), "\n\n".join(lines)
    return _bars(small["results"], title), "\n\n".join(lines)


def run_scores(limit: str, model: str, progress=gr.Progress()):
    announce_loading("static_vectors", model, progress)
    r = analogy_set.evaluate_model(model, limit=LIMITS.get(limit, 0) or None, k=5)
    cats = list(r["by_category"])
    fig = go.Figure([
        go.Bar(name="top-1", x=cats, y=[r["by_category"][c]["top1"] for c in cats], marker_color="#94a3b8"),
        go.Bar(name="top-5", x=cats, y=[r["by_category"][c]["topk"] for c in cats], marker_color="#4f46e5"),
    ])
    fig.update_layout(barmode="group", height=360, font=FONT, margin=dict(l=10, r=10, t=70, b=30),
                      yaxis=dict(range=[0, 1], tickformat=".0%"), legend=dict(orientation="h", y=1.02, x=1,
                                                                               xanchor="right", yanchor="bottom"),
                      title=f"Analogy set, {r['vocab_limit']:,} words searched · {r['model']}")
    note = (f"{r['questions']} questions (b − a + c = d, two pairs of one category): top-1 **{r['top1']:.0%}**, "
            f"top-5 **{r['topk']:.0%}**"
            + (f"; {r['not_covered']} have a word outside the searched vocabulary and count as wrong." if r["not_covered"]
               else ".") + f" ({r['seconds']:.1f} s)")
    return fig, note


def run_neighbors(word: str, k: float, limit: str, model: str, progress=gr.Progress()):
    announce_loading("static_vectors", model, progress)
    out = wv.neighbors(word, int(k), model, limit=LIMITS.get(limit, 0) or None)
    note = f"Nearest to **{out['expression']}** among {out['vocab_limit']:,} words · {out['model']}"
    return _bars(out["results"], f"Nearest to {out['expression']} · {out['model']}"), note


def run_map(words: str, method: str, model: str, progress=gr.Progress()):
    announce_loading("static_vectors", model, progress)
    out = wv.word_map(words, method.lower(), model)
    lines = [out["note"]]
    if out["missing"]:
        lines.append("Not in the vocabulary: " + ", ".join(
            f"*{w}*" + (f" (did you mean {', '.join(s)}?)" if (s := out["suggestions"].get(w)) else "")
            for w in out["missing"]))
    return _map_figure(out), "\n\n".join(lines)


def run_bow(a: str, b: str, model: str, progress=gr.Progress()):
    announce_loading("static_vectors", model, progress)
    out = bow.compare(a, b, model)
    shared = ", ".join(out["shared"]) or "none"
    avg = "n/a (no known word)" if out["avg_cosine"] is None else f"{out['avg_cosine']:.2f}"
    lines = [
        f"Words in common: **{shared}**. Bag-of-words cosine **{out['bow_cosine']:.2f}**; "
        f"averaged-vector cosine **{avg}**.",
        f"Random pairs of short Wikipedia sentences score {out['random_pairs_cosine']:.2f} (median), "
        f"{out['random_pairs_p95']:.2f} at the 95th percentile"
        + (f"; this pair beats {out['avg_percentile']:.0f}% of them." if out["avg_percentile"] is not None else "."),
        f"Averaged: A = {', '.join(out['used_a']) or '-'}; B = {', '.join(out['used_b']) or '-'}"
        " (function words left out).",
    ]
    if out["same_bag"]:
        lines.append("**Same bag of words**: both methods call these identical, whatever the word order says.")
    unknown = out["unknown_a"] + out["unknown_b"]
    if unknown:
        lines.append("Not in the vocabulary: " + ", ".join(unknown))
    table = [[w, ca, cb] for w, ca, cb in zip(out["vocabulary"], out["counts_a"], out["counts_b"], strict=True)]
    return _bow_figure(out), "\n\n".join(lines), table


def run_senses(word: str, sense_a: str, sense_b: str, model: str, progress=gr.Progress()):
    announce_loading("static_vectors", model, progress)
    out = wv.senses(word, sense_a, sense_b, 15, model)
    names = {"a": "A", "b": "B", "": "-"}
    rows = [[r["word"], round(r["score"], 3), round(r["a"], 3), round(r["b"], 3), names[r["leans"]]]
            for r in out["neighbors"]]
    counts = {s: sum(r["leans"] == s for r in out["neighbors"]) for s in ("a", "b")}
    places = "; ".join(f"*{d['word']}* #{d['place'] + 1:,}"
                       for d in sorted(out["sense_words"]["b"], key=lambda d: d["place"]))
    lines = [
        f"**{out['word']}** · {out['model']}: cosine to sense A {out['similarity']['a']:.2f}, to sense B "
        f"{out['similarity']['b']:.2f}. Of its {len(rows)} nearest words, {counts['a']} lean to A, "
        f"{counts['b']} to B.",
        f"Where the sense-B words stand among all {out['vocab_size']:,} words, nearest first: {places}.",
        f"**{out['word']} + sense A** → {_words_list(out['with_a'][:8])}",
        f"**{out['word']} + sense B** → {_words_list(out['with_b'][:8])}",
    ]
    link = f"?tab=contextual&word={out['word']}"
    return rows, "\n\n".join(lines), gr.update(link=link)


def _config(name, arch, objective, window, dim, epochs, min_count, texts) -> w2v.Word2VecConfig:
    return w2v.Word2VecConfig(
        name=name, sources=tuple(texts or ()), sg=int(arch == "skip-gram"), hs=int(objective == "hierarchical softmax"),
        window=int(window), vector_size=int(dim), epochs=int(epochs), min_count=int(min_count))


def _bar_html(fraction: float, message: str) -> str:
    pct = round(100 * fraction)
    return (f'<div style="font-size:15px"><progress value="{pct}" max="100" style="width:100%;height:18px">'
            f"</progress><div>{pct}% · {html.escape(message)}</div></div>")


def run_training(name, arch, objective, window, dim, epochs, min_count, texts, current_model):
    config = _config(name, arch, objective, window, dim, epochs, min_count, texts)
    run = w2v.start(config)
    title = f"word2vec {config.name} · held-out loss"
    try:
        yield run.id, _bar_html(0, "starting"), None, gr.update(), gr.update(), ""
        drawn = 0
        for event in w2v.follow(run):
            if event.get("finished"):
                break
            hist = event.get("history") or []
            fig = _loss_figure(hist, title) if len(hist) != drawn else gr.update()  # redraw once per epoch
            drawn = len(hist)
            yield run.id, _bar_html(event["fraction"], event["message"]), fig, gr.update(), gr.update(), ""
        if run.cancel.is_set() and run.result is None:
            yield run.id, _bar_html(run.latest.get("fraction", 0), "cancelled"), gr.update(), gr.update(), \
                gr.update(), "Training cancelled; nothing was saved."
            return
        if run.error:
            raise gr.Error(f"word2vec training: {run.error}")
        manifest = run.result
        rows, headers, summary = _trained_view(manifest)
        yield (run.id, _bar_html(1, "done"), _loss_figure(manifest["history"], title),
               gr.update(value=rows, headers=headers), _model_update(rescan=True, value=current_model), summary)
    finally:
        run.cancel.set() if not run.done.is_set() else None  # the page went away: stop the run


def _trained_view(manifest: dict[str, Any]) -> tuple[list[list[str]], list[str], str]:
    """Comparison rows and headers (GloVe beside the trained model) and a summary line."""
    compare = wv.side_by_side(["glove-6b-50d", manifest["id"]], COMPARE_PROBES, k=5)
    rows = [[r["question"], *r["answers"]] for r in compare["rows"]]
    m = manifest.get("metrics", {})
    p = manifest.get("params", {})
    config = w2v.Word2VecConfig(**{k: v for k, v in p.items() if k in w2v.Word2VecConfig.__dataclass_fields__})
    summary = (f"**{manifest['id']}** ({config.describe()}; {manifest['vocab_size']:,} words, "
               f"{manifest['minutes']:.1f} min, {manifest.get('created_at', '')}) in "
               f"`checkpoints/trained/{manifest['id']}/`. On the station's analogy set "
               f"({m.get('analogy_questions', 0)} questions, {m.get('analogy_not_covered', 0)} with a word it never "
               f"saw): top-1 {m.get('analogy_top1', 0):.0%}, top-5 {m.get('analogy_top5', 0):.0%}.")
    return rows, ["question", *compare["models"]], summary


def show_trained(model_id: str):
    """A finished run (from its manifest): loss curve, comparison with GloVe, summary."""
    manifest = next((m for m in w2v.trained_manifests() if m.get("id") == model_id), None)
    if manifest is None:
        raise gr.Error("No word2vec trained here yet: press Train, or pick another model.")
    rows, headers, summary = _trained_view(manifest)
    fig = _loss_figure(manifest["history"], f"{manifest['id']} · held-out loss")
    return fig, gr.update(value=rows, headers=headers), summary


def _trained_choices() -> list[str]:
    return [m["id"] for m in w2v.trained_manifests() if m.get("id")]


def cancel_training(run_id: str) -> str:
    return "cancelling at the end of this epoch ..." if w2v.cancel(run_id) else "no training is running"


NEIGHBOUR_PRESETS = ["frog", "bank + river", "python", "beijing", "einstein", "happy"]
SENSE_PRESETS = [("bank", "money, loan, deposit", "river, creek, canal"),
                 ("apple", "iphone, computer, software", "fruit, pear, juice"),
                 ("play", "theatre, stage, actor", "game, football, team"),
                 ("mouse", "keyboard, computer, click", "rat, cat, cheese")]
COMPARE_PROBES = ["king - man + woman", "paris - france + italy", "went - go + see", "god", "water", "king",
                  "city", "happy"]


def _load_presets() -> tuple[list[tuple[str, str]], list[dict[str, str]]]:
    analogies = [(f"{p['category']}: {p['expression']}", p["expression"]) for p in analogy_set.load()["presets"]]
    maps = json.loads((paths.ASSETS / "word_vectors" / "maps.json").read_text(encoding="utf-8"))["presets"]
    return analogies, maps


def _first(fn, part: int, *args):
    """One output of a callback for a component's value at page load; None if it fails
    (the person then clicks the button and gets the real message) or if the vectors are
    not loaded yet (a page load never waits for a model: it loads in the background)."""
    if not wv.is_ready():
        wv.load_in_background()
        return None
    try:
        return fn(*args, progress=None)[part]
    except Exception:
        return None


# ---------------------------------------------------------------- layout
def build() -> None:
    analogy_presets, map_presets = _load_presets()
    with gr.Row():
        with gr.Column(scale=3):
            gr.Markdown(tr("story"), elem_classes=["ptx-explain"])
        with gr.Column(scale=2):
            first = _model_update()
            with gr.Row():
                model = gr.Dropdown(label=tr("model"), choices=first["choices"], value=first["value"], scale=4,
                                    interactive=True)
                refresh = gr.Button(tr("refresh"), size="sm", scale=1, min_width=90)
            provenance = gr.Markdown(_provenance(first["value"]), elem_classes=["ptx-provenance"])

    with gr.Tabs() as panels:
        with gr.Tab(tr("t_analogy"), id="analogy"):
            gr.Markdown(tr("analogy_explain"), elem_classes=["ptx-explain"])
            with gr.Row():
                with gr.Column(scale=2):
                    expression = gr.Textbox(label=tr("expression"), value="king - man + woman", max_lines=1)
                    preset = gr.Dropdown(label=tr("preset"), choices=analogy_presets, value=None)
                    with gr.Row():
                        k = gr.Slider(1, 20, value=8, step=1, label=tr("k"))
                        limit = gr.Radio(list(LIMITS), value="100,000", label=tr("limit"))
                    solve = gr.Button(tr("solve"), variant="primary")
                    analogy_note = gr.Markdown(lambda: _first(run_analogy, 1, "king - man + woman", 8, "100,000", ""))
                with gr.Column(scale=3):
                    analogy_plot = gr.Plot(lambda: _first(run_analogy, 0, "king - man + woman", 8, "100,000", ""),
                                           show_label=False)
            with gr.Accordion(tr("scores"), open=False):
                gr.Markdown(tr("scores_explain"))
                score_btn = gr.Button(tr("score"), size="sm")
                score_note = gr.Markdown()
                score_plot = gr.Plot(show_label=False)
        with gr.Tab(tr("t_neighbors"), id="neighbors"):
            gr.Markdown(tr("neighbors_explain"), elem_classes=["ptx-explain"])
            with gr.Row():
                with gr.Column(scale=2):
                    nb_word = gr.Textbox(label=tr("word"), value="frog", max_lines=1)
                    with gr.Row():
                        nb_k = gr.Slider(1, 30, value=12, step=1, label=tr("k"))
                        nb_limit = gr.Radio(list(LIMITS), value="all", label=tr("limit"))
                    nb_preset = gr.Dropdown(label=tr("examples"), choices=NEIGHBOUR_PRESETS, value=None)
                    find = gr.Button(tr("find"), variant="primary")
                    nb_note = gr.Markdown()
                with gr.Column(scale=3):
                    nb_plot = gr.Plot(show_label=False)
        with gr.Tab(tr("t_map"), id="map"):
            gr.Markdown(tr("map_explain"), elem_classes=["ptx-explain"])
            with gr.Row():
                with gr.Column(scale=2):
                    map_preset = gr.Dropdown(label=tr("preset"), choices=[p["name"] for p in map_presets],
                                             value=map_presets[0]["name"])
                    map_words = gr.Textbox(label=tr("words"), value=map_presets[0]["words"], lines=3)
                    method = gr.Radio(["PCA", "UMAP"], value="PCA", label=tr("method"))
                    draw = gr.Button(tr("draw"), variant="primary")
                    map_note = gr.Markdown(lambda: _first(run_map, 1, map_presets[0]["words"], "PCA", ""))
                with gr.Column(scale=3):
                    map_plot = gr.Plot(lambda: _first(run_map, 0, map_presets[0]["words"], "PCA", ""),
                                       show_label=False)
        with gr.Tab(tr("t_bow")):
            gr.Markdown(tr("bow_explain"), elem_classes=["ptx-explain"])
            with gr.Row():
                with gr.Column(scale=2):
                    sent_a = gr.Textbox(label=tr("sentence_a"), value=bow.PRESETS[0][1], max_lines=2)
                    sent_b = gr.Textbox(label=tr("sentence_b"), value=bow.PRESETS[0][2], max_lines=2)
                    bow_preset = gr.Dropdown(label=tr("examples"), value=None,
                                             choices=[(f"{name}: {a} / {b}", i) for i, (name, a, b) in enumerate(bow.PRESETS)])
                    compare = gr.Button(tr("compare"), variant="primary")
                    bow_note = gr.Markdown()
                with gr.Column(scale=3):
                    bow_plot = gr.Plot(show_label=False)
                    bow_table = gr.Dataframe(headers=["word", "A", "B"], interactive=False, max_height=260)
        with gr.Tab(tr("t_limit"), id="limit"):
            gr.Markdown(tr("limit_explain"), elem_classes=["ptx-explain"])
            with gr.Row():
                with gr.Column(scale=2):
                    sense_word = gr.Textbox(label=tr("one_word"), value="bank", max_lines=1)
                    sense_a = gr.Textbox(label=tr("sense_a"), value="money, loan, deposit", max_lines=1)
                    sense_b = gr.Textbox(label=tr("sense_b"), value="river, creek, canal", max_lines=1)
                    sense_preset = gr.Dropdown(label=tr("examples"), value=None,
                                               choices=[(" / ".join(p), i) for i, p in enumerate(SENSE_PRESETS)])
                    probe = gr.Button(tr("probe"), variant="primary")
                    to_ctx = gr.Button(tr("to_contextual"), link="?tab=contextual&word=bank", variant="secondary")
                with gr.Column(scale=3):
                    sense_note = gr.Markdown(lambda: _first(run_senses, 1, *SENSE_PRESETS[0], ""))
                    sense_table = gr.Dataframe(lambda: _first(run_senses, 0, *SENSE_PRESETS[0], ""),
                                               headers=["neighbour", "cosine", "to A", "to B", "leans"],
                                               interactive=False, max_height=420)
        with gr.Tab(tr("t_train")):
            gr.Markdown(tr("train_explain"), elem_classes=["ptx-explain"])
            with gr.Row():
                with gr.Column(scale=2):
                    run_name = gr.Textbox(label=tr("name"), value="my-run", max_lines=1)
                    with gr.Row():
                        arch = gr.Radio(["CBOW", "skip-gram"], value="CBOW", label=tr("arch"))
                        objective = gr.Radio(["negative sampling", "hierarchical softmax"],
                                             value="negative sampling", label=tr("objective"))
                    with gr.Row():
                        window = gr.Slider(1, 10, value=5, step=1, label=tr("window"))
                        dim = gr.Slider(16, 200, value=100, step=4, label=tr("dim"))
                    with gr.Row():
                        epochs = gr.Slider(1, 20, value=5, step=1, label=tr("epochs"))
                        min_count = gr.Slider(1, 20, value=5, step=1, label=tr("min_count"))
                    texts = gr.CheckboxGroup([("Wikipedia", "wiki"), ("Bible (WEB)", "bible"), ("tweets", "tweets")],
                                             value=["wiki", "bible", "tweets"], label=tr("texts"))
                    with gr.Row():
                        train_btn = gr.Button(tr("train"), variant="primary")
                        cancel_btn = gr.Button(tr("cancel"), variant="stop")
                    train_status = gr.HTML()
                with gr.Column(scale=3):
                    loss_plot = gr.Plot(show_label=False)
                    train_summary = gr.Markdown()
            with gr.Row():
                gr.Markdown(tr("compare_explain"))
                trained = gr.Dropdown(label=tr("trained"), choices=_trained_choices(), scale=2,
                                      value=(_trained_choices() or [None])[0])
                show_btn = gr.Button(tr("show"), size="sm", scale=1)
            compare_table = gr.Dataframe(headers=["question", "GloVe", "yours"], interactive=False, wrap=True)
    run_id = gr.State("")

    # ---- wiring: every UI event is private; the contract's names are the api() calls below
    q = {**DEVICE_QUEUE, **PRIVATE}
    gr.on([refresh.click], guarded(lambda m: _model_update(True, m)), [model], [model], **PRIVATE)
    model.change(guarded(_provenance), [model], [provenance], **PRIVATE)
    solve_args = (guarded(run_analogy), [expression, k, limit, model], [analogy_plot, analogy_note])
    preset.input(lambda p: p or gr.update(), [preset], [expression], **PRIVATE).then(*solve_args, **q)
    gr.on([solve.click, expression.submit], *solve_args, **q)
    score_btn.click(guarded(run_scores), [limit, model], [score_plot, score_note], **q)
    nb_args = (guarded(run_neighbors), [nb_word, nb_k, nb_limit, model], [nb_plot, nb_note])
    nb_preset.input(lambda p: p or gr.update(), [nb_preset], [nb_word], **PRIVATE).then(*nb_args, **q)
    gr.on([find.click, nb_word.submit], *nb_args, **q)
    by_name = {p["name"]: p for p in map_presets}
    map_args = (guarded(run_map), [map_words, method, model], [map_plot, map_note])
    map_preset.input(lambda n: (by_name[n]["words"], by_name[n]["method"].upper()) if n in by_name
                     else (gr.update(), gr.update()), [map_preset], [map_words, method], **PRIVATE).then(*map_args, **q)
    gr.on([draw.click], *map_args, **q)
    bow_args = (guarded(run_bow), [sent_a, sent_b, model], [bow_plot, bow_note, bow_table])
    bow_preset.input(lambda i: bow.PRESETS[i][1:] if i is not None else (gr.update(), gr.update()), [bow_preset],
                     [sent_a, sent_b], **PRIVATE).then(*bow_args, **q)
    compare.click(*bow_args, **q)
    sense_args = (guarded(run_senses), [sense_word, sense_a, sense_b, model], [sense_table, sense_note, to_ctx])
    sense_preset.input(lambda i: SENSE_PRESETS[i] if i is not None else (gr.update(),) * 3, [sense_preset],
                       [sense_word, sense_a, sense_b], **PRIVATE).then(*sense_args, **q)
    gr.on([probe.click, sense_word.submit], *sense_args, **q)
    sense_word.change(lambda w: gr.update(link=f"?tab=contextual&word={(w or 'bank').strip().split()[0]}")
                      if (w or "").strip() else gr.update(), [sense_word], [to_ctx], **PRIVATE)
    train_event = train_btn.click(guarded(run_training), [run_name, arch, objective, window, dim, epochs, min_count, texts, model],
                    [run_id, train_status, loss_plot, compare_table, model, train_summary],
                    **TRAIN_QUEUE, **PRIVATE)
    cancel_btn.click(guarded(cancel_training), [run_id], [train_summary], **PRIVATE)
    gr.on([show_btn.click, trained.input], guarded(show_trained), [trained], [loss_plot, compare_table, train_summary],
          **q)
    train_event.then(lambda: gr.update(choices=_trained_choices()), None, [trained], **PRIVATE)

    # Deep links (?tab=word_vectors&word=frog): a link fills a panel and presses its button;
    deeplinks.register(KEY, {"expression": expression, "k": k}, run=solve, panel=(panels, "analogy"))
    deeplinks.register(KEY, {"word": nb_word}, run=find, panel=(panels, "neighbors"))
    deeplinks.register(KEY, {"words": map_words, "method": method}, run=draw, panel=(panels, "map"))

    api(analogy, "analogy")
    api(neighbors, "neighbors")
    api(word_map, "word_map")


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
