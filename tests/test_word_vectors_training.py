"""Train-your-own word2vec: a tiny run on the packaged text, saved safely, registered,
usable, cancellable; the held-out loss is the model's own objective."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from engine import word2vec_training as w2v
from engine import word_vectors as wv
from engine.errors import UserInputError
from engine.registry import REGISTRY


def _tiny(name: str = "tiny", **kw) -> w2v.Word2VecConfig:
    base = dict(name=name, sources=("wiki",), epochs=2, vector_size=16, min_count=3, max_sentences=1500, workers=1)
    return w2v.Word2VecConfig(**{**base, **kw})


@pytest.fixture
def cleanup():
    ids: list[str] = []
    yield ids
    REGISTRY._specs["static_vectors"] = [s for s in REGISTRY._specs["static_vectors"] if s.id not in ids]
    for model_id in ids:
        REGISTRY.forget("static_vectors", model_id)
        wv.forget(model_id)


def test_tiny_run_saves_word2vec_binary_with_manifest_and_registers(checkpoints, cleanup):
    events: list[dict] = []
    manifest = w2v.train(_tiny("tiny-sg", sg=1), events.append)
    cleanup.append(manifest["id"])
    folder = checkpoints / "trained" / "word2vec-tiny-sg"
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json", "vectors.bin"]
    on_disk = json.loads((folder / "manifest.json").read_text())
    assert on_disk["sha256"] == manifest["sha256"] and on_disk["command"].startswith("python -m engine.train.word2vec")
    assert [h["epoch"] for h in manifest["history"]] == [0, 1, 2]
    assert all(np.isfinite(h["loss"]) and h["loss"] > 0 for h in manifest["history"])
    assert manifest["history"][-1]["loss"] < manifest["history"][0]["loss"]  # it learned something
    assert {"analogy_top5", "analogy_questions"} <= set(manifest["metrics"])
    assert [e["stage"] for e in events][0] == "corpus" and events[-1]["stage"] == "done"
    fractions = [e["fraction"] for e in events]
    assert fractions == sorted(fractions) or max(fractions) == 1.0
    # a safe format: word2vec binary starts with "<vocab> <dim>\n", no pickle opcode
    head = (folder / "vectors.bin").read_bytes()[:40]
    assert head.split(b"\n")[0] == f"{manifest['vocab_size']} 16".encode()
    loaded = REGISTRY.get("static_vectors", "word2vec-tiny-sg")
    assert loaded.source_kind == "trained-here"
    out = wv.neighbors("the", 3, "word2vec-tiny-sg")
    assert out["model_id"] == "word2vec-tiny-sg" and len(out["results"]) == 3
    assert wv.get_table("").model_id == "glove-6b-50d"  # loading a trained model does not change the default
    ids = [m["id"] for m in wv.available_models()]
    assert "word2vec-tiny-sg" in ids and ids[0] == "glove-6b-50d"


def test_cbow_hierarchical_softmax_and_cancel(checkpoints, cleanup):
    manifest = w2v.train(_tiny("tiny-hs", sg=0, hs=1, epochs=1))
    cleanup.append(manifest["id"])
    assert manifest["params"]["hs"] == 1 and np.isfinite(manifest["history"][-1]["loss"])
    stop = threading.Event()

    def cancel_after_first_epoch(event):
        if event["stage"] == "epoch":
            stop.set()

    with pytest.raises(w2v.Cancelled):
        w2v.train(_tiny("tiny-cancel", epochs=3), cancel_after_first_epoch, stop)
    assert not (checkpoints / "trained" / "word2vec-tiny-cancel").exists()


def test_background_run_follow_and_cancel(checkpoints):
    (checkpoints / "trained" / "word2vec-bg-cancel").mkdir(parents=True)  # an earlier run of that name
    run = w2v.start(_tiny("bg-cancel", epochs=4))
    assert run.config.name == "bg-cancel-2"  # the app never overwrites an earlier model
    w2v.cancel(run.id)
    last = list(w2v.follow(run, every=0.1))[-1]
    assert last["finished"] and "cancelled" in last["error"] and last["result"] is None
    assert not w2v.cancel(run.id)  # already over


@pytest.mark.parametrize("change, message", [
    ({"name": "../evil"}, "name may use"),
    ({"window": 0}, "window must be"),
    ({"epochs": 500}, "epochs must be"),
    ({"sources": ("nope",)}, "Unknown text"),
])
def test_bad_settings_are_refused(change, message):
    with pytest.raises(UserInputError, match=message):
        _tiny(**{"name": "ok", **change}).check()
