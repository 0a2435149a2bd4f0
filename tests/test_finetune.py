"""The fine-tuning lab's engine on tiny models: splits, freezing, cancel, NaN, caps, the run store."""

from __future__ import annotations

import copy
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.errors import UserInputError
from engine.finetune import lab
from engine.finetune.config import MAX_STEPS, make_config
from engine.finetune.store import RunStore, RunStoreError
from engine.finetune.tasks import TASK_NAMES, get_task
from engine.finetune.trainer import Trainer, frozen_units
from engine.registry import ModelSpec, Registry
from engine.sources import Source

WORDS = ["great", "love", "thanks", "awesome", "happy", "bad", "hate", "delayed", "worst", "flight", "cars",
         "the", "a", "i", "you", "my", "is", "not", "to", "and", "!", ".", ",", "@", "#"]


# ------------------------------------------------------------------ tiny models
@pytest.fixture(scope="module")
def tiny_registry(tmp_path_factory) -> Registry:
    """A registry whose BERT, GloVe and CNN roles are tiny models saved in a temp checkpoints dir."""
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from engine.models.bert import load_bert
    from engine.models.static_vectors import keyed_vectors

    folder = tmp_path_factory.mktemp("ckpt")
    bert_dir = folder / "tiny-bert"
    bert_dir.mkdir()
    (bert_dir / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]))
    BertTokenizerFast(vocab_file=str(bert_dir / "vocab.txt")).save_pretrained(bert_dir)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(WORDS) + 5, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=80)).save_pretrained(bert_dir)
    for name in ("tiny-glove", "tiny-cnn"):  # the loaders below build them; the folders only need to exist
        (folder / name).mkdir()
        (folder / name / "README").write_text("built by the test")
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(WORDS), 8)).astype(np.float32)

    def glove_loader(located, device):
        return keyed_vectors(WORDS, vectors.copy())

    def cnn_loader(located, device):
        import timm

        torch.manual_seed(123)  # "pretrained": any weights other than a scratch run's seed-0 ones
        model = timm.create_model("test_efficientnet", pretrained=False).eval()
        for p in model.parameters():
            p.requires_grad_(False)  # as the real CNN loader leaves it
        return model

    import os

    old = os.environ.get("PTX_CHECKPOINTS")
    os.environ["PTX_CHECKPOINTS"] = str(folder)
    reg = Registry()
    reg._specs_imported = True
    reg.register(ModelSpec("tiny-bert", "contextual_bert", "Tiny BERT", (Source("checkpoints", "tiny-bert"),), load_bert))
    reg.register(ModelSpec("tiny-glove", "static_vectors", "Tiny GloVe", (Source("checkpoints", "tiny-glove"),), glove_loader))
    reg.register(ModelSpec("tiny-cnn", "cnn", "Tiny CNN", (Source("checkpoints", "tiny-cnn"),), cnn_loader,
                           preprocess={"mean": (0.5, 0.5, 0.5), "std": (0.5, 0.5, 0.5)}))
    for role in ("contextual_bert", "static_vectors", "cnn"):
        reg.get(role)  # load now, while PTX_CHECKPOINTS points at the tiny models
    if old is None:
        os.environ.pop("PTX_CHECKPOINTS", None)
    else:
        os.environ["PTX_CHECKPOINTS"] = old
    return reg


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    return RunStore(tmp_path / "runs.sqlite")


def _trainer(reg: Registry, task: str, mode: str, model: str, freeze: int = -1, steps: int = 3, lr: float = 1e-2,
             image_px: int = 32) -> Trainer:
    config = make_config(task, mode, steps, lr, 0, model=model, freeze_layers=freeze)
    config.image_px = image_px
    loaded = reg.get(config.role)
    body = lab.build_body(get_task(task), config, loaded)
    return Trainer(body, get_task(task), config, torch.device("cpu"))


def _drain(trainer: Trainer) -> dict:
    trainer.prepare()
    events = list(trainer.run())
    return events[-1]


# ------------------------------------------------------------------ splits
@pytest.mark.parametrize("name", TASK_NAMES)
def test_splits_are_fixed_disjoint_and_balanced(name):
    task = get_task(name)
    ids = {s: set(task.split(s).ids) for s in ("train", "val", "test")}
    assert not ids["train"] & ids["test"] and not ids["train"] & ids["val"] and not ids["val"] & ids["test"]
    for s in ("train", "val", "test"):
        split = task.split(s)
        assert len(split.ids) == len(set(split.ids)) == len(split.labels) == len(split.inputs) > 0
        counts = np.bincount(split.labels, minlength=len(task.classes))
        assert counts.max() - counts.min() <= 1  # balanced
    # Fixed: rebuilt from the data, the splits are identical (they never depend on a run's seed).
    again = task.load()
    assert again["test"].ids == task.split("test").ids


def test_sentiment_has_no_text_in_two_splits():
    task = get_task("sentiment")
    norm = {s: {" ".join(t.lower().split()) for t in task.split(s).inputs} for s in ("train", "val", "test")}
    assert not norm["train"] & norm["test"] and not norm["train"] & norm["val"]
    assert set(task.classes) == {"negative", "positive"}


# ------------------------------------------------------------------ freezing
def _params(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def _changed(before: dict, module: torch.nn.Module) -> set[str]:
    return {k for k, v in module.state_dict().items() if not torch.equal(before[k], v)}


def test_frozen_mode_trains_only_the_head(tiny_registry):
    t = _trainer(tiny_registry, "sentiment", "frozen", "bert")
    body_before, head_before = _params(t.body), _params(t.head)
    _drain(t)
    assert not _changed(body_before, t.body)
    assert _changed(head_before, t.head)
    assert t.frozen_unit_names() == ["embeddings", "layer 1", "layer 2"]


def test_freeze_lowest_n_layers_keeps_exactly_those(tiny_registry):
    t = _trainer(tiny_registry, "sentiment", "finetune", "bert", freeze=2)
    before = [_params(u) for u in t.body.units]
    _drain(t)
    changed = [bool(_changed(b, u)) for b, u in zip(before, t.body.units)]
    assert changed == [False, False, True]  # embeddings and layer 1 frozen, layer 2 learned


def test_frozen_cnn_keeps_batchnorm_statistics(tiny_registry):
    t = _trainer(tiny_registry, "faces", "finetune", "cnn", freeze=3)
    before = [_params(u) for u in t.body.units]  # includes BatchNorm running_mean / running_var
    _drain(t)
    for i, (b, u) in enumerate(zip(before, t.body.units)):
        assert bool(_changed(b, u)) == (i >= 3), t.body.unit_names[i]


def test_glove_finetune_moves_embeddings_and_frozen_does_not(tiny_registry):
    for mode, moved in (("frozen", False), ("finetune", True)):
        t = _trainer(tiny_registry, "sentiment", mode, "glove")
        before = _params(t.body)
        _drain(t)
        assert bool(_changed(before, t.body)) == moved


def test_scratch_is_random_same_architecture(tiny_registry):
    pre = _trainer(tiny_registry, "faces", "frozen", "cnn")
    scratch = _trainer(tiny_registry, "faces", "scratch", "cnn")
    assert [type(u) for u in pre.body.units] == [type(u) for u in scratch.body.units]
    a, b = pre.body.state_dict(), scratch.body.state_dict()
    assert a.keys() == b.keys()
    assert any(not torch.equal(a[k], b[k]) for k in a if a[k].is_floating_point())
    assert frozen_units("scratch", 5, 7) == 0 and frozen_units("frozen", 0, 7) == 7


def test_shared_registry_model_is_never_mutated(tiny_registry, store):
    shared = tiny_registry.get("contextual_bert").obj.model
    before = copy.deepcopy(shared.state_dict())
    result = lab.last_result(lab.finetune("sentiment", "finetune", 3, 1e-2, 0, model="bert", store=store,
                                          registry=tiny_registry))
    assert result["status"] == "done"
    after = shared.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not any(p.requires_grad for p in tiny_registry.get("cnn").obj.parameters())


# ------------------------------------------------------------------ runs end to end
def test_run_streams_and_is_stored(tiny_registry, store):
    snaps = list(lab.finetune("faces", "frozen", 4, 1e-2, 1, store=store, registry=tiny_registry))
    final = snaps[-1]
    assert final["status"] == "done" and final["step"] == 4
    assert [h["step"] for h in final["history"]] == [1, 2, 3, 4]
    assert final["eval"]["n"] == len(get_task("faces").split("test")) and 0 <= final["eval"]["accuracy"] <= 1
    assert any(s["phase"] == "training" for s in snaps)
    row = RunStore(store.path).get(final["run_id"])  # a new store object: as after a restart
    assert row["status"] == "done" and row["eval_accuracy"] == final["eval"]["accuracy"]
    assert row["history"][-1]["step"] == 4 and row["config"]["mode"] == "frozen"
    assert row["model"] == "Tiny CNN" and row["device"] == "cpu"
    listed = RunStore(store.path).list()
    assert listed[0]["run_id"] == final["run_id"]
    assert {"run_id", "task", "mode", "steps", "eval_accuracy", "created_at"} <= set(listed[0])


def test_cancel_during_the_first_step_stops_within_a_second(tiny_registry, store, monkeypatch):
    token = lab.new_token()
    fired: list[float] = []
    original = Trainer.logits

    def logits_then_cancel(self, split, indices):
        if split == "train" and not fired:
            fired.append(time.perf_counter())
            lab.request_cancel(token)  # a click on Cancel while the first step runs
        return original(self, split, indices)

    monkeypatch.setattr(Trainer, "logits", logits_then_cancel)
    snaps = []
    for snap in lab.finetune("sentiment", "finetune", 50, 1e-3, 0, model="bert", cancel_token=token, store=store,
                             registry=tiny_registry):
        snaps.append((time.perf_counter(), snap))
    done_at, final = snaps[-1]
    assert final["status"] == "cancelled" and final["step"] == 0 and final["eval"] is None
    assert done_at - fired[0] < 1.0
    assert store.get(final["run_id"])["status"] == "cancelled"


def test_nan_stops_with_a_clear_message(tiny_registry, store, monkeypatch):
    from engine.finetune.bodies import WordBagBody

    original = WordBagBody.pool
    monkeypatch.setattr(WordBagBody, "pool", lambda self, state: original(self, state) * float("nan"))
    final = lab.last_result(lab.finetune("sentiment", "finetune", 5, 1e-2, 0, model="glove", store=store,
                                         registry=tiny_registry))
    assert final["status"] == "diverged" and final["step"] == 0
    assert "NaN" in final["message"] and "learning rate" in final["message"]
    assert store.get(final["run_id"])["status"] == "diverged"


def test_huge_learning_rate_diverges_cleanly(tiny_registry, store):
    final = lab.last_result(lab.finetune("sentiment", "scratch", 30, 1e6, 0, model="glove", store=store,
                                         registry=tiny_registry))
    assert final["status"] in ("diverged", "done")
    if final["status"] == "diverged":
        assert "too high" in final["message"]
    else:  # if it did not blow up, the numbers are still finite
        assert all(np.isfinite(h["loss"]) for h in final["history"])


def test_time_budget_stops_and_says_so(tiny_registry, store):
    final = lab.last_result(lab.finetune("faces", "scratch", 500, 1e-3, 0, max_seconds=0.05, store=store,
                                         registry=tiny_registry))
    assert final["status"] == "done" and final["step"] < 500
    assert any("time budget" in n for n in final["notes"]) and final["eval"] is not None


# ------------------------------------------------------------------ settings
@pytest.mark.parametrize("kwargs, match", [
    (dict(lr=0), "positive"), (dict(lr=-1), "positive"), (dict(lr=float("nan")), "positive"),
    (dict(lr=1e12), "too large"), (dict(steps=0), "at least 1"), (dict(steps=-5), "at least 1"),
    (dict(task="nope"), "unknown task"), (dict(mode="half"), "unknown mode"), (dict(seed=-1), "seed"),
    (dict(model="cnn"), "cannot use"), (dict(steps="many"), "number"), (dict(task=None), "unknown task"),
])
def test_bad_settings_say_what_to_fix(kwargs, match):
    args = dict(task="sentiment", mode="frozen", steps=10, lr=1e-3, seed=0) | kwargs
    with pytest.raises(UserInputError, match=match):
        make_config(**args)


def test_huge_step_counts_are_capped_and_said():
    config = make_config("faces", "finetune", 10**9, 1e-3, 0)
    assert config.steps == MAX_STEPS and "capped" in config.notes[0]
    config = make_config("faces", "frozen", 10, 1e-3, 0, freeze_layers=3)
    assert any("only used in finetune" in n for n in config.notes)


# ------------------------------------------------------------------ the store
def test_run_of_a_stopped_server_is_marked_interrupted(tmp_path):
    path = tmp_path / "runs.sqlite"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    first = RunStore(path)
    first.create({"run_id": "abc", "task": "faces", "mode": "frozen", "history": [{"step": 1, "loss": 0.5}]})
    first.update("abc", pid=int(dead.stdout))  # as if the process that ran it is gone
    first.create({"run_id": "other", "task": "faces", "mode": "frozen"})  # a fresh one of ours: stays running
    runs = {r["run_id"]: r for r in RunStore(path).list(full=True)}
    assert runs["abc"]["status"] == "interrupted" and "interrupted" in runs["abc"]["message"]
    assert runs["abc"]["history"] == [{"step": 1, "loss": 0.5}]  # nothing else is lost
    first.interrupt_active()  # what interpreter exit does
    assert RunStore(path).get("other")["status"] == "interrupted"


def test_unwritable_store_gives_a_clear_error_and_training_still_works(tiny_registry, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    bad = RunStore(blocker / "runs.sqlite")  # its folder cannot be created
    with pytest.raises(RunStoreError, match="PTX_DATA_DIR"):
        bad.list()
    final = lab.last_result(lab.finetune("faces", "frozen", 2, 1e-2, 0, store=bad, registry=tiny_registry))
    assert final["status"] == "done" and final["saved"] is False and "PTX_DATA_DIR" in final["store_error"]

    import sqlite3

    full = RunStore(tmp_path / "full.sqlite")
    full.list()

    def disk_full(*a, **k):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr("engine.finetune.store.sqlite3.connect", disk_full)
    with pytest.raises(RunStoreError, match="disk is full"):
        full.list()


def test_csv_export(tiny_registry, store, tmp_path):
    lab.last_result(lab.finetune("faces", "frozen", 2, 1e-2, 0, store=store, registry=tiny_registry))
    text = store.export_csv(tmp_path / "runs.csv").read_text()
    header = text.splitlines()[0].split(",")
    assert {"run_id", "task", "mode", "steps", "eval_accuracy", "created_at", "config"} <= set(header)
    assert len(text.splitlines()) == 2


def test_one_run_at_a_time(tiny_registry, store):
    """A second run waits (saying so) while the first holds the device."""
    first = lab.finetune("faces", "frozen", 3, 1e-2, 0, store=store, registry=tiny_registry)
    next(first)  # holds the run lock now
    seen: list[dict] = []
    thread = threading.Thread(target=lambda: seen.extend(
        lab.finetune("faces", "frozen", 2, 1e-2, 0, store=store, registry=tiny_registry)))
    thread.start()
    time.sleep(1.2)
    assert seen and seen[0]["status"] == "waiting" and "waiting" in seen[-1]["message"]
    assert lab.last_result(first)["status"] == "done"
    thread.join(timeout=30)
    assert seen[-1]["status"] == "done"
