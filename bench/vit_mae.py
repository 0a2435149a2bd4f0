"""ViT & MAE station benchmark: warm latencies (median / p95) of `/mae` and ViT attention.

    python -m bench.vit_mae [--reps 20] [--mae mae-natural] [--vit dinov2-small-imgfocus]

Measures the engine calls behind the endpoints (what a slider move runs): `/mae` for a
new ratio (model loaded, image decoded each call, four PNGs written), ViT attention for a
new image (one forward with attentions) and for a layer change (cached forward), and the
PSNR curve (9 ratios with biharmonic inpainting). One torch thread (the app's default).
On the shared 2-core build machine the figures are noisy: other processes take the
cores at random moments.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import timed  # noqa: E402
from engine import device, sources  # noqa: E402
from engine import mae as M  # noqa: E402
from engine import vit as V  # noqa: E402
from engine.images import example_path  # noqa: E402
from engine.registry import REGISTRY  # noqa: E402


def show(name: str, stats: dict[str, float]) -> None:
    print(f"{name:<44} median {stats['median_ms']:7.1f} ms   p95 {stats['p95_ms']:7.1f} ms   (n={stats['n']})")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--mae", default="", help="MAE id (default: the role's default)")
    p.add_argument("--vit", default="", help="ViT id (default: the role's default)")
    args = p.parse_args()
    sources.set_offline(True)
    device.configure_threads()
    print(f"device {device.describe()}")
    chelsea, coffee = str(example_path("chelsea")), str(example_path("coffee"))

    t0 = time.perf_counter()
    try:
        mae = REGISTRY.get("mae", args.mae)
    except Exception as exc:  # noqa: BLE001 - report and carry on with the ViT
        print(f"MAE unavailable: {exc}")
        mae = None
    if mae is not None:
        print(f"MAE: {mae.label()} (cold load {time.perf_counter() - t0:.2f} s)")
        ratios = iter([0.05 * (i % 20) for i in range(10_000)])
        show("/mae, new ratio each call (+4 PNGs)", timed(lambda: M.mae_endpoint(chelsea, next(ratios), 0, mae.spec.id),
                                                          repeat=args.reps))
        show("/mae reconstruction only (no PNGs)", timed(lambda: M.reconstruct(chelsea, 0.75, 1, mae.spec.id),
                                                         repeat=args.reps))
        seeds = iter(range(10_000))
        show("PSNR curve, 9 ratios + biharmonic (uncached)",
             timed(lambda: mae.obj.curve(chelsea, next(seeds), "random"), repeat=max(3, args.reps // 4)))

    t0 = time.perf_counter()
    vit = REGISTRY.get("vit", args.vit)
    print(f"ViT: {vit.label()} (cold load {time.perf_counter() - t0:.2f} s)")
    runner: V.ViTRunner = vit.obj
    images = [chelsea, coffee]

    def fresh() -> None:  # a new image each call: clear the forward cache
        runner._cache.clear()
        V.vit_attention(images[0], -1, vit.spec.id)

    show("ViT attention, new image (forward)", timed(fresh, repeat=args.reps))
    layers = iter(range(10_000))
    show("ViT attention, layer change (cached)", timed(lambda: V.vit_attention(coffee, next(layers) % 12, vit.spec.id),
                                                      repeat=args.reps))


if __name__ == "__main__":
    main()
