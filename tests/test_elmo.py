"""ELMo: character ids, the official hdf5 layout checked against a direct computation,
round trips, bad input, and a tiny training run with resume."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import torch

from engine.elmo import (
    BOS_CHAR,
    BOW_CHAR,
    EOS_CHAR,
    EOW_CHAR,
    MAX_WORDS,
    PAD_CHAR,
    BiLM,
    ElmoEmbedder,
    reverse_padded,
    word_char_ids,
)
from engine.elmo_weights import load_hdf5, read_options, save_hdf5, size_name
from engine.errors import UserInputError

TINY = {
    "char_cnn": {"activation": "relu", "embedding": {"dim": 4}, "filters": [[1, 3], [2, 4], [3, 5]],
                 "max_characters_per_token": 8, "n_characters": 262, "n_highway": 2},
    "lstm": {"cell_clip": 0.8, "dim": 6, "n_layers": 2, "proj_clip": 0.9, "projection_dim": 5,
             "use_skip_connections": True},
}
SENTENCES = [["The", "bank", "of", "the", "river", "."], ["Money", "in", "the", "bank"],
             ["naïve", "café", "🙂", "银行", "extraordinarily-long-word"]]


def _tiny_tf_file(path, options=TINY, seed=0):
    """Random weights written the way the published ELMo files are laid out (TF conventions)."""
    rng = np.random.default_rng(seed)
    cnn, lstm = options["char_cnn"], options["lstm"]
    dim, nf = cnn["embedding"]["dim"], sum(n for _, n in cnn["filters"])
    cell, proj = lstm["dim"], lstm["projection_dim"]
    arrays = {"char_embed": rng.normal(0, 1, (261, dim))}
    for i, (w, n) in enumerate(cnn["filters"]):
        arrays[f"CNN/W_cnn_{i}"] = rng.normal(0, 0.5, (1, w, dim, n))
        arrays[f"CNN/b_cnn_{i}"] = rng.normal(0, 0.1, (n,))
    for k in range(cnn["n_highway"]):
        for name, shape in (("W_transform", (nf, nf)), ("W_carry", (nf, nf)), ("b_transform", (nf,)), ("b_carry", (nf,))):
            arrays[f"CNN_high_{k}/{name}"] = rng.normal(0, 0.4, shape)
    arrays["CNN_proj/W_proj"] = rng.normal(0, 0.4, (nf, proj))
    arrays["CNN_proj/b_proj"] = rng.normal(0, 0.1, (proj,))
    for d in range(2):
        for layer in range(lstm["n_layers"]):
            g = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
            arrays[g + "W_0"] = rng.normal(0, 0.8, (2 * proj, 4 * cell))
            arrays[g + "B"] = rng.normal(0, 0.3, (4 * cell,))
            arrays[g + "W_P_0"] = rng.normal(0, 0.8, (cell, proj))
    arrays["softmax/W"] = rng.normal(0, 1, (7, proj))  # not part of the biLM: must be reported unused
    with h5py.File(path, "w") as f:
        for name, arr in arrays.items():
            f[name] = arr.astype(np.float32)
    return {k: v.astype(np.float32) for k, v in arrays.items()}


def _sig(x):
    return 1.0 / (1.0 + np.exp(-x))


def _reference(W, options, words):
    """ELMo's layers for one sentence computed directly from the TF-layout arrays (numpy,
    TF semantics: gates i, j, f, o, forget bias +1, carry gate on the transform)."""
    cnn, lstm = options["char_cnn"], options["lstm"]
    mc, cell = cnn["max_characters_per_token"], lstm["dim"]

    def boundary(c):
        ids = [PAD_CHAR] * mc
        ids[:3] = [BOW_CHAR, c, EOW_CHAR]
        return [i + 1 for i in ids]

    ids = np.array([boundary(BOS_CHAR)] + [word_char_ids(w, mc) for w in words] + [boundary(EOS_CHAR)])
    table = np.concatenate([np.zeros((1, W["char_embed"].shape[1]), np.float32), W["char_embed"]])
    x = table[ids]  # (n, mc, dim)
    feats = []
    for i, (w, _) in enumerate(cnn["filters"]):
        k = W[f"CNN/W_cnn_{i}"][0]  # (w, dim, num)
        conv = np.stack([sum(x[:, p + j] @ k[j] for j in range(w)) for p in range(mc - w + 1)], 1)
        feats.append(np.maximum((conv + W[f"CNN/b_cnn_{i}"]).max(1), 0))
    h = np.concatenate(feats, -1)
    for k in range(cnn["n_highway"]):
        g = f"CNN_high_{k}/"
        carry = _sig(h @ W[g + "W_carry"] + W[g + "b_carry"])
        h = carry * np.maximum(h @ W[g + "W_transform"] + W[g + "b_transform"], 0) + (1 - carry) * h
    tok = h @ W["CNN_proj/W_proj"] + W["CNN_proj/b_proj"]
    layers = [np.concatenate([tok, tok], -1)]
    inputs = [tok, tok[::-1]]
    for layer in range(lstm["n_layers"]):
        outs = []
        for d in range(2):
            g = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
            hs, c, hid = [], np.zeros(cell), np.zeros(lstm["projection_dim"])
            for xt in inputs[d]:
                z = np.concatenate([xt, hid]) @ W[g + "W_0"] + W[g + "B"]
                i, j, f, o = np.split(z, 4)
                c = np.clip(_sig(f + 1.0) * c + _sig(i) * np.tanh(j), -lstm["cell_clip"], lstm["cell_clip"])
                hid = np.clip((_sig(o) * np.tanh(c)) @ W[g + "W_P_0"], -lstm["proj_clip"], lstm["proj_clip"])
                hs.append(hid)
            out = np.stack(hs)
            outs.append(out + inputs[d] if layer > 0 else out)
        layers.append(np.concatenate([outs[0], outs[1][::-1]], -1))
        inputs = outs
    return np.stack(layers)[:, 1:-1]


def _embedder(options=TINY, seed=0, tmp_path=None):
    torch.manual_seed(seed)
    return ElmoEmbedder(BiLM(options), torch.device("cpu"), name="tiny", kind="test")


# ---------------------------------------------------------------- characters
def test_word_char_ids_bytes_boundaries_and_truncation():
    assert word_char_ids("bank", 10) == [259, 99, 98, 111, 108, 260, 261, 261, 261, 261]
    assert word_char_ids("🙂", 8)[1:6] == [b + 1 for b in "🙂".encode()] + [EOW_CHAR + 1]
    long = word_char_ids("x" * 100, 50)
    assert len(long) == 50 and long[-1] == EOW_CHAR + 1 and long[1:49] == [ord("x") + 1] * 48
    assert all(1 <= i <= 261 for i in word_char_ids("银行 and ü", 50))


def test_reverse_padded_is_an_involution():
    x = torch.arange(12.0).reshape(2, 6)
    lengths = torch.tensor([4, 6])
    r = reverse_padded(x, lengths)
    assert r[0].tolist() == [3, 2, 1, 0, 4, 5] and r[1].tolist() == [11, 10, 9, 8, 7, 6]
    assert torch.equal(reverse_padded(r, lengths), x)


# ---------------------------------------------------------------- official layout
def test_official_layout_matches_direct_computation(tmp_path):
    W = _tiny_tf_file(tmp_path / "w.hdf5")
    (tmp_path / "options.json").write_text(json.dumps(TINY))
    bilm, unused = load_hdf5(read_options(tmp_path / "options.json"), tmp_path / "w.hdf5")
    assert unused == ["softmax/W"]
    emb = ElmoEmbedder(bilm, torch.device("cpu"), name="tiny", kind="test")
    got = emb.word_layers(SENTENCES)  # batched, different lengths
    for words, layers in zip(SENTENCES, got, strict=True):
        want = _reference(W, TINY, words)
        assert layers.shape == (3, len(words), 10) and layers.dtype == np.float32
        np.testing.assert_allclose(layers, want, atol=2e-5, rtol=1e-4)
    # the clips were really exercised (the cell clip binds in this random model)
    assert np.abs(got[0][1:]).max() > 0.5


def test_missing_or_misshaped_tensor_is_a_clear_error(tmp_path):
    _tiny_tf_file(tmp_path / "w.hdf5")
    with h5py.File(tmp_path / "w.hdf5", "a") as f:
        del f["CNN_proj/b_proj"]
    with pytest.raises(ValueError, match="CNN_proj/b_proj"):
        load_hdf5(TINY, tmp_path / "w.hdf5")
    bigger = json.loads(json.dumps(TINY))
    bigger["lstm"]["dim"] = 7
    _tiny_tf_file(tmp_path / "w2.hdf5")
    with pytest.raises(ValueError, match="shape"):
        load_hdf5(bigger, tmp_path / "w2.hdf5")
    (tmp_path / "bad.json").write_text('{"lstm": {}}')
    with pytest.raises(ValueError, match="options"):
        read_options(tmp_path / "bad.json")


def test_save_then_load_gives_the_same_model(tmp_path):
    emb = _embedder(seed=3)
    save_hdf5(emb.model, tmp_path / "w.hdf5")
    bilm, unused = load_hdf5(TINY, tmp_path / "w.hdf5")
    assert unused == []
    again = ElmoEmbedder(bilm, torch.device("cpu"), name="tiny", kind="test")
    for a, b in zip(emb.word_layers(SENTENCES), again.word_layers(SENTENCES), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert size_name(TINY) == "2x6_5_12cnn_2xhighway"


# ---------------------------------------------------------------- embedder behaviour
def test_word_layers_bad_and_odd_input():
    emb = _embedder()
    out = emb.word_layers([[], ["a"], []])
    assert [o.shape for o in out] == [(3, 0, 10), (3, 1, 10), (3, 0, 10)]
    assert emb.word_layers([]) == []
    with pytest.raises(UserInputError, match="at most"):
        emb.word_layers([["w"] * (MAX_WORDS + 1)])
    with pytest.raises(UserInputError):
        emb.word_layers("a sentence")  # type: ignore[arg-type]
    with pytest.raises(UserInputError):
        emb.word_layers([["ok", 3]])  # type: ignore[list-item]
    # a word past the character limit is truncated, not refused
    a, b = emb.word_layers([["x" * 6 + "abc"], ["x" * 6 + "zzz"]])
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_a_sentence_does_not_depend_on_its_batch():
    emb = _embedder(seed=1)
    alone = emb.word_layers([SENTENCES[1]])[0]
    batched = emb.word_layers(SENTENCES)[1]
    np.testing.assert_allclose(alone, batched, atol=1e-5)
    # context matters: "bank" differs between sentences above layer 0 only
    s0, s1 = emb.word_layers([SENTENCES[0], SENTENCES[1]])
    np.testing.assert_allclose(s0[0, 1], s1[0, 3], atol=1e-6)
    assert not np.allclose(s0[2, 1], s1[2, 3])


def test_registry_prefers_official_files_in_checkpoints(tmp_path, monkeypatch):
    from engine.registry import REGISTRY

    folder = tmp_path / "elmo"
    folder.mkdir()
    _tiny_tf_file(folder / "elmo_tiny_weights.hdf5")
    (folder / "elmo_tiny_options.json").write_text(json.dumps(TINY))
    monkeypatch.setenv("PTX_CHECKPOINTS", str(tmp_path))
    REGISTRY.forget("contextual_elmo", "elmo-original")
    try:
        spec, source = REGISTRY.would_load("contextual_elmo")
        assert spec.id == "elmo-original" and source.kind == "checkpoints"
        loaded = REGISTRY.get("contextual_elmo", "elmo-official")
        assert "checkpoints/elmo" in loaded.label() and loaded.params == loaded.obj.n_params
        assert loaded.obj.extra["unused_tensors"] == ["softmax/W"]
        assert "official AllenNLP weights" in loaded.obj.describe()
        (layers,) = loaded.obj.word_layers([["a", "bank"]])
        assert layers.shape == (3, 2, 10)
    finally:
        REGISTRY.forget("contextual_elmo", "elmo-original")
