"""A Vision Transformer read from the inside: patches, position embeddings, attention.

An image becomes a grid of p x p patches; each patch is a token, [CLS] is prepended, and
the transformer's attention says how much each token looks at each other. We show:
- the patch grid and the token sequence (`grid_overlay`, `token_strip`);
- the position embeddings' cosine similarity, each position against every other
  (`position_similarity`, as in the ViT paper's figure 7);
- [CLS] attention per layer and head, and attention rollout (Abnar & Zuidema 2020).

Images are (H, W, 3) float64 in [0, 1]; attention arrays are float32.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from engine.errors import UserInputError


@dataclass
class Attentions:
    """One forward pass. att: (layers, heads, T, T) float32, rows sum to 1, T = 1 + rows*cols
    ([CLS] first); grid: (rows, cols); image: the (S, S, 3) input in [0, 1]; seconds: forward time."""

    att: np.ndarray
    grid: tuple[int, int]
    image: np.ndarray
    seconds: float

    @property
    def layers(self) -> int:
        return self.att.shape[0]

    @property
    def heads(self) -> int:
        return self.att.shape[1]


def check_layer(layer: Any, layers: int) -> int:
    """A layer index (-1 = last; 0-based) as a non-negative int, or UserInputError."""
    try:
        value = float(layer)
    except (TypeError, ValueError):
        raise UserInputError(f"layer must be a whole number from 0 to {layers - 1}, or -1 for the last") from None
    if value != int(value) or not -layers <= value < layers:
        raise UserInputError(f"layer must be a whole number from 0 to {layers - 1}, or -1 for the last; got {layer!r}")
    return int(value) % layers


class ViTRunner:
    """What a `vit` loader returns: the transformers model (eager attention, eval) and how to
    feed it. kind: "dinov2" or "vit"; image_size: the square input side in pixels."""

    def __init__(self, model: Any, *, kind: str, image_size: int, mean, std, info: dict | None = None) -> None:
        self.model = model
        self.kind = kind
        self.image_size = int(image_size)
        self.patch = int(model.config.patch_size)
        self.mean = torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1)
        self.std = torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1)
        self.info = info or {}
        self._cache: OrderedDict[str, Attentions] = OrderedDict()
        self._lock = threading.Lock()
        self._pos_sim: np.ndarray | None = None

    @property
    def grid(self) -> tuple[int, int]:
        n = self.image_size // self.patch
        return (n, n)

    def prepare(self, image: Any) -> np.ndarray:
        """Any image -> (S, S, 3) float64 in [0, 1]: centre square, resized to the model's input."""
        from PIL import Image

        from engine.images import load_image

        img = load_image(image)
        w, h = img.size
        side = min(w, h)
        left, top = (w - side) // 2, (h - side) // 2
        img = img.crop((left, top, left + side, top + side))
        img = img.resize((self.image_size, self.image_size), Image.BICUBIC, reducing_gap=3.0)
        return np.asarray(img, dtype=np.float64) / 255.0

    def attentions(self, image: Any) -> Attentions:
        """All layers' attention for one image; cached by pixels (moving a slider reruns nothing)."""
        import time

        img = self.prepare(image)
        key = hashlib.sha1(img.tobytes()).hexdigest()
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        dev = next(self.model.parameters()).device
        x = torch.from_numpy(img).permute(2, 0, 1).unsqueeze(0).float()  # (1, 3, S, S)
        px = ((x - self.mean) / self.std).to(dev)
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = self.model(pixel_values=px, output_attentions=True)
        att = torch.stack([a[0] for a in out.attentions]).float().cpu().numpy()  # (layers, heads, T, T)
        result = Attentions(att=att, grid=self.grid, image=img, seconds=time.perf_counter() - t0)
        with self._lock:
            self._cache[key] = result
            while len(self._cache) > 16:
                self._cache.popitem(last=False)
        return result

    def position_similarity(self) -> np.ndarray:
        """(rows, cols, rows, cols) cosine similarity between the learned position embeddings
        of every pair of patch positions, at this input size (DINOv2's 37 x 37 table is
        interpolated to the grid exactly as the model does it). The mean embedding, shared
        by all positions, is removed first so that what differs between positions shows."""
        if self._pos_sim is None:
            rows, cols = self.grid
            emb = self.model.embeddings
            with torch.inference_mode():
                dummy = torch.zeros(1, 1 + rows * cols, emb.position_embeddings.shape[-1])
                pos = emb.interpolate_pos_encoding(dummy, self.image_size, self.image_size)[0, 1:]  # (L, D)
                pos = pos.float() - pos.float().mean(dim=0, keepdim=True)
                pos = torch.nn.functional.normalize(pos, dim=-1)
                sim = (pos @ pos.T).cpu().numpy()  # (L, L)
            self._pos_sim = sim.reshape(rows, cols, rows, cols)
        return self._pos_sim


# ---------------------------------------------------------------- reading attention
def cls_attention(att: np.ndarray, grid: tuple[int, int], layer: int) -> np.ndarray:
    """(heads, rows, cols): how much [CLS] attends to each patch in one layer, per head."""
    rows, cols = grid
    return att[layer, :, 0, 1:].reshape(-1, rows, cols)


def rollout(att: np.ndarray, grid: tuple[int, int], upto: int | None = None) -> np.ndarray:
    """(rows, cols) attention rollout from [CLS] to the patches through layers 0..upto.

    Each layer's head-averaged attention gets the residual path added (A + I, rows
    renormalised) and the layers are multiplied in order (Abnar & Zuidema, 2020)."""
    rows, cols = grid
    n = att.shape[-1]
    last = att.shape[0] - 1 if upto is None else upto
    # joint = A_last ... A_0; only its [CLS] row is needed, so multiply a row vector from the
    # top layer down: O(layers * T^2) instead of O(layers * T^3)
    v = np.zeros(n, dtype=np.float64)
    v[0] = 1.0
    for layer in range(last, -1, -1):
        a = att[layer].mean(axis=0).astype(np.float64) + np.eye(n)
        a /= a.sum(axis=-1, keepdims=True)
        v = v @ a
    r = v[1:]
    total = r.sum()
    return (r / total if total > 0 else r).reshape(rows, cols)  # all zeros if [CLS] only kept itself


# ---------------------------------------------------------------- pictures
def _upsample(a: np.ndarray, size: int) -> np.ndarray:
    """(rows, cols) -> (size, size), nearest (each patch keeps its square)."""
    rows, cols = a.shape
    return np.kron(a, np.ones((size // rows, size // cols)))


def heat_overlay(image: np.ndarray, heat: np.ndarray, alpha: float = 0.6) -> np.ndarray:
    """(S, S, 3) image + (rows, cols) heat -> (S, S, 3) uint8: the image dimmed, the heat
    (scaled to its 98th percentile, brighter clipped) painted in a warm colour map on top."""
    from matplotlib import colormaps

    h = heat.astype(np.float64) - heat.min()
    # scale to the 98th percentile: a few "sink" patches (DINOv2's high-norm background tokens)
    # would otherwise take the whole colour range and leave the rest dark
    top = np.percentile(h, 98)
    h = np.clip(h / (top if top > 0 else h.max() + 1e-12), 0, 1)
    colour = colormaps["inferno"](_upsample(h, image.shape[0]))[..., :3]
    out = (1 - alpha) * image * 0.9 + alpha * colour
    return (np.clip(out, 0, 1) * 255).round().astype(np.uint8)


def grid_overlay(image: np.ndarray, patch: int, colour=(1.0, 1.0, 1.0)) -> np.ndarray:
    """(S, S, 3) -> uint8 with a line at every patch border."""
    out = image.copy()
    out[::patch, :, :] = colour
    out[:, ::patch, :] = colour
    out[-1, :, :] = colour
    out[:, -1, :] = colour
    return (np.clip(out, 0, 1) * 255).round().astype(np.uint8)


def token_strip(image: np.ndarray, patch: int, n: int = 12, gap: int = 4, scale: int = 1) -> np.ndarray:
    """uint8 strip: a [CLS] tile, then the first n patches in sequence (row-major), with gaps,
    then '...' dots and the last patch: what the transformer reads, in order. Height
    patch * scale (nearest-neighbour enlargement)."""
    rows = image.shape[0] // patch
    tiles = [np.full((patch, patch, 3), 0.25)]  # [CLS]: a learned token, no pixels
    tiles[0][patch // 3: 2 * patch // 3, patch // 3: 2 * patch // 3] = (0.95, 0.75, 0.2)
    for i in range(min(n, rows * rows - 1)):
        r, c = divmod(i, rows)
        tiles.append(image[r * patch:(r + 1) * patch, c * patch:(c + 1) * patch])
    dots = np.ones((patch, patch, 3))
    for k in (1, 2, 3):
        dots[patch // 2 - 1: patch // 2 + 1, k * patch // 4 - 1: k * patch // 4 + 1] = 0.3
    tiles += [dots, image[-patch:, -patch:]]
    spacer = np.ones((patch, gap, 3))
    strip = np.concatenate([t for tile in tiles for t in (tile, spacer)][:-1], axis=1)
    strip = strip.repeat(scale, axis=0).repeat(scale, axis=1)
    return (np.clip(strip, 0, 1) * 255).round().astype(np.uint8)


def similarity_mosaic(sim: np.ndarray, step: int = 1, pad: int = 1) -> np.ndarray:
    """(rows, cols, rows, cols) -> 2-D float mosaic: tile (i, j) is position (i, j)'s
    similarity to every position (every `step`-th position gets a tile); NaN on the gaps."""
    rows, cols = sim.shape[:2]
    ri, ci = range(0, rows, step), range(0, cols, step)
    tile_h, tile_w = rows + pad, cols + pad
    out = np.full((len(ri) * tile_h - pad, len(ci) * tile_w - pad), np.nan)
    for a, i in enumerate(ri):
        for b, j in enumerate(ci):
            out[a * tile_h: a * tile_h + rows, b * tile_w: b * tile_w + cols] = sim[i, j]
    return out


# ---------------------------------------------------------------- the station's entry point
def vit_attention(image: Any, layer: Any = -1, model: str = "") -> dict[str, Any]:
    """What `/vit_attention` returns: [CLS] attention to each patch in one layer, averaged
    over heads (rows x cols), plus per-head maps and the rollout through that layer."""
    from engine.images import load_image
    from engine.registry import REGISTRY

    image = load_image(image)  # a bad upload is reported before any model loads
    loaded = REGISTRY.get("vit", (model or "").strip())
    runner: ViTRunner = loaded.obj
    n_layers = int(runner.model.config.num_hidden_layers)
    li = check_layer(layer, n_layers)
    a = runner.attentions(image)
    per_head = cls_attention(a.att, a.grid, li)  # (heads, rows, cols)
    return {
        "model": loaded.label(), "model_id": loaded.spec.id, "source": loaded.source_kind,
        "grid": list(a.grid), "patch_size": runner.patch, "image_size": runner.image_size,
        "layer": li, "layers": a.layers, "heads": a.heads,
        "cls_attention": per_head.mean(axis=0), "per_head": per_head,
        "rollout": rollout(a.att, a.grid, li), "forward_seconds": a.seconds,
        "conversion_check": runner.info.get("conversion_check"),
    }
