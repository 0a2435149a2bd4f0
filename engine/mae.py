"""Masked autoencoding, in stages that can be called alone (like facebookresearch/mae).

patchify -> a nested mask order -> encoder on the visible patches only -> light decoder
-> unpatchify; then PSNR over the hidden patches, for the MAE and for two baselines
(mean-colour fill, scikit-image biharmonic inpainting).

Conventions:
- images are float tensors (B, C, H, W) or numpy (H, W, C) in [0, 1] unless said otherwise;
- a patch vector is laid out (p, q, c) like transformers' `ViTMAEForPreTraining.patchify`,
  so patch i covers rows (i // cols) * p ... and columns (i % cols) * p ...;
- a mask *order* is a permutation of the L patch indices, hidden first: cutting it at
  round(ratio * L) gives the mask, so masks for one seed are nested across ratios;
- a mask is a (L,) uint8 array, 1 = hidden (API.md).
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch

from engine.errors import UserInputError
from engine.images import save_png_whole

MaskKind = Literal["random", "block", "grid"]
MASK_KINDS: tuple[str, ...] = ("random", "block", "grid")
MAX_RATIO = 0.95
PSNR_CAP_DB = 100.0  # a perfect match would be +inf dB; we report this cap instead
CURVE_RATIOS: tuple[float, ...] = (0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.85, 0.9, 0.95)


# ---------------------------------------------------------------- patches
def patchify(imgs: torch.Tensor, patch: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, L, p*p*C) with L = (H/p)*(W/p), patches row-major, vectors (p, q, c)."""
    b, c, h, w = imgs.shape
    if h % patch or w % patch:
        raise ValueError(f"image {h}x{w} is not a multiple of the patch size {patch}")
    x = imgs.reshape(b, c, h // patch, patch, w // patch, patch)
    x = x.permute(0, 2, 4, 3, 5, 1)  # (B, rows, cols, p, q, C)
    return x.reshape(b, (h // patch) * (w // patch), patch * patch * c)


def unpatchify(patches: torch.Tensor, grid: tuple[int, int], patch: int) -> torch.Tensor:
    """(B, L, p*p*C) -> (B, C, rows*p, cols*p); the inverse of `patchify`."""
    b, n, d = patches.shape
    rows, cols = grid
    c = d // (patch * patch)
    if n != rows * cols or c * patch * patch != d:
        raise ValueError(f"{n} patches of size {d} do not fit a {rows}x{cols} grid of {patch}px patches")
    x = patches.reshape(b, rows, cols, patch, patch, c).permute(0, 5, 1, 3, 2, 4)  # (B, C, rows, p, cols, q)
    return x.reshape(b, c, rows * patch, cols * patch)


def patch_mask_to_pixels(mask: np.ndarray, grid: tuple[int, int], patch: int) -> np.ndarray:
    """(L,) 0/1 per patch -> (rows*p, cols*p) bool, True where hidden."""
    m = np.asarray(mask, dtype=bool).reshape(grid)
    return np.kron(m, np.ones((patch, patch), dtype=bool)).astype(bool)


# ---------------------------------------------------------------- nested masks
def check_ratio(ratio: Any) -> float:
    """A masking ratio as a float in [0, 0.95], or UserInputError."""
    try:
        value = float(ratio)
    except (TypeError, ValueError):
        raise UserInputError(f"mask_ratio must be a number between 0 and {MAX_RATIO}, not {ratio!r}") from None
    if not math.isfinite(value) or value < 0 or value > MAX_RATIO + 1e-9:
        raise UserInputError(f"mask_ratio must be between 0 and {MAX_RATIO} (e.g. 0.75), not {ratio!r}")
    return min(value, MAX_RATIO)


def check_seed(seed: Any) -> int:
    """A seed as a non-negative int below 2**32 (7.0 is fine, 7.5 and "abc" are not)."""
    if isinstance(seed, bool):
        raise UserInputError("seed must be a whole number such as 0 or 42")
    if isinstance(seed, str):
        try:
            seed = float(seed.strip())
        except ValueError:
            raise UserInputError(f"seed must be a whole number such as 0 or 42, not {seed!r}") from None
    try:
        value = float(seed)
    except (TypeError, ValueError):
        raise UserInputError(f"seed must be a whole number such as 0 or 42, not {seed!r}") from None
    if not math.isfinite(value) or value != int(value):
        raise UserInputError(f"seed must be a whole number such as 0 or 42, not {seed!r}")
    if not 0 <= value < 2**32:
        raise UserInputError(f"seed must be between 0 and {2**32 - 1}, not {int(value)}")
    return int(value)


def check_kind(kind: str) -> str:
    kind = (kind or "random").strip().lower()
    if kind not in MASK_KINDS:
        raise UserInputError(f"mask kind must be one of {', '.join(MASK_KINDS)}, not {kind!r}")
    return kind


def _block_order(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """BEiT-style block-wise order: random rectangles (area ~1/32..1/6 of the grid, aspect
    0.3..3.3) are dropped one after another; a patch's place is when a block first covers it."""
    n = rows * cols
    seen = np.zeros((rows, cols), dtype=bool)
    order: list[int] = []
    lo, hi = max(2.0, n / 32), max(4.0, n / 6)
    for _ in range(50 * n):
        if len(order) == n:
            break
        area = rng.uniform(lo, hi)
        aspect = math.exp(rng.uniform(math.log(0.3), math.log(1 / 0.3)))
        h = int(round(math.sqrt(area * aspect)))
        w = int(round(math.sqrt(area / aspect)))
        if not (1 <= h <= rows and 1 <= w <= cols):
            continue
        top, left = rng.integers(0, rows - h + 1), rng.integers(0, cols - w + 1)
        for i in range(top, top + h):
            for j in range(left, left + w):
                if not seen[i, j]:
                    seen[i, j] = True
                    order.append(i * cols + j)
    rest = np.flatnonzero(~seen.ravel())
    order.extend(rng.permutation(rest).tolist())
    return np.asarray(order, dtype=np.int64)


def _grid_order(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """Regular order: patches off the 2x2 lattice go first (hide 50%: every other row; 75%:
    one patch of each 2x2 square stays, as in the MAE paper's grid masking), then the 2x2
    lattice off the 4x4 lattice (94%: one of each 4x4 stays). Offsets come from the seed."""
    oi, oj = rng.integers(0, 2, size=2)
    qi, qj = oi + 2 * rng.integers(0, 2), oj + 2 * rng.integers(0, 2)
    level = np.zeros((rows, cols), dtype=np.int64)  # 0 = hidden first
    ii, jj = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    level[(ii % 2) == oi] = 1
    level[((ii % 2) == oi) & ((jj % 2) == oj)] = 2
    level[((ii % 4) == qi) & ((jj % 4) == qj)] = 3
    tie = rng.permutation(rows * cols)
    return np.lexsort((tie, level.ravel())).astype(np.int64)


def mask_order(grid: tuple[int, int], seed: int, kind: str = "random") -> np.ndarray:
    """(L,) int64 permutation of patch indices, hidden first; fixed for (grid, seed, kind)."""
    rows, cols = grid
    kind = check_kind(kind)
    rng = np.random.default_rng([check_seed(seed), MASK_KINDS.index(kind), rows, cols])
    if kind == "random":
        return rng.permutation(rows * cols).astype(np.int64)
    if kind == "block":
        return _block_order(rows, cols, rng)
    return _grid_order(rows, cols, rng)


def n_hidden(n_patches: int, ratio: float) -> int:
    """How many patches a ratio hides: round(ratio * L), at least one visible."""
    return min(n_patches - 1, int(round(ratio * n_patches)))


def mask_from_order(order: np.ndarray, ratio: float) -> np.ndarray:
    """(L,) uint8, 1 = hidden: the first round(ratio * L) patches of the order."""
    mask = np.zeros(len(order), dtype=np.uint8)
    mask[order[: n_hidden(len(order), ratio)]] = 1
    return mask


# ---------------------------------------------------------------- the model's stages
def masked_forward(model: Any, pixel_values: torch.Tensor, ids_shuffle: torch.Tensor, n_keep: int) -> torch.Tensor:
    """Run a transformers ViTMAEForPreTraining with a mask we choose (thread-safe: it never
    touches `config.mask_ratio`).

    pixel_values: (B, C, H, W) normalised as the model expects.
    ids_shuffle: (B, L) long, visible patches first (the first n_keep are encoded).
    Returns logits (B, L, p*p*C) for every patch, in the model's target space.
    """
    emb = model.vit.embeddings
    x = emb.patch_embeddings(pixel_values) + emb.position_embeddings[:, 1:, :]  # (B, L, D)
    ids_keep = ids_shuffle[:, :n_keep]
    x = torch.gather(x, 1, ids_keep.unsqueeze(-1).expand(-1, -1, x.shape[-1]))  # (B, n_keep, D)
    cls = (emb.cls_token + emb.position_embeddings[:, :1, :]).expand(x.shape[0], -1, -1)
    h = torch.cat([cls, x], dim=1)  # (B, 1 + n_keep, D)
    for layer in model.vit.layers:
        h = layer(h)
    latent = model.vit.layernorm(h)
    ids_restore = torch.argsort(ids_shuffle, dim=1)
    return model.decoder(latent, ids_restore).logits  # (B, L, p*p*C)


def visible_mean(pixel_values: torch.Tensor, ids_shuffle: torch.Tensor, n_keep: int, patch: int) -> torch.Tensor:
    """Per image and channel, the mean over the visible patches' pixels: (B, C, 1, 1).

    pixel_values: (B, C, H, W); ids_shuffle: (B, L) visible first (as `masked_forward`).
    Models trained with `centre_visible` see the image minus this mean and predict the
    rest relative to it, so "no idea" means the visible colour (never a hidden pixel)."""
    b, c, h, w = pixel_values.shape
    rows, cols = h // patch, w // patch
    seen = torch.zeros(b, rows * cols, device=pixel_values.device)
    seen.scatter_(1, ids_shuffle[:, :n_keep], 1.0)
    seen = seen.view(b, 1, rows, cols).repeat_interleave(patch, 2).repeat_interleave(patch, 3)  # (B, 1, H, W)
    return (pixel_values * seen).sum((2, 3), keepdim=True) / seen.sum((2, 3), keepdim=True).clamp_min(1.0)


def shuffle_from_order(order: np.ndarray) -> np.ndarray:
    """Hidden-first order -> visible-first shuffle (what `masked_forward` takes)."""
    return np.ascontiguousarray(order[::-1])


# ---------------------------------------------------------------- PSNR and baselines
def psnr(a: np.ndarray, b: np.ndarray, where: np.ndarray | None = None) -> float | None:
    """PSNR in dB between two images in [0, 1] (H, W[, C]), over pixels where `where`
    (H, W) is True; None when there are no such pixels; capped at PSNR_CAP_DB."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if where is not None:
        if not where.any():
            return None
        a, b = a[where], b[where]
    mse = float(np.mean((a - b) ** 2))
    if mse <= 10 ** (-PSNR_CAP_DB / 10):
        return PSNR_CAP_DB
    return 10.0 * math.log10(1.0 / mse)


def mean_fill(img: np.ndarray, hidden: np.ndarray) -> np.ndarray:
    """Hidden pixels (H, W) bool get the mean colour of the visible ones (grey if none)."""
    out = np.array(img, dtype=np.float64, copy=True)
    fill = out[~hidden].mean(axis=0) if (~hidden).any() else 0.5
    out[hidden] = fill
    return out


def biharmonic_fill(img: np.ndarray, hidden: np.ndarray) -> np.ndarray:
    """Smooth inpainting (scikit-image's biharmonic equation) of the hidden pixels."""
    from skimage.restoration import inpaint_biharmonic

    if not hidden.any():
        return np.asarray(img, dtype=np.float64)
    if hidden.all():
        return mean_fill(img, hidden)
    channel_axis = -1 if np.ndim(img) == 3 else None
    return np.clip(inpaint_biharmonic(np.asarray(img, dtype=np.float64), hidden, channel_axis=channel_axis), 0, 1)


# ---------------------------------------------------------------- one reconstruction
@dataclass
class Reconstruction:
    """One image through an MAE at one mask.

    original, masked, reconstruction, composite, mean_fill: (H, W, 3) float64 in [0, 1]
    at the model's input size; mask: (L,) uint8, 1 = hidden; grid: (rows, cols).
    """

    original: np.ndarray
    masked: np.ndarray
    reconstruction: np.ndarray
    composite: np.ndarray
    mean_fill: np.ndarray
    mask: np.ndarray
    grid: tuple[int, int]
    patch: int
    ratio: float
    psnr_masked: float | None
    psnr_mean_fill: float | None
    extra: dict[str, Any] = field(default_factory=dict)


class MAERunner:
    """What an MAE loader returns: the transformers model and how to feed and read it.

    model: ViTMAEForPreTraining (eval). image_size, patch: ints. mean, std: per-channel
    normalisation of [0, 1] pixels. grayscale: feed luminance to all channels (the faces
    model saw only grey faces). norm_pix_loss: the decoder predicts each patch normalised by
    its own mean and variance (then showing pixels needs those statistics; see `predict`).
    centre_visible: the model was trained on images minus their visible patches' mean
    colour (`visible_mean`); `predict` does the same and adds it back.
    """

    def __init__(self, model: Any, *, image_size: int, patch: int, mean=(0.5, 0.5, 0.5),
                 std=(0.5, 0.5, 0.5), grayscale: bool = False, centre_visible: bool = False,
                 info: dict | None = None) -> None:
        self.centre_visible = bool(centre_visible)
        self.model = model
        self.image_size = int(image_size)
        self.patch = int(patch)
        self.mean = torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1)
        self.std = torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1)
        self.grayscale = grayscale
        self.norm_pix_loss = bool(getattr(model.config, "norm_pix_loss", False))
        self.info = info or {}
        self._cache: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def grid(self) -> tuple[int, int]:
        n = self.image_size // self.patch
        return (n, n)

    # -- input
    def prepare(self, image: Any) -> np.ndarray:
        """Any image (path, PIL, array) -> (S, S, 3) float64 in [0, 1]: centre-cropped to a
        square and resized to the model's size (grey if the model is a grey one)."""
        from PIL import Image

        from engine.images import load_image

        img = load_image(image)
        w, h = img.size
        side = min(w, h)
        img = img.crop(((w - side) // 2, (h - side) // 2, (w - side) // 2 + side, (h - side) // 2 + side))
        img = img.resize((self.image_size, self.image_size), Image.BICUBIC, reducing_gap=3.0)
        if self.grayscale:
            img = img.convert("L").convert("RGB")
        return np.asarray(img, dtype=np.float64) / 255.0

    # -- model
    @torch.inference_mode()
    def predict(self, img: np.ndarray, orders: list[np.ndarray], n_hidden_list: list[int]) -> list[np.ndarray]:
        """Reconstructions (H, W, 3) in [0, 1] for one image under several masks.

        norm_pix_loss models predict each patch's normalised pixels; we denormalise with the
        original patch's own mean and std, as the MAE authors' visualisation does; that
        borrows two numbers per hidden patch from the true image (said in the UI)."""
        dev = next(self.model.parameters()).device
        x = torch.from_numpy(img).permute(2, 0, 1).unsqueeze(0).float()  # (1, 3, S, S)
        px = ((x - self.mean) / self.std).to(dev)
        outs = []
        for order, nh in zip(orders, n_hidden_list, strict=True):
            shuffle = torch.from_numpy(shuffle_from_order(order)).unsqueeze(0).to(dev)
            centre = (visible_mean(px, shuffle, len(order) - nh, self.patch) if self.centre_visible
                      else torch.zeros((), device=dev))  # (1, 3, 1, 1) or 0
            logits = masked_forward(self.model, px - centre, shuffle, len(order) - nh).float().cpu()  # (1, L, p*p*3)
            if self.norm_pix_loss:
                target = patchify(px.cpu(), self.patch)
                mu, var = target.mean(-1, keepdim=True), target.var(-1, keepdim=True)
                logits = logits * (var + 1e-6) ** 0.5 + mu
            rec = (unpatchify(logits, self.grid, self.patch) + centre.cpu()) * self.std + self.mean  # (1, 3, S, S)
            if self.grayscale:  # a grey model's three outputs are one luminance; unused ones drift
                rec = rec.mean(dim=1, keepdim=True).expand(-1, 3, -1, -1)
            outs.append(rec[0].permute(1, 2, 0).clamp(0, 1).double().numpy())
        return outs

    def reconstruct(self, image: Any, ratio: float, seed: int, kind: str = "random") -> Reconstruction:
        """One image, one mask: the four panels, the mask and PSNR over hidden patches."""
        ratio, seed, kind = check_ratio(ratio), check_seed(seed), check_kind(kind)
        img = self.prepare(image)
        return self.reconstruct_array(img, ratio, seed, kind)

    def reconstruct_array(self, img: np.ndarray, ratio: float, seed: int, kind: str = "random") -> Reconstruction:
        order = mask_order(self.grid, seed, kind)
        nh = n_hidden(len(order), ratio)
        mask = mask_from_order(order, ratio)
        hidden = patch_mask_to_pixels(mask, self.grid, self.patch)
        rec = self.predict(img, [order], [nh])[0]
        composite = np.where(hidden[..., None], rec, img)
        masked = np.where(hidden[..., None], 0.5 + 0.0 * img, img)
        fill = mean_fill(img, hidden)
        return Reconstruction(
            original=img, masked=masked, reconstruction=rec, composite=composite, mean_fill=fill,
            mask=mask, grid=self.grid, patch=self.patch, ratio=ratio,
            psnr_masked=psnr(rec, img, hidden), psnr_mean_fill=psnr(fill, img, hidden),
        )

    def curve(self, image: Any, seed: int, kind: str = "random",
              ratios: tuple[float, ...] = CURVE_RATIOS) -> dict[str, Any]:
        """PSNR over hidden patches against the ratio for the MAE, mean fill and biharmonic
        inpainting; cached per (image pixels, seed, kind) since biharmonic takes a while."""
        seed, kind = check_seed(seed), check_kind(kind)
        img = self.prepare(image)
        key = (hashlib.sha1(img.tobytes()).hexdigest(), seed, kind, tuple(ratios))
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        order = mask_order(self.grid, seed, kind)
        nhs = [n_hidden(len(order), r) for r in ratios]
        recs = self.predict(img, [order] * len(ratios), nhs)
        out: dict[str, Any] = {"ratios": list(ratios), "mae": [], "mean_fill": [], "biharmonic": []}
        for r, rec in zip(ratios, recs, strict=True):
            hidden = patch_mask_to_pixels(mask_from_order(order, r), self.grid, self.patch)
            out["mae"].append(psnr(rec, img, hidden))
            out["mean_fill"].append(psnr(mean_fill(img, hidden), img, hidden))
            out["biharmonic"].append(psnr(biharmonic_fill(img, hidden), img, hidden))
        with self._lock:
            self._cache[key] = out
            while len(self._cache) > 32:
                self._cache.popitem(last=False)
        return out


def to_uint8(img: np.ndarray, scale: int = 1) -> np.ndarray:
    """(H, W, 3) float in [0, 1] -> uint8, optionally enlarged by pixel repetition."""
    out = (np.clip(img, 0, 1) * 255).round().astype(np.uint8)
    if scale > 1:
        out = out.repeat(scale, axis=0).repeat(scale, axis=1)
    return out


# ---------------------------------------------------------------- the station's entry points
def display_scale(size: int, target: int = 224) -> int:
    """Integer enlargement that shows a small model input at about `target` pixels."""
    return max(1, math.ceil(target / size))


def save_png(img: np.ndarray, prefix: str) -> str:
    """Save a uint8 (H, W, 3) image under outputs_dir()/mae/ (named by content) and return the path."""
    from PIL import Image

    from engine import paths

    folder = paths.outputs_dir() / "mae"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{prefix}-{hashlib.sha1(img.tobytes() + str(img.shape).encode()).hexdigest()[:20]}.png"
    if not path.exists():
        save_png_whole(Image.fromarray(img), path, optimize=False, compress_level=1)
    return str(path)


def reconstruct(image: Any, mask_ratio: Any, seed: Any, model: str = "", kind: str = "random"):
    """Validate, load the MAE (registry cache), reconstruct. Returns (LoadedModel, Reconstruction)."""
    from engine.images import load_image
    from engine.registry import REGISTRY

    ratio, seed_i, kind = check_ratio(mask_ratio), check_seed(seed), check_kind(kind)
    image = load_image(image)  # a bad upload is reported before any model loads
    loaded = REGISTRY.get("mae", (model or "").strip())
    runner: MAERunner = loaded.obj
    img = runner.prepare(image)
    return loaded, runner.reconstruct_array(img, ratio, seed_i, kind)


def panels(rec: Reconstruction) -> dict[str, np.ndarray]:
    """The four panels as enlarged uint8 images (nearest neighbour: patches stay square)."""
    s = display_scale(rec.original.shape[0])
    return {k: to_uint8(getattr(rec, k), s) for k in ("original", "masked", "reconstruction", "composite")}


def result(loaded: Any, rec: Reconstruction, seed: int, kind: str, files: bool = True) -> dict[str, Any]:
    """The /mae result (API.md keys plus extras); images saved as PNG paths when `files`."""
    runner: MAERunner = loaded.obj
    out: dict[str, Any] = {
        "model": loaded.label(), "model_id": loaded.spec.id, "source": loaded.source_kind,
        "patch_size": rec.patch, "grid": list(rec.grid), "image_size": runner.image_size,
        "mask": rec.mask.astype(int).tolist(), "mask_ratio": rec.ratio, "seed": seed, "kind": kind,
        "hidden": int(rec.mask.sum()), "psnr_masked": rec.psnr_masked, "psnr_mean_fill": rec.psnr_mean_fill,
        "norm_pix_loss": runner.norm_pix_loss, "note": loaded.spec.note,
    }
    if files:
        out["images"] = {k: save_png(v, k) for k, v in panels(rec).items()}
    return out


def mae_endpoint(image: Any, mask_ratio: Any, seed: Any, model: str = "", kind: str = "random") -> dict[str, Any]:
    """What `/mae` returns for one image (see API.md)."""
    loaded, rec = reconstruct(image, mask_ratio, seed, model, kind)
    return result(loaded, rec, check_seed(seed), check_kind(kind))


def face_example_paths(n: int = 4) -> list[str]:
    """A few held-out lfw_subset faces (never used to train mae-faces), saved once as PNG
    under the cache, for the examples: 25 x 25 grey, as scikit-image ships them."""
    from PIL import Image

    from engine import paths
    from engine.train.mae import FACES_HELD_OUT, _faces

    faces = None
    out = []
    for i in FACES_HELD_OUT[:n]:
        path = paths.cache_dir("examples") / f"lfw_face_{i}.png"
        if not path.exists():
            faces = _faces() if faces is None else faces
            save_png_whole(Image.fromarray((faces[i, 0].numpy() * 255).round().astype(np.uint8)), path)
        out.append(str(path))
    return out
