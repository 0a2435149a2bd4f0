"""Where the project keeps things on disk; each path can be moved by an environment variable."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSETS = ROOT / "assets"


def checkpoints_dir() -> Path:
    """Checkpoints a user drops in (`checkpoints/<id>/`) and those trained here
    (`checkpoints/trained/<id>/`). Moved by PTX_CHECKPOINTS."""
    return Path(os.environ.get("PTX_CHECKPOINTS", ROOT / "checkpoints"))


def trained_dir() -> Path:
    """Checkpoints this project trained itself, each with a manifest.json."""
    return checkpoints_dir() / "trained"


def data_dir() -> Path:
    """Writable state: run database, caches, outputs. Moved by PTX_DATA_DIR."""
    path = Path(os.environ.get("PTX_DATA_DIR", ROOT / ".ptx-data"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_dir(name: str) -> Path:
    """A named cache folder under the data directory (converted weights, corpora)."""
    path = data_dir() / "cache" / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def outputs_dir() -> Path:
    """Files the app hands to the browser (images, exports)."""
    path = data_dir() / "outputs"
    path.mkdir(parents=True, exist_ok=True)
    return path
