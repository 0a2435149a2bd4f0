"""Where inference runs: device choice, dtype and CPU thread count.

One process-wide preference ("auto", "cpu", "cuda" or "mps") is set at launch
(`python -m app --device ...`); every station asks `get_device()`.
"""

from __future__ import annotations

import os
import threading

import torch

_lock = threading.Lock()
_preference = os.environ.get("PTX_DEVICE", "auto")
_threads_set = False


def set_preference(pref: str) -> None:
    """Set the device preference: "auto" (cuda > mps > cpu), "cpu", "cuda" or "mps"."""
    global _preference
    if pref not in ("auto", "cpu", "cuda", "mps"):
        raise ValueError(f"device must be auto, cpu, cuda or mps, not {pref!r}")
    _preference = pref


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend and backend.is_available())


def get_device() -> torch.device:
    """The device for inference: the preference if available, else the best present."""
    configure_threads()
    if _preference == "cuda" or (_preference == "auto" and torch.cuda.is_available()):
        if torch.cuda.is_available():
            return torch.device("cuda")
    if _preference == "mps" or (_preference == "auto" and _mps_available()):
        if _mps_available():
            return torch.device("mps")
    return torch.device("cpu")


def inference_dtype(device: torch.device | None = None) -> torch.dtype:
    """float32 on CPU; bfloat16 on a GPU that supports it, else float16."""
    device = device or get_device()
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if device.type == "mps":
        return torch.float16
    return torch.float32


def configure_threads() -> int:
    """Set torch's intra-op thread count once per process and return it.

    Default 1: on the 2-core machines this project is built on, one thread was
    measured faster than two for small models whenever another process held a core
    (bench/threads.py). Override with PTX_TORCH_THREADS.
    """
    global _threads_set
    with _lock:
        if not _threads_set:
            n = int(os.environ.get("PTX_TORCH_THREADS", "1"))
            torch.set_num_threads(max(1, n))
            _threads_set = True
    return torch.get_num_threads()


def describe() -> dict:
    """A summary for the Models panel: device, dtype, threads, CUDA name."""
    dev = get_device()
    out = {
        "device": str(dev),
        "dtype": str(inference_dtype(dev)).replace("torch.", ""),
        "threads": torch.get_num_threads(),
        "preference": _preference,
        "torch": torch.__version__,
    }
    if dev.type == "cuda":
        out["gpu"] = torch.cuda.get_device_name(0)
    return out
