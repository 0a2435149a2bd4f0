"""Word vectors station, engine side: the expression parser, ranking against gensim's
`most_similar`, word maps and their fallbacks, bag of words, the sense probe, the
analogy set, and vectors a user drops into checkpoints/."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine import analogy_set, bow
from engine import word_vectors as wv
from engine.errors import UserInputError
from engine.registry import REGISTRY

TINY_WORDS = ["the", "king", "queen", "man", "woman", "prince", "princess", "boy", "girl", "paris", "france",
              "rome", "italy", "apple", "pear", "x-ray", "river", "bank", "money", "shore"]


def _tiny_vectors(seed: int = 0) -> np.ndarray:
    """(20, 8) float32 with a real gender offset: queen = king + g, woman = man + g, ..."""
    rng = np.random.default_rng(seed)
    vecs = {w: rng.normal(size=8) for w in TINY_WORDS}
    g = rng.normal(size=8)
    for a, b in [("king", "queen"), ("man", "woman"), ("prince", "princess"), ("boy", "girl")]:
        vecs[b] = vecs[a] + g + 0.05 * rng.normal(size=8)
    return np.stack([vecs[w] for w in TINY_WORDS]).astype(np.float32)


@pytest.fixture
def tiny(checkpoints):
    """A word2vec text file dropped into a private checkpoints/, found by discovery."""
    from engine.models.static_vectors import discover

    vecs = _tiny_vectors()
    lines = [f"{len(TINY_WORDS)} 8"] + [w + " " + " ".join(f"{x:.6f}" for x in v) for w, v in zip(TINY_WORDS, vecs, strict=True)]
    (checkpoints / "tiny.txt").write_text("\n".join(lines) + "\n")
    added = discover()
    assert "tiny" in added
    yield "tiny"
    REGISTRY._specs["static_vectors"] = [s for s in REGISTRY._specs["static_vectors"] if s.id not in added]
    for model_id in added:
        REGISTRY.forget("static_vectors", model_id)
        wv.forget(model_id)


# ---------------------------------------------------------------- parser
@pytest.mark.parametrize("text, positive, negative", [
    ("king - man + woman", ("king", "woman"), ("man",)),
    ("king -man +woman", ("king", "woman"), ("man",)),
    ("man : king :: woman : ?", ("king", "woman"), ("man",)),
    ("man:king::woman", ("king", "woman"), ("man",)),
    ("bank + river", ("bank", "river"), ()),
    ("bank river", ("bank", "river"), ()),
    ("x-ray - x + y", ("x-ray", "y"), ("x",)),
    ("- man + king", ("king",), ("man",)),
])
def test_parser_accepts_both_notations(text, positive, negative):
    expr = wv.parse_expression(text)
    assert expr.positive == positive and expr.negative == negative


def test_parser_keeps_typed_order_for_display():
    assert str(wv.parse_expression("king - man + woman")) == "king - man + woman"
    assert str(wv.parse_expression("man : king :: woman : ?")) == "king - man + woman"


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("   ", "empty"),
    ("king - - man", "two operators in a row"),
    ("+", "no words"),
    ("- +", "two operators"),
    ("king -", "ends with"),
    ("man : king", "::"),
    ("a : b :: c d : ?", "one word"),
    ("word " * 200, "characters"),
    (" + ".join(["w"] * 13), "at most"),
])
def test_parser_rejects_malformed_expressions(text, message):
    with pytest.raises(UserInputError, match=message):
        wv.parse_expression(text)


# ---------------------------------------------------------------- ranking
def test_ranking_matches_gensim_most_similar(tiny):
    kv = REGISTRY.get("static_vectors", tiny).obj
    for limit in (None, 12):
        ours = wv.analogy("king - man + woman", 5, tiny, limit=limit)
        theirs = kv.most_similar(positive=["king", "woman"], negative=["man"], topn=5, restrict_vocab=limit)
        assert [r["word"] for r in ours["results"]] == [w for w, _ in theirs]
        assert np.allclose([r["score"] for r in ours["results"]], [s for _, s in theirs], atol=1e-4)
    assert ours["results"][0]["word"] == "queen"
    near = wv.neighbors("king", 4, tiny)
    assert [r["word"] for r in near["results"]] == [w for w, _ in kv.most_similar("king", topn=4)]


def test_default_glove_solves_the_classic_and_names_itself():
    out = wv.analogy("king - man + woman", 5)
    assert out["model_id"] == "glove-6b-50d" and out["source"] == "package"
    assert "GloVe 6B 50d" in out["model"]
    assert out["results"][0]["word"] == "queen"
    words = [r["word"] for r in out["results"]]
    assert not {"king", "man", "woman"} & set(words)  # input words left out ...
    assert out["left_out"] and out["left_out"][0]["word"] == "king"  # ... and reported
    kv = REGISTRY.get("static_vectors").obj
    theirs = kv.most_similar(positive=["king", "woman"], negative=["man"], topn=5)
    assert words == [w for w, _ in theirs]


def test_vocabulary_limit_changes_the_candidates():
    full = wv.analogy("paris - france + italy", 10)
    small = wv.analogy("paris - france + italy", 10, limit=2000)
    assert small["vocab_limit"] == 2000 and full["vocab_limit"] == full["vocab_size"]
    assert all(r["rank"] <= 2000 for r in small["results"])
    assert any(r["rank"] > 2000 for r in full["results"])


def test_case_and_punctuation_are_forgiven():
    assert wv.analogy("King - Man + Woman", 3)["results"][0]["word"] == "queen"
    assert wv.neighbors("Paris,", 3)["positive"] == ["paris"]


@pytest.mark.parametrize("text, named", [
    ("kingg - man + woman", "'kingg' (did you mean king"),
    ("😀 - man + woman", "'😀' (no similar spelling)"),
    ("北京大学 - man", "北京大学"),
    ("king-man+woman", "put spaces around the minus"),
])
def test_unknown_words_are_named_with_spellings(text, named):
    with pytest.raises(UserInputError, match="Not in the vocabulary") as err:
        wv.analogy(text, 5)
    assert named in str(err.value)


def test_one_word_is_not_an_analogy_and_k_is_bounded():
    with pytest.raises(UserInputError, match="Neighbours"):
        wv.analogy("king", 5)
    with pytest.raises(UserInputError, match="k must be"):
        wv.analogy("king - man + woman", 0)
    with pytest.raises(UserInputError, match="cancel out"):
        wv.analogy("king - king", 5)
    with pytest.raises(UserInputError, match="unknown static_vectors model"):
        wv.analogy("king - man + woman", 5, "no-such-vectors")


def test_neighbours_of_an_expression():
    out = wv.neighbors("bank + river", 10)
    assert out["positive"] == ["bank", "river"] and out["word"] == "bank + river"
    assert {"bank", "river"}.isdisjoint(r["word"] for r in out["results"])


# ---------------------------------------------------------------- word map
def test_map_words_and_pairs_parse():
    req = wv.parse_map_words("man:woman, king->queen paris")
    assert req.words == ("man", "woman", "king", "queen", "paris")
    assert req.pairs == (("man", "woman"), ("king", "queen"))
    with pytest.raises(UserInputError, match="at most"):
        wv.parse_map_words(" ".join(f"w{i}" for i in range(500)))
    with pytest.raises(UserInputError, match="No words"):
        wv.parse_map_words(" , ")


def test_pca_on_pair_differences_keeps_offsets_parallel():
    rng = np.random.default_rng(1)
    base = rng.normal(size=(4, 16))
    offset = rng.normal(size=16)
    x = np.vstack([base, base + offset])
    xy = wv.pair_axes_projection(x, np.tile(offset, (4, 1)))
    arrows = xy[4:] - xy[:4]
    assert np.allclose(arrows, arrows[0], atol=1e-9) and arrows[0, 0] > 0 and abs(arrows[0, 1]) < 1e-9


def test_word_map_pca_with_pairs_and_missing_words():
    out = wv.word_map("man:woman king:queen uncle:aunt zzqxw", "pca")
    assert out["method"] == "pca" and out["missing"] == ["zzqxw"]
    assert [p["word"] for p in out["points"]] == ["man", "woman", "king", "queen", "uncle", "aunt"]
    assert out["pairs"] == [["man", "woman"], ["king", "queen"], ["uncle", "aunt"]]
    assert all(len(p["neighbors"]) == 5 and p["word"] not in p["neighbors"] for p in out["points"])
    arrows = {(a, b) for a, b in out["pairs"]}
    xy = {p["word"]: (p["x"], p["y"]) for p in out["points"]}
    assert all(xy[b][0] > xy[a][0] for a, b in arrows)  # every arrow points the same way along axis 1


def test_umap_falls_back_to_pca_for_two_words():
    out = wv.word_map("paris, rome", "umap")
    assert out["method"] == "pca" and out["requested_method"] == "umap"
    assert "UMAP needs at least 5" in out["note"]


def test_word_map_bad_inputs():
    with pytest.raises(UserInputError, match="pca' or 'umap"):
        wv.word_map("a b c", "tsne")
    with pytest.raises(UserInputError, match="at least two"):
        wv.word_map("😀 🙂", "pca")
    with pytest.raises(UserInputError, match="at least two different"):
        wv.word_map("King king", "pca")


# ---------------------------------------------------------------- bag of words
def test_bag_of_words_blind_to_synonyms_and_to_order():
    _, a, b = bow.PRESETS[0]
    out = bow.compare(a, b)
    assert out["bow_cosine"] == 0.0 and out["shared"] == []
    assert out["avg_cosine"] > out["bow_cosine"]
    doctor = bow.compare(*bow.PRESETS[1][1:])
    assert doctor["bow_cosine"] == 0.0 and doctor["avg_cosine"] > doctor["random_pairs_p95"]
    same = bow.compare("the dog bit the man", "the man bit the dog")
    assert same["same_bag"] and same["bow_cosine"] == pytest.approx(1.0) and same["avg_cosine"] == pytest.approx(1.0)
    with pytest.raises(UserInputError, match="Sentence B is empty"):
        bow.compare("a cat", "  ")
    with pytest.raises(UserInputError, match="no words"):
        bow.compare("a cat", "!!! ???")
    emoji = bow.compare("😀 北京", "hello")
    assert emoji["avg_cosine"] is None or isinstance(emoji["avg_cosine"], float)


# ---------------------------------------------------------------- the limit
def test_bank_senses_one_vector_leans_to_money():
    out = wv.senses("bank", "money, loan, deposit", "river, shore, stream", 15)
    assert out["similarity"]["a"] > out["similarity"]["b"]
    assert sum(r["leans"] == "a" for r in out["neighbors"]) > sum(r["leans"] == "b" for r in out["neighbors"])
    river_place = {d["word"]: d["place"] for d in out["sense_words"]["b"]}["river"]
    assert river_place > 15  # the river sense is not among the nearest words ...
    assert "shore" in [r["word"] for r in out["with_b"]] or "banks" in [r["word"] for r in out["with_b"]]
    with pytest.raises(UserInputError, match="one word"):
        wv.senses("bank - money", "money", "river")


# ---------------------------------------------------------------- analogy set
def test_analogy_set_has_every_category_and_glove_scores():
    data = analogy_set.load()
    assert set(data["categories"]) == set(analogy_set.CATEGORIES)
    qs = analogy_set.questions()
    assert len(qs) > 700 and all(len(set(q[1:])) == 4 for q in qs)
    result = analogy_set.evaluate_model("", limit=30_000)
    assert result["questions"] == len(qs) and 0.6 < result["topk"] <= 1.0
    assert set(result["by_category"]) == set(analogy_set.CATEGORIES)


def test_presets_parse_and_use_known_words():
    table = wv.get_table()
    for preset in analogy_set.load()["presets"]:
        expr = wv.parse_expression(preset["expression"])
        wv.resolve(table, list(expr.terms) + [preset["expected"]])


# ---------------------------------------------------------------- models found on disk
def test_user_file_is_registered_and_named(tiny):
    out = wv.neighbors("king", 3, tiny)
    assert out["model_id"] == "tiny" and out["source"] == "checkpoints"
    assert "checkpoints/tiny.txt" in out["model"]
    ids = [s.id for s in REGISTRY.specs("static_vectors")]
    assert ids.index("glove-6b-50d") < ids.index("tiny")  # GloVe stays the default


def test_a_user_file_never_shadows_a_known_name(checkpoints):
    from engine.models.static_vectors import discover

    (checkpoints / "glove.6B.100d.txt").write_text("the 0.1 0.2\nking 0.3 0.1\n")
    try:
        assert discover() == ["glove.6B.100d.txt"]  # "glove" is already an alias of GloVe 6B 50d
        assert REGISTRY.spec("static_vectors", "glove").id == "glove-6b-50d"
    finally:
        REGISTRY._specs["static_vectors"] = [s for s in REGISTRY._specs["static_vectors"]
                                             if s.id != "glove.6B.100d.txt"]


def test_trained_folder_is_pinned_to_its_manifest(checkpoints):
    from gensim.models import KeyedVectors

    from engine.models.static_vectors import discover
    from engine.sources import sha256_file

    folder = checkpoints / "trained" / "word2vec-toy"
    folder.mkdir(parents=True)
    kv = KeyedVectors(vector_size=8)
    kv.add_vectors(TINY_WORDS, _tiny_vectors())
    kv.save_word2vec_format(str(folder / "vectors.bin"), binary=True)
    manifest = {"file": "vectors.bin", "sha256": sha256_file(folder / "vectors.bin"), "vocab_size": 20,
                "params": {"sg": 0, "hs": 1, "vector_size": 8, "window": 2, "epochs": 1}, "data": "toy"}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    try:
        assert discover() == ["word2vec-toy"]
        spec = REGISTRY.spec("static_vectors", "word2vec-toy")
        assert "CBOW, hierarchical softmax" in spec.note
        loaded = REGISTRY.get("static_vectors", "word2vec-toy")
        assert loaded.source_kind == "trained-here" and loaded.obj.vectors.shape == (20, 8)
        (folder / "vectors.bin").write_bytes(b"tampered")
        REGISTRY.forget("static_vectors", "word2vec-toy")
        with pytest.raises(Exception, match="sha256"):
            REGISTRY.get("static_vectors", "word2vec-toy")
    finally:
        REGISTRY._specs["static_vectors"] = [s for s in REGISTRY._specs["static_vectors"] if s.id != "word2vec-toy"]
        REGISTRY.forget("static_vectors", "word2vec-toy")
