"""2-D projections of vectors for maps: PCA (exact, keeps offsets) and UMAP (neighbourhoods).

UMAP's first fit in a process compiles numba code (~10 s); `warm_umap()` does that in
the background at start-up so no person waits for it.
"""

from __future__ import annotations

import threading

import numpy as np

from engine.errors import UserInputError

UMAP_MIN_POINTS = 5
_umap_ready = threading.Event()
_umap_lock = threading.Lock()


def pca_2d(x: np.ndarray, fit_on: np.ndarray | None = None) -> np.ndarray:
    """Project (n, d) rows onto the top-2 principal axes of `fit_on` (default: x itself).

    Returns (n, 2) float64. With fewer than 2 distinct rows the second axis is zeros.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] == 0:
        raise UserInputError("need at least one vector to project")
    basis_src = x if fit_on is None else np.asarray(fit_on, dtype=np.float64)
    mean = basis_src.mean(axis=0, keepdims=True)
    centred = basis_src - mean
    if basis_src.shape[0] < 2 or not np.any(centred):
        return np.zeros((x.shape[0], 2))
    _, _, vt = np.linalg.svd(centred, full_matrices=False)  # vt: (k, d)
    axes = vt[:2]
    out = (x - mean) @ axes.T  # (n, <=2)
    if out.shape[1] < 2:
        out = np.hstack([out, np.zeros((out.shape[0], 2 - out.shape[1]))])
    # Fix the sign so the picture does not flip between calls.
    signs = np.sign(axes[np.arange(axes.shape[0]), np.abs(axes).argmax(axis=1)])
    out[:, : len(signs)] *= signs
    return out


def umap_2d(x: np.ndarray, seed: int = 0, n_neighbors: int = 15, metric: str = "cosine") -> np.ndarray:
    """UMAP of (n, d) rows to (n, 2) float64. Raises UserInputError below UMAP_MIN_POINTS
    points (its spectral initialisation fails on very few points): callers fall back to PCA."""
    x = np.asarray(x, dtype=np.float32)
    if x.shape[0] < UMAP_MIN_POINTS:
        raise UserInputError(f"UMAP needs at least {UMAP_MIN_POINTS} points; got {x.shape[0]}")
    import umap

    with _umap_lock:  # numba-compiled code is shared; keep fits from racing on first compile
        reducer = umap.UMAP(
            n_components=2,
            n_neighbors=max(2, min(n_neighbors, x.shape[0] - 1)),
            metric=metric,
            random_state=seed,
            init="spectral" if x.shape[0] > 10 else "random",
            n_jobs=1,
        )
        out = reducer.fit_transform(x)
    _umap_ready.set()
    return np.asarray(out, dtype=np.float64)


def warm_umap() -> None:
    """Compile UMAP's numba code with one small fit (run in a background thread)."""
    rng = np.random.default_rng(0)
    umap_2d(rng.normal(size=(40, 8)).astype(np.float32))


def umap_is_warm() -> bool:
    return _umap_ready.is_set()
