"""CNN station benchmark: warm latencies (median / p95) and top-5 on the packaged images.

    python -m bench.cnn [--model efficientnet-lite0] [--reps 20] [--no-top5]

Runs on one torch thread (the app's default). On the shared 2-core build machine the
figures are noisy: other processes take the cores at random moments.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import torch

from engine import attribution, cnn, feature_vis
from engine.images import example_names, example_path


def timed(fn: Callable[[], object], reps: int) -> tuple[float, float]:
    """(median, p95) in milliseconds of `reps` warm calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]


COLD_GRADCAM = """
import time, torch
t0 = time.perf_counter()
from engine import attribution, cnn
from engine.images import example_path
p = str(example_path("chelsea")); cnn.classify(p, 5)
t1 = time.perf_counter(); import captum.attr; t2 = time.perf_counter()
attribution.gradcam(p); t3 = time.perf_counter()
attribution.gradcam(p); t4 = time.perf_counter()
print(f"{t2 - t1:.3f} {t3 - t2:.3f} {t4 - t3:.3f}")
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--no-top5", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    loaded = cnn.get_model(args.model)
    mid = loaded.spec.id
    print(f"model: {loaded.label()} on {loaded.device}, {torch.get_num_threads()} thread(s), torch {torch.__version__}")
    path = str(example_path("chelsea"))
    prep = cnn.prepare(path, loaded)

    def forward() -> None:
        with torch.inference_mode():
            loaded.obj(prep.x)

    def maps() -> None:
        cnn._stage_cache.clear()  # measure the computation, not the cache
        cnn.feature_maps(path, mid)

    rows = [
        ("forward only (1x3x224x224)", forward, args.reps),
        ("classify (load PNG + preprocess + forward + top-5)", lambda: cnn.classify(path, 5, mid), args.reps),
        ("feature maps, all stages (uncached)", maps, args.reps),
        ("stepper view of one stage (cached stages)", lambda: cnn.stage_view(path, 4, mid), args.reps),
        ("Grad-CAM, last stage", lambda: attribution.gradcam(path, model_id=mid), args.reps),
        ("Grad-CAM, stage 3 (28x28)", lambda: attribution.gradcam(path, stage="stage 3", model_id=mid), args.reps),
        ("Integrated Gradients, 16 steps", lambda: attribution.integrated_gradients(path, steps=16, model_id=mid), 5),
        ("Integrated Gradients, 32 steps", lambda: attribution.integrated_gradients(path, steps=32, model_id=mid), 5),
        ("Occlusion, 48 px window, stride 24 (64 windows)", lambda: attribution.occlusion(path, model_id=mid), 3),
        ("feature vis, 16 steps at 128 px, stage 3", lambda: feature_vis.visualise("stage 3", 0, mid, steps=16), 3),
        ("feature vis, 16 steps at 128 px, logits", lambda: feature_vis.visualise("logits", 282, mid, steps=16), 3),
        ("precomputed gallery (manifest)", lambda: feature_vis.gallery(mid), args.reps),
        ("transfer: two images, all stages", lambda: cnn.stage_similarity(path, str(example_path("coffee")), mid), 5),
    ]
    print(f"{'warm call':55s} {'median ms':>10s} {'p95 ms':>8s}")
    for name, fn, reps in rows:
        med, p95 = timed(fn, reps)
        print(f"{name:55s} {med:10.1f} {p95:8.1f}")

    out = subprocess.run([sys.executable, "-c", COLD_GRADCAM], capture_output=True, text=True, check=False)
    parts = out.stdout.split()
    if len(parts) == 3:
        print(f"cold Grad-CAM in a fresh process: import captum.attr {parts[0]} s, first Grad-CAM {parts[1]} s, "
              f"second {parts[2]} s (attribution.warm_in_background pays the first two after the first classify)")

    if not args.no_top5:
        print("\ntop-5 on the packaged images:")
        for name in example_names():
            preds = cnn.classify(str(example_path(name)), 5, mid)["predictions"]
            print(f"  {name:18s} " + "; ".join(f"{p['label'].split(',')[0]} {p['score']:.2f}" for p in preds))


if __name__ == "__main__":
    main()
