"""Contextual station engine: word pieces, layer counts, the separation maths, bad inputs.

Tiny models only (a 2-layer BERT the test builds, and fake `word_layers` models in a
private registry); the packaged MiniLM is used by the one test marked slow.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine import contextual as ctx
from engine.errors import ModelUnavailable, UserInputError
from engine.registry import ModelSpec, Registry
from engine.sources import Source

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "river", "bank", "money", ".", "em", "##bank",
         "##ment", "we", "sat", "on", "a", "loan", "from", "water"]


@pytest.fixture(scope="module")
def tiny_bert():
    """A 2-layer BERT (hidden 32) with a vocabulary that splits "embankment" into 3 pieces."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from engine.models.bert import BertBundle

    tok = BertTokenizerFast(vocab={w: i for i, w in enumerate(VOCAB)}, model_max_length=24)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=24)
    return BertBundle(BertModel(cfg).eval(), tok)


# ---------------------------------------------------------------- BERT word_layers
def test_word_pieces_are_averaged_and_layers_counted(tiny_bert):
    words = ["we", "sat", "on", "the", "embankment", "."]
    assert tiny_bert.pieces("embankment") == ["em", "##bank", "##ment"]
    (out,) = tiny_bert.word_layers([words])
    assert out.shape == (3, 6, 32) and out.dtype == np.float32  # layer 0 + 2 blocks
    enc = tiny_bert.tokenizer(words, is_split_into_words=True, return_tensors="pt")
    with torch.inference_mode():
        hidden = torch.stack(tiny_bert.model(**enc, output_hidden_states=True).hidden_states)[:, 0].numpy()
    pieces = [t for t, w in enumerate(enc.word_ids(0)) if w == 4]
    assert len(pieces) == 3
    np.testing.assert_allclose(out[:, 4], hidden[:, pieces].mean(axis=1), atol=1e-5)
    np.testing.assert_allclose(out[:, 0], hidden[:, 1], atol=1e-5)  # "we" is one piece after [CLS]


def test_batching_and_padding_do_not_change_vectors(tiny_bert):
    a = ["the", "river", "bank", "."]
    b = ["we", "sat", "on", "the", "bank", "from", "the", "river", "water", "."]
    alone = tiny_bert.word_layers([a])[0]
    together = tiny_bert.word_layers([b, a])
    assert [x.shape[1] for x in together] == [10, 4]
    np.testing.assert_allclose(together[1], alone, atol=1e-5)


def test_long_sentence_is_cut_at_max_length_and_dropped_words_keep_alignment(tiny_bert):
    long = ["the", "river"] * 40
    short = ["the", "\u200b", "bank"]  # the zero-width space has no piece at all
    out_long, out_short = tiny_bert.word_layers([long, short])
    assert out_long.shape[1] == tiny_bert.max_length - 2  # [CLS] and [SEP] take two
    assert out_short.shape[1] == 3
    np.testing.assert_allclose(out_short[:, 2], tiny_bert.word_layers([["the", "[UNK]", "bank"]])[0][:, 2], atol=1e-5)


def test_bert_family_folders_in_checkpoints_become_models(checkpoints, tiny_bert):
    from engine.models.bert import checkpoint_specs

    tiny_bert.model.save_pretrained(checkpoints / "my-bert")
    tiny_bert.tokenizer.save_pretrained(checkpoints / "my-bert")
    (checkpoints / "a-gpt").mkdir()
    (checkpoints / "a-gpt" / "config.json").write_text('{"model_type": "gpt2"}')
    (checkpoints / "notes").mkdir()
    specs = checkpoint_specs()
    assert [s.id for s in specs] == ["my-bert"] and specs[0].role == "contextual_bert"
    reg = Registry()
    reg._specs_imported = True
    reg.register(specs[0])
    bundle = reg.get("contextual_bert", "my-bert").obj
    (out,) = bundle.word_layers([["the", "embankment"]])
    np.testing.assert_allclose(out, tiny_bert.word_layers([["the", "embankment"]])[0], atol=1e-5)


# ---------------------------------------------------------------- maths
def _random_vectors(seed: int = 0, n: int = 12, d: int = 16) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(2, d)) * 3
    return (centres[np.arange(n) % 2] + rng.normal(size=(n, d))).astype(np.float32)


def test_cosine_similarity_matches_numpy():
    x = _random_vectors()
    direct = np.array([[a @ b / np.linalg.norm(a) / np.linalg.norm(b) for b in x] for a in x])
    np.testing.assert_allclose(ctx.cosine_similarity(x), direct, atol=1e-6)
    stacked = ctx.cosine_similarity(np.stack([x, 2 * x]))
    assert stacked.shape == (2, 12, 12)
    np.testing.assert_allclose(stacked[1], direct, atol=1e-6)
    with_zero = ctx.cosine_similarity(np.vstack([x[:2], np.zeros((1, 16))]))
    assert np.all(np.isfinite(with_zero)) and with_zero[2, 0] == 0


def test_two_means_finds_the_obvious_split_and_silhouette_matches_sklearn():
    from sklearn.metrics import silhouette_score

    x = _random_vectors()
    groups = ctx.two_means(x)
    truth = np.arange(12) % 2
    assert groups[0] == 0 and (np.array_equal(groups, truth) or np.array_equal(groups, 1 - truth))
    assert np.array_equal(ctx.two_means(x), groups)  # deterministic
    sim = ctx.cosine_similarity(x)
    assert ctx.silhouette(sim, groups) == pytest.approx(silhouette_score(x, groups, metric="cosine"), abs=1e-6)
    uneven = np.array([0] * 9 + [1] * 3)
    assert ctx.silhouette(sim, uneven) == pytest.approx(silhouette_score(x, uneven, metric="cosine"), abs=1e-6)
    same = np.repeat(x[:1], 5, axis=0)
    assert list(ctx.two_means(same)) == [0] * 5
    assert ctx.silhouette(ctx.cosine_similarity(same), ctx.two_means(same)) == 0.0


def test_within_minus_across_and_split_accuracy_by_hand():
    x = _random_vectors(seed=1, n=6)
    sim = ctx.cosine_similarity(x)
    labels = ["a", "b", "a", "b", "a", None]
    idx = [0, 1, 2, 3, 4]
    within = [sim[i, j] for i in idx for j in idx if i != j and labels[i] == labels[j]]
    across = [sim[i, j] for i in idx for j in idx if labels[i] != labels[j]]
    assert ctx.within_minus_across(sim, labels) == pytest.approx(np.mean(within) - np.mean(across))
    assert ctx.within_minus_across(sim, ["a"] * 6) is None
    assert ctx.split_accuracy(np.array([0, 1, 0, 1, 1, 0]), labels) == pytest.approx(4 / 5)
    assert ctx.split_accuracy(np.array([1, 0, 1, 0, 1, 1]), labels) == 1.0
    assert ctx.split_accuracy(np.zeros(6), [None] * 6) is None


def test_scalar_mix_is_gamma_times_softmax_weighted_sum():
    rng = np.random.default_rng(2)
    layers = rng.normal(size=(3, 4, 5)).astype(np.float32)
    w = np.array([0.5, -1.0, 2.0])
    s = np.exp(w) / np.exp(w).sum()
    expect = 0.7 * (s[0] * layers[0] + s[1] * layers[1] + s[2] * layers[2])
    np.testing.assert_allclose(ctx.scalar_mix(layers, w, 0.7), expect, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ctx.scalar_mix(layers, [0, 0, 0], 1.0), layers.mean(0), atol=1e-6)
    assert ctx.softmax([1000.0, 0.0, -1000.0]).sum() == pytest.approx(1.0)
    with pytest.raises(UserInputError, match="one weight per layer"):
        ctx.scalar_mix(layers, [1.0, 2.0], 1.0)


# ---------------------------------------------------------------- the analysis, with fake models
class FakeContextual:
    """word_layers from a hash of (word, neighbours): different contexts -> different vectors.
    Cuts sentences at `max_length` words; `layers` layers."""

    def __init__(self, layers: int = 4, d: int = 8, max_length: int = 50) -> None:
        self.layers, self.d, self.max_length = layers, d, max_length
        self.calls = 0

    def word_layers(self, sentences):
        self.calls += 1
        out = []
        for words in sentences:
            words = words[: self.max_length]
            arr = np.zeros((self.layers, len(words), self.d), np.float32)
            for i, w in enumerate(words):
                base = np.random.default_rng(abs(hash(w.lower())) % 2**32).normal(size=self.d)
                ctx_vec = np.random.default_rng(abs(hash(" ".join(words).lower())) % 2**32).normal(size=self.d)
                for k in range(self.layers):
                    arr[k, i] = base + k * ctx_vec
            out.append(arr)
        return out


class FakeKV:
    """A two-word static vocabulary in the gensim KeyedVectors shape."""

    vector_size = 4

    def __init__(self) -> None:
        self.key_to_index = {"bank": 0, "river": 1}
        self.vectors = np.array([[1, 2, 3, 4], [4, 3, 2, 1]], np.float32)


@pytest.fixture
def fake_registry(monkeypatch):
    reg = Registry()
    reg._specs_imported = True
    model = FakeContextual()
    reg.register(ModelSpec("fake-bert", "contextual_bert", "Fake BERT", (Source("trained-here", "x"),),
                           lambda located, dev: model))
    reg.register(ModelSpec("fake-elmo", "contextual_elmo", "Fake ELMo", (Source("trained-here", "x"),),
                           lambda located, dev: FakeContextual(layers=3)))
    reg.register(ModelSpec("fake-glove", "static_vectors", "Fake GloVe", (Source("trained-here", "x"),),
                           lambda located, dev: FakeKV()))
    monkeypatch.setattr("engine.sources.locate", lambda source, check_hashes=True: _Located(source))
    monkeypatch.setattr("engine.registry.locate", lambda source, check_hashes=True: _Located(source))
    monkeypatch.setattr(ctx, "REGISTRY", reg)
    ctx._layer_cache.clear()
    return model


class _Located:
    def __init__(self, source):
        self.source, self.path, self.hub_id, self.local_only = source, None, None, False


BANK = "\n".join(ctx.presets()["bank"].sentences)


def test_presets_are_labelled_eight_and_eight():
    presets = ctx.presets()
    assert list(presets) == ["bank", "play", "apple"]
    for p in presets.values():
        assert len(p.sentences) == 16 and len(set(p.labels)) == 2
        assert all(p.labels.count(s) == 8 for s in p.senses)
        assert all(ctx.find_word(ctx.tokenize(s, lower=False), p.word) for s in p.sentences)
        assert ctx.known_sense(p.sentences[0], p.word.upper()) == p.labels[0]
    assert ctx.known_sense("A bank I made up.", "bank") is None


def test_analysis_shapes_labels_and_api_keys(fake_registry):
    out = ctx.contextual(BANK, "Bank", "")
    assert out["model"] == "Fake BERT" and out["layers"] == 4 and out["word"] == "bank"
    assert len(out["occurrences"]) == 16 and out["skipped"] == []
    assert [o["sentence"] for o in out["occurrences"]] == list(range(16))
    assert {"sentence", "text", "word", "position", "sense"} <= set(out["occurrences"][0])
    sim = np.array(out["similarity"])
    assert sim.shape == (4, 16, 16)
    np.testing.assert_allclose(np.diagonal(sim, axis1=1, axis2=2), 1.0, atol=1e-5)
    assert len(out["curves"]["split_accuracy"]) == 4 and out["curves"]["split_accuracy"][0] is not None
    ctx.contextual(BANK, "bank", "bert")
    assert fake_registry.calls == 1  # the second request came from the cache


def test_skipped_substrings_and_possessives(fake_registry):
    text = ("The bank was closed.\nWe went banking on Monday.\n\nThe embankment held.\n"
            "The bank's vault 🏦 and 银行.\nBANK, bank and bank again.")
    a = ctx.analyse(text, "bank", "bert")
    assert a.skipped == [1, 2]
    assert [o["sentence"] for o in a.occurrences] == [0, 3, 4, 4, 4]
    assert a.occurrences[1]["word"] == "bank's"
    assert any("banking" in n and "embankment" in n and "whole words only" in n and "2, 3" in n for n in a.notes)
    assert a.vectors.shape == (4, 5, 8)


def test_word_missing_everywhere_names_it_and_its_longer_forms(fake_registry):
    with pytest.raises(UserInputError, match="“bank” is not in any of the sentences.*banking, embankment"):
        ctx.analyse("Banking is hard.\nAn embankment.", "bank", "bert")
    with pytest.raises(UserInputError, match="“moon” is not in any"):
        ctx.analyse(BANK, "moon", "bert")


@pytest.mark.parametrize("text, word, message", [
    ("", "bank", "type some sentences"),
    ("\n  \n\n", "bank", "type some sentences"),
    ("The bank.", "", "type the word"),
    ("The bank.", "river bank", "type one word"),
    ("The bank.", "🏦🏦", "type one word"),
    ("\n".join(["The bank is open."] * 200), "bank", f"at most {ctx.MAX_SENTENCES} sentences"),
    ("x" * (ctx.MAX_CHARS + 1), "x", "characters long"),
    ("\n".join(["bank " + "a " * 45] * 50), "bank", "the limit is 2,048 per request"),
])
def test_bad_input_gives_clear_messages(fake_registry, text, word, message):
    with pytest.raises(UserInputError, match=message):
        ctx.analyse(text, word, "bert")


def test_one_sentence_says_no_split_and_long_sentence_is_truncated(fake_registry):
    one = ctx.analyse("Only one bank here.", "bank", "bert")
    assert len(one.occurrences) == 1 and one.curves["silhouette"] == [0.0] * 4
    assert any("nothing to split" in n for n in one.notes)
    long = "The bank " + "and so on " * 1100 + "bank."
    assert len(long) > 10_000
    a = ctx.analyse(long + "\nThe river bank.", "bank", "bert")
    assert a.truncated == [0] and [o["sentence"] for o in a.occurrences] == [0, 1]
    assert any("cut there" in n for n in a.notes)
    late = ctx.analyse("word " * 60 + "bank\nThe bank.", "bank", "bert")
    assert late.skipped == [0] and any("after the cut" in n for n in late.notes)


def test_a_model_with_max_words_gets_cut_sentences(fake_registry):
    class Strict(FakeContextual):
        max_words = 20

        def word_layers(self, sentences):
            assert all(len(s) <= self.max_words for s in sentences)
            return super().word_layers(sentences)

    fake_registry.word_layers = Strict().word_layers
    fake_registry.max_words = 20
    a = ctx.analyse("The bank " + "by the river " * 30 + "bank\nA bank.", "bank", "bert")
    assert a.truncated == [0] and [o["sentence"] for o in a.occurrences] == [0, 1]


def test_static_model_is_flat_at_zero_and_unknown_word_is_said(fake_registry):
    a = ctx.analyse(BANK, "bank", "static")
    assert a.n_layers == 1 and a.model == "Fake GloVe"
    assert a.curves["silhouette"] == [0.0] and a.curves["within_minus_across"] == [pytest.approx(0.0)]
    assert np.allclose(a.similarity, 1.0)
    with pytest.raises(UserInputError, match="no vector for “apple”"):
        ctx.analyse("An apple.", "apple", "glove")
    assert ctx.analyse("The bank's roof.\nA bank.", "bank", "static").n_layers == 1  # possessive read as bank


def test_own_sense_labels_in_brackets(fake_registry):
    assert ctx.split_sense("We sat on the bank [River] ") == ("We sat on the bank", "river")
    assert ctx.split_sense("[river]") == ("[river]", None)
    assert ctx.split_sense("A bank [] x") == ("A bank [] x", None)
    a = ctx.analyse("We sat on the bank [river]\nThe bank lent money [money]\nA bank [river]\nNo tag bank.",
                    "bank", "bert")
    assert a.labels == ["river", "money", "river", None]
    assert a.occurrences[0]["text"] == "We sat on the bank"
    assert a.curves["split_accuracy"][1] is not None


def test_layer_cache_is_bounded_in_bytes(fake_registry, monkeypatch):
    monkeypatch.setattr(ctx, "CACHE_BYTES", 100_000)  # a bank preset here is ~22 kB
    for i in range(5):
        ctx.analyse(BANK + f"\nbank {i}", "bank", "bert")
    assert 2 <= len(ctx._layer_cache) <= 4 and ctx._cache_bytes() <= ctx.CACHE_BYTES
    ctx._layer_cache.clear()
    ctx.analyse("\n".join(["bank " * 45] * 6), "bank", "bert")  # bigger than a quarter: not kept
    assert len(ctx._layer_cache) == 0


def test_occurrences_are_capped(fake_registry):
    a = ctx.analyse("\n".join(["bank " * 45] * 6), "bank", "bert")
    assert len(a.occurrences) == ctx.MAX_OCCURRENCES and a.similarity.shape[1:] == (200, 200)
    assert a.truncated == [] and "first 200" in a.notes[0]


def test_elmo_dispatch_three_layers_and_mix(fake_registry):
    a = ctx.analyse(BANK, "bank", "elmo")
    assert a.kind == "elmo" and a.n_layers == 3 and a.layer_names == ["token layer", "biLSTM 1", "biLSTM 2"]
    view = ctx.mix_view(a, [0.0, 1.0, -1.0], 2.0)
    assert view["vectors"].shape == (16, 8) and view["weights"].sum() == pytest.approx(1.0)
    assert view["points"].shape == (16, 2) and -1 <= view["silhouette"] <= 1
    kinds = {r["kind"]: r["available"] for r in ctx.compare(BANK, "bank")}
    assert kinds == {"bert": True, "elmo": True, "static": True}


def test_unavailable_model_and_unknown_name(monkeypatch):
    reg = Registry()
    reg._specs_imported = True

    def broken(located, dev):
        raise RuntimeError("the ELMo loader is not written yet")

    reg.register(ModelSpec("elmo-x", "contextual_elmo", "ELMo X", (Source("trained-here", "nowhere-xyz"),), broken))
    monkeypatch.setattr(ctx, "REGISTRY", reg)
    with pytest.raises(ModelUnavailable):
        ctx.analyse(BANK, "bank", "elmo")
    with pytest.raises(UserInputError, match="unknown model 'gpt'"):
        ctx.analyse(BANK, "bank", "gpt")
    results = ctx.compare(BANK, "bank", kinds=("elmo",))
    assert results[0]["available"] is False and "ELMo X" in results[0]["reason"]


def test_layer_maps_are_aligned_across_layers(fake_registry):
    a = ctx.analyse(BANK, "bank", "bert")
    maps = ctx.all_layer_maps(a)
    assert maps.shape == (4, 16, 2) and ctx.all_layer_maps(a) is maps  # computed once
    for k in range(1, 4):
        raw = ctx.pca_2d(a.vectors[k])
        assert np.allclose(np.abs(maps[k]), np.abs(raw))
        assert all(maps[k, :, j] @ maps[k - 1, :, j] >= 0 for j in (0, 1))
    points, used, _ = ctx.analysis_map(a, 2, "pca")
    assert used == "pca" and np.array_equal(points, maps[2])


def test_layer_map_falls_back_to_pca():
    x = _random_vectors(n=4)
    points, used, note = ctx.layer_map(x, "umap")
    assert points.shape == (4, 2) and used == "pca" and "UMAP needs" in note
    points, used, _ = ctx.layer_map(np.repeat(x[:1], 6, axis=0), "umap")
    assert used == "pca" and np.allclose(points, 0)


# ---------------------------------------------------------------- the packaged model
@pytest.mark.slow
def test_minilm_separates_bank_perfectly_from_layer_2():
    """The measured fact the station shows: 8 river + 8 money "bank" sentences, MiniLM-L6."""
    ctx._layer_cache.clear()
    try:
        a = ctx.analyse(BANK, "bank", "minilm")
    except ModelUnavailable as exc:
        pytest.skip(f"packaged MiniLM not installed: {exc}")
    assert a.n_layers == 7
    assert a.curves["split_accuracy"][2:] == [1.0] * 5
    assert a.curves["split_accuracy"][0] < 0.8
    assert all(v > 0.05 for v in a.curves["within_minus_across"][2:])
