"""CNN station: an ImageNet CNN's feature hierarchy, from edges to objects.

Endpoints `/classify_image` and `/feature_maps` (API.md). The maths lives in
`engine.cnn`, `engine.attribution` and `engine.feature_vis`; this module lays out the
page and draws plotly figures from what they return.
"""

from __future__ import annotations

import gradio as gr
import plotly.graph_objects as go

from app import deeplinks
from app.common import DEVICE_QUEUE, announce_loading, guarded
from app.i18n import translator
from app.safe_image import safe_image
from engine import attribution, cnn, feature_vis
from engine.images import example_names, example_path

TITLE = "CNN"
KEY = "cnn"
tr = translator(KEY)

STRINGS = {
    "en": {
        "intro": "**Pretraining on ImageNet.** A convolutional network learned to sort 1.28 million photos into "
                 "1000 classes. Nobody told it what an edge or an eye is, yet its **lower layers** came to "
                 "detect edges and colours, its **middle layers** textures and patterns, its **higher layers** "
                 "parts and whole objects. That is why the lower layers can be *reused* for a new task and the "
                 "higher ones are *fine-tuned*. Pick a photo and walk through the layers.",
        "image": "Image (upload or paste)",
        "examples": "Packaged images (scikit-image, scikit-learn): click one",
        "model": "Model",
        "top5": "Top-5 ImageNet classes",
        "tab_steps": "Layer by layer",
        "tab_vis": "What a channel looks for",
        "tab_attr": "Why this class?",
        "tab_transfer": "Transfer in one picture",
        "steps_explain": "Each step is one stage of the network. Its output is a stack of **feature maps**, one per "
                         "channel; bright = the channel fires there. Going up, maps get **smaller** (coarser "
                         "grid) but **more numerous**, and each unit sees a larger **receptive field** "
                         "(the yellow square, drawn around the strongest unit of the most active channel).",
        "prev": "◀ Previous",
        "next": "Next ▶",
        "stage": "Stage (0 = input … last = the 1000 class scores)",
        "grid": "The most active channels at this stage",
        "over": "Maps over the image",
        "box": "Receptive field of one unit",
        "vis_explain": "**Activation maximisation.** Start from faint noise and change the *image* (never the "
                       "network) step by step so that one channel fires as strongly as possible. Tricks from "
                       "Lucid/Lucent keep it readable: the image is built from frequencies (big shapes first), in "
                       "decorrelated colours, and is jittered, scaled and rotated at every step. Low stages paint "
                       "edges and colours, middle stages textures and patterns, high stages parts of objects.",
        "gallery": "Precomputed for the default model (click to enlarge)",
        "no_gallery": "No precomputed gallery for this model yet: run `python -m engine.train.feature_gallery "
                      "--model <id>`, or paint single channels below.",
        "layer": "Layer",
        "channel": "Channel (class index at “logits”)",
        "vis_steps": "Optimisation steps",
        "seed": "Seed",
        "paint": "Paint this channel",
        "painted": "Painted on demand",
        "attr_explain": "Three ways to ask *which pixels made the network say this class*. Coloured = evidence "
                        "**for** the class (evidence against is not drawn).",
        "target": "Class to explain (empty = the top prediction)",
        "gradcam": "Grad-CAM",
        "gradcam_idea": "Weights a stage's feature maps by how much the class score rises with each channel "
                        "(its mean gradient): coarse but fast, one backward pass.",
        "gradcam_stage": "Stage to look at",
        "ig": "Integrated Gradients",
        "ig_idea": "Fades the image in from black and adds up the gradients along the way, so the pixel "
                   "credits sum to the score difference: fine-grained, one pass per step.",
        "ig_steps": "Steps along the path",
        "occ": "Occlusion",
        "occ_idea": "Covers the image with a grey square, window by window, and measures how much the class "
                    "score drops: no gradients at all, one forward pass per window.",
        "occ_window": "Window (pixels; stride = half)",
        "explain": "Explain",
        "transfer_explain": "Give the network two different photos and compare what each stage makes of them. "
                            "If a stage's statistics are **alike** for unrelated photos, that stage is "
                            "**generic**: keep it **frozen** and reuse it for a new task. Where they **part**, the "
                            "stage is **specific to ImageNet's classes**: that is what **fine-tuning** adapts.",
        "image_b": "Second image",
        "compare": "Compare stage by stage",
        "frozen": "alike: generic, reuse frozen",
        "finetune": "different: task-specific, fine-tune",
        "typical": "any two packaged photos (mean, 10-90%)",
        "pair": "these two photos",
        "story_title": "In our own words: pretraining, reuse, frozen vs fine-tuned",
        "story": "**Pretraining.** Training a big network from scratch needs millions of labelled photos; "
                 "ImageNet has them, so a network is trained there once. **Reuse.** Its first layers compute "
                 "things every photo has (edges, colour blobs, simple textures), so they serve X-rays, "
                 "satellite images or product photos too. **Frozen.** Keep the pretrained layers fixed and "
                 "train only a new last layer: fast, works with few images. **Fine-tuning.** Start from the "
                 "pretrained weights and keep training all (or the upper) layers on the new task, usually "
                 "with a small learning rate: better when the new task differs or data is plentiful.",
    },
    "zh": {
        "intro": "**在 ImageNet 上预训练。** 一个卷积网络学会把 128 万张照片分成 1000 类。没有人告诉它什么是边缘、"
                 "什么是眼睛，但它的**低层**学会了检测边缘和颜色，**中间层**检测纹理和图案，**高层**检测物体的部件"
                 "和整体。所以低层可以*复用*到新任务上，高层则需要*微调*。选一张照片，逐层走一遍。",
        "image": "图片（上传或粘贴）",
        "examples": "内置图片（scikit-image、scikit-learn）：点击选择",
        "model": "模型",
        "top5": "ImageNet 前 5 类",
        "tab_steps": "逐层查看",
        "tab_vis": "通道在找什么",
        "tab_attr": "为什么是这一类？",
        "tab_transfer": "一图看懂迁移",
        "steps_explain": "每一步是网络的一个阶段。它的输出是一叠**特征图**，每个通道一张；越亮表示该通道在那里越活跃。"
                         "越往上，特征图越**小**（网格越粗）但**越多**，每个单元看到的**感受野**越大"
                         "（黄色方框：最活跃通道中最强单元的感受野）。",
        "prev": "◀ 上一步",
        "next": "下一步 ▶",
        "stage": "阶段（0 = 输入 … 最后 = 1000 个类别分数）",
        "grid": "这一阶段最活跃的通道",
        "over": "叠加在图像上",
        "box": "一个单元的感受野",
        "vis_explain": "**激活最大化。** 从微弱的噪声出发，一步步修改*图像*（而不是网络），让某个通道尽可能强地激活。"
                       "借鉴 Lucid/Lucent 的技巧让结果可读：图像由频率构成（先有大形状），使用去相关的颜色，"
                       "每一步都做随机平移、缩放和旋转。低层画出边缘和颜色，中层画出纹理和图案，高层画出物体的部件。",
        "gallery": "为默认模型预先计算（点击放大）",
        "no_gallery": "此模型还没有预计算的图库：运行 `python -m engine.train.feature_gallery --model <id>`，"
                      "或在下方单独绘制通道。",
        "layer": "层",
        "channel": "通道（在 “logits” 层为类别编号）",
        "vis_steps": "优化步数",
        "seed": "随机种子",
        "paint": "绘制这个通道",
        "painted": "按需绘制",
        "attr_explain": "三种方法回答：*哪些像素让网络说出这个类别*。着色 = 支持该类别的证据（反对的证据不画出）。",
        "target": "要解释的类别（留空 = 第一名预测）",
        "gradcam": "Grad-CAM",
        "gradcam_idea": "按类别分数随各通道上升的程度（平均梯度）给某一阶段的特征图加权：粗略但快，只需一次反向传播。",
        "gradcam_stage": "查看的阶段",
        "ig": "积分梯度",
        "ig_idea": "让图像从全黑逐渐显现，沿途累加梯度，使各像素的贡献之和等于分数之差：细致，每一步一次计算。",
        "ig_steps": "路径上的步数",
        "occ": "遮挡",
        "occ_idea": "用灰色方块逐个窗口遮住图像，测量类别分数下降多少：完全不用梯度，每个窗口一次前向计算。",
        "occ_window": "窗口（像素；步长 = 一半）",
        "explain": "解释",
        "transfer_explain": "给网络两张不同的照片，比较每个阶段对它们的反应。如果某一阶段对不相关照片的统计量**相似**，"
                            "这一阶段就是**通用的**：**冻结**后可直接复用于新任务。在二者**分开**的地方，该阶段**专属于 "
                            "ImageNet 的类别**：这正是**微调**要调整的部分。",
        "image_b": "第二张图片",
        "compare": "逐阶段比较",
        "frozen": "相似：通用，冻结复用",
        "finetune": "不同：任务相关，需要微调",
        "typical": "任意两张内置照片（均值，10-90%）",
        "pair": "这两张照片",
        "story_title": "用我们自己的话说：预训练、复用、冻结与微调",
        "story": "**预训练。** 从零训练一个大网络需要数百万张带标签的照片；ImageNet 正好有，于是先在那里训练一次。"
                 "**复用。** 前几层计算的是每张照片都有的东西（边缘、色块、简单纹理），所以同样适用于 X 光片、卫星图像"
                 "或商品照片。**冻结。** 保持预训练层不变，只训练新的最后一层：快，少量图片也行。**微调。** 从预训练"
                 "权重出发，在新任务上继续训练全部（或上面几层）层，通常用较小的学习率：当新任务差别大或数据充足时更好。",
    },
}

FONT = dict(size=14)
ACCENT, MUTED = "#4f46e5", "#cbd5e1"


# ---------------------------------------------------------------- API (API.md)
def classify_image(image: str, k: int, model: str) -> dict:
    """Top-k ImageNet classes for an image file: {model, predictions: [{label, index, score}]}."""
    return cnn.classify(image, 5 if k is None else k, model or "")


def feature_maps(image: str, model: str) -> dict:
    """The stages of the CNN for an image file: {model, stages: [{name, channels, height, width}]}."""
    return cnn.feature_maps(image, model or "")


# ---------------------------------------------------------------- figures
def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(title=dict(text=title, font=dict(size=15)), height=height, font=FONT,
                      margin=dict(l=50, r=20, t=60, b=40), template="plotly_white", showlegend=False)
    return fig


def pyramid_figure(view: dict, height: int = 300) -> go.Figure:
    """Channels per stage (bars, log scale) with each stage's size as text; the current stage highlighted."""
    sizes = view["sizes"]
    names = [s["name"] for s in sizes]
    colours = [ACCENT if i == view["index"] else MUTED for i in range(len(sizes))]
    text = [f"{s['channels']}×{s['height']}×{s['width']}" for s in sizes]
    fig = go.Figure(go.Bar(x=names, y=[s["channels"] for s in sizes], marker_color=colours, text=text,
                           textposition="outside", cliponaxis=False,
                           hovertext=[f"{t}<br>receptive field {s['receptive_field']} px" for t, s in zip(text, sizes, strict=True)],
                           hoverinfo="text"))
    fig.update_yaxes(type="log", title="channels (log scale)", tickvals=[3, 10, 30, 100, 300, 1000],
                     range=[0.3, 3.6])
    return _layout(fig, f"Channels × height × width per stage<br><sup>{view['model']}</sup>", height)


def transfer_figure(result: dict, labels: dict[str, str], height: int = 380) -> go.Figure:
    """Gram-matrix similarity per stage for two images, with the frozen / fine-tune reading."""
    rows, typical = result["stages"], result["typical"]
    names = [r["name"] for r in rows]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=names + names[::-1], y=[t["high"] for t in typical] + [t["low"] for t in typical][::-1],
                             fill="toself", fillcolor="rgba(100,116,139,0.18)", line=dict(width=0), hoverinfo="skip",
                             showlegend=False))
    fig.add_trace(go.Scatter(x=names, y=[t["mean"] for t in typical], mode="lines", name=labels["typical"],
                             line=dict(color="#64748b", width=2, dash="dash")))
    fig.add_trace(go.Scatter(x=names, y=[r["gram"] for r in rows], mode="lines+markers+text", name=labels["pair"],
                             line=dict(color=ACCENT, width=3), marker=dict(size=10),
                             text=[f"{r['gram']:.2f}" for r in rows], textposition="top center"))
    fig.add_hrect(y0=0.5, y1=1.05, fillcolor="#d1fae5", opacity=0.45, line_width=0,
                  annotation_text=labels["frozen"], annotation_position="top right")
    fig.add_hrect(y0=-0.05, y1=0.5, fillcolor="#fee2e2", opacity=0.45, line_width=0,
                  annotation_text=labels["finetune"], annotation_position="bottom left")
    fig.update_yaxes(range=[-0.05, 1.08], title="Gram-matrix similarity")
    a, b = result["top_a"][0]["label"].split(",")[0], result["top_b"][0]["label"].split(",")[0]
    fig = _layout(fig, f"“{a}” vs “{b}”: how alike each stage finds them<br><sup>{result['model']} · cosine of "
                       "channel co-activation (Gram) matrices</sup>", height)
    fig.update_layout(showlegend=True, legend=dict(orientation="h", y=-0.15))
    return fig


# ---------------------------------------------------------------- callbacks (thin)
def _labels(predictions: list[dict]) -> dict[str, float]:
    return {f"{p['label']} ({p['index']})": p["score"] for p in predictions}


def _stage_markdown(view: dict) -> str:
    s = view["stage"]
    if s["name"] == "input":
        body = "the photo itself, resized and centre-cropped: red, green and blue"
    elif s["name"] == "logits":
        top = view["predictions"][0]
        body = f"one score per ImageNet class; the winner is **{top['label']}** ({top['score']:.0%})"
    else:
        rf = s["receptive_field"]
        rf_text = f"{rf} × {rf} px" + (" (more than the whole 224 px image)" if rf >= 224 else "")
        body = (f"receptive field **{rf_text}**, one unit every {s['stride']} px; "
                f"top channels {', '.join(map(str, view['channels'][:8]))}")
    module = f" (`{s['module']}`)" if s["module"] else ""
    return (f"### {view['index']} / {view['n_stages'] - 1}: {s['name']}{module}\n"
            f"**{s['channels']} channels × {s['height']} × {s['width']}** · {body}")


def _view_outputs(view: dict) -> tuple:
    """Stepper outputs from a stage view: stage index (clipped), markdown, channel grid,
    receptive-field picture, pyramid, and the feature-vis layer/channel set to this stage's
    most active channel."""
    layer_choices = [n for n in view["names"] if n != "input"]
    name = view["stage"]["name"]
    vis_layer = name if name in layer_choices else layer_choices[0]
    vis_channel = view["channels"][0] if view["channels"] and name != "input" else view["predictions"][0]["index"]
    return (view["index"], _stage_markdown(view), view["grid"], view["box"] if view["box"] is not None else view["shown"],
            pyramid_figure(view), gr.update(choices=layer_choices, value=vis_layer), vis_channel)


def _step(image: str | None, model: str, index: int, over: bool = True, delta: int = 0) -> tuple:
    if not image:
        raise gr.Error("Pick or upload an image first.")
    return _view_outputs(cnn.stage_view(image, int(index) + delta, model, over_image=bool(over)))


def _previous(image: str | None, model: str, index: int, over: bool = True) -> tuple:
    return _step(image, model, index, over, -1)


def _next(image: str | None, model: str, index: int, over: bool = True) -> tuple:
    return _step(image, model, index, over, +1)


def _analyse(image: str | None, model: str, index: int, over: bool, progress=gr.Progress()):
    """A new image or model: top-5, provenance, target choices, stepper."""
    if not image:
        return ({}, "", gr.update(), gr.update(), *[gr.update()] * 7)
    announce_loading(cnn.ROLE, model, progress)
    result = cnn.classify(image, 5, model)
    attribution.warm_in_background(result["model_id"])  # captum import + first backward, off the click path
    view = cnn.stage_view(image, index, model, over_image=bool(over))
    provenance = f"{result['model']} · {result['seconds'] * 1000:.0f} ms forward"
    targets = [(f"{p['label']} ({p['score']:.0%})", str(p["index"])) for p in result["predictions"]]
    gradcam_stages = list(attribution.gradcam_layers(cnn.get_model(model)))
    stepped = _view_outputs(view)
    return (_labels(result["predictions"]), provenance, gr.update(choices=[("", "")] + targets, value=""),
            gr.update(choices=gradcam_stages, value=gradcam_stages[-1]),
            gr.update(maximum=view["n_stages"] - 1, value=stepped[0]), *stepped[1:])


def _gallery(model: str) -> tuple[list[tuple[str, str]], str]:
    info = feature_vis.gallery(model)
    if not info["items"]:
        return [], STRINGS["en"]["no_gallery"]
    note = (f"{info.get('model', '')} · {info.get('steps')} steps at {info.get('size')} px, seed {info.get('seed')} · "
            f"`{info.get('command', '')}`")
    return [(item["path"], item["caption"]) for item in info["items"]], note


def _paint(model: str, layer: str, channel: int, steps: int, seed: int):
    for r in feature_vis.visualise_steps(layer, channel, model, steps=steps, size=128, seed=seed, every=16):
        what = f"class {r['label']}" if r["label"] else f"channel {r['channel']}"
        yield feature_vis.enlarge(r["image"], 256), (f"{r['layer']} · {what} · step {r['step']}/{r['steps']} · "
                           f"activation {r['objective'][-1][1]:.2f} · {r['seconds']:.1f} s · {r['model']}")


def _attr_markdown(r: dict, extra: str) -> str:
    t = r["target"]
    return f"**{t['label']}** ({t['score']:.0%}) · {extra} · {r['seconds'] * 1000:.0f} ms · {r['model']}"


def _gradcam(image: str | None, model: str, target: str, stage: str):
    r = attribution.gradcam(image, target or None, stage or "", model)
    return r["overlay"], _attr_markdown(r, f"stage {r['stage']}, {r['grid'][0]}×{r['grid'][1]} map")


def _ig(image: str | None, model: str, target: str, steps: int, progress=gr.Progress()):
    r = attribution.integrated_gradients(image, target or None, steps, model,
                                         progress=lambda f, text: progress(f, desc=text))
    return r["overlay"], _attr_markdown(r, f"{r['steps']} steps, completeness error {r['delta']:.2f}")


def _occlusion(image: str | None, model: str, target: str, window: int, progress=gr.Progress()):
    r = attribution.occlusion(image, target or None, window, max(8, window // 2), model,
                              progress=lambda f, text: progress(f, desc=text))
    return r["overlay"], _attr_markdown(r, f"{r['windows']} windows of {r['window']} px")


def _transfer(image: str | None, image_b: str | None, model: str):
    if not image or not image_b:
        raise gr.Error("Pick two images: one at the top, one here.")
    r = cnn.stage_similarity(image, image_b, model)
    labels = {k: STRINGS["en"][k] for k in ("frozen", "finetune", "typical", "pair")}  # figures stay in English
    low, high = r["stages"][0], r["stages"][-2]
    t_low, t_high = r["typical"][0], r["typical"][-2]
    text = (f"At the **{low['name']}** these two photos are {low['gram']:.0%} alike to the network "
            f"(any two packaged photos: {t_low['mean']:.0%} on average); at the **{high['name']}** "
            f"{high['gram']:.0%} ({t_high['mean']:.0%}). {r['model']}")
    return transfer_figure(r, labels), text


# ---------------------------------------------------------------- layout
def build() -> None:
    example_files = [str(example_path(name)) for name in example_names()]
    gr.Markdown(tr("intro"), elem_classes=["ptx-explain"])
    with gr.Row():
        with gr.Column(scale=3, min_width=280):
            image = safe_image(sources=["upload", "clipboard"], label=tr("image"), height=210)
            model = gr.Dropdown(choices=cnn.model_choices(), value=cnn.default_model_id(), label=tr("model"))
        with gr.Column(scale=4, min_width=300):
            gr.Examples(examples=[[p] for p in example_files], inputs=[image], label=tr("examples"),
                        examples_per_page=len(example_files))
        with gr.Column(scale=4, min_width=300):
            top5 = gr.Label(num_top_classes=5, label=tr("top5"))
            provenance = gr.Markdown(elem_classes=["ptx-provenance"])

    with gr.Tabs():
        with gr.Tab(tr("tab_steps")):
            gr.Markdown(tr("steps_explain"), elem_classes=["ptx-explain"])
            with gr.Row(equal_height=True):
                prev_btn = gr.Button(tr("prev"), scale=1, size="sm")
                stage = gr.Slider(0, 10, value=3, step=1, label=tr("stage"), scale=6)
                next_btn = gr.Button(tr("next"), scale=1, size="sm")
            with gr.Row(equal_height=True):
                stage_md = gr.Markdown()
                over = gr.Checkbox(value=True, label=tr("over"), scale=0, min_width=200)
            with gr.Row():
                grid = gr.Image(label=tr("grid"), height=300, interactive=False, format="png")
                box = gr.Image(label=tr("box"), height=300, interactive=False, format="png")
            pyramid = gr.Plot(show_label=False)
        with gr.Tab(tr("tab_vis")):
            gr.Markdown(tr("vis_explain"), elem_classes=["ptx-explain"])
            items, note = _gallery("")
            gallery = gr.Gallery(value=items, label=tr("gallery"), columns=9, height="auto", object_fit="contain",
                                 allow_preview=True)
            gallery_note = gr.Markdown(note, elem_classes=["ptx-provenance"])
            with gr.Row():
                with gr.Column(scale=2):
                    vis_layer = gr.Dropdown(choices=["stage 3"], value="stage 3", label=tr("layer"),
                                            allow_custom_value=True)
                    vis_channel = gr.Number(value=0, precision=0, label=tr("channel"))
                    vis_steps = gr.Slider(16, 512, value=128, step=16, label=tr("vis_steps"))
                    vis_seed = gr.Number(value=0, precision=0, label=tr("seed"))
                    paint_btn = gr.Button(tr("paint"), variant="primary")
                with gr.Column(scale=3):
                    painted = gr.Image(label=tr("painted"), height=300, interactive=False, format="png")
                    painted_md = gr.Markdown(elem_classes=["ptx-provenance"])
        with gr.Tab(tr("tab_attr")):
            gr.Markdown(tr("attr_explain"), elem_classes=["ptx-explain"])
            target = gr.Dropdown(choices=[("", "")], value="", label=tr("target"), allow_custom_value=True)
            with gr.Row():
                with gr.Column():
                    gr.Markdown(tr("gradcam_idea"))
                    gc_stage = gr.Dropdown(choices=[], value="", label=tr("gradcam_stage"), allow_custom_value=True)
                    gc_btn = gr.Button(tr("gradcam"), variant="primary")
                    gc_img = gr.Image(show_label=False, height=260, interactive=False, format="png")
                    gc_md = gr.Markdown(elem_classes=["ptx-provenance"])
                with gr.Column():
                    gr.Markdown(tr("ig_idea"))
                    ig_steps = gr.Slider(8, 128, value=16, step=8, label=tr("ig_steps"))
                    ig_btn = gr.Button(tr("ig"), variant="primary")
                    ig_img = gr.Image(show_label=False, height=260, interactive=False, format="png")
                    ig_md = gr.Markdown(elem_classes=["ptx-provenance"])
                with gr.Column():
                    gr.Markdown(tr("occ_idea"))
                    occ_window = gr.Slider(16, 112, value=48, step=8, label=tr("occ_window"))
                    occ_btn = gr.Button(tr("occ"), variant="primary")
                    occ_img = gr.Image(show_label=False, height=260, interactive=False, format="png")
                    occ_md = gr.Markdown(elem_classes=["ptx-provenance"])
        with gr.Tab(tr("tab_transfer")):
            gr.Markdown(tr("transfer_explain"), elem_classes=["ptx-explain"])
            with gr.Row():
                with gr.Column(scale=2, min_width=260):
                    image_b = safe_image(sources=["upload", "clipboard"], label=tr("image_b"),
                                       height=220, value=example_files[1])
                    gr.Examples(examples=[[p] for p in example_files], inputs=[image_b], examples_per_page=8)
                    compare_btn = gr.Button(tr("compare"), variant="primary")
                with gr.Column(scale=3):
                    transfer_plot = gr.Plot(show_label=False)
                    transfer_md = gr.Markdown()
    with gr.Accordion(tr("story_title"), open=False):
        gr.Markdown(tr("story"), elem_classes=["ptx-explain"])

    # ------------------------------------------------------------ events (UI: private)
    private = {"api_visibility": "private", **DEVICE_QUEUE}
    step_outputs = [stage, stage_md, grid, box, pyramid, vis_layer, vis_channel]
    gr.on([image.change, model.change], guarded(_analyse), inputs=[image, model, stage, over],
          outputs=[top5, provenance, target, gc_stage, *step_outputs], **private)
    step_inputs = [image, model, stage, over]
    gr.on([stage.release, over.change], guarded(_step), inputs=step_inputs, outputs=step_outputs, **private)
    prev_btn.click(guarded(_previous), inputs=step_inputs, outputs=step_outputs, **private)
    next_btn.click(guarded(_next), inputs=step_inputs, outputs=step_outputs, **private)
    model.change(_gallery, inputs=model, outputs=[gallery, gallery_note], api_visibility="private")
    paint_btn.click(guarded(_paint), inputs=[model, vis_layer, vis_channel, vis_steps, vis_seed],
                    outputs=[painted, painted_md], **private)
    gc_btn.click(guarded(_gradcam), inputs=[image, model, target, gc_stage], outputs=[gc_img, gc_md], **private)
    ig_btn.click(guarded(_ig), inputs=[image, model, target, ig_steps], outputs=[ig_img, ig_md], **private)
    occ_btn.click(guarded(_occlusion), inputs=[image, model, target, occ_window], outputs=[occ_img, occ_md], **private)
    compare_btn.click(guarded(_transfer), inputs=[image, image_b, model], outputs=[transfer_plot, transfer_md],
                      **private)

    # Deep links: ?tab=cnn&image=coffee (a packaged image's name); the image change runs the station.
    def _packaged(name: str) -> str:
        if name.strip().lower() not in example_names():
            raise ValueError(f"not a packaged image; choose one of {', '.join(example_names())}")
        return str(example_path(name.strip().lower()))

    deeplinks.register(KEY, {"image": (image, _packaged), "model": model})

    # ------------------------------------------------------------ API endpoints (image args as files)
    with gr.Group(visible=False):
        api_image = gr.File(type="filepath")
        api_k = gr.Number(value=5, precision=0)
        api_model = gr.Textbox(value="")
        api_out = gr.JSON()
    gr.on(triggers=[], fn=guarded(classify_image), inputs=[api_image, api_k, api_model], outputs=api_out,
          api_name="classify_image", **DEVICE_QUEUE)
    gr.on(triggers=[], fn=guarded(feature_maps), inputs=[api_image, api_model], outputs=api_out,
          api_name="feature_maps", **DEVICE_QUEUE)


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
