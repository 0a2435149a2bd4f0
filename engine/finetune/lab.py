"""The fine-tuning lab: one run from settings to a stored result, streamed as snapshots.

`finetune(...)` checks the settings, waits for the device (one run at a time per
process), loads the pretrained model from the registry, builds a trainable copy (or the
same architecture randomly initialised), trains it with progress after every step, tests
it on the held-out split and stores everything in the run store. Each yielded snapshot
is a complete picture of the run so far (see `Snapshot keys` below); the last one is the
result (`status` "done", "cancelled" or "diverged").

Snapshot keys: run_id, task, mode, model, model_id, source, device, status, phase,
message, step, steps, seconds, eta_seconds, history [{step, loss, accuracy, seconds}],
val_history [{step, accuracy}], eval {accuracy, n, loss} or None, frozen_units,
units, params {total, trainable}, lr, body_lr, seed, batch_size, freeze_layers, notes,
saved (bool), store_error.
"""

from __future__ import annotations

import gc
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import torch

from engine import device as devices
from engine.errors import UserInputError
from engine.finetune.bodies import Body, bert_body, cnn_body, word_bag_body
from engine.finetune.config import RunConfig, make_config
from engine.finetune.store import RunStore, RunStoreError, default_store
from engine.finetune.tasks import Task, get_task
from engine.finetune.trainer import Cancelled, Diverged, Trainer

SAVE_EVERY_S = 2.0
_run_lock = threading.Lock()  # one training run per process (per device)
_cancel: dict[str, threading.Event] = {}
_cancel_lock = threading.Lock()


# ------------------------------------------------------------------ cancel tokens
def cancel_event(token: str) -> threading.Event:
    """The cancel event for a token (created on first use); "" gives a fresh private one."""
    if not token:
        return threading.Event()
    with _cancel_lock:
        return _cancel.setdefault(token, threading.Event())


def new_token() -> str:
    """A fresh cancel token for one run started from the UI."""
    return uuid.uuid4().hex


def request_cancel(token: str) -> bool:
    """Ask the run holding `token` to stop (within a second). True if a run had that token."""
    with _cancel_lock:
        event = _cancel.get(token)
    if event is None:
        return False
    event.set()
    return True


def _forget_token(token: str) -> None:
    with _cancel_lock:
        _cancel.pop(token, None)


# ------------------------------------------------------------------ models
def build_body(task: Task, config: RunConfig, loaded: Any) -> Body:
    """A trainable body for the run: a deep copy of the registry's shared model (never the
    shared one itself), or the same architecture freshly initialised in `scratch` mode."""
    pretrained = config.mode != "scratch"
    torch.manual_seed(config.seed)
    if config.family == "bert":
        return bert_body(loaded.obj, pretrained)
    if config.family == "glove":
        texts = [t for name in ("train", "val", "test") for t in task.split(name).inputs]
        return word_bag_body(loaded.obj, texts, pretrained, config.seed)
    if config.family == "cnn":
        return cnn_body(loaded.obj, loaded.spec.preprocess, config.image_px, pretrained)
    raise UserInputError(f"unknown model family {config.family!r}")


def describe_model(config: RunConfig, loaded: Any) -> tuple[str, str]:
    """(model, source) as the result names them: honest about random initialisation."""
    where = loaded.located.source.describe()
    if config.mode == "scratch":
        return (f"{loaded.spec.title} architecture, random init",
                f"random weights (seed {config.seed}); architecture{' and vocabulary' if config.family != 'cnn' else ''} "
                f"from {where}")
    return loaded.spec.title, where


def free_memory(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


# ------------------------------------------------------------------ the run
def finetune(task: str, mode: str, steps: int, lr: float, seed: int, model: str = "", freeze_layers: int = -1,
             max_seconds: float | None = None, cancel_token: str = "", store: RunStore | None = None,
             registry: Any = None) -> Iterator[dict]:
    """Run one fine-tuning experiment, yielding snapshots (module docstring). Bad settings
    raise UserInputError before anything runs; a diverged run raises nothing: its last
    snapshot has status "diverged" and the message."""
    config = make_config(task, mode, steps, lr, seed, model, freeze_layers, max_seconds)
    the_task = get_task(config.task)
    store = store or default_store()
    if registry is None:
        from engine.registry import REGISTRY as registry
    cancel = cancel_event(cancel_token)
    snap: dict[str, Any] = {
        "run_id": uuid.uuid4().hex[:12], "task": config.task, "mode": config.mode, "model": "", "model_id": "",
        "source": "", "device": str(devices.get_device()), "status": "waiting", "phase": "waiting", "message": "",
        "step": 0, "steps": config.steps, "seconds": 0.0, "eta_seconds": None, "history": [], "val_history": [],
        "eval": None, "frozen_units": [], "units": [], "params": {}, "lr": config.lr, "body_lr": None,
        "seed": config.seed, "batch_size": config.batch_size, "freeze_layers": config.freeze_layers,
        "notes": list(config.notes), "saved": False, "store_error": "", "task_title": the_task.title,
        "classes": list(the_task.classes), "train_n": len(the_task.split("train")),
    }
    t_wait = time.perf_counter()
    while not _run_lock.acquire(timeout=0.5):  # another run (an abandoned one finishing) holds the device
        if cancel.is_set():
            snap.update(status="cancelled", phase="cancelled", message="cancelled before it started")
            yield dict(snap)
            return
        snap["message"] = f"waiting for the run in progress to finish ({time.perf_counter() - t_wait:.0f} s)"
        yield dict(snap)
    try:
        yield from _run(config, the_task, snap, store, registry, cancel)
    finally:
        _run_lock.release()
        _forget_token(cancel_token)


def _run(config: RunConfig, task: Task, snap: dict, store: RunStore, registry: Any,
         cancel: threading.Event) -> Iterator[dict]:
    t0 = time.perf_counter()
    device = devices.get_device()
    snap.update(status="running", phase="loading", message=registry.loading_message(config.role, config.model_id)
                or "preparing the model")
    yield dict(snap)
    loaded = registry.get(config.role, config.model_id)
    load_seconds = time.perf_counter() - t0
    model_title, source = describe_model(config, loaded)
    snap.update(model=model_title, model_id=loaded.spec.id, source=source)

    trainer: Trainer | None = None
    body: Body | None = None
    last_save = 0.0

    def save(final: bool = False, **extra: Any) -> None:
        nonlocal last_save
        if not snap["saved"] and not final and snap["store_error"]:
            return
        fields = dict(steps=snap["step"], history=snap["history"], val_history=snap["val_history"],
                      seconds=time.perf_counter() - t0, **extra)
        try:
            store.update(snap["run_id"], **fields)
        except RunStoreError as exc:
            snap.update(saved=False, store_error=str(exc))
        last_save = time.perf_counter()

    try:
        body = build_body(task, config, loaded)
        trainer = Trainer(body, task, config, device, cancel)
        snap.update(frozen_units=trainer.frozen_unit_names(), units=list(body.unit_names),
                    params=trainer.param_counts(), body_lr=trainer.body_lr)
        if config.mode == "finetune" and config.freeze_layers > len(body.units):
            snap["notes"].append(f"freeze_layers capped at {len(body.units)}, the number of layers of this model "
                                 f"(asked for {config.freeze_layers}): nothing is fine-tuned")
        try:
            store.create({
                "run_id": snap["run_id"], "task": config.task, "mode": config.mode, "model": model_title,
                "model_id": loaded.spec.id, "source": source, "device": str(device), "steps": 0,
                "steps_requested": config.steps, "lr": config.lr, "seed": config.seed,
                "freeze_layers": len(snap["frozen_units"]), "load_seconds": load_seconds,
                "config": {**config.as_dict(), "body_lr": trainer.body_lr, "units": snap["units"],
                           "frozen_units": snap["frozen_units"], "params": snap["params"]},
            })
            snap["saved"] = True
        except RunStoreError as exc:
            snap["store_error"] = str(exc)
        snap.update(phase="encoding", message="preparing the data")
        yield dict(snap)
        trainer.prepare()
        snap.update(phase="training", message="training")
        for event in trainer.run():
            snap["seconds"] = time.perf_counter() - t0
            if event["phase"] == "train":
                snap["step"] = event["step"]
                snap["eta_seconds"] = event["eta"]
                snap["history"].append({"step": event["step"], "loss": event["loss"], "accuracy": event["accuracy"],
                                        "seconds": round(event["elapsed"], 3)})
            elif event["phase"] == "val":
                snap["val_history"].append({"step": event["step"], "accuracy": event["val_accuracy"]})
            elif event["phase"] == "evaluating":
                snap.update(phase="evaluating", message="testing on the held-out split", eta_seconds=None)
            elif event["phase"] == "done":
                note = "" if event["stopped"] == "steps" else (
                    f"stopped at the {config.max_seconds:g} s time budget after {event['step']} of {config.steps} steps")
                if note:
                    snap["notes"].append(note)
                snap.update(status="done", phase="done", eval=event["eval"], eta_seconds=0.0,
                            seconds=time.perf_counter() - t0, message=note or "done")
                save(final=True, status="done", eval_accuracy=event["eval"]["accuracy"], eval_n=event["eval"]["n"],
                     train_seconds=event["train_seconds"], eval_seconds=event["eval_seconds"],
                     message=snap["message"])
                yield dict(snap)
                return
            if time.perf_counter() - last_save > SAVE_EVERY_S:
                save()
            yield dict(snap)
    except Cancelled:
        snap.update(status="cancelled", phase="cancelled", eta_seconds=None, seconds=time.perf_counter() - t0,
                    message=f"cancelled after {snap['step']} of {config.steps} steps; nothing was tested")
        save(final=True, status="cancelled", message=snap["message"])
        yield dict(snap)
    except Diverged as exc:
        snap.update(status="diverged", phase="diverged", eta_seconds=None, seconds=time.perf_counter() - t0,
                    message=str(exc))
        save(final=True, status="diverged", message=str(exc))
        yield dict(snap)
    except GeneratorExit:  # the caller stopped listening (closed tab, cancelled job)
        if snap["status"] == "running":
            save(final=True, status="cancelled", message="cancelled: the caller stopped listening")
        raise
    except BaseException as exc:  # noqa: BLE001 - recorded, then re-raised for the caller's handler
        status = "interrupted" if isinstance(exc, (KeyboardInterrupt, SystemExit)) else "failed"
        save(final=True, status=status, message=f"{status}: {type(exc).__name__}: {exc}")
        raise
    finally:
        del trainer, body
        free_memory(device)


def last_result(stream: Iterator[dict]) -> dict:
    """Drain a `finetune` stream and return its final snapshot."""
    last: dict = {}
    for snap in stream:
        last = snap
    return last


def runs(task: str | None = None, store: RunStore | None = None) -> list[dict]:
    """Stored runs, newest first: {run_id, task, mode, steps, eval_accuracy, created_at,
    status, model, source, device, lr, seed, freeze_layers, seconds, eval_n, message}."""
    return (store or default_store()).list(task=task or None)


def run_details(run_ids: list[str], store: RunStore | None = None) -> list[dict]:
    """Full stored rows (with history) for some runs, in the order given; unknown ids skipped."""
    s = store or default_store()
    return [r for r in (s.get(i) for i in run_ids) if r]


def recent_runs(task: str, limit: int = 6, exclude: str = "", store: RunStore | None = None) -> list[dict]:
    """The latest finished (done) runs of a task with their histories, newest first."""
    s = store or default_store()
    rows = [r for r in s.list(task=task, full=True, limit=50) if r["status"] == "done" and r["run_id"] != exclude]
    return rows[:limit]
