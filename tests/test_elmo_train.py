"""ELMo training script (a tiny run with resume) and the committed small ELMo."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine import paths
from engine.train import elmo as train_elmo

TINY_OPTIONS = {
    "char_cnn": {"activation": "relu", "embedding": {"dim": 4}, "filters": [[1, 4], [2, 4]],
                 "max_characters_per_token": 10, "n_characters": 262, "n_highway": 1},
    "lstm": {"cell_clip": 3, "dim": 8, "n_layers": 2, "proj_clip": 3, "projection_dim": 6,
             "use_skip_connections": True},
}


def test_baselines_on_a_toy_corpus():
    vocab = {w: i for i, w in enumerate(["<S>", "</S>", "<UNK>", "a", "b"])}
    rows = {w: i for i, w in enumerate(["a", "b"])}
    train = train_elmo.Encoded([["a", "b"]] * 20, vocab, rows)
    held = train_elmo.Encoded([["a", "b"]] * 2, vocab, rows)
    base = train_elmo.baselines(train, held, len(vocab))
    # unigram: a, b and the boundary each 1/3 of the targets -> perplexity 3
    assert base["unigram_forward_ppl"] == pytest.approx(3.0, rel=1e-6)
    # the bigram has learnt the deterministic sequence almost perfectly
    assert base["bigram_forward_ppl"] < 1.5 and base["bigram_backward_ppl"] < 1.5


def test_tiny_training_run_resumes_and_exports(tmp_path):
    opts = tmp_path / "opts.json"
    opts.write_text(json.dumps(TINY_OPTIONS))
    common = ["--limit", "150", "--options", str(opts), "--vocab", "300", "--tokens-per-batch", "200",
              "--work", str(tmp_path / "work"), "--out", str(tmp_path / "out"), "--eval-every", "3",
              "--ckpt-every", "2", "--warmup", "2"]
    train_elmo.main(["--steps", "4", *common])
    first = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert first["steps"] == 4
    train_elmo.main(["--steps", "6", "--resume", *common])
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["steps"] == 6 and manifest["command"].startswith("python -m engine.train.elmo")
    m = manifest["metrics"]
    for key in ("forward_ppl", "backward_ppl", "unigram_forward_ppl", "bigram_backward_ppl"):
        assert np.isfinite(m[key]) and m[key] > 1
    from engine.models.elmo import load_trained

    emb = load_trained(tmp_path / "out")
    (layers,) = emb.word_layers([["The", "bank", "."]])
    assert layers.shape == (3, 3, 12) and np.isfinite(layers).all()


TRAINED = paths.trained_dir() / "elmo-small"


@pytest.mark.skipif(not (TRAINED / "manifest.json").exists(), reason="small ELMo not trained yet")
def test_committed_small_elmo_beats_baselines_and_loads():
    m = json.loads((TRAINED / "manifest.json").read_text())["metrics"]
    for side in ("forward", "backward"):
        ppl = m[f"{side}_ppl"]
        assert ppl < 0.8 * m[f"bigram_{side}_ppl"] and ppl < 0.5 * m[f"unigram_{side}_ppl"]
    from engine.models.elmo import load_trained

    emb = load_trained(TRAINED)
    out = emb.word_layers([["I", "sat", "on", "the", "bank", "of", "the", "river", "."], []])
    assert out[0].shape == (3, 9, emb.dim) and out[1].shape == (3, 0, emb.dim)
    assert (TRAINED / "model.safetensors").stat().st_size < 30 * 2**20


@pytest.mark.skipif(not (TRAINED / "manifest.json").exists(), reason="small ELMo not trained yet")
def test_contextual_station_reads_three_elmo_layers():
    from engine.contextual import analyse, presets

    bank = presets()["bank"]
    a = analyse(bank.text, bank.word, "elmo")
    assert a.kind == "elmo" and a.n_layers == 3 and a.vectors.shape[1] == len(bank.sentences)
    assert "ELMo" in a.model
    # the token layer cannot tell the senses apart (one vector for every "bank")
    assert a.curves["silhouette"][0] == pytest.approx(0.0, abs=1e-6) or a.curves["split_accuracy"][0] <= 0.6
