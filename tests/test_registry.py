"""The registry: source order, hashes, fallbacks, the hub path on a tiny saved model."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch

from engine import sources
from engine.errors import ModelUnavailable, UserInputError
from engine.registry import ROLES, ModelSpec, Registry
from engine.sources import Source, SourceError, locate


def _text_loader(located, device):
    path = located.path if located.path.is_file() else located.path / "weights.txt"
    return {"text": path.read_text(), "kind": located.source.kind}


def _write(folder: Path, text: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "weights.txt").write_text(text)
    return hashlib.sha256(text.encode()).hexdigest()


def test_first_working_source_wins_and_order_is_kept(checkpoints):
    _write(checkpoints / "trained" / "toy", "trained")
    _write(checkpoints / "toy", "dropped")
    reg = Registry()
    reg._specs_imported = True
    reg.register(ModelSpec("toy", "cnn", "Toy", (Source("checkpoints", "toy"), Source("trained-here", "toy")), _text_loader))
    loaded = reg.get("cnn")
    assert loaded.obj == {"text": "dropped", "kind": "checkpoints"}
    assert loaded.source_kind == "checkpoints"
    assert reg.get("cnn", "toy") is loaded  # cached, not reloaded


def test_wrong_sha256_is_reported_and_next_source_used(checkpoints):
    good = _write(checkpoints / "trained" / "toy", "trained")
    _write(checkpoints / "toy", "tampered")
    reg = Registry()
    reg._specs_imported = True
    reg.register(ModelSpec("toy", "cnn", "Toy", (
        Source("checkpoints", "toy", sha256={"weights.txt": good}),
        Source("trained-here", "toy", sha256={"weights.txt": good}),
    ), _text_loader))
    loaded = reg.get("cnn")
    assert loaded.obj["kind"] == "trained-here"
    with pytest.raises(SourceError, match="sha256"):
        locate(Source("checkpoints", "toy", sha256={"weights.txt": good}))


def test_nothing_loads_gives_every_reason_and_other_roles_keep_working(checkpoints):
    _write(checkpoints / "fine", "ok")
    reg = Registry()
    reg._specs_imported = True
    reg.register(ModelSpec("gone", "mae", "Gone", (Source("checkpoints", "gone"), Source("package", "no_such_pkg_xyz/w.bin")), _text_loader))
    reg.register(ModelSpec("fine", "cnn", "Fine", (Source("checkpoints", "fine"),), _text_loader))
    with pytest.raises(ModelUnavailable) as err:
        reg.get("mae")
    assert "no_such_pkg_xyz is not installed" in str(err.value)
    assert "gone" in str(err.value)
    assert reg.get("cnn").obj["text"] == "ok"
    rows = {r["role"]: r for r in reg.status() if r["id"]}
    assert rows["mae"]["available"] is False and rows["mae"]["note"].startswith("unavailable")
    assert rows["cnn"]["loaded"] is True


def test_unknown_model_id_names_the_choices():
    reg = Registry()
    reg._specs_imported = True
    reg.register(ModelSpec("a", "cnn", "A", (Source("checkpoints", "a"),), _text_loader))
    with pytest.raises(UserInputError, match="choose one of: a"):
        reg.get("cnn", "nope")


def test_hub_is_never_tried_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def boom(*a, **k):  # any network touch fails the test
        raise AssertionError("network probed while offline")

    monkeypatch.setattr(sources.socket, "create_connection", boom)
    with pytest.raises(SourceError, match="offline"):
        locate(Source("hub", "google-bert/bert-base-uncased"))


def test_hub_loading_code_on_a_tiny_saved_bert(checkpoints):
    """The real from_pretrained path (hub or folder), on a 2-layer BERT the test saves."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from engine.models.bert import load_bert

    folder = checkpoints / "tiny-bert"
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "river", "bank", "money", "."]
    folder.mkdir()
    (folder / "vocab.txt").write_text("\n".join(vocab))
    BertTokenizerFast(vocab_file=str(folder / "vocab.txt")).save_pretrained(folder)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=128, max_position_embeddings=64)
    BertModel(cfg).save_pretrained(folder)

    reg = Registry()
    reg._specs_imported = True
    reg.register(ModelSpec("tiny-bert", "contextual_bert", "Tiny BERT",
                           (Source("checkpoints", "tiny-bert"), Source("hub", "tiny/never-used")), load_bert))
    loaded = reg.get("contextual_bert")
    bundle = loaded.obj
    assert loaded.source_kind == "checkpoints"
    assert bundle.num_layers == 2 and bundle.num_heads == 4
    enc = bundle.tokenizer("the river bank .", return_tensors="pt")
    with torch.inference_mode():
        out = bundle.model(**enc, output_attentions=True, output_hidden_states=True)
    assert len(out.hidden_states) == 3
    assert out.attentions[0].shape == (1, 4, enc["input_ids"].shape[1], enc["input_ids"].shape[1])
    assert torch.allclose(out.attentions[0].sum(-1), torch.ones(1, 4, enc["input_ids"].shape[1]), atol=1e-5)
    assert loaded.params == sum(p.numel() for p in bundle.model.parameters())


def test_real_registry_lists_every_role():
    from engine.registry import REGISTRY

    rows = REGISTRY.status()
    assert {r["role"] for r in rows} == set(ROLES)
    for row in rows:
        assert {"role", "id", "source", "device", "loaded", "params", "note"} <= set(row)
        assert row["source"] in sources.SOURCE_KINDS


def test_default_is_the_preferred_model_not_whatever_is_loaded(checkpoints):
    _write(checkpoints / "first", "first")
    _write(checkpoints / "second", "second")
    reg = Registry()
    reg._specs_imported = True
    reg.register(ModelSpec("first", "cnn", "First", (Source("checkpoints", "first"),), _text_loader))
    reg.register(ModelSpec("second", "cnn", "Second", (Source("checkpoints", "second"),), _text_loader))
    reg.get("cnn", "second")  # someone asked for the second one explicitly
    assert reg.get("cnn").spec.id == "first"


def test_a_failed_preferred_spec_is_not_retried_on_every_call(checkpoints):
    _write(checkpoints / "fallback", "ok")
    calls = {"n": 0}

    def failing(located, device):
        calls["n"] += 1
        raise RuntimeError("broken weights")

    _write(checkpoints / "broken", "x")
    reg = Registry()
    reg._specs_imported = True
    reg.register(ModelSpec("broken", "cnn", "Broken", (Source("checkpoints", "broken"),), failing))
    reg.register(ModelSpec("fallback", "cnn", "Fallback", (Source("checkpoints", "fallback"),), _text_loader))
    assert reg.get("cnn").spec.id == "fallback"
    assert reg.get("cnn").spec.id == "fallback"
    assert calls["n"] == 1


def test_trained_here_files_are_pinned_by_their_manifest(checkpoints):
    import json

    folder = checkpoints / "trained" / "toy"
    digest = _write(folder, "trained")
    (folder / "manifest.json").write_text(json.dumps({"files": {"weights.txt": {"sha256": digest}}}))
    assert locate(Source("trained-here", "toy")).path == folder
    (folder / "weights.txt").write_text("tampered")
    with pytest.raises(SourceError, match="sha256"):
        locate(Source("trained-here", "toy"))
    (folder / "manifest.json").write_text(json.dumps({"file": "weights.txt", "sha256": digest}))
    with pytest.raises(SourceError, match="sha256"):
        locate(Source("trained-here", "toy"))
