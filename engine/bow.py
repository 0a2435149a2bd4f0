"""Before word vectors: bag of words, and what averaging word vectors changes.

A bag of words counts each word of a sentence in a vocabulary-sized vector: two
sentences with no word in common get cosine 0 however close their meanings. Averaging
the sentences' word vectors gives related words related directions, so synonyms meet;
but both are blind to word order ("dog bites man" = "man bites dog").
"""

from __future__ import annotations

import threading
from collections import Counter
from functools import lru_cache
from typing import Any

import numpy as np

from engine.corpus import tokenize
from engine.errors import UserInputError
from engine.word_vectors import get_table

MAX_CHARS = 2_000
# Function words: they are in every sentence and pull every average towards the same
# direction, so the averaged-vector comparison leaves them out (the bag of words keeps them).
STOPWORDS = frozenset("""a an the and or but of to in on at by for with from as is are was were be been being
am it its this that these those there here he she they we you i me him her them us my your our their
his has have had do does did not no so than then too very can will would should could may might
""".split())

PRESETS: tuple[tuple[str, str, str], ...] = (
    ("no shared word, same meaning", "AI beats humans at chess", "artificial intelligence defeats people in board games"),
    ("no shared word, same meaning", "a doctor treated the sick child", "physicians cured an ill kid"),
    ("same words, opposite meaning", "the dog bit the man", "the man bit the dog"),
    ("same words, opposite meaning", "she sold the house before he bought it", "he sold the house before she bought it"),
    ("unrelated (a baseline)", "AI beats humans at chess", "the soup needs more salt and pepper"),
)


def _words(text: str, which: str) -> list[str]:
    if not isinstance(text, str) or not text.strip():
        raise UserInputError(f"Sentence {which} is empty; type a sentence.")
    if len(text) > MAX_CHARS:
        raise UserInputError(f"Sentence {which} has {len(text):,} characters; keep it under {MAX_CHARS:,}.")
    words = [t for t in tokenize(text) if any(ch.isalnum() for ch in t)]
    if not words:
        raise UserInputError(f"Sentence {which} has no words (only punctuation or symbols).")
    return words


def _cosine(u: np.ndarray, v: np.ndarray) -> float:
    nu, nv = float(np.linalg.norm(u)), float(np.linalg.norm(v))
    return float(u @ v / (nu * nv)) if nu > 0 and nv > 0 else 0.0


_baselines: dict[str, np.ndarray] = {}
_baseline_lock = threading.Lock()


def _average(table, words: list[str]) -> tuple[np.ndarray | None, list[str], list[str]]:
    """Mean unit vector (d,) of a sentence's content words the model knows, with the
    words used and the words unknown; None when no word is known."""
    content = [w for w in words if w not in STOPWORDS] or words
    used = [w for w in content if w in table.index]
    unknown = [w for w in content if w not in table.index]
    if not used:
        return None, used, unknown
    return table.unit[[table.index[w] for w in used]].mean(axis=0), used, unknown


@lru_cache(maxsize=1)
def _short_sentences() -> tuple[tuple[str, ...], ...]:
    """Wikipedia sentences with 5-7 content words, as content-word tuples."""
    from engine.corpus import sentences

    out = []
    for s in sentences("wiki"):
        words = tuple(w for w in tokenize(s) if w.isalnum() and w not in STOPWORDS)
        if 5 <= len(words) <= 7:
            out.append(words)
    return tuple(out)


def random_pair_cosines(table, pairs: int = 300, seed: int = 0) -> np.ndarray:
    """Sorted averaged-vector cosines (pairs,) float64 of random pairs of short Wikipedia
    sentences (5-7 content words; seeded): what "unrelated" looks like for this model,
    since averages of word vectors share a common direction and rarely reach 0.
    Cached per model."""
    with _baseline_lock:
        if table.model_id in _baselines:
            return _baselines[table.model_id]
    pool = _short_sentences()
    rng = np.random.default_rng(seed)
    values = []
    for i, j in rng.choice(len(pool), size=(pairs, 2)):
        a, _, _ = _average(table, list(pool[i]))
        b, _, _ = _average(table, list(pool[j]))
        if a is not None and b is not None and i != j:
            values.append(_cosine(a, b))
    result = np.sort(np.array(values or [0.0]))
    with _baseline_lock:
        _baselines[table.model_id] = result
    return result


def compare(sentence_a: str, sentence_b: str, model: str = "") -> dict[str, Any]:
    """Bag-of-words cosine vs averaged-word-vector cosine of two sentences.

    Returns {model, model_id, source, vocabulary: [word] (the union, first-seen order),
    counts_a, counts_b: [int] over `vocabulary`, shared: [word], bow_cosine in [0, 1],
    avg_cosine in [-1, 1] (None when a sentence has no known content word), used_a,
    used_b: the content words averaged, unknown_a, unknown_b: words the model lacks,
    same_bag: whether the two bags are identical; for scale, random_pairs_cosine and
    random_pairs_p95 (median and 95th percentile of the averaged-vector cosine of random
    short Wikipedia sentence pairs) and avg_percentile (share of those pairs, in %, that
    score below this pair)}.
    """
    wa, wb = _words(sentence_a, "A"), _words(sentence_b, "B")
    ca, cb = Counter(wa), Counter(wb)
    vocab = list(dict.fromkeys(wa + wb))
    va = np.array([ca[w] for w in vocab], dtype=np.float64)
    vb = np.array([cb[w] for w in vocab], dtype=np.float64)
    table = get_table(model)
    ma, used_a, unk_a = _average(table, wa)
    mb, used_b, unk_b = _average(table, wb)
    avg = _cosine(ma, mb) if ma is not None and mb is not None else None
    return {
        **table.header(),
        "vocabulary": vocab,
        "counts_a": va.astype(int).tolist(),
        "counts_b": vb.astype(int).tolist(),
        "shared": [w for w in vocab if ca[w] and cb[w]],
        "bow_cosine": round(_cosine(va, vb), 4),
        "avg_cosine": None if avg is None else round(avg, 4),
        "used_a": used_a,
        "used_b": used_b,
        "unknown_a": unk_a,
        "unknown_b": unk_b,
        "same_bag": ca == cb,
        **_scale(table, avg),
    }


def _scale(table, avg: float | None) -> dict[str, Any]:
    base = random_pair_cosines(table)
    return {
        "random_pairs_cosine": round(float(np.median(base)), 4),
        "random_pairs_p95": round(float(np.percentile(base, 95)), 4),
        "avg_percentile": None if avg is None else round(100.0 * float(np.searchsorted(base, avg)) / len(base), 1),
    }
