"""Attention & cloze station: every layer and head of a BERT-family encoder, and BERT's
fill-in-the-blank task.

Endpoints `/attention` and `/fill_mask` (API.md). The maths lives in `engine.attention`,
`engine.attention_views` and `engine.cloze`; this module lays out the page and wires events.
"""

from __future__ import annotations

import gradio as gr

from app import deeplinks
from app.common import DEVICE_QUEUE, announce_loading, api, guarded
from app.i18n import translator
from engine import attention as att
from engine import attention_views as views
from engine import cloze
from engine.attention import STAT_COLUMNS, STAT_LABELS
from engine.registry import REGISTRY

TITLE = "Attention & cloze"
KEY = "attention"
tr = translator(KEY)

EXAMPLE_TEXT = "The animal didn't cross the street because it was too tired."
EXAMPLE_CLOZE = "The capital of France is [MASK]."
CLOZE_EXAMPLES = [
    "The capital of France is [MASK].",
    "She poured a cup of [MASK] and sat down to read.",
    "In the beginning God created the heavens and the [MASK].",
    "The river [MASK] was covered in mud after the flood.",
    "He went to the [MASK] to deposit his money.",
    "The [MASK] barked at the postman all morning.",
]

STRINGS = {
    "en": {
        "intro": "### Attention: who looks at whom\nEvery layer of a Transformer lets each token gather "
                 "information from the others. **Each head** does this its own way; the weights below are "
                 "the real ones, read out of the model. Type a sentence and press **Show attention**; click "
                 "a thumbnail of the grid to open that head.",
        "tab_attention": "Attention",
        "tab_maps": "Grid & heatmap",
        "tab_heads": "Head view",
        "tab_stats": "Head statistics",
        "tab_cloze": "Cloze (masked LM)",
        "tab_explain": "How it works",
        "text": "Text (cut at 64 word pieces for the views)",
        "model": "Encoder",
        "run": "Show attention",
        "grid": "All layers × heads (click one to open it)",
        "grid_help": "Rows are layers, columns are heads; in each thumbnail, row = the token attending, column "
                     "= the token attended to, darker = more weight (each thumbnail scaled to its own maximum). "
                     "Diagonal stripes are heads that look at a neighbour; a dark column is a sink ([CLS], [SEP], "
                     "a full stop).",
        "layer": "Layer (0 = first)",
        "head": "Head",
        "heads_help": "Queries on the left, keys on the right; a line's strength is the attention weight, "
                      "its colour the head. Hover a token to keep only its lines; click a head's swatch to "
                      "hide or show it, double-click for that head alone.",
        "download_html": "Download the head view (standalone HTML)",
        "sort": "Find heads by",
        "stats_help": "Each number is averaged over the query tokens. **Entropy** near 0: the head looks at one "
                      "token; high: it spreads out. **Distance**: how far, in tokens, it looks on average. "
                      "The shares say how much of its attention lands on [CLS], [SEP], the token itself, the "
                      "previous or the next token. Click a row to open that head.",
        "cloze_intro": "### Fill in the blank\nBERT learned by guessing hidden words: write **[MASK]** where a "
                       "word is missing (several are fine), or click a word in the sentence below to hide it.",
        "cloze_text": "Text with [MASK]",
        "k": "Guesses per [MASK]",
        "cloze_model": "Masked LM",
        "cloze_run": "Guess",
        "words": "Click a word to mask it (click a [MASK] to bring the word back)",
        "filled": "Top guess in place",
        "left_only": "Left context only: hide the words after each [MASK] (all a left-to-right model may use)",
        "examples": "Examples",
        "explain": "#### Queries, keys and values\nEach token's vector is projected three ways: a **query** "
                   "(what am I looking for?), a **key** (what do I contain?) and a **value** (what do I pass "
                   "on?). Token *i* scores every token *j* by the dot product of its query with *j*'s key, "
                   "divided by √d; a softmax turns the scores into weights that sum to 1 (one row of a "
                   "heatmap). Its new vector is the weighted sum of the values. A head is one set of these "
                   "projections; a layer runs several heads side by side (12 here) and joins their outputs, "
                   "so one head can track the previous word while another links a pronoun to its noun.\n\n"
                   "#### Why so much attention lands on [SEP] (or [CLS])\nThe weights in a row must sum to 1, "
                   "so a head that finds nothing useful for a token still has to put the weight somewhere. "
                   "Many heads park it on a token present in every input, [SEP], [CLS] or a full stop, whose "
                   "value contributes little: attending there works as \"do nothing\". Sort the statistics by "
                   "*on [SEP]* or *on [CLS]* to find these sink heads.\n\n"
                   "#### Masked LM vs left-to-right LM\nA left-to-right language model (GPT; each half of ELMo) "
                   "predicts the next word from the words before it, so it can write text, but every position "
                   "sees one side only. BERT instead hides about 15% of the word pieces (80% become [MASK], "
                   "10% a random piece, 10% stay as they are, since [MASK] never appears later in real tasks) "
                   "and predicts them from **both** sides at once. Every layer can look left and right: that "
                   "is what \"deeply bidirectional\" means, where ELMo only joins two one-way models at the "
                   "end. The price: only the hidden 15% of positions teach the model anything per sentence. "
                   "Try it: change a word *after* the [MASK] and watch the guesses change.",
        "no_result": "Press **Show attention** first.",
    },
    "zh": {
        "intro": "### 注意力：谁在看谁\nTransformer 的每一层都让每个词元从其他词元收集信息。**每个注意力头**"
                 "各有各的看法；下面的权重是从模型里真实读出的。输入一句话，点 **显示注意力**；点击网格中的缩略图"
                 "即可打开那个头。",
        "tab_attention": "注意力",
        "tab_maps": "网格与热图",
        "tab_heads": "头视图",
        "tab_stats": "注意力头统计",
        "tab_cloze": "完形填空（掩码语言模型）",
        "tab_explain": "原理",
        "text": "文本（视图最多显示 64 个词片）",
        "model": "编码器",
        "run": "显示注意力",
        "grid": "全部层 × 头（点击打开）",
        "grid_help": "行是层，列是头；每个缩略图中，行 = 发出注意力的词元，列 = 被关注的词元，颜色越深权重越大"
                     "（每个缩略图按自身最大值缩放）。斜条纹表示盯着相邻词元的头；一整列深色是“汇点”"
                     "（[CLS]、[SEP] 或句号）。",
        "layer": "层（0 = 第一层）",
        "head": "头",
        "heads_help": "左边是查询，右边是键；线越深，注意力权重越大，颜色代表头。把鼠标移到一个词元上只看它的连线；"
                      "点击头的色块可隐藏或显示，双击只看这一个头。",
        "download_html": "下载头视图（独立 HTML 文件）",
        "sort": "按此查找头",
        "stats_help": "每个数都是对所有查询词元取平均。**熵** 接近 0：这个头只看一个词元；熵高：注意力分散。"
                      "**距离**：平均看多远（按词元计）。各个占比表示注意力落在 [CLS]、[SEP]、自身、前一个或后一个"
                      "词元上的比例。点击一行即可打开那个头。",
        "cloze_intro": "### 完形填空\nBERT 通过猜被遮住的词来学习：在缺词的地方写 **[MASK]**（可以写多个），"
                       "或者点击下面句子中的某个词把它遮住。",
        "cloze_text": "含 [MASK] 的文本",
        "k": "每个 [MASK] 的候选数",
        "cloze_model": "掩码语言模型",
        "cloze_run": "猜词",
        "words": "点击一个词把它遮住（再点 [MASK] 恢复原词）",
        "filled": "填入第一候选",
        "left_only": "只用左侧上下文：隐藏每个 [MASK] 之后的词（从左到右的模型只能用这些）",
        "examples": "示例",
        "explain": "#### 查询、键和值\n每个词元的向量被投影成三份：**查询**（我在找什么？）、**键**（我有什么？）"
                   "和 **值**（我要传出什么？）。词元 *i* 用自己的查询与每个词元 *j* 的键做点积、除以 √d，"
                   "再经 softmax 变成和为 1 的权重（热图的一行）。它的新向量就是各个值的加权和。一个头就是一组"
                   "这样的投影；一层里有多个头并行（这里是 12 个），输出拼在一起，所以一个头可以盯着前一个词，"
                   "另一个头把代词连到它指代的名词。\n\n"
                   "#### 为什么很多注意力落在 [SEP]（或 [CLS]）上\n一行权重之和必须为 1，所以一个头即使对某个词元"
                   "找不到有用的信息，也得把权重放在某处。很多头把它停在每个输入都有的词元上，比如 [SEP]、[CLS] "
                   "或句号，它们的值贡献很小：看向那里就相当于“什么也不做”。按 *on [SEP]* 或 *on [CLS]* 排序"
                   "统计表，就能找到这些“汇点”头。\n\n"
                   "#### 掩码语言模型 vs 从左到右的语言模型\n从左到右的语言模型（GPT；ELMo 的每一半）根据前面的词"
                   "预测下一个词，所以能生成文本，但每个位置只看到一侧。BERT 则遮住约 15% 的词片（其中 80% 换成 "
                   "[MASK]，10% 换成随机词片，10% 保持不变，因为真实任务里不会出现 [MASK]），再从**两侧**同时"
                   "预测它们。每一层都能同时看左边和右边，这就是“深度双向”；ELMo 只是在最后把两个单向模型拼起来。"
                   "代价是：每句话只有被遮住的 15% 位置提供训练信号。试一试：改动 [MASK] *后面*的一个词，"
                   "看候选如何变化。",
        "no_result": "请先点击 **显示注意力**。",
    },
}

MAX_GRID_MASKS = 6


# ---------------------------------------------------------------- endpoints (API.md)
def attention(text: str, model: str = "") -> dict:
    """`/attention`: model, tokens, layers, heads, attention (layers x heads x T x T, rows sum to 1)."""
    return att.attention(text, model)


def fill_mask(text: str, k: int = 5, model: str = "") -> dict:
    """`/fill_mask`: model, source, predictions (one list of {token, score} per [MASK], best first)."""
    return cloze.fill_mask(text, k, model)


# ---------------------------------------------------------------- attention callbacks
def _provenance(r: att.AttentionResult) -> str:
    head = f"**{r.model}** · {r.layers} layers × {r.heads} heads · {len(r.tokens)} word pieces"
    return "  \n".join([head, *[f"⚠️ {n}" for n in r.notes]])


def _head_outputs(r: att.AttentionResult, layer: int, head: int):
    layer, head = att.check_head(r, layer, head)
    image, _ = views.overview_image(r, selected=(layer, head))
    return image, views.heatmap_figure(r, layer, head), gr.update(value=layer), gr.update(value=head)


def show_attention(text: str, model: str, layer: float, head: float, stat: str, progress=gr.Progress()):
    announce_loading(att.ROLE, model, progress)
    r = att.run(text, model)
    layer, head = min(int(layer), r.layers - 1), min(int(head), r.heads - 1)
    image, heat, layer_u, head_u = _head_outputs(r, layer, head)
    page = views.head_view_html(r, layer)
    headers, rows = views.stats_table(r, stat)
    return (
        _provenance(r), image, heat,
        gr.update(value=layer, maximum=r.layers - 1), gr.update(value=head, maximum=r.heads - 1),
        views.head_view_iframe(page, len(r.tokens)), str(views.save_head_view(page)),
        views.stats_figure(r, stat), gr.update(value=rows, headers=headers),
        {"text": text, "model": model},
    )


def _result(state: dict | None) -> att.AttentionResult:
    if not state:
        raise gr.Error("Press “Show attention” first.")
    return att.run(state["text"], state["model"])


def pick_head(state: dict | None, layer: float, head: float):
    r = _result(state)
    return _head_outputs(r, int(layer), int(head))


def click_grid(state: dict | None, evt: gr.SelectData):
    r = _result(state)
    x, y = evt.index
    cell = views.grid_cell(x, y, views.grid_layout(r.layers, r.heads))
    if cell is None:
        return gr.skip(), gr.skip(), gr.skip(), gr.skip()
    return _head_outputs(r, *cell)


def click_stat_row(state: dict | None, evt: gr.SelectData):
    r = _result(state)
    row = evt.row_value
    return _head_outputs(r, int(row[0]), int(row[1]))


def sort_stats(state: dict | None, stat: str):
    if not state:
        return gr.skip(), gr.skip()
    r = _result(state)
    headers, rows = views.stats_table(r, stat)
    return views.stats_figure(r, stat), gr.update(value=rows, headers=headers)


# ---------------------------------------------------------------- cloze callbacks
def _word_chips(text: str) -> list[tuple[str, str | None]]:
    return [(w + " ", "[MASK]" if cloze.MASK_PATTERN.fullmatch(w) else None) for w in cloze.words(text)]


def guess(text: str, k: float, model: str, left_only: bool = False, progress=gr.Progress()):
    announce_loading(cloze.ROLE, model, progress)
    r = cloze.run(text, int(k), model, left_only=bool(left_only))
    d = r.to_api()
    lines = [f"**{r.model}**", f"*{r.note}*" if r.note else "", cloze.model_card(r.model_id)]
    lines += [f"⚠️ {n}" for n in r.notes]
    return (cloze.bar_figure(r, MAX_GRID_MASKS), d["filled"], "  \n".join(x for x in lines if x),
            _word_chips(text), text)


def click_word(text: str, original: str, k: float, model: str, left_only: bool, evt: gr.SelectData,
               progress=gr.Progress()):
    new_text = cloze.toggle_mask(text, int(evt.index), original)
    if not cloze.MASK_PATTERN.search(new_text):  # every mask undone: show the words, nothing to guess
        return gr.update(value=new_text), gr.skip(), "", gr.skip(), _word_chips(new_text), original
    fig, filled, info, chips, _ = guess(new_text, k, model, left_only, progress)
    return gr.update(value=new_text), fig, filled, info, chips, original


def remember_original(text: str) -> str:
    return text


def _on_load(fn, args: tuple, n_outputs: int):
    """A page-load event: the default view, computed once the page opens. A model that is not
    there yet must not greet a visitor with an error toast; the buttons still report it."""
    def first():
        try:
            return fn(*args, progress=None)
        except Exception:  # noqa: BLE001 - shown again, as a message, when the person presses the button
            return tuple(gr.skip() for _ in range(n_outputs))
    return first


def _model_choices(role: str) -> tuple[list[tuple[str, str]], str]:
    specs = REGISTRY.specs(role)
    pick = REGISTRY.would_load(role)
    default = pick[0].id if pick else (specs[0].id if specs else "")
    return [(s.title, s.id) for s in specs], default


# ---------------------------------------------------------------- layout
def build() -> None:
    private = {"api_visibility": "private", **DEVICE_QUEUE}
    with gr.Tabs():
        with gr.Tab(tr("tab_attention"), id="maps"):
            gr.Markdown(tr("intro"), elem_classes=["ptx-explain"])
            choices, default = _model_choices(att.ROLE)
            with gr.Row(equal_height=True):
                text = gr.Textbox(EXAMPLE_TEXT, label=tr("text"), lines=1, max_lines=3, scale=5)
                model = gr.Dropdown(choices, value=default, label=tr("model"), scale=2)
                run_btn = gr.Button(tr("run"), variant="primary", scale=1)
            info = gr.Markdown(elem_classes=["ptx-provenance"])
            state = gr.State(None)
            with gr.Tabs():
                with gr.Tab(tr("tab_maps")):
                    with gr.Row():
                        with gr.Column(scale=6):
                            grid = gr.Image(label=tr("grid"), type="pil", interactive=False,
                                            buttons=["download", "fullscreen"], height=420,
                                            elem_id="ptx-attention-grid")
                            gr.Markdown(tr("grid_help"), elem_classes=["ptx-provenance"])
                        with gr.Column(scale=5):
                            with gr.Row():
                                layer = gr.Slider(0, 5, value=2, step=1, label=tr("layer"))
                                head = gr.Slider(0, 11, value=0, step=1, label=tr("head"))
                            heat = gr.Plot(show_label=False)
                with gr.Tab(tr("tab_heads")):
                    gr.Markdown(tr("heads_help"), elem_classes=["ptx-explain"])
                    head_view = gr.HTML(elem_id="ptx-head-view-frame")
                    head_file = gr.File(label=tr("download_html"), interactive=False)
                with gr.Tab(tr("tab_stats")):
                    gr.Markdown(tr("stats_help"), elem_classes=["ptx-explain"])
                    stat = gr.Dropdown([(STAT_LABELS[c], c) for c in STAT_COLUMNS], value="prev",
                                       label=tr("sort"))
                    with gr.Row():
                        stats_plot = gr.Plot(show_label=False)
                        table = gr.Dataframe(interactive=False, max_height=380, wrap=False)
        with gr.Tab(tr("tab_cloze"), id="cloze"):
            gr.Markdown(tr("cloze_intro"), elem_classes=["ptx-explain"])
            mchoices, mdefault = _model_choices(cloze.ROLE)
            with gr.Row(equal_height=True):
                ctext = gr.Textbox(EXAMPLE_CLOZE, label=tr("cloze_text"), lines=1, max_lines=4, scale=5,
                                   elem_id="ptx-cloze-text")
                k = gr.Slider(1, 20, value=8, step=1, label=tr("k"), scale=2)
                cmodel = gr.Dropdown(mchoices, value=mdefault, label=tr("cloze_model"), scale=2)
                guess_btn = gr.Button(tr("cloze_run"), variant="primary", scale=1)
            gr.Examples([[e] for e in CLOZE_EXAMPLES], inputs=[ctext], label=tr("examples"))
            left_only = gr.Checkbox(False, label=tr("left_only"))
            chips = gr.HighlightedText(_word_chips(EXAMPLE_CLOZE), label=tr("words"), combine_adjacent=False,
                                       show_legend=False, show_inline_category=False, elem_id="ptx-cloze-words",
                                       color_map={"[MASK]": "#f59e0b"}, interactive=False)
            original = gr.State(EXAMPLE_CLOZE)
            with gr.Row():
                with gr.Column(scale=3):
                    bars = gr.Plot(show_label=False)
                with gr.Column(scale=2):
                    filled = gr.Textbox(label=tr("filled"), interactive=False)
                    cinfo = gr.Markdown(elem_classes=["ptx-provenance"])
        with gr.Tab(tr("tab_explain"), id="explain"):
            gr.Markdown(tr("explain"), elem_classes=["ptx-explain"])

    outputs = [info, grid, heat, layer, head, head_view, head_file, stats_plot, table, state]
    gr.on([run_btn.click, text.submit, model.change], guarded(show_attention),
          [text, model, layer, head, stat], outputs, **private)
    gr.on([layer.release, head.release], guarded(pick_head), [state, layer, head], [grid, heat, layer, head],
          **private)
    grid.select(guarded(click_grid), [state], [grid, heat, layer, head], **private)
    table.select(guarded(click_stat_row), [state], [grid, heat, layer, head], **private)
    stat.change(guarded(sort_stats), [state, stat], [stats_plot, table], **private)

    couts = [bars, filled, cinfo, chips, original]
    cins = [ctext, k, cmodel, left_only]
    gr.on([guess_btn.click, ctext.submit, cmodel.change, left_only.change], guarded(guess), cins, couts, **private)
    k.release(guarded(guess), cins, couts, **private)
    chips.select(guarded(click_word), [ctext, original, k, cmodel, left_only], [ctext, *couts], **private)

    # Triggers None with no inputs: runs once when the page loads.
    # ... unless a deep link runs this tab: it makes its own view (deeplinks.page_open).
    gr.on(None, deeplinks.page_open(KEY, _on_load(show_attention, (EXAMPLE_TEXT, default, 2, 0, "prev"),
                                                  len(outputs)), len(outputs)), None, outputs, **private)
    gr.on(None, _on_load(guess, (EXAMPLE_CLOZE, 8, mdefault, False), len(couts)), None, couts, **private)

    api(attention, "attention")
    api(fill_mask, "fill_mask")
    deeplinks.register(KEY, {"text": text, "model": model}, run=run_btn)  # ?tab=attention&text=...


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
