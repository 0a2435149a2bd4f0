"""Attention & cloze station: warm timings and payload sizes.

    .venv/bin/python bench/attention.py [--repeat 30]

Prints median / p95 (ms) of warm calls on this machine: attention for 24 word pieces
(all layers and heads, one forward pass, not memoised), per-head statistics, the overview
grid PNG, the head-view page, one heatmap figure, and fill-mask with one and with five
masks, for each model that loads offline. Also the bytes that reach the browser. On the
shared build machines other jobs run at the same time: figures are noisy.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

TEXT_24 = "The animal didn't cross the busy street because it was far too tired after the long walk home today."
CLOZE_1 = "The capital of France is [MASK]."
CLOZE_5 = "The [MASK] sat on the [MASK] while the [MASK] slept by the [MASK] in the [MASK]."


def available(role: str):
    """(spec id, loaded model) for each model of the role that loads here."""
    from engine.errors import ModelUnavailable
    from engine.registry import REGISTRY

    for spec in REGISTRY.specs(role):
        try:
            yield spec.id, REGISTRY.get(role, spec.id)
        except ModelUnavailable:
            print(f"  {role}/{spec.id}: not available offline, skipped")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()

    import torch

    from bench._util import timed
    from engine import attention as att
    from engine import attention_views as views
    from engine import cloze, device

    device.configure_threads()
    print(f"torch threads: {torch.get_num_threads()}, device: {device.get_device()}, repeat: {args.repeat}")
    rows = []
    for model_id, loaded in available(att.ROLE):
        r = att.compute(loaded.obj, TEXT_24, label=loaded.label())
        T = len(r.tokens)
        png = io.BytesIO()
        views.overview_image(r)[0].save(png, "PNG")
        page = views.head_view_html(r, 0)
        api_bytes = len(json.dumps(r.to_api()))
        print(f"\n{loaded.label()}: {r.layers} layers x {r.heads} heads, T = {T}")
        print(f"  bytes to the browser: overview PNG {len(png.getvalue()) / 1e3:.0f} kB, head-view page "
              f"{len(page) / 1e3:.0f} kB (every layer, once), /attention JSON {api_bytes / 1e3:.0f} kB")
        cases = {
            f"attention, {T} pieces, all layers+heads": lambda b=loaded.obj: att.compute(b, TEXT_24),
            "per-head statistics": lambda r=r: att.head_stats(r),
            "overview grid PNG": lambda r=r: views.overview_image(r, selected=(2, 3)),
            "head-view page": lambda r=r: views.head_view_html(r, 0),
            "heatmap figure": lambda r=r: views.heatmap_figure(r, 2, 3).to_json(),
        }
        for name, fn in cases.items():
            rows.append((model_id, name, timed(fn, repeat=args.repeat)))
    for model_id, loaded in available(cloze.ROLE):
        for name, text in (("fill-mask, 1 mask, k=10", CLOZE_1), ("fill-mask, 5 masks, k=10", CLOZE_5)):
            fn = lambda text=text, b=loaded.obj: cloze.predict(b, text, 10)  # noqa: E731
            rows.append((model_id, name, timed(fn, repeat=args.repeat)))
    print()
    w = max(len(n) for _, n, _ in rows)
    print(f"{'model':<22} {'case':<{w}}  median_ms  p95_ms")
    for model_id, name, t in rows:
        print(f"{model_id:<22} {name:<{w}}  {t['median_ms']:9.1f}  {t['p95_ms']:6.1f}")


if __name__ == "__main__":
    main()
