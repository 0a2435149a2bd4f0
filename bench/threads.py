"""Torch intra-op threads for interactive inference: MiniLM on one 16-token sentence and
EfficientNet-Lite0-sized convolutions, with 1 and with all cores (`python bench/threads.py`).
The engine's default (PTX_TORCH_THREADS=1) comes from this measurement."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from bench._util import table, timed  # noqa: E402


def main() -> None:
    from engine.registry import get

    bert = get("contextual_bert").obj
    enc = bert.tokenizer("The bank raised its interest rates again after the long meeting today.", return_tensors="pt")
    conv = torch.nn.Sequential(*[torch.nn.Conv2d(32, 32, 3, padding=1) for _ in range(6)]).eval()
    image = torch.randn(1, 32, 112, 112)
    rows = []
    for threads in sorted({1, os.cpu_count() or 1}):
        torch.set_num_threads(threads)
        with torch.inference_mode():
            b = timed(lambda: bert.model(**enc, output_hidden_states=True), repeat=30, warmup=3)
            c = timed(lambda: conv(image), repeat=20, warmup=2)
        rows.append({"threads": threads, "minilm_median_ms": b["median_ms"], "minilm_p95_ms": b["p95_ms"],
                     "conv_median_ms": c["median_ms"], "conv_p95_ms": c["p95_ms"]})
    print(table(rows, ["threads", "minilm_median_ms", "minilm_p95_ms", "conv_median_ms", "conv_p95_ms"]))


if __name__ == "__main__":
    main()
