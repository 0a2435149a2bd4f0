"""ELMo speed: warm `word_layers` on the 16 "bank" preset sentences (target <= 150 ms on
this CPU), plus a long-sentence case, and (when the contextual station is there) the
separation by layer on the "bank" preset.

    .venv/bin/python -m bench.elmo            # the registry's ELMo (official if present, else trained here)

Timings on the shared 2-core build machines are noisy: run it twice and read the medians.
"""

from __future__ import annotations

from bench._util import timed
from engine import corpus, device
from engine.registry import REGISTRY


def main() -> None:
    device.configure_threads()
    loaded = REGISTRY.get("contextual_elmo")
    emb = loaded.obj
    print(f"model: {loaded.label()}  ({emb.describe()}); load {loaded.seconds:.2f}s; "
          f"threads {device.describe()['threads']}")
    from engine.contextual import presets

    bank = presets()["bank"]
    sents = [corpus.tokenize(s, lower=False) for s in bank.sentences]
    n_words = sum(len(s) for s in sents)
    stats = timed(lambda: emb.word_layers(sents), repeat=20)
    print(f"16 sentences ({n_words} words): median {stats['median_ms']:.0f} ms, "
          f"p95 {stats['p95_ms']:.0f} ms, min {stats['min_ms']:.0f} ms (target <= 150 ms)")
    one = timed(lambda: emb.word_layers(sents[:1]), repeat=20)
    print(f"1 sentence ({len(sents[0])} words): median {one['median_ms']:.0f} ms, p95 {one['p95_ms']:.0f} ms")
    long = [w for s in sents for w in s][:300]
    lng = timed(lambda: emb.word_layers([long]), repeat=5)
    print(f"1 sentence of {len(long)} words: median {lng['median_ms']:.0f} ms, p95 {lng['p95_ms']:.0f} ms")

    from engine.contextual import analyse

    a = analyse(bank.text, bank.word, "elmo")
    print(f"bank separation by layer ({a.model}, {len(a.occurrences)} occurrences):")
    for k, name in enumerate(a.layer_names):
        row = {key: a.curves[key][k] for key in ("split_accuracy", "silhouette", "within_minus_across")}
        print(f"  {name:>14}: " + ", ".join(f"{key} {v:.3f}" if v is not None else f"{key} -" for key, v in row.items()))
    print(f"  best layer: {a.layer_names[a.best_layer]}")


if __name__ == "__main__":
    main()
