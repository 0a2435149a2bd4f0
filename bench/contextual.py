"""Contextual station speed and the separation numbers it shows.

    .venv/bin/python -m bench.contextual [--model bert] [--repeat 20]

Times, warm (model loaded, caches cleared before every call so the model really runs):
  - the word_layers forward alone on the 16 "bank" preset sentences;
  - the whole analysis (forward at all layers + similarity matrices + 2-means, silhouette,
    within-minus-across and split accuracy per layer) plus PCA maps of every layer
    (target <= 150 ms);
  - a request with one 10,000-character line among the 16;
  - a layer-slider move (map + heatmap data from the cached analysis).
Then prints the separation curves of every preset for BERT and the static baseline.
Timings on the shared 2-core build machines are noisy: run it twice and read the medians.
"""

from __future__ import annotations

import argparse

from bench._util import timed
from engine import contextual as ctx
from engine import corpus, device


def _fmt(values: list[float | None]) -> str:
    return " ".join("  -  " if v is None else f"{v:5.2f}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="bert")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    device.configure_threads()
    encoder = ctx.get_encoder(args.model)
    print(f"model: {encoder.loaded.label()}; load {encoder.loaded.seconds:.2f}s; "
          f"device {encoder.loaded.device}; threads {device.describe()['threads']}")
    bank = ctx.presets()["bank"]
    sents = [corpus.tokenize(s, lower=False) for s in bank.sentences]
    print(f"bank preset: {len(sents)} sentences, {sum(map(len, sents))} words")

    def fresh(fn):
        def call():
            ctx._layer_cache.clear()
            return fn()
        return call

    rows = [
        ("word_layers forward only", timed(lambda: encoder.obj.word_layers(sents), repeat=args.repeat)),
        ("analysis + PCA maps of all layers (target <= 150 ms)",
         timed(fresh(lambda: ctx.all_layer_maps(ctx.analyse(bank.text, bank.word, args.model))), repeat=args.repeat)),
        ("the same, through the /contextual result dict",
         timed(fresh(lambda: ctx.contextual(bank.text, bank.word, args.model)), repeat=args.repeat)),
    ]
    rows.append(("station maths only (forward cached): analysis + maps",
                 timed(lambda: ctx.all_layer_maps(ctx.analyse(bank.text, bank.word, args.model)), repeat=args.repeat)))
    rows.append(("station maths only, as the /contextual dict",
                 timed(lambda: ctx.contextual(bank.text, bank.word, args.model), repeat=args.repeat)))
    long_text = bank.text + "\n" + "The bank " + "of the river " * 800
    rows.append(("16 sentences + one 10,000-character line",
                 timed(fresh(lambda: ctx.analyse(long_text, "bank", args.model)), repeat=max(3, args.repeat // 4))))
    a = ctx.analyse(bank.text, bank.word, args.model)
    rows.append(("layer slider move (PCA map + similarity, cached)",
                 timed(lambda: (ctx.analysis_map(a, 3), a.similarity[3].tolist()), repeat=args.repeat)))
    for name, s in rows:
        print(f"{name:55s} median {s['median_ms']:7.1f} ms  p95 {s['p95_ms']:7.1f} ms  (n={s['n']})")

    print("\nseparation by layer (layer 0 = input embeddings):")
    for key, preset in ctx.presets().items():
        for kind in (args.model, "static"):
            try:
                r = ctx.analyse(preset.text, preset.word, kind)
            except Exception as exc:  # a missing model is reported, not fatal
                print(f"  {key:6s} {kind:7s} unavailable: {exc}")
                continue
            print(f"  {key:6s} {r.model} ({r.n_layers} layers), best layer {r.best_layer}")
            for metric in ("split_accuracy", "within_minus_across", "silhouette"):
                print(f"      {metric:20s} {_fmt(r.curves[metric])}")


if __name__ == "__main__":
    main()
