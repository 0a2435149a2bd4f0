"""Cloze station: fill-mask ranks, bad input, click-to-mask, the offline model, `/fill_mask`.

Engine tests use a tiny random BertForMaskedLM with the packaged MiniLM tokenizer; the
ranks are checked against a direct computation through the full model.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from engine import cloze
from engine.errors import UserInputError


class TinyBundle:
    def __init__(self, model, tokenizer):
        self.model, self.tokenizer, self.note = model, tokenizer, "tiny random model for tests"


@pytest.fixture(scope="module")
def tiny():
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from engine.models.mlm import minilm_base_dir

    tok = AutoTokenizer.from_pretrained(str(minilm_base_dir()))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64)
    config._attn_implementation = "eager"
    tok.model_max_length = 64
    return TinyBundle(BertForMaskedLM(config).eval(), tok)


def direct_topk(bundle, text: str, k: int) -> list[list[tuple[str, float]]]:
    """Full model, softmax over the vocabulary, special/[unused] pieces left out of the ranking."""
    tok = bundle.tokenizer
    enc = tok(text, return_tensors="pt", truncation=True, max_length=tok.model_max_length)
    with torch.no_grad():
        probs = torch.softmax(bundle.model(**enc).logits[0], -1).numpy()
    vocab = tok.convert_ids_to_tokens(list(range(len(tok))))
    ok = np.array([not (t.startswith("[") and t.endswith("]")) for t in vocab])
    out = []
    for pos in np.where(enc["input_ids"][0].numpy() == tok.mask_token_id)[0]:
        p = np.where(ok, probs[pos], -1.0)
        idx = np.argsort(-p, kind="stable")[:k]
        out.append([(vocab[i], float(p[i])) for i in idx])
    return out


def test_ranks_agree_with_a_direct_computation(tiny):
    text = "The capital of France is [MASK], and [mask] is its river."
    r = cloze.predict(tiny, text, k=7)
    want = direct_topk(tiny, cloze.normalise(text), 7)
    assert len(r.predictions) == 2
    for got, exp in zip(r.predictions, want, strict=True):
        assert [t for t, _ in got] == [t for t, _ in exp]
        np.testing.assert_allclose([s for _, s in got], [s for _, s in exp], rtol=1e-4, atol=1e-7)
        assert all(a >= b for (_, a), (_, b) in zip(got, got[1:]))
        assert not any(t.startswith("[") for t, _ in got)


def test_left_context_only_cuts_the_text_after_each_mask(tiny):
    r = cloze.predict_left_only(tiny, "one [MASK] two three [MASK] four five", k=4)
    assert r.predictions[0] == cloze.predict(tiny, "one [MASK]", k=4).predictions[0]
    assert r.predictions[1] == cloze.predict(tiny, "one [MASK] two three [MASK]", k=4).predictions[1]
    assert r.predictions[0] != cloze.predict(tiny, "one [MASK] two three [MASK] four five", k=4).predictions[0]
    assert any("Left context only" in n for n in r.notes)


def test_lower_case_and_spaced_masks_are_read(tiny):
    r = cloze.predict(tiny, "a [mask] b [ MASK ] c [Mask]", k=3)
    assert len(r.predictions) == 3 and r.tokens.count("[MASK]") == 3


@pytest.mark.parametrize("text, match", [
    ("", "empty"), ("   ", "empty"), ("no blank here", "no \\[MASK\\]"),
    ("[MASK] " * 21, "limit is 20"), ("x" * 10_001, "limit"),
])
def test_bad_text_is_a_clear_error(tiny, text, match):
    with pytest.raises(UserInputError, match=match):
        cloze.predict(tiny, text)


def test_twenty_masks_emoji_cjk(tiny):
    assert len(cloze.predict(tiny, " ".join(["[MASK]"] * 20), k=2).predictions) == 20
    r = cloze.predict(tiny, "I ate 🍕 in 北京 with a [MASK].", k=2)
    assert len(r.predictions) == 1 and any("[UNK]" in n for n in r.notes)


def test_long_text_is_cut_and_says_so(tiny):
    r = cloze.predict(tiny, "The [MASK] sat. " + "word " * 200 + "and [MASK] here", k=2)
    assert r.truncated and len(r.predictions) == 1 and len(r.tokens) == 64
    assert any("cut" in n and "dropped" in n for n in r.notes)
    with pytest.raises(UserInputError, match="beyond"):
        cloze.predict(tiny, "word " * 200 + "[MASK]")


@pytest.mark.parametrize("k", [0, 51])
def test_k_out_of_range(tiny, k):
    with pytest.raises(UserInputError, match="k must be"):
        cloze.predict(tiny, "a [MASK]", k=k)


def test_click_to_mask_and_back():
    text = "Hello, world! It's a [MASK] day."
    assert cloze.words(text) == ["Hello", ",", "world", "!", "It's", "a", "[MASK]", "day", "."]
    masked = cloze.toggle_mask(text, 2, original=text)
    assert masked == "Hello, [MASK]! It's a [MASK] day."
    assert cloze.toggle_mask(masked, 2, original=text) == text
    assert cloze.toggle_mask(masked, 6, original=text) == masked  # no word to bring back
    with pytest.raises(UserInputError):
        cloze.toggle_mask(text, 99)


def test_filled_text_and_figure(tiny):
    r = cloze.predict(tiny, "[MASK] [MASK] cat", k=3)
    d = r.to_api()
    assert d["filled"].endswith("cat") and "[MASK]" not in d["filled"]
    fig = cloze.bar_figure(r)
    assert len(fig.data) == 2 and fig.layout.height


# ---------------------------------------------------------------- the offline model trained here
def test_trained_checkpoint_loads_and_beats_the_unigram_baseline():
    from engine.models.mlm import TRAINED_ID, trained_manifest
    from engine.registry import REGISTRY

    manifest = trained_manifest()
    assert manifest is not None, "checkpoints/trained/minilm-mlm-here/manifest.json is missing"
    m = manifest["metrics"]
    assert m["top5"] > m["unigram_top5"]
    assert m["content_top5"] > m["unigram_of_content_words_top5"]
    assert {"command", "data", "minutes", "sha256"} <= set(manifest)
    loaded = REGISTRY.get("mlm", TRAINED_ID)
    assert loaded.source_kind == "trained-here" and "not BERT" in loaded.obj.note
    assert loaded.obj.model.cls.predictions.decoder.weight is loaded.obj.model.bert.embeddings.word_embeddings.weight
    r = cloze.run("In the beginning God created the heavens and the [MASK].", 5, TRAINED_ID)
    assert len(r.predictions[0]) == 5 and "not BERT" in r.model
    json.dumps(r.to_api())


def test_a_corrupt_trained_checkpoint_is_reported_not_loaded(checkpoints):
    from engine.errors import ModelUnavailable
    from engine.models.mlm import TRAINED_ID
    from engine.registry import REGISTRY

    folder = checkpoints / "trained" / TRAINED_ID
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"not weights")
    (folder / "manifest.json").write_text(json.dumps({"file": "model.safetensors", "sha256": "0" * 64}))
    REGISTRY.forget("mlm", TRAINED_ID)
    try:
        with pytest.raises(ModelUnavailable, match="sha256"):
            REGISTRY.get("mlm", TRAINED_ID)
    finally:
        REGISTRY.forget("mlm", TRAINED_ID)


def test_api_fill_mask(client):
    out = client.predict("The [MASK] sat on the [mask].", 4, "", api_name="/fill_mask")
    assert {"model", "source", "predictions"} <= set(out)
    assert len(out["predictions"]) == 2 and all(len(p) == 4 for p in out["predictions"])
    assert all({"token", "score"} <= set(x) for x in out["predictions"][0])
    assert out["source"] in ("checkpoints", "hub", "package", "trained-here")


def test_api_fill_mask_bad_input_keeps_serving(client):
    with pytest.raises(Exception, match="no \\[MASK\\]"):
        client.predict("there is nothing to fill", 5, "", api_name="/fill_mask")
    assert client.predict("a [MASK] b", 1, "", api_name="/fill_mask")["predictions"]
