"""The stations in the order the story tells them; the app and the tests read this list."""

from __future__ import annotations

import importlib
from types import ModuleType

# Module names under app/tabs/, in tab order.
STATION_MODULES: tuple[str, ...] = (
    "overview",
    "word_vectors",
    "contextual",
    "attention",
    "cnn",
    "vit_mae",
    "finetune",
    "models",
)


def stations() -> list[ModuleType]:
    """The tab modules, imported, in order."""
    return [importlib.import_module(f"app.tabs.{name}") for name in STATION_MODULES]
