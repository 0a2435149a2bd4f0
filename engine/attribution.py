"""Which pixels made the CNN say what it said: captum's Grad-CAM, Integrated Gradients, Occlusion.

Each method returns the same shape of result: a heat map in [0, 1] over the image the
model saw (after resize and centre crop), an overlay picture, the class it explains and
how long it took. Only evidence *for* the class is drawn (negative attributions are
clipped to 0), and the result says so.

Why the first Grad-CAM in a process was slow (2.5 s against ~40 ms warm), measured here:
importing `captum.attr` costs 0.6-1.3 s on this shared CPU (it pulls in huggingface_hub's
agent detection and sympy for its LLM attribution module), and the first backward pass
through each convolution shape costs another 0.1-0.2 s (oneDNN builds its kernels once);
on a cold process the model load came on top. `warm()` pays all of it once, in the
background, right after the model is first used.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from engine import cnn
from engine.errors import UserInputError
from engine.registry import LoadedModel

METHODS = ("gradcam", "integrated_gradients", "occlusion")
MAX_IG_STEPS = 256
Progress = Callable[[float, str], None] | None


def _target(logits: torch.Tensor, target: Any) -> int:
    """The class to explain: the top prediction when target is None/""/-1, else an index or name."""
    if target is None or str(target).strip() in ("", "-1"):
        return int(logits.argmax())
    return cnn.class_index(target)


def _counting_forward(model: torch.nn.Module, total: int, progress: Progress, what: str):
    """The model's forward, reporting progress (images done / `total` expected) after each batch."""
    done = [0]

    def forward(x: torch.Tensor) -> torch.Tensor:
        out = model(x)
        done[0] += x.shape[0]
        if progress is not None:
            progress(min(1.0, done[0] / max(1, total)), what)
        return out

    return forward


def _positive_map(attr: torch.Tensor, quantile: float = 0.99) -> np.ndarray:
    """(1, C, H, W) or (1, 1, h, w) attributions -> (H, W) positive evidence in [0, 1].

    Channels are summed, negatives clipped, and the top 1% clipped so one hot pixel
    does not wash out the rest.
    """
    a = attr.detach().float().cpu()[0].sum(0).clamp(min=0).numpy()  # (H, W)
    top = float(np.quantile(a, quantile)) if a.size > 100 else float(a.max())
    if top <= 0:
        return np.zeros_like(a, dtype=np.float32)
    return np.clip(a / top, 0, 1).astype(np.float32)


def _result(method: str, loaded: LoadedModel, prep: cnn.Prepared, logits: torch.Tensor, target: int,
            heat: np.ndarray, seconds: float, **extra: Any) -> dict:
    probs = logits.float().softmax(-1)
    return {
        "model": loaded.label(), "model_id": loaded.spec.id, "method": method,
        "target": {"label": cnn.imagenet_label(target), "index": target, "score": float(probs[target])},
        "heat": heat, "overlay": cnn.overlay(prep.shown, heat), "seconds": seconds,
        "note": "positive evidence only (negative attributions are clipped to 0)", **extra,
    }


def _logits(loaded: LoadedModel, prep: cnn.Prepared) -> torch.Tensor:
    with torch.inference_mode():
        return loaded.obj(prep.x)[0].float().cpu()  # (1000,)


def gradcam_layers(loaded: LoadedModel) -> dict[str, str]:
    """Stage name -> module name usable by Grad-CAM, lowest first, the head last."""
    model = loaded.obj
    out = dict(zip(cnn.stage_names(model), cnn.stage_modules(model), strict=True))
    if hasattr(model, "conv_head"):
        out["head"] = "bn2"  # conv_head -> bn2 (with its activation): the last 7x7 map
    return out


def gradcam(image: Any, target: Any = None, stage: str = "", model_id: str = "") -> dict:
    """Grad-CAM (captum LayerGradCam): weight a stage's feature maps by the mean gradient
    of the class score and keep the positive part.

    stage: a name from `gradcam_layers` ("" = the last one: coarse, 7 x 7, most semantic).
    Returns {model, method, target: {label, index, score}, heat: (h, w) float32 in [0, 1]
    at the stage's resolution, overlay: (H, W, 3) uint8, stage, grid: [h, w], seconds}.
    """
    from captum.attr import LayerGradCam

    loaded = cnn.get_model(model_id)
    prep = cnn.prepare(image, loaded)
    layers = gradcam_layers(loaded)
    stage = stage or list(layers)[-1]
    if stage not in layers:
        raise UserInputError(f"no stage {stage!r} in {loaded.spec.title}; choose one of {', '.join(layers)}")
    logits = _logits(loaded, prep)
    t = _target(logits, target)
    model = loaded.obj
    t0 = time.perf_counter()
    with torch.enable_grad():
        x = prep.x.clone().requires_grad_(True)
        attr = LayerGradCam(model, model.get_submodule(layers[stage])).attribute(x, target=t, relu_attributions=True)
    seconds = time.perf_counter() - t0
    heat = _positive_map(attr, quantile=1.0)  # (h, w)
    return _result("gradcam", loaded, prep, logits, t, heat, seconds, stage=stage, grid=list(heat.shape))


def integrated_gradients(image: Any, target: Any = None, steps: int = 32, model_id: str = "",
                         progress: Progress = None) -> dict:
    """Integrated Gradients (captum): average the gradient along a straight path from a
    black image to this one, times the pixel difference; `steps` points on the path
    (Gauss-Legendre), evaluated 8 at a time, with `progress(fraction, text)` after each batch.

    Returns the common result plus steps and delta (completeness error: sum of
    attributions minus (score(image) - score(black)), in logits; small is good).
    """
    from captum.attr import IntegratedGradients

    try:
        steps = int(steps)
    except (TypeError, ValueError):
        raise UserInputError(f"steps must be a whole number, not {steps!r}") from None
    if not 4 <= steps <= MAX_IG_STEPS:
        raise UserInputError(f"steps must be between 4 and {MAX_IG_STEPS}; got {steps}")
    loaded = cnn.get_model(model_id)
    prep = cnn.prepare(image, loaded)
    logits = _logits(loaded, prep)
    t = _target(logits, target)
    batch = 8
    forward = _counting_forward(loaded.obj, steps + 2, progress, f"Integrated Gradients, {steps} steps")
    black = cnn.normalise_pixels(torch.zeros_like(prep.x), loaded.spec.preprocess)
    t0 = time.perf_counter()
    with torch.enable_grad():
        attr, delta = IntegratedGradients(forward).attribute(
            prep.x, baselines=black, target=t, n_steps=steps, internal_batch_size=batch,
            return_convergence_delta=True)
    seconds = time.perf_counter() - t0
    return _result("integrated_gradients", loaded, prep, logits, t, _positive_map(attr), seconds,
                   steps=steps, delta=float(delta.abs().sum()))


def occlusion(image: Any, target: Any = None, window: int = 48, stride: int = 24, model_id: str = "",
              progress: Progress = None) -> dict:
    """Occlusion (captum): slide a grey window over the image and record how much the class
    score drops each time; a big drop means that region mattered.

    window, stride: in pixels of the model's input (window 16..112, stride 8..window).
    Returns the common result plus window, stride and windows (how many were tried).
    """
    from captum.attr import Occlusion

    window, stride = int(window), int(stride)
    if not 16 <= window <= 112 or not 8 <= stride <= window:
        raise UserInputError("occlusion window must be 16..112 pixels and the stride 8..window")
    loaded = cnn.get_model(model_id)
    prep = cnn.prepare(image, loaded)
    logits = _logits(loaded, prep)
    t = _target(logits, target)
    size = prep.x.shape[-1]
    windows = ((size - window) // stride + 1) ** 2
    per_eval = 16
    forward = _counting_forward(loaded.obj, windows + 1, progress, f"Occlusion, {windows} windows")
    grey = cnn.normalise_pixels(torch.full_like(prep.x, 0.5), loaded.spec.preprocess)
    t0 = time.perf_counter()
    with torch.inference_mode():
        attr = Occlusion(forward).attribute(prep.x, target=t, sliding_window_shapes=(3, window, window),
                                            strides=(3, stride, stride), baselines=grey,
                                            perturbations_per_eval=per_eval)
    seconds = time.perf_counter() - t0
    return _result("occlusion", loaded, prep, logits, t, _positive_map(attr), seconds,
                   window=window, stride=stride, windows=windows)


def attribute(method: str, image: Any, target: Any = None, model_id: str = "", progress: Progress = None,
              **options: Any) -> dict:
    """Dispatch by method name ("gradcam", "integrated_gradients", "occlusion")."""
    if method == "gradcam":
        return gradcam(image, target, options.get("stage", ""), model_id)
    if method == "integrated_gradients":
        return integrated_gradients(image, target, options.get("steps", 32), model_id, progress)
    if method == "occlusion":
        return occlusion(image, target, options.get("window", 48), options.get("stride", 24), model_id, progress)
    raise UserInputError(f"unknown attribution method {method!r}; choose one of {', '.join(METHODS)}")


# ------------------------------------------------------------------ warm-up
_warmed: set[str] = set()
_warm_lock = threading.Lock()


def warm(model_id: str = "") -> None:
    """Pay the cold costs once: import captum, run one Grad-CAM (first backward pass)."""
    loaded = cnn.get_model(model_id)
    with _warm_lock:
        if loaded.spec.id in _warmed:
            return
        _warmed.add(loaded.spec.id)
    from engine.images import example

    gradcam(example("coffee"), model_id=loaded.spec.id)


def warm_in_background(model_id: str = "") -> None:
    """`warm` on a daemon thread (errors are ignored: a real call will report them)."""
    loaded_id = model_id or cnn.get_model("").spec.id
    if loaded_id in _warmed:
        return

    def run() -> None:
        try:
            warm(loaded_id)
        except Exception:  # noqa: BLE001 - warming is best effort
            pass

    threading.Thread(target=run, name="ptx-attribution-warm", daemon=True).start()
