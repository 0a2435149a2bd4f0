"""The training loop: a body cut into units, a linear head, three modes.

- `frozen`: every body unit frozen (eval mode, no gradients); only the head learns.
- `finetune`: the lowest `n_frozen` units frozen, the rest learn at `lr * body_lr_factor`
  (a lower rate, so the pretrained weights move gently), the head at `lr`; BatchNorm
  layers keep their pretrained statistics.
- `scratch`: the same architecture with random weights; everything learns at `lr`.

Frozen units run in eval mode (no dropout, BatchNorm statistics fixed), so their outputs
are a fixed function of the input: `PrefixCache` computes them once per example and
reuses them, which makes frozen runs several times faster without changing the result.

`Trainer.run()` is a generator: it yields a progress dict after every step (and after
each evaluation), checks a cancel `threading.Event` between units, before the backward
pass and between evaluation batches (so a cancel lands well within a second), stops when
the loss is not finite (NaN) or explodes, and stops at the step or time budget.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from engine.finetune.bodies import Body, State, collate, split_state
from engine.finetune.config import RunConfig
from engine.finetune.tasks import Task

EVAL_BATCH = 32
EXPLODED_LOSS = 1e4  # cross-entropy this large means the logits are thousands apart: diverged


class Cancelled(Exception):
    """The run was asked to stop."""


class Diverged(Exception):
    """The loss became NaN / infinite or exploded; the message says what to change."""


def frozen_units(mode: str, freeze_layers: int, n_units: int) -> int:
    """How many of the lowest units stay frozen: all in `frozen`, `freeze_layers` (capped at
    the body's depth) in `finetune`, none in `scratch`."""
    if mode == "frozen":
        return n_units
    if mode == "finetune":
        return min(max(freeze_layers, 0), n_units)
    return 0


class PrefixCache:
    """Per-example outputs of the frozen lowest units, computed once in eval mode.

    get(split, indices) -> batched State on the device; computes only the missing examples.
    """

    def __init__(self, body: Body, n_frozen: int, encoded: dict[str, list[State]], device: torch.device,
                 check: callable) -> None:
        self.body, self.n_frozen, self.encoded, self.device, self.check = body, n_frozen, encoded, device, check
        self.store: dict[tuple[str, int], State] = {}

    def get(self, split: str, indices: list[int]) -> State:
        if self.n_frozen == 0:
            return collate([self.encoded[split][i] for i in indices], self.device)
        missing = [i for i in indices if (split, i) not in self.store]
        if missing:
            state = collate([self.encoded[split][i] for i in missing], self.device)
            with torch.no_grad():
                for u in range(self.n_frozen):
                    self.check()
                    state = self.body.run_unit(u, state)
            for i, one in zip(missing, split_state(state)):
                self.store[(split, i)] = {k: v.detach() for k, v in one.items()}
        return collate([self.store[(split, i)] for i in indices], self.device)


class Trainer:
    """One run: body + head on a task, in a mode. Not thread-safe; one run per Trainer."""

    def __init__(self, body: Body, task: Task, config: RunConfig, device: torch.device,
                 cancel: threading.Event | None = None) -> None:
        self.body, self.task, self.config, self.device = body, task, config, device
        self.cancel = cancel or threading.Event()
        n_units = len(body.units)
        self.n_frozen = frozen_units(config.mode, config.freeze_layers if config.freeze_layers >= 0 else 0, n_units)
        torch.manual_seed(config.seed)
        # The head standardises each feature over the batch (BatchNorm without learned scale,
        # as MAE's linear probes do) and maps to class logits: the same head in every mode.
        self.head = nn.Sequential(nn.BatchNorm1d(body.feature_dim, affine=False), nn.Linear(body.feature_dim, len(task.classes)))
        self.body.to(device)
        self.head.to(device)
        for u, unit in enumerate(body.units):
            trainable = u >= self.n_frozen
            for p in unit.parameters():
                p.requires_grad_(trainable)
        body_lr = config.lr * (config.body_lr_factor if config.mode == "finetune" else 1.0)
        groups = [{"params": list(self.head.parameters()), "lr": config.lr}]
        body_params = [p for unit in body.units[self.n_frozen:] for p in unit.parameters()]
        if body_params:
            groups.append({"params": body_params, "lr": body_lr})
        self.body_lr = body_lr if body_params else 0.0
        self.optimizer = torch.optim.AdamW(groups, weight_decay=0.0)
        self.encoded: dict[str, list[State]] = {}
        self.cache: PrefixCache | None = None

    # -------------------------------------------------------------- bookkeeping
    def param_counts(self) -> dict[str, int]:
        total = sum(p.numel() for p in self.body.parameters()) + sum(p.numel() for p in self.head.parameters())
        trainable = sum(p.numel() for p in self.optimizer_params())
        return {"total": int(total), "trainable": int(trainable)}

    def optimizer_params(self) -> list[torch.nn.Parameter]:
        return [p for g in self.optimizer.param_groups for p in g["params"]]

    def frozen_unit_names(self) -> list[str]:
        return list(self.body.unit_names[: self.n_frozen])

    def check(self) -> None:
        if self.cancel.is_set():
            raise Cancelled()

    # -------------------------------------------------------------- forward
    def _set_modes(self, training: bool) -> None:
        for u, unit in enumerate(self.body.units):
            unit.train(training and u >= self.n_frozen)
            if self.config.mode == "finetune":
                # Fine-tuning keeps the pretrained BatchNorm statistics (its scale and shift still
                # learn): batch statistics of a few dozen task images would replace them with
                # noisy ones, and the model tested would differ from the model trained.
                for m in unit.modules():
                    if isinstance(m, nn.modules.batchnorm._BatchNorm):
                        m.eval()
        self.head.train(training)

    def logits(self, split: str, indices: list[int]) -> torch.Tensor:
        """(B, n_classes) float32 logits for examples `indices` of `split`."""
        state = self.cache.get(split, indices)
        for u in range(self.n_frozen, len(self.body.units)):
            self.check()
            state = self.body.run_unit(u, state)
        return self.head(self.body.pool(state))

    def prepare(self) -> None:
        """Encode every split once (tokenise / resize); set up the frozen-prefix cache."""
        for name in ("train", "val", "test"):
            self.check()
            self.encoded[name] = self.body.encode(self.task.split(name).inputs)
        self.cache = PrefixCache(self.body, self.n_frozen, self.encoded, self.device, self.check)

    def evaluate(self, split: str) -> dict:
        """{accuracy in [0, 1], n, loss} on a held-out split (no gradients, eval mode)."""
        labels = torch.from_numpy(self.task.split(split).labels).to(self.device)
        n = len(labels)
        correct, loss_sum = 0, 0.0
        self._set_modes(False)
        with torch.no_grad():
            for start in range(0, n, EVAL_BATCH):
                idx = list(range(start, min(n, start + EVAL_BATCH)))
                out = self.logits(split, idx)
                y = labels[idx]
                loss_sum += float(F.cross_entropy(out, y, reduction="sum"))
                correct += int((out.argmax(1) == y).sum())
        return {"accuracy": correct / max(n, 1), "n": n, "loss": loss_sum / max(n, 1)}

    # -------------------------------------------------------------- the loop
    def batches(self) -> Iterator[list[int]]:
        """Seeded epochs of shuffled training indices, batch by batch, forever."""
        n = len(self.task.split("train"))
        rng = np.random.default_rng(self.config.seed)
        size = min(self.config.batch_size, n)
        while True:
            order = rng.permutation(n)
            for start in range(0, n - size + 1, size):
                yield order[start:start + size].tolist()

    def step(self, indices: list[int]) -> tuple[float, float]:
        """One optimisation step; (loss, batch accuracy). Raises Diverged / Cancelled."""
        labels = torch.from_numpy(self.task.split("train").labels[indices]).to(self.device)
        self._set_modes(True)
        out = self.logits("train", indices)
        loss = F.cross_entropy(out, labels)
        value = float(loss.detach())
        if not math.isfinite(value) or value > EXPLODED_LOSS:
            raise Diverged(self._diverged_message(value))
        self.check()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        for p in self.optimizer_params():
            if p.grad is not None and not torch.isfinite(p.grad).all():
                raise Diverged(self._diverged_message(float("nan"), "a gradient"))
        self.optimizer.step()
        accuracy = float((out.detach().argmax(1) == labels).float().mean())
        return value, accuracy

    def _diverged_message(self, value: float, what: str = "the loss") -> str:
        state = "became NaN or infinite" if not math.isfinite(value) else f"exploded to {value:.3g}"
        return (f"{what} {state}: learning rate {self.config.lr:g} is too high for this model, so the "
                f"weights overshot. The run stopped and was recorded as diverged; try a rate 10-100x "
                f"smaller (the task's default is {self.task.budgets[self.config.family].lr:g}).")

    def run(self) -> Iterator[dict]:
        """Train; yield {"phase", "step", "loss", "accuracy", "elapsed", "eta"} after each step,
        {"phase": "val", "step", "val_accuracy"} after each evaluation on `val`, and finally
        {"phase": "done", "step", "stopped": "steps" | "time", "eval": {accuracy, n, loss}}.
        Raises Cancelled or Diverged."""
        cfg = self.config
        eval_every = max(1, cfg.steps // 8)
        t0 = time.perf_counter()
        batches = self.batches()
        stopped = "steps"
        step = 0
        recent: list[float] = []
        while step < cfg.steps:
            self.check()
            t_step = time.perf_counter()
            loss, acc = self.step(next(batches))
            step += 1
            recent = (recent + [time.perf_counter() - t_step])[-10:]
            elapsed = time.perf_counter() - t0
            remaining = min((cfg.steps - step) * float(np.median(recent)), max(0.0, cfg.max_seconds - elapsed))
            yield {"phase": "train", "step": step, "loss": loss, "accuracy": acc, "elapsed": elapsed, "eta": remaining}
            if step % eval_every == 0 or step == cfg.steps:
                val = self.evaluate("val")
                yield {"phase": "val", "step": step, "val_accuracy": val["accuracy"], "val_loss": val["loss"],
                       "elapsed": time.perf_counter() - t0}
            if time.perf_counter() - t0 >= cfg.max_seconds and step < cfg.steps:
                stopped = "time"
                if step % eval_every != 0:
                    val = self.evaluate("val")
                    yield {"phase": "val", "step": step, "val_accuracy": val["accuracy"], "val_loss": val["loss"],
                           "elapsed": time.perf_counter() - t0}
                break
        train_seconds = time.perf_counter() - t0
        yield {"phase": "evaluating", "step": step, "elapsed": train_seconds}
        t1 = time.perf_counter()
        test = self.evaluate("test")
        yield {"phase": "done", "step": step, "stopped": stopped, "eval": test,
               "train_seconds": train_seconds, "eval_seconds": time.perf_counter() - t1}
