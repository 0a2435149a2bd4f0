"""Background warm-up (`python -m app --warm`): load each role's default model and compile
UMAP, so no person waits on a first click. Failures are logged, never raised."""

from __future__ import annotations

import logging
import threading

from engine.registry import REGISTRY, ROLES

log = logging.getLogger(__name__)


def warm_all() -> dict[str, str]:
    """Load every role's default and fit UMAP once; returns {role: "ok" | reason}."""
    results: dict[str, str] = {}
    for role in ROLES:
        try:
            REGISTRY.get(role)
            results[role] = "ok"
        except Exception as exc:  # a missing role must not stop the others
            results[role] = str(exc)
            log.info("warm-up: %s unavailable: %s", role, exc)
    try:
        from engine.projection import warm_umap

        warm_umap()
        results["umap"] = "ok"
    except Exception as exc:
        results["umap"] = str(exc)
    return results


def warm_in_background() -> threading.Thread:
    thread = threading.Thread(target=warm_all, name="ptx-warmup", daemon=True)
    thread.start()
    return thread
