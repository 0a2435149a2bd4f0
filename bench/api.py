"""Every API endpoint, cold and warm, through gradio_client against a launched app, with the
app's RSS once every offline model is loaded; beside it, the naive way of doing the same
(a model reloaded per call, or a transformers pipeline built per call), and the ratio.

    .venv/bin/python bench/api.py [--repeat 15]

Prints a table; never fails a build. Figures on a shared 2-core machine are noisy.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from bench._util import launch_app, rss_mb, table, timed  # noqa: E402


def calls(image: str) -> list[tuple[str, str, tuple]]:
    """(endpoint, role used, arguments) for every contract endpoint except the training ones."""
    from gradio_client import handle_file

    img = handle_file(image)
    bank = "\n".join([
        "We sat on the bank of the river and watched the water.",
        "She deposited the cheque at the bank on Monday.",
        "The river bank was muddy after the rain.",
        "The bank raised its interest rates again.",
    ] * 4)
    return [
        ("/models", "", ()),
        ("/analogy", "static_vectors", ("king - man + woman", 10, "")),
        ("/neighbors", "static_vectors", ("bank", 10, "")),
        ("/word_map", "static_vectors", ("king, queen, man, woman, paris, france, rome, italy, berlin, germany", "pca", "")),
        ("/contextual", "contextual_bert", (bank, "bank", "bert")),
        ("/contextual", "contextual_elmo", (bank, "bank", "elmo")),
        ("/attention", "contextual_bert", ("The animal didn't cross the street because it was too tired.", "")),
        ("/fill_mask", "mlm", ("The capital of France is [MASK].", 5, "")),
        ("/classify_image", "cnn", (img, 5, "")),
        ("/feature_maps", "cnn", (img, "")),
        ("/vit_attention", "vit", (img, -1, "")),
        ("/mae", "mae", (img, 0.75, 0, "")),
        ("/runs", "", ()),
    ]


def reload_per_call_ms(role: str) -> float | None:
    """Median ms to load the role's default model from its source (what a naive app pays per call)."""
    from engine import device
    from engine.registry import REGISTRY
    from engine.sources import locate

    try:
        loaded = REGISTRY.get(role)
    except Exception:
        return None
    located = locate(loaded.located.source)
    stats = timed(lambda: loaded.spec.load(located, device.get_device()), repeat=3, warmup=0)
    return stats["median_ms"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    from gradio_client import Client

    from engine.images import example_path

    proc, url, first_page = launch_app()
    rows = []
    try:
        client = Client(url, verbose=False)
        for endpoint, role, arguments in calls(str(example_path("chelsea"))):
            row = {"endpoint": endpoint + (f" ({arguments[2]})" if endpoint == "/contextual" else ""), "role": role}
            t0 = time.perf_counter()
            try:
                client.predict(*arguments, api_name=endpoint)
            except Exception as exc:  # an unavailable model: report it, keep going
                row["note"] = f"error: {str(exc)[:60]}"
                rows.append(row)
                continue
            row["cold_ms"] = (time.perf_counter() - t0) * 1000
            stats = timed(lambda a=arguments, e=endpoint: client.predict(*a, api_name=e), repeat=args.repeat, warmup=1)
            row["warm_median_ms"] = stats["median_ms"]
            row["warm_p95_ms"] = stats["p95_ms"]
            rows.append(row)
        rss = rss_mb(proc.pid)
    finally:
        proc.terminate()
        proc.wait()

    # The naive peer, in this process: reload the model for every call, then compute.
    for row in rows:
        if row.get("role") and "warm_median_ms" in row:
            reload = reload_per_call_ms(row["role"])
            if reload is not None:
                row["naive_ms"] = reload + row["warm_median_ms"]
                row["naive/ours"] = row["naive_ms"] / max(row["warm_median_ms"], 1e-6)
    print(f"first page served after {first_page:.2f} s; app RSS with the models used above loaded: {rss:.0f} MB")
    print(table(rows, ["endpoint", "role", "cold_ms", "warm_median_ms", "warm_p95_ms", "naive_ms", "naive/ours", "note"]))
    print("\nnaive = the same request in an app that reloads its model from the same source on every call.")


if __name__ == "__main__":
    main()
