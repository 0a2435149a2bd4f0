"""Feature visualisation: paint the image a channel likes most (activation maximisation).

The method of Lucid/Lucent (Olah, Mordvintsev & Schubert, "Feature Visualization",
Distill 2017), written here on plain torch:
- the image is not optimised as raw pixels but as a Fourier spectrum, scaled by 1/f so
  that low frequencies move first (raw pixels drift into high-frequency noise that
  excites a channel without meaning anything to a person);
- its colours live in a decorrelated space (the square root of ImageNet's colour
  correlation), mapped to RGB and squashed into [0, 1] with a sigmoid;
- each step looks at a randomly padded, jittered, scaled and rotated copy, so the
  picture must work everywhere, not just at one pixel alignment;
- Adam climbs the mean activation of the chosen channel (or the logit of a class).

Deterministic for a given seed (on one device and thread count).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from engine import cnn, paths
from engine.errors import UserInputError

# Square root of ImageNet's colour correlation (from Lucid), columns scaled to unit max norm.
_COLOR_SQRT = torch.tensor([[0.26, 0.09, 0.02], [0.27, 0.00, -0.05], [0.27, -0.09, 0.03]])
COLOR_SQRT = _COLOR_SQRT / _COLOR_SQRT.norm(dim=0).max()

MIN_SIZE, MAX_SIZE = 64, 320
MAX_STEPS = 1024
Progress = Callable[[float, str], None] | None


@dataclass
class FourierImage:
    """An image parametrised as a 1/f-scaled spectrum in a decorrelated colour space.

    spectrum: float32 (1, 3, H, W//2 + 1, 2) trainable (real, imaginary);
    scale: (H, W//2 + 1) per-frequency factor 1 / max(f, 1/max(H, W)).
    """

    spectrum: torch.Tensor
    scale: torch.Tensor
    size: int

    @classmethod
    def random(cls, size: int, generator: torch.Generator, sd: float = 0.01) -> FourierImage:
        fy = torch.fft.fftfreq(size)[:, None]  # (H, 1) cycles per pixel
        fx = torch.fft.rfftfreq(size)[None, :]  # (1, W//2 + 1)
        freqs = torch.sqrt(fx * fx + fy * fy)
        scale = 1.0 / torch.clamp(freqs, min=1.0 / size)
        spectrum = torch.randn(1, 3, size, size // 2 + 1, 2, generator=generator) * sd
        return cls(spectrum.requires_grad_(True), scale, size)

    def rgb(self) -> torch.Tensor:
        """The current picture: float32 (1, 3, H, W) in [0, 1]."""
        complex_spec = torch.view_as_complex(self.spectrum) * self.scale  # (1, 3, H, W//2+1)
        img = torch.fft.irfftn(complex_spec, s=(self.size, self.size), norm="ortho") / 4.0  # (1, 3, H, W)
        img = torch.einsum("bchw,dc->bdhw", img, COLOR_SQRT.to(img.device))  # decorrelated -> RGB
        return torch.sigmoid(img)


def _transform(img: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
    """Lucent's standard robustness transforms: pad 12, jitter 8, scale 0.9..1.1,
    rotate -10..10 degrees, jitter 4. (1, 3, H, W) -> (1, 3, H', W')."""
    img = F.pad(img, (12, 12, 12, 12), mode="constant", value=0.5)

    def jitter(t: torch.Tensor, d: int) -> torch.Tensor:
        dx, dy = rng.integers(0, d), rng.integers(0, d)
        return t[..., dy: t.shape[-2] - d + dy, dx: t.shape[-1] - d + dx]

    img = jitter(img, 8)
    factor = float(rng.choice([1 + (i - 5) / 50 for i in range(11)]))
    img = F.interpolate(img, scale_factor=factor, mode="bilinear", align_corners=False)
    angle = math.radians(float(rng.choice(list(range(-10, 11)) + 5 * [0])))
    rot = torch.tensor([[math.cos(angle), -math.sin(angle), 0.0], [math.sin(angle), math.cos(angle), 0.0]],
                       dtype=img.dtype, device=img.device)[None]
    grid = F.affine_grid(rot, list(img.shape), align_corners=False)
    img = F.grid_sample(img, grid, mode="bilinear", padding_mode="border", align_corners=False)
    return jitter(img, 4)


def layers(model_id: str = "") -> list[str]:
    """Names a visualisation can target: every stage, "head" (when there is one) and "logits"."""
    model = cnn.get_model(model_id).obj
    names = cnn.stage_names(model)
    return names + (["head"] if hasattr(model, "conv_head") else []) + ["logits"]


def _objective(model: torch.nn.Module, layer: str, channel: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """x (1, 3, H, W) normalised -> the scalar to climb: a channel's mean activation at
    `layer`, or a class logit at "logits". Uses forward_intermediates, stopping early."""
    names = cnn.stage_names(model)
    if layer in names:
        index = names.index(layer)
        extra = {"extra_blocks": True} if hasattr(model, "conv_stem") else {}

        def at_stage(x: torch.Tensor) -> torch.Tensor:
            acts = model.forward_intermediates(x, indices=[index], stop_early=True, intermediates_only=True, **extra)
            return acts[0][0, channel].mean()

        return at_stage
    if layer == "head":
        return lambda x: model.forward_features(x)[0, channel].mean()
    if layer == "logits":
        return lambda x: model(x)[0, channel]
    raise UserInputError(f"unknown layer {layer!r}; choose one of {', '.join(names + ['head', 'logits'])}")


def channels_at(layer: str, model_id: str = "") -> int:
    """How many channels (or classes, for "logits") a layer has."""
    loaded = cnn.get_model(model_id)
    model = loaded.obj
    if layer == "logits":
        return 1000
    if layer == "head":
        return int(model.num_features)
    names = cnn.stage_names(model)
    if layer not in names:
        raise UserInputError(f"unknown layer {layer!r}; choose one of {', '.join(layers(model_id))}")
    index = names.index(layer)
    extra = {"extra_blocks": True} if hasattr(model, "conv_stem") else {}
    with torch.inference_mode():
        x = torch.zeros(1, 3, 64, 64, device=loaded.device)
        acts = model.forward_intermediates(x, indices=[index], stop_early=True, intermediates_only=True, **extra)
    return int(acts[0].shape[1])


def visualise_steps(layer: str, channel: int, model_id: str = "", steps: int = 128, size: int = 128,
                    seed: int = 0, lr: float = 0.05, every: int = 16) -> Iterator[dict]:
    """Optimise an image to excite one channel of `layer` (or one class at "logits"),
    yielding the picture so far every `every` steps and once at the end.

    Each yield: {model, model_id, layer, channel, label (class name at "logits", else ""),
    image: (size, size, 3) uint8, step, steps, done (bool), objective: list of
    (step, value) every 8 steps, size, seed, seconds}.
    """
    loaded = cnn.get_model(model_id)
    model = loaded.obj
    n_channels = channels_at(layer, loaded.spec.id)
    try:
        channel, steps, size, seed = int(channel), int(steps), int(size), int(seed)
    except (TypeError, ValueError):
        raise UserInputError("channel, steps, size and seed must be whole numbers") from None
    if not 0 <= channel < n_channels:
        raise UserInputError(f"{layer} has channels 0..{n_channels - 1}; got {channel}")
    if not 1 <= steps <= MAX_STEPS:
        raise UserInputError(f"steps must be between 1 and {MAX_STEPS}; got {steps}")
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise UserInputError(f"size must be between {MIN_SIZE} and {MAX_SIZE} pixels; got {size}")
    objective = _objective(model, layer, channel)
    generator = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    param = FourierImage.random(size, generator)
    param = FourierImage(param.spectrum.detach().to(loaded.device).requires_grad_(True),
                         param.scale.to(loaded.device), size)
    optimiser = torch.optim.Adam([param.spectrum], lr=lr)
    history: list[tuple[int, float]] = []
    base = {"model": loaded.label(), "model_id": loaded.spec.id, "layer": layer, "channel": channel,
            "label": cnn.imagenet_label(channel) if layer == "logits" else "", "steps": steps, "size": size,
            "seed": seed}
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        with torch.enable_grad():
            optimiser.zero_grad(set_to_none=True)
            x = cnn.normalise_pixels(_transform(param.rgb(), rng), loaded.spec.preprocess)
            value = objective(x)
            # Only the spectrum gets a gradient: the shared model's weights get no .grad and never change.
            (grad,) = torch.autograd.grad(-value, param.spectrum)
            param.spectrum.grad = grad
            optimiser.step()
        if step % 8 == 0 or step == steps:
            history.append((step, float(value.detach())))
        if step % every == 0 or step == steps:
            with torch.no_grad():
                image = (param.rgb()[0].permute(1, 2, 0).cpu().numpy() * 255).round().astype(np.uint8)
            yield {**base, "image": image, "step": step, "done": step == steps, "objective": list(history),
                   "seconds": time.perf_counter() - t0}


def visualise(layer: str, channel: int, model_id: str = "", steps: int = 128, size: int = 128, seed: int = 0,
              lr: float = 0.05, progress: Progress = None) -> dict:
    """`visualise_steps` run to the end; `progress(fraction, text)` after every 16 steps.
    Returns the last yield (done=True)."""
    result: dict = {}
    for result in visualise_steps(layer, channel, model_id, steps, size, seed, lr):
        if progress is not None:
            progress(result["step"] / result["steps"], f"step {result['step']}/{result['steps']}")
    return result


def enlarge(image: np.ndarray, side: int = 256) -> np.ndarray:
    """(h, w, 3) uint8 -> (side, side, 3) uint8, bicubic, for showing a small painting big."""
    from PIL import Image

    return np.asarray(Image.fromarray(image).resize((side, side), Image.BICUBIC))


# ------------------------------------------------------------------ the precomputed gallery
def gallery_dir(model_id: str) -> Path:
    """Where the precomputed pictures for a model live: assets/feature_vis/<model id>/."""
    return paths.ASSETS / "feature_vis" / model_id


def gallery(model_id: str = "") -> dict:
    """The precomputed gallery (engine/train/feature_gallery.py) for a model, read from its
    manifest without loading the model. Returns {model_id, command, steps, size, seed,
    items: [{path, layer, channel, label, caption}]} with items in stage order; items is
    empty when nothing was precomputed for this model."""
    from engine.registry import REGISTRY

    model_id = REGISTRY.spec(cnn.ROLE, model_id).id if model_id else REGISTRY.specs(cnn.ROLE)[0].id
    manifest = gallery_dir(model_id) / "manifest.json"
    if not manifest.is_file():
        return {"model_id": model_id, "items": []}
    data = json.loads(manifest.read_text())
    items = []
    for item in data.get("images", []):
        path = gallery_dir(model_id) / item["file"]
        if path.is_file():
            short = item["label"].split(",")[0]
            caption = short if item["layer"] == "logits" else f"{item['layer']} · {item['channel']}"
            items.append({**item, "path": str(path), "caption": caption})
    return {**{k: v for k, v in data.items() if k != "images"}, "model_id": model_id, "items": items}
