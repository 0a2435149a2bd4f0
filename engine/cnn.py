"""A CNN's feature hierarchy, step by step: classify, stage activations, receptive fields.

Every function takes an image (a path, bytes, PIL image or array; loaded safely by
`engine.images.load_image`) and a model id ("" = the `cnn` role's default) and returns
plain data that names its model. Stages come from timm's `forward_intermediates`
(no ad-hoc hooks): the input, the stem, each stage of blocks, the head convolution
(where the model has one) and the 1000 ImageNet logits.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import torch
from PIL import Image

from engine.errors import UserInputError
from engine.images import load_image
from engine.registry import REGISTRY, LoadedModel

ROLE = "cnn"
MAX_K = 1000


# ------------------------------------------------------------------ model, labels, preprocessing
def get_model(model_id: str = "") -> LoadedModel:
    """The loaded CNN (registry cache; loads once)."""
    return REGISTRY.get(ROLE, model_id or "")


def model_choices() -> list[tuple[str, str]]:
    """(title, id) of every registered CNN, the default first; nothing is loaded. Titles of
    models with no reachable source say so (judged cheaply: files exist, hub reachable)."""
    out = []
    for spec in REGISTRY.specs(ROLE):
        found = REGISTRY.would_load(ROLE, spec.id)
        out.append((spec.title if found else f"{spec.title} (not available here)", spec.id))
    return out


def default_model_id() -> str:
    """The id the role would use for model="" (judged without loading)."""
    pick = REGISTRY.would_load(ROLE)
    return pick[0].id if pick else REGISTRY.specs(ROLE)[0].id


@lru_cache(maxsize=1)
def _imagenet_info():
    from timm.data import ImageNetInfo

    return ImageNetInfo()


def imagenet_label(index: int) -> str:
    """ImageNet-1k class description for an index 0..999, e.g. 285 -> "Egyptian cat"."""
    return _imagenet_info().index_to_description(int(index))


def imagenet_labels() -> list[str]:
    """All 1000 ImageNet-1k class descriptions in index order."""
    return [imagenet_label(i) for i in range(1000)]


def class_index(label_or_index: str | int) -> int:
    """A class given as an index ("281") or a name ("tabby", "tabby, tabby cat") -> 0..999."""
    text = str(label_or_index).strip()
    if text.lstrip("-").isdigit():
        idx = int(text)
        if not 0 <= idx < 1000:
            raise UserInputError(f"class index {idx} is out of range; ImageNet classes are 0..999")
        return idx
    low = text.lower()
    labels = imagenet_labels()
    for i, lab in enumerate(labels):
        if low == lab.lower() or low in [p.strip().lower() for p in lab.split(",")]:
            return i
    raise UserInputError(f"{text!r} is not an ImageNet class name; pick one from the list or give an index 0..999")


@lru_cache(maxsize=8)
def _transform(model_id: str):
    """timm's eval transform for the spec's data config (resize, centre crop, normalise)."""
    from timm.data import create_transform

    return create_transform(**REGISTRY.spec(ROLE, model_id).preprocess)


@dataclass
class Prepared:
    """An image ready for the model.

    x: float32 tensor (1, 3, H, W), normalised with the model's mean/std, on its device.
    shown: the resized, centre-cropped RGB image the model sees (H x W), for overlays.
    key: a digest of `x` (with the model id) for caches.
    """

    x: torch.Tensor
    shown: Image.Image
    key: str


def prepare(image: Any, loaded: LoadedModel) -> Prepared:
    """Load `image` safely and apply the model's own preprocessing (timm data config)."""
    img = load_image(image)
    transform = _transform(loaded.spec.id)
    shown = img
    for step in transform.transforms[:-2]:  # resize + centre crop, before tensor + normalise
        shown = step(shown)
    x = transform(img).unsqueeze(0)  # (1, 3, H, W) float32
    key = hashlib.sha1(loaded.spec.id.encode() + x.numpy().tobytes()).hexdigest()
    return Prepared(x.to(loaded.device), shown, key)


def normalise_pixels(pixels: torch.Tensor, preprocess: dict) -> torch.Tensor:
    """Pixels in [0, 1], (B, 3, H, W) -> the model's normalised input (same shape)."""
    mean = torch.tensor(preprocess["mean"], device=pixels.device).view(1, 3, 1, 1)
    std = torch.tensor(preprocess["std"], device=pixels.device).view(1, 3, 1, 1)
    return (pixels - mean) / std


def denormalise(x: torch.Tensor, preprocess: dict) -> torch.Tensor:
    """Undo the mean/std normalisation: (B, 3, H, W) -> the same in [0, 1]."""
    mean = torch.tensor(preprocess["mean"], device=x.device).view(1, 3, 1, 1)
    std = torch.tensor(preprocess["std"], device=x.device).view(1, 3, 1, 1)
    return (x * std + mean).clamp(0, 1)


# ------------------------------------------------------------------ classify
def top_k(logits: torch.Tensor, k: int) -> list[dict]:
    """(1000,) logits -> [{label, index, score}] best first; score is the softmax probability."""
    probs = logits.float().softmax(-1)
    values, indices = probs.topk(k)
    return [{"label": imagenet_label(i), "index": int(i), "score": float(v)}
            for v, i in zip(values.tolist(), indices.tolist(), strict=True)]


def check_k(k: Any) -> int:
    try:
        k = int(k)
    except (TypeError, ValueError):
        raise UserInputError(f"k must be a whole number between 1 and {MAX_K}, not {k!r}") from None
    if not 1 <= k <= MAX_K:
        raise UserInputError(f"k must be between 1 and {MAX_K}; got {k}")
    return k


def classify(image: Any, k: int = 5, model_id: str = "") -> dict:
    """Top-k ImageNet classes for an image.

    Returns {model, model_id, source, predictions: [{label, index, score in [0, 1]}] best
    first, seconds (forward time, warm)}.
    """
    k = check_k(k)
    loaded = get_model(model_id)
    prep = prepare(image, loaded)
    t0 = time.perf_counter()
    with torch.inference_mode():
        logits = loaded.obj(prep.x)[0]  # (1000,)
    seconds = time.perf_counter() - t0
    return {"model": loaded.label(), "model_id": loaded.spec.id, "source": loaded.source_kind,
            "predictions": top_k(logits, k), "seconds": seconds}


# ------------------------------------------------------------------ stages
@dataclass
class Stage:
    """One step of the hierarchy.

    name: "input", "stem", "stage 1" ... "head", "logits"; module: the timm module it ends at.
    act: float32 tensor (C, H, W) on the CPU (logits: (1000, 1, 1)).
    receptive_field: input pixels one unit of this stage can see (one side), stride: input
    pixels between neighbouring units.
    """

    name: str
    module: str
    act: torch.Tensor
    receptive_field: int
    stride: int

    def info(self) -> dict:
        c, h, w = self.act.shape
        return {"name": self.name, "module": self.module, "channels": int(c), "height": int(h),
                "width": int(w), "receptive_field": self.receptive_field, "stride": self.stride}


def _is_efficientnet(model: torch.nn.Module) -> bool:
    return hasattr(model, "blocks") and hasattr(model, "conv_stem")


def stage_modules(model: torch.nn.Module) -> list[str]:
    """Module names where each `forward_intermediates` output ends (stem first)."""
    if _is_efficientnet(model):  # extra_blocks=True: the stem and every block stage
        return ["bn1"] + [f"blocks.{i}" for i in range(len(model.blocks))]
    return [f["module"] for f in model.feature_info]


def stage_names(model: torch.nn.Module) -> list[str]:
    """Display names aligned with `stage_modules`: "stem" (when the model has one), "stage 1", ..."""
    modules = stage_modules(model)
    has_stem = modules[0] in ("bn1", "act1")  # EfficientNet, ResNet: a stem before the stages
    return [("stem" if has_stem and i == 0 else f"stage {i if has_stem else i + 1}") for i in range(len(modules))]


def _conv_geometry(module: torch.nn.Module) -> tuple[int, int, int] | None:
    """(kernel, stride, dilation) of a spatial layer, or None if it has none."""
    if isinstance(module, (torch.nn.Conv2d, torch.nn.MaxPool2d, torch.nn.AvgPool2d)):
        pick = lambda v: int(v[0] if isinstance(v, (tuple, list)) else v)  # noqa: E731
        dilation = getattr(module, "dilation", 1)
        return pick(module.kernel_size), pick(module.stride), pick(dilation)
    return None


def receptive_fields(model: torch.nn.Module, ends: list[str]) -> list[tuple[int, int]]:
    """(receptive field, stride) in input pixels after each module named in `ends`,
    walking the spatial layers (Conv2d, MaxPool2d, AvgPool2d) in registration order.

    r grows by (k - 1) * dilation * j at each layer and the jump j multiplies by the
    stride. Residual shortcuts (`downsample`) run beside the main path and are skipped:
    the main path has the larger field. Padding does not change the field.
    """
    r, j = 1, 1
    out: dict[str, tuple[int, int]] = {}
    for name, module in model.named_modules():
        if "downsample" in name:
            continue
        geom = _conv_geometry(module)
        if geom:
            k, s, d = geom
            r += (k - 1) * d * j
            j *= s
        for end in ends:
            if name == end or name.startswith(end + "."):
                out[end] = (r, j)
    return [out[e] for e in ends]


@lru_cache(maxsize=8)
def _receptive_fields(model_id: str) -> tuple[tuple[int, int], ...]:
    model = get_model(model_id).obj
    return tuple(receptive_fields(model, stage_modules(model)))


_stage_cache: OrderedDict[str, list[Stage]] = OrderedDict()
_stage_lock = threading.Lock()


def stages_of(prep: Prepared, loaded: LoadedModel) -> list[Stage]:
    """Every stage's activation for one prepared image (cached for the last 16 images)."""
    with _stage_lock:
        if prep.key in _stage_cache:
            _stage_cache.move_to_end(prep.key)
            return _stage_cache[prep.key]
    model = loaded.obj
    extra = {"extra_blocks": True} if _is_efficientnet(model) else {}
    with torch.inference_mode():
        final, inter = model.forward_intermediates(prep.x, **extra)
        logits = model.forward_head(final)  # (1, 1000)
    fields = _receptive_fields(loaded.spec.id)
    modules = stage_modules(model)
    h = prep.x.shape[-1]
    result = [Stage("input", "", prep.x[0].float().cpu(), 1, 1)]
    for act, name, module, (rf, stride) in zip(inter, stage_names(model), modules, fields, strict=True):
        result.append(Stage(name, module, act[0].float().cpu(), rf, stride))
    if final.shape[1] != inter[-1].shape[1]:  # a head convolution after the last stage (EfficientNet)
        rf, stride = fields[-1]
        result.append(Stage("head", "conv_head", final[0].float().cpu(), rf, stride))
    result.append(Stage("logits", "classifier", logits[0].float().cpu().view(-1, 1, 1), h, h))
    with _stage_lock:
        _stage_cache[prep.key] = result
        while len(_stage_cache) > 16:
            _stage_cache.popitem(last=False)
    return result


def feature_maps(image: Any, model_id: str = "") -> dict:
    """The stages of the hierarchy for an image (API `/feature_maps`).

    Returns {model, model_id, source, stages: [{name, module, channels, height, width,
    receptive_field, stride}] from input to output, predictions (top 5), seconds}.
    """
    loaded = get_model(model_id)
    prep = prepare(image, loaded)
    t0 = time.perf_counter()
    st = stages_of(prep, loaded)
    seconds = time.perf_counter() - t0
    return {"model": loaded.label(), "model_id": loaded.spec.id, "source": loaded.source_kind,
            "stages": [s.info() for s in st], "predictions": top_k(st[-1].act.view(-1), 5),
            "seconds": seconds}


def top_channels(act: torch.Tensor, n: int = 8) -> list[int]:
    """Indices of the n channels with the largest mean activation, (C, H, W) -> n ints."""
    score = act.flatten(1).mean(1)  # (C,)
    return score.topk(min(n, act.shape[0])).indices.tolist()


# ------------------------------------------------------------------ pictures
# A perceptually even dark-to-bright ramp (close to matplotlib's "magma"), 5 anchors.
_RAMP = np.array([[0, 0, 4], [81, 18, 124], [183, 55, 121], [252, 137, 97], [252, 253, 191]], dtype=np.float32)


def colormap(values: np.ndarray) -> np.ndarray:
    """(H, W) floats in [0, 1] -> (H, W, 3) uint8 through a dark-to-bright ramp."""
    v = np.clip(np.nan_to_num(values), 0, 1) * (len(_RAMP) - 1)
    lo = np.floor(v).astype(int).clip(0, len(_RAMP) - 2)
    frac = (v - lo)[..., None]
    return (_RAMP[lo] * (1 - frac) + _RAMP[lo + 1] * frac).round().astype(np.uint8)


def normalise01(a: np.ndarray) -> np.ndarray:
    """Scale to [0, 1] (constant input -> zeros)."""
    lo, hi = float(a.min()), float(a.max())
    return np.zeros_like(a, dtype=np.float32) if hi - lo < 1e-12 else ((a - lo) / (hi - lo)).astype(np.float32)


def channel_grid(act: torch.Tensor, channels: list[int], tile: int = 112, cols: int = 4, gap: int = 4,
                 base: Image.Image | None = None) -> np.ndarray:
    """Feature maps of chosen channels as one picture.

    act: (C, H, W); each channel is scaled to its own [0, 1] and coloured. Without
    `base`, each map is resized to tile x tile (nearest, so coarse maps show their real
    grid); with `base` (the image the model saw), each map is laid over it (`overlay`).
    Returns (rows*tile + gaps, cols*tile + gaps, 3) uint8 on white.
    """
    rows = max(1, -(-len(channels) // cols))
    out = np.full((rows * tile + (rows - 1) * gap, cols * tile + (cols - 1) * gap, 3), 255, np.uint8)
    small = base.convert("RGB").resize((tile, tile), Image.BICUBIC) if base is not None else None
    for n, c in enumerate(channels):
        heat = normalise01(act[c].numpy())
        if small is not None:
            tile_arr = overlay(small, heat, alpha=0.85)
        else:
            tile_arr = np.asarray(Image.fromarray(colormap(heat)).resize((tile, tile), Image.NEAREST))
        r, q = divmod(n, cols)
        out[r * (tile + gap): r * (tile + gap) + tile, q * (tile + gap): q * (tile + gap) + tile] = tile_arr
    return out


def overlay(shown: Image.Image, heat: np.ndarray, alpha: float = 0.8) -> np.ndarray:
    """A heat map (h, w) in [0, 1] over the image the model saw -> (H, W, 3) uint8.

    The colour's opacity follows the heat (up to `alpha`), so cold regions show the
    photo, slightly dimmed, and hot regions glow.
    """
    w, h = shown.size
    heat_img = Image.fromarray((np.clip(heat, 0, 1) * 255).astype(np.uint8)).resize((w, h), Image.BILINEAR)
    v = np.asarray(heat_img, dtype=np.float32) / 255  # (H, W) in [0, 1]
    coloured = colormap(v).astype(np.float32)
    base = np.asarray(shown.convert("RGB"), dtype=np.float32) * 0.75
    a = (alpha * v)[..., None]
    return (base * (1 - a) + coloured * a).round().astype(np.uint8)


# ------------------------------------------------------------------ transfer
def _gram_similarity(a: torch.Tensor, b: torch.Tensor) -> float:
    """Cosine similarity of the channel co-activation (Gram) matrices of two (C, H, W) maps."""
    va, vb = a.flatten(1), b.flatten(1)  # (C, HW)
    ga, gb = va @ va.T / va.shape[1], vb @ vb.T / vb.shape[1]  # (C, C)
    return float(torch.nn.functional.cosine_similarity(ga.flatten(), gb.flatten(), dim=0))


@lru_cache(maxsize=4)
def typical_similarity(model_id: str = "") -> tuple[dict, ...]:
    """The same Gram similarity averaged over every pair of packaged example images
    (15 images, 105 pairs): what "unrelated photos" look like to each stage.
    Returns ({name, mean, low, high} per stage after the input), low/high = 10th/90th percentile."""
    from engine.images import example, example_names

    loaded = get_model(model_id)
    per_image = [stages_of(prepare(example(n), loaded), loaded)[1:] for n in example_names()]
    rows = []
    for s_i, stage in enumerate(per_image[0]):
        if stage.name == "logits":
            vecs = torch.stack([st[s_i].act.view(-1).softmax(0) for st in per_image])  # (N, 1000)
        else:
            grams = []
            for st in per_image:
                v = st[s_i].act.flatten(1)
                grams.append((v @ v.T / v.shape[1]).flatten())
            vecs = torch.stack(grams)  # (N, C*C)
        vecs = torch.nn.functional.normalize(vecs, dim=1)
        sims = vecs @ vecs.T  # (N, N)
        iu = torch.triu_indices(len(per_image), len(per_image), offset=1)
        pairs = sims[iu[0], iu[1]]
        rows.append({"name": stage.name, "mean": float(pairs.mean()), "low": float(pairs.quantile(0.1)),
                     "high": float(pairs.quantile(0.9))})
    return tuple(rows)


def stage_similarity(image_a: Any, image_b: Any, model_id: str = "") -> dict:
    """How alike two images are at each stage (the transfer picture).

    Per stage: `pooled`, the cosine similarity of the channel-mean vectors (what features
    are present, wherever they are), and `gram`, the cosine similarity of the channel
    co-activation (Gram) matrices (textures/styles); at the logits, the cosine of the two
    class-probability vectors. Lower stages respond to edges and colours that most photos
    share; higher stages to object parts that differ.
    Returns {model, stages: [{name, channels, pooled in [-1, 1], gram in [-1, 1]}],
    typical (`typical_similarity`: the same over all pairs of packaged photos), top_a,
    top_b (top-3 predictions)}.
    """
    loaded = get_model(model_id)
    sa = stages_of(prepare(image_a, loaded), loaded)
    sb = stages_of(prepare(image_b, loaded), loaded)
    rows = []
    for a, b in zip(sa[1:], sb[1:], strict=True):  # skip the raw input
        va, vb = a.act.flatten(1), b.act.flatten(1)  # (C, HW)
        pooled = float(torch.nn.functional.cosine_similarity(va.mean(1), vb.mean(1), dim=0))
        if a.name == "logits":  # compare the class probabilities
            gram = float(torch.nn.functional.cosine_similarity(va.view(-1).softmax(0), vb.view(-1).softmax(0), dim=0))
        else:
            gram = _gram_similarity(a.act, b.act)
        rows.append({"name": a.name, "channels": int(a.act.shape[0]), "pooled": pooled, "gram": gram})
    return {"model": loaded.label(), "model_id": loaded.spec.id, "stages": rows,
            "typical": list(typical_similarity(loaded.spec.id)),
            "top_a": top_k(sa[-1].act.view(-1), 3), "top_b": top_k(sb[-1].act.view(-1), 3)}


# ------------------------------------------------------------------ the stepper
def receptive_box(shown: Image.Image, stage: Stage, act_map: torch.Tensor) -> np.ndarray:
    """The image the model saw with the receptive field of the strongest unit of one
    channel drawn as a square. act_map: (h, w). Returns (H, W, 3) uint8."""
    from PIL import ImageDraw

    img = shown.convert("RGB").copy()
    h, w = act_map.shape
    flat = int(act_map.flatten().argmax())
    i, j = divmod(flat, w)
    cy, cx = (i + 0.5) * img.height / h, (j + 0.5) * img.width / w  # centre of the unit in input pixels
    half = stage.receptive_field / 2
    box = (max(0, cx - half), max(0, cy - half), min(img.width - 1, cx + half), min(img.height - 1, cy + half))
    draw = ImageDraw.Draw(img)
    draw.rectangle(box, outline=(250, 204, 21), width=3)
    draw.ellipse((cx - 4, cy - 4, cx + 4, cy + 4), fill=(250, 204, 21))
    return np.asarray(img)


def stage_view(image: Any, index: int, model_id: str = "", n_channels: int = 8, over_image: bool = False) -> dict:
    """One step of the hierarchy for the stepper.

    index: 0 = input ... last = logits (clipped into range); over_image: lay each map
    over the image instead of showing it alone.
    Returns {model, model_id, index, n_stages, names, stage: Stage.info(), channels (the
    n most active, best first), channel_means (their mean activations), grid ((rows*112,
    cols*112, 3) uint8 of their maps, None at the logits), box ((H, W, 3) uint8: the
    receptive field of the strongest unit of the top channel, None at input/logits),
    predictions (top 5), sizes: [{name, channels, height, width}] for every stage}.
    """
    loaded = get_model(model_id)
    prep = prepare(image, loaded)
    st = stages_of(prep, loaded)
    index = max(0, min(int(index), len(st) - 1))
    stage = st[index]
    grid = box = None
    channels: list[int] = []
    means: list[float] = []
    if stage.name != "logits":
        channels = top_channels(stage.act, n_channels) if stage.name != "input" else [0, 1, 2]
        means = [float(stage.act[c].mean()) for c in channels]
        base = prep.shown if over_image and stage.name != "input" else None
        grid = channel_grid(stage.act, channels, cols=4 if len(channels) > 3 else 3, base=base)
        if stage.name != "input":
            box = receptive_box(prep.shown, stage, stage.act[channels[0]])
    return {"model": loaded.label(), "model_id": loaded.spec.id, "index": index, "n_stages": len(st),
            "names": [s.name for s in st], "stage": stage.info(), "channels": channels, "channel_means": means,
            "grid": grid, "box": box, "shown": np.asarray(prep.shown), "predictions": top_k(st[-1].act.view(-1), 5),
            "sizes": [s.info() for s in st]}
