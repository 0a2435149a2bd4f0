"""ViT & MAE station: an image cut into patch tokens, a real ViT's attention, and a masked
autoencoder painting hidden patches back.

Endpoints `/mae` and `/vit_attention` (API.md). The maths lives in `engine.mae` and
`engine.vit`; this module lays out the page, draws the figures and wires events.
"""

from __future__ import annotations

import time

import gradio as gr
import numpy as np
import plotly.graph_objects as go

from app import deeplinks
from app.common import DEVICE_QUEUE, announce_loading, guarded, quiet_on_bad_input, start_value
from app.i18n import translator
from app.safe_image import safe_image
from engine import mae as M
from engine import vit as V
from engine.images import example_path
from engine.registry import REGISTRY

TITLE = "ViT & MAE"
KEY = "vit_mae"
tr = translator(KEY)

EXAMPLES = ("chelsea", "coffee", "astronaut", "rocket", "china", "flower", "camera", "brick")
PLAY_RATIOS = tuple(round(r, 2) for r in np.arange(0.0, 0.951, 0.05))
FIG_FONT = dict(family="system-ui, -apple-system, Segoe UI, Noto Sans, sans-serif", size=14)

STRINGS = {
    "en": {
        "intro": "### From pixels to patches, and back\nA Vision Transformer reads an image as a "
                 "sentence of **patches**. A masked autoencoder (**MAE**) hides most of them and learns "
                 "to paint them back. Pick an image, then move the slider.",
        "image": "Image (upload, or pick an example; MAE and ViT use its centre square)",
        "examples": "Examples (held out from training: chelsea, coffee, rocket, china for the natural-image "
                    "MAE; the faces for the faces MAE)",
        "tab_mae": "MAE: hide and repaint",
        "tab_patches": "Patches & positions",
        "tab_attention": "ViT attention",
        "tab_explain": "How it works",
        "mae_model": "Masked autoencoder",
        "kind": "Mask",
        "ratio": "Masking ratio (share of patches hidden)",
        "seed": "Seed (same seed: the same patches go first)",
        "run": "Reconstruct",
        "play": "▶ Play 0 → 95%",
        "curve": "PSNR vs ratio (with baselines)",
        "original": "Original",
        "masked": "Encoder sees",
        "reconstruction": "Reconstruction",
        "composite": "+ visible pasted",
        "vit_model": "Vision Transformer",
        "patches_run": "Cut into patches",
        "grid_img": "The patch grid",
        "strip": "**The token sequence:** [CLS], then the patches row by row",
        "pos_help": "Below, each small square is one patch position (every second one); inside it, how "
                    "similar its learned position embedding is to every other position's (after removing the "
                    "part all positions share). Nobody told the model about rows and columns: the grid "
                    "emerges from training.",
        "att_run": "Show attention",
        "layer": "Layer (0 = first)",
        "heads_gallery": "[CLS] attention per head (brighter = more attention)",
        "mean_att": "Mean over heads",
        "rollout": "Attention rollout (layers 0 … this one)",
        "att_help": "Each map shows where the [CLS] token, which gathers the whole image into one vector, "
                    "looks in the chosen layer. **Rollout** follows attention through every layer up to it, "
                    "counting the skip connection as attention to oneself.",
        "explain": "#### Pixels → patches → visual tokens → pixels again\n"
                   "- **iGPT** treated each pixel as a token and predicted the next one, like GPT with text. "
                   "It works, but a 224 × 224 image is 50,000 tokens, far too many for attention, so iGPT "
                   "used tiny, low-resolution images.\n"
                   "- **ViT** cuts the image into 16 × 16-pixel patches (14 × 14 for DINOv2): 196 tokens at "
                   "224 px. Each patch is flattened and projected to a vector, a learned **position "
                   "embedding** says where it sat, and a [CLS] token collects a summary for classification.\n"
                   "- **BEiT** brought BERT's cloze to images: hide patches and predict a discrete **visual "
                   "token** for each (from a separately trained tokenizer).\n"
                   "- **MAE** goes back to pixels, with two twists. The **encoder sees only the visible "
                   "patches** (a quarter of them), which makes pretraining about 3× cheaper; a small "
                   "**decoder** gets the encoded patches plus a shared mask token at every hidden position "
                   "and paints the pixels.\n\n"
                   "#### Why hide 75%?\nImages are redundant: hide a few patches and the neighbours give the "
                   "answer away by simple interpolation (compare the *smooth inpainting* baseline). Hide "
                   "three quarters and interpolation fails: the model has to know what cats, faces and "
                   "letters look like. Text is different: words carry dense meaning, so BERT hides only 15%.\n\n"
                   "#### Reading the curve\n**PSNR** (peak signal-to-noise ratio, in dB) compares the hidden "
                   "patches with the truth; higher is better, +6 dB halves the error. Two baselines: fill "
                   "every hidden patch with the mean colour of the visible ones, and scikit-image's "
                   "**biharmonic inpainting**, which continues the visible pixels smoothly.",
        "offline_note": "Offline, no pretrained MAE ships with any package: the two small MAEs here were "
                        "trained on this project's packaged images (see `checkpoints/trained/`). With the "
                        "Hugging Face hub, choose facebook's ViT-MAE base or large.",
        "no_image": "Pick an example or upload an image first.",
    },
    "zh": {
        "intro": "### 从像素到图块，再回到像素\n视觉 Transformer 把一张图读成由**图块**组成的“句子”。"
                 "掩码自编码器（**MAE**）遮住大部分图块，再学着把它们画回来。选一张图，然后拖动滑块。",
        "image": "图像（上传或选择示例；MAE 与 ViT 使用中间的正方形区域）",
        "examples": "示例（训练时未见过：自然图像 MAE 没见过 chelsea、coffee、rocket 和 china；人脸 MAE 没见过这些人脸）",
        "tab_mae": "MAE：遮住再画回",
        "tab_patches": "图块与位置",
        "tab_attention": "ViT 注意力",
        "tab_explain": "原理",
        "mae_model": "掩码自编码器",
        "kind": "遮挡方式",
        "ratio": "遮挡比例（被隐藏的图块占比）",
        "seed": "随机种子（同一种子：同样的图块先被遮住）",
        "run": "重建",
        "play": "▶ 从 0 播放到 95%",
        "curve": "PSNR 随遮挡比例变化（含基线）",
        "original": "原图",
        "masked": "编码器所见",
        "reconstruction": "重建",
        "composite": "重建 + 可见块",
        "vit_model": "视觉 Transformer",
        "patches_run": "切成图块",
        "grid_img": "图块网格",
        "strip": "**词元序列：** [CLS]，然后逐行排列的图块",
        "pos_help": "下图每个小方块代表一个图块位置（每隔一个取一个）；方块内显示它学到的位置向量"
                    "（去掉所有位置共有的部分后）与其他所有位置的相似度。"
                    "没有人告诉模型什么是行和列：网格结构是训练中自己长出来的。",
        "att_run": "显示注意力",
        "layer": "层（0 = 第一层）",
        "heads_gallery": "每个注意力头中 [CLS] 的注意力（越亮越多）",
        "mean_att": "各头平均",
        "rollout": "注意力展开（第 0 层到当前层）",
        "att_help": "每张图显示 [CLS] 词元（它把整张图汇总成一个向量）在所选层里看向哪里。"
                    "**注意力展开**把直到该层的各层注意力连乘起来，并把残差连接算作对自身的注意力。",
        "explain": "#### 像素 → 图块 → 视觉词元 → 再回到像素\n"
                   "- **iGPT** 把每个像素当作一个词元，像 GPT 处理文本那样预测下一个像素。可行，但一张 224 × 224 "
                   "的图有五万个词元，注意力算不过来，所以 iGPT 只能用很小的低分辨率图像。\n"
                   "- **ViT** 把图像切成 16 × 16 像素的图块（DINOv2 为 14 × 14）：224 像素的图只有 196 个词元。"
                   "每个图块展平后投影成向量，再加上学到的**位置向量**表示它原来的位置，另有一个 [CLS] 词元"
                   "汇总全图用于分类。\n"
                   "- **BEiT** 把 BERT 的完形填空搬到图像上：遮住图块，预测每块对应的离散**视觉词元**"
                   "（来自另外训练的分词器）。\n"
                   "- **MAE** 又回到像素，但有两个变化：**编码器只看可见图块**（四分之一），预训练因此便宜约 3 倍；"
                   "一个轻量的**解码器**拿到编码后的图块，在每个被遮位置放一个共享的掩码词元，再画出像素。\n\n"
                   "#### 为什么遮住 75%？\n图像冗余很大：只遮几块，邻居靠简单插值就能猜出来（对比“平滑修补”基线）。"
                   "遮住四分之三，插值就不灵了：模型必须知道猫、人脸、文字长什么样。文本不同：词语信息密度高，"
                   "所以 BERT 只遮 15%。\n\n"
                   "#### 怎么看曲线\n**PSNR**（峰值信噪比，单位 dB）比较被遮图块与真实图像，越高越好，"
                   "高 6 dB 误差减半。两个基线：用可见图块的平均颜色填满被遮图块；以及 scikit-image 的"
                   "**双调和修补**，把可见像素平滑地延伸进去。",
        "offline_note": "离线时没有任何软件包自带预训练 MAE：这里的两个小 MAE 是本项目用自带图片训练的"
                        "（见 `checkpoints/trained/`）。能连上 Hugging Face hub 时，可选择 facebook 的 "
                        "ViT-MAE base 或 large。",
        "no_image": "请先选择示例或上传图像。",
    },
}


# ---------------------------------------------------------------- API functions (API.md)
def mae(image: str, mask_ratio: float, seed: int, model: str) -> dict:
    """`/mae`: hide a share of the patches (nested masks per seed) and reconstruct them."""
    return M.mae_endpoint(image, mask_ratio, seed, model)


def vit_attention(image: str, layer: int, model: str) -> dict:
    """`/vit_attention`: [CLS] attention to each patch in one layer, averaged over heads."""
    return V.vit_attention(image, layer, model)


# ---------------------------------------------------------------- UI callbacks (thin)
def _default_id(role: str) -> str:
    pick = REGISTRY.would_load(role)
    return pick[0].id if pick else REGISTRY.specs(role)[0].id


def _choices(role: str) -> list[tuple[str, str]]:
    return [(f"{s.title} ({s.id})", s.id) for s in REGISTRY.specs(role)]


def _has_image(image: str | None) -> bool:
    """Events also fire while the page fills itself in; with no image yet they do nothing."""
    return bool(image)


def _mae_caption(res: dict, seconds: float) -> str:
    def db(v):
        return "n/a (nothing hidden)" if v is None else f"{v:.1f} dB"

    gain = ""
    if res["psnr_masked"] is not None and res["psnr_mean_fill"] is not None:
        gain = f" ({res['psnr_masked'] - res['psnr_mean_fill']:+.1f} dB)"
    pix = " · norm-pix model: hidden patches shown with the true patches' mean and spread" if res["norm_pix_loss"] else ""
    return (f"**{res['model']}** · {res['image_size']} px, {res['grid'][0]}×{res['grid'][1]} patches of "
            f"{res['patch_size']} px · {res['hidden']} of {len(res['mask'])} hidden ({res['kind']}, seed "
            f"{res['seed']})  \nPSNR on hidden patches: MAE **{db(res['psnr_masked'])}**, mean-colour fill "
            f"{db(res['psnr_mean_fill'])}{gain} · {seconds * 1000:.0f} ms{pix}  \n_{res['note']}_")


def ui_mae(image, ratio, seed, model, kind, progress=gr.Progress()):
    if not _has_image(image) or ratio is None or seed is None:
        return (gr.skip(),) * 5
    announce_loading("mae", model, progress)
    t0 = time.perf_counter()
    loaded, rec = M.reconstruct(image, ratio, seed, model, kind)
    res = M.result(loaded, rec, M.check_seed(seed), kind, files=False)
    p = M.panels(rec)
    return p["original"], p["masked"], p["reconstruction"], p["composite"], _mae_caption(res, time.perf_counter() - t0)


def ui_play(image, seed, model, kind):
    if not _has_image(image):
        raise gr.Error("Pick an example or upload an image first.")
    for r in PLAY_RATIOS:
        t0 = time.perf_counter()
        loaded, rec = M.reconstruct(image, r, seed, model, kind)
        res = M.result(loaded, rec, M.check_seed(seed), kind, files=False)
        p = M.panels(rec)
        yield (r, p["original"], p["masked"], p["reconstruction"], p["composite"],
               _mae_caption(res, time.perf_counter() - t0))
        time.sleep(max(0.0, 0.45 - (time.perf_counter() - t0)))


def ui_curve(image, seed, model, kind, ratio, progress=gr.Progress()):
    if not _has_image(image):
        raise gr.Error("Pick an example or upload an image first.")
    announce_loading("mae", model, progress)
    loaded = REGISTRY.get("mae", model or "")
    curve = loaded.obj.curve(image, M.check_seed(seed), M.check_kind(kind))
    fig = go.Figure()
    styles = {"mae": ("MAE", "#d62728", "solid"), "biharmonic": ("biharmonic inpainting", "#1f77b4", "dash"),
              "mean_fill": ("mean-colour fill", "#7f7f7f", "dot")}
    for key, (name, colour, dash) in styles.items():
        fig.add_scatter(x=[100 * r for r in curve["ratios"]], y=curve[key], name=name, mode="lines+markers",
                        line=dict(color=colour, dash=dash, width=3), marker=dict(size=8))
    fig.add_vline(x=100 * float(ratio), line=dict(color="#444", width=1, dash="dot"))
    fig.update_layout(
        title=dict(text=f"PSNR on hidden patches<br><sup>{loaded.label()}</sup>", font=dict(size=15)),
        xaxis_title="masking ratio (%)", yaxis_title="PSNR (dB, higher is better)", height=340,
        margin=dict(l=60, r=20, t=60, b=50), font=FIG_FONT, legend=dict(orientation="h", y=-0.25),
        template="plotly_white")
    return fig


def ui_patches(image, model, progress=gr.Progress()):
    if not _has_image(image):
        return (gr.skip(),) * 4
    announce_loading("vit", model, progress)
    loaded = REGISTRY.get("vit", model or "")
    runner: V.ViTRunner = loaded.obj
    img = runner.prepare(image)
    rows, cols = runner.grid
    mosaic = V.similarity_mosaic(runner.position_similarity(), step=2)
    fig = go.Figure(go.Heatmap(z=mosaic, colorscale="Viridis", zmin=-1, zmax=1, hoverinfo="skip",
                               colorbar=dict(title="cosine", thickness=12)))
    fig.update_layout(
        title=dict(text=f"Position-embedding similarity, {rows}×{cols} positions (every 2nd tile)"
                        f"<br><sup>{loaded.label()}</sup>",
                   font=dict(size=14)),
        height=470, margin=dict(l=10, r=10, t=60, b=10), font=FIG_FONT,
        xaxis=dict(visible=False), yaxis=dict(visible=False, autorange="reversed", scaleanchor="x"))
    caption = (f"{runner.image_size}×{runner.image_size} px → {rows}×{cols} = {rows * cols} patches of "
               f"{runner.patch}×{runner.patch} px, each a {runner.model.config.hidden_size}-dim token; "
               f"with [CLS]: **{rows * cols + 1} tokens**. Model: {loaded.label()}")
    return V.grid_overlay(img, runner.patch), V.token_strip(img, runner.patch, n=10, scale=4), fig, caption


def ui_attention(image, layer, model, progress=gr.Progress()):
    if not _has_image(image) or layer is None:
        return (gr.skip(),) * 4
    announce_loading("vit", model, progress)
    res = V.vit_attention(image, layer, model)
    runner: V.ViTRunner = REGISTRY.get("vit", model or "").obj
    img = runner.attentions(image).image
    per_head = res["per_head"]
    gallery = [(V.heat_overlay(img, h), f"head {i}") for i, h in enumerate(per_head)]
    caption = (f"**{res['model']}** · layer {res['layer']} of 0…{res['layers'] - 1}, {res['heads']} heads · "
               f"forward {res['forward_seconds'] * 1000:.0f} ms (cached for this image)")
    check = res.get("conversion_check") or {}
    if check.get("checked"):
        caption += (f"  \nConverted from ONNX; checked against {check['runtime']}: last-layer attention within "
                    f"{check['max_abs_diff_attention']:.1e}")
    return (gallery, V.heat_overlay(img, res["cls_attention"]), V.heat_overlay(img, res["rollout"]), caption)


# ---------------------------------------------------------------- layout
def _examples() -> list[list[str]]:
    paths = [str(example_path(n)) for n in EXAMPLES]
    try:
        paths += M.face_example_paths(4)
    except Exception:  # noqa: BLE001 - no faces: the other examples still work
        pass
    return [[p] for p in paths]


def build() -> None:
    gr.Markdown(tr("intro"))
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=260):
            image = safe_image(label=tr("image"), height=220, sources=["upload", "clipboard"],
                               value=str(example_path("chelsea")))
            gr.Examples(_examples(), inputs=[image], label=tr("examples"), examples_per_page=12)
        with gr.Column(scale=3):
            with gr.Tabs() as inner:
                with gr.Tab(tr("tab_mae"), id="mae"):
                    with gr.Row():
                        mae_model = gr.Dropdown(_choices("mae"), value=_default_id("mae"), label=tr("mae_model"),
                                                scale=3)
                        kind = gr.Radio(list(M.MASK_KINDS), value="random", label=tr("kind"), scale=2)
                        seed = gr.Number(value=0, precision=0, minimum=0, label=tr("seed"), scale=1)
                    with gr.Row():
                        ratio = gr.Slider(0, M.MAX_RATIO, value=0.75, step=0.05, label=tr("ratio"), scale=3)
                        run = gr.Button(tr("run"), variant="primary", scale=1)
                        play = gr.Button(tr("play"), scale=1)
                    with gr.Row():
                        # Download only: the narrow panels need the room for their labels.
                        panels = [gr.Image(label=tr(k), height=210, interactive=False, buttons=["download"])
                                  for k in ("original", "masked", "reconstruction", "composite")]
                    caption = gr.Markdown()
                    curve_btn = gr.Button(tr("curve"), size="sm")
                    curve = gr.Plot(show_label=False)
                    gr.Markdown(tr("offline_note"), elem_classes=["ptx-notice"])
                with gr.Tab(tr("tab_patches"), id="patches"):
                    with gr.Row():
                        vit_model = gr.Dropdown(_choices("vit"), value=_default_id("vit"), label=tr("vit_model"),
                                                scale=3)
                        patches_btn = gr.Button(tr("patches_run"), variant="primary", scale=1)
                    patch_caption = gr.Markdown()
                    with gr.Row():
                        grid_img = gr.Image(label=tr("grid_img"), height=300, interactive=False)
                        with gr.Column():
                            gr.Markdown(tr("strip"))
                            strip = gr.Image(show_label=False, height=80, interactive=False)
                            gr.Markdown(tr("pos_help"))
                    pos_plot = gr.Plot(show_label=False)
                with gr.Tab(tr("tab_attention"), id="attention"):
                    with gr.Row():
                        att_model = gr.Dropdown(_choices("vit"), value=_default_id("vit"), label=tr("vit_model"),
                                                scale=3)
                        layer = gr.Slider(0, 11, value=11, step=1, label=tr("layer"), scale=3)
                        att_btn = gr.Button(tr("att_run"), variant="primary", scale=1)
                    att_caption = gr.Markdown()
                    with gr.Row():
                        mean_img = gr.Image(label=tr("mean_att"), height=240, interactive=False)
                        roll_img = gr.Image(label=tr("rollout"), height=240, interactive=False)
                    heads = gr.Gallery(label=tr("heads_gallery"), columns=6, height=200, object_fit="contain")
                    gr.Markdown(tr("att_help"))
                with gr.Tab(tr("tab_explain"), id="explain"):
                    gr.Markdown(tr("explain"))

    q = dict(api_visibility="private", **DEVICE_QUEUE)
    mae_in = [image, ratio, seed, mae_model, kind]
    mae_out = [*panels, caption]
    curve_in = [image, seed, mae_model, kind, ratio]
    # The curve depends on the image, seed, mask kind and model (not the ratio): it follows them.
    gr.on([run.click, image.change, kind.change, seed.change, mae_model.change], guarded(ui_mae),
          inputs=mae_in, outputs=mae_out, **q).success(guarded(ui_curve), inputs=curve_in, outputs=curve, **q)
    ratio.change(guarded(ui_mae), inputs=mae_in, outputs=mae_out, trigger_mode="always_last", **q)

    # The default image is reconstructed as the page opens (no inputs: this fires on load only),
    # so the four panels are never empty on a projector.
    # Its PSNR curve follows, so the plot under the panels is not an empty box either.
    # A deep link that runs this tab makes its own view instead (deeplinks.page_open).
    def first():
        return ui_mae(*map(start_value, mae_in))

    def first_curve():
        return ui_curve(*map(start_value, curve_in))

    gr.on(None, guarded(deeplinks.page_open(KEY, first, len(mae_out))), None, mae_out, **q).then(
        guarded(deeplinks.page_open(KEY, first_curve, 1)), None, curve, **q)
    play.click(guarded(ui_play), inputs=[image, seed, mae_model, kind], outputs=[ratio, *panels, caption], **q)
    curve_btn.click(guarded(ui_curve), inputs=curve_in, outputs=curve, **q)
    patch_out = [grid_img, strip, pos_plot, patch_caption]
    # A bad upload is reported once, by the MAE event; these panels keep what they show.
    gr.on([patches_btn.click, vit_model.change], guarded(ui_patches), inputs=[image, vit_model],
          outputs=patch_out, **q)
    image.change(quiet_on_bad_input(ui_patches, len(patch_out)), inputs=[image, vit_model], outputs=patch_out, **q)
    att_in, att_out = [image, layer, att_model], [heads, mean_img, roll_img, att_caption]
    gr.on([att_btn.click, att_model.change], guarded(ui_attention), inputs=att_in, outputs=att_out, **q)
    image.change(quiet_on_bad_input(ui_attention, len(att_out)), inputs=att_in, outputs=att_out, **q)
    layer.change(guarded(ui_attention), inputs=att_in, outputs=att_out, trigger_mode="always_last", **q)

    # The scriptable API (API.md): image arguments through a hidden gr.File.
    with gr.Group(visible=False):
        api_image = gr.File(type="filepath")
        api_ratio = gr.Number()
        api_seed = gr.Number()
        api_model = gr.Textbox()
        api_layer = gr.Number()
        api_vit_model = gr.Textbox()
        api_out = gr.JSON()
        api_out2 = gr.JSON()
    gr.on(triggers=[], fn=guarded(mae), inputs=[api_image, api_ratio, api_seed, api_model], outputs=api_out,
          api_name="mae", **DEVICE_QUEUE)
    gr.on(triggers=[], fn=guarded(vit_attention), inputs=[api_image, api_layer, api_vit_model], outputs=api_out2,
          api_name="vit_attention", **DEVICE_QUEUE)

    # Deep links: ?tab=mae&mask_ratio=0.9&masking=block&seed=3, or ?tab=mae&layer=6.
    deeplinks.register(KEY, {"mask_ratio": ratio, "seed": seed, "masking": kind, "model": mae_model}, run=run,
                       panel=(inner, "mae"))
    deeplinks.register(KEY, {"layer": layer, "vit_model": att_model}, run=att_btn, panel=(inner, "attention"))


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
