"""A run's settings, checked: bad input becomes a UserInputError that says what to change;
settings over a cap are capped and the cap is said in `notes`."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from engine.errors import UserInputError
from engine.finetune.tasks import Task, get_task

MODES: tuple[str, ...] = ("frozen", "finetune", "scratch")
MAX_STEPS = 2000
DEFAULT_MAX_SECONDS = 60.0
MAX_SECONDS = 3600.0
MAX_LR = 1e6  # above this nothing can be learned; below it a too-large rate stops as diverged

# Model families -> registry role. A registry id or alias of that role also works.
FAMILIES: dict[str, str] = {"bert": "contextual_bert", "glove": "static_vectors", "cnn": "cnn"}
# Units ("layers") each family's default model is cut into, for the UI's slider; the
# engine caps at the real depth and says so.
FAMILY_DEPTH: dict[str, int] = {"bert": 7, "glove": 1, "cnn": 9}
FAMILY_ALIASES: dict[str, str] = {"minilm": "bert", "static": "glove", "word-vectors": "glove",
                                  "efficientnet": "cnn"}


@dataclass
class RunConfig:
    """Everything that defines a run. freeze_layers: how many of the body's lowest units stay
    frozen in `finetune` mode (-1: the mode's default: all in `frozen`, none otherwise);
    model_id: registry id within the family's role ("" = the role's default)."""

    task: str
    mode: str
    family: str
    model_id: str
    steps: int
    lr: float
    seed: int
    freeze_layers: int
    batch_size: int
    body_lr_factor: float
    max_seconds: float
    image_px: int = 64
    notes: list[str] = field(default_factory=list)

    @property
    def role(self) -> str:
        return FAMILIES[self.family]

    def as_dict(self) -> dict:
        return asdict(self)


def _number(value, name: str, kind=float):
    try:
        number = kind(float(value)) if kind is int else float(value)
    except (TypeError, ValueError, OverflowError):
        raise UserInputError(f"{name} must be a number, not {value!r}") from None
    return number


def _family(task: Task, model: str) -> tuple[str, str]:
    """(family, registry id) for the `model` argument; "" means the task's default family."""
    from engine.registry import REGISTRY

    name = (model or "").strip().lower()
    if not name:
        return task.default_model, ""
    name = FAMILY_ALIASES.get(name, name)
    if name in FAMILIES:
        if name not in task.models:
            raise UserInputError(f"task {task.name!r} cannot use a {name} model; choose one of: {', '.join(task.models)}")
        return name, ""
    for family in task.models:
        for spec in REGISTRY.specs(FAMILIES[family]):
            if name == spec.id or name in spec.aliases:
                return family, spec.id
    raise UserInputError(f"unknown model {model!r} for task {task.name!r}; choose one of: {', '.join(task.models)} "
                         "(or a model id from /models of that role)")


def make_config(task: str, mode: str, steps, lr, seed, model: str = "", freeze_layers=-1,
                max_seconds=None, batch_size=None) -> RunConfig:
    """Check and complete a run's settings (defaults from the task's budget for the model)."""
    t = get_task(task)
    mode_key = (mode or "").strip().lower()
    if mode_key not in MODES:
        raise UserInputError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}")
    family, model_id = _family(t, model)
    budget = t.budgets[family]
    notes: list[str] = []

    n_steps = _number(steps, "steps", int)
    if n_steps < 1:
        raise UserInputError(f"steps must be at least 1 (got {n_steps}); the default for this task is {budget.steps}")
    if n_steps > MAX_STEPS:
        notes.append(f"steps capped at {MAX_STEPS} (asked for {n_steps})")
        n_steps = MAX_STEPS

    rate = _number(lr, "learning rate")
    if not math.isfinite(rate) or rate <= 0:
        raise UserInputError(f"the learning rate must be a positive number (got {lr!r}); "
                             f"with 0 nothing changes, a negative rate climbs the loss. Try {budget.lr:g}")
    if rate > MAX_LR:
        raise UserInputError(f"learning rate {rate:g} is far too large (limit {MAX_LR:g}); try {budget.lr:g}")

    seed_n = _number(seed, "seed", int)
    if not 0 <= seed_n < 2**31:
        raise UserInputError(f"seed must be between 0 and {2**31 - 1} (got {seed_n})")

    freeze = _number(freeze_layers if freeze_layers is not None else -1, "freeze_layers", int)
    if freeze < -1:
        raise UserInputError(f"freeze_layers must be -1 (the mode's default) or 0 or more, not {freeze}")
    if mode_key != "finetune" and freeze > 0:
        notes.append(f"freeze_layers={freeze} is only used in finetune mode; "
                     f"{mode_key} {'freezes the whole body' if mode_key == 'frozen' else 'trains every layer'}")

    seconds = DEFAULT_MAX_SECONDS if max_seconds in (None, "", 0) else _number(max_seconds, "max_seconds")
    if not math.isfinite(seconds) or seconds <= 0:
        raise UserInputError(f"max_seconds must be a positive number of seconds, not {max_seconds!r}")
    if seconds > MAX_SECONDS:
        notes.append(f"time budget capped at {MAX_SECONDS:g} s (asked for {seconds:g} s)")
        seconds = MAX_SECONDS

    batch = budget.batch_size if batch_size in (None, "", 0) else _number(batch_size, "batch_size", int)
    if not 1 <= batch <= 256:
        raise UserInputError(f"batch_size must be between 1 and 256, not {batch}")

    return RunConfig(task=t.name, mode=mode_key, family=family, model_id=model_id, steps=n_steps, lr=rate,
                     seed=seed_n, freeze_layers=freeze, batch_size=batch, body_lr_factor=budget.body_lr_factor,
                     max_seconds=seconds, image_px=budget.image_px, notes=notes)
