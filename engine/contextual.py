"""Contextual embeddings: one vector per *use* of a word, at every layer, and how well the
uses separate by meaning.

A static model (GloVe) has one point per word; a contextual model (BERT, ELMo) gives each
occurrence its own vector, and layer by layer the occurrences of "bank" drift apart into
a river group and a money group. This module finds the occurrences of a word in a set of
sentences, reads their vectors from any model that offers

    word_layers(sentences: list[list[str]]) -> list[np.ndarray]   # each (L, n_words, d) float32

(layer 0 = the input/token layer; words pre-tokenised with `engine.corpus.tokenize(text,
lower=False)`), and measures the split: cosine similarity matrices, a 2-means split,
its silhouette, the within-minus-across cosine gap and the split's agreement with the
true senses (when the sentences come from a labelled preset), plus 2-D maps.

Models are registry entries, never branches: `MODEL_ROLES` maps the API's model names to
roles, and a static-vector model is adapted to the same interface (`StaticLayers`).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from engine import paths
from engine.corpus import tokenize
from engine.errors import UserInputError
from engine.projection import UMAP_MIN_POINTS, pca_2d, umap_2d, umap_is_warm, warm_umap
from engine.registry import REGISTRY, LoadedModel

# The API's model names (API.md: "bert", "elmo", "static"; "" = "bert") and their roles.
MODEL_ROLES: dict[str, str] = {"bert": "contextual_bert", "elmo": "contextual_elmo", "static": "static_vectors"}
MODEL_ALIASES: dict[str, str] = {"": "bert", "glove": "static", "word2vec": "static"}
MAX_SENTENCES = 64  # lines per request
MAX_CHARS = 20_000  # characters per request, all lines together (bounds the forward's time)
MAX_WORDS_READ = 2_048  # words the model reads per request, after cutting at its maximum length
CACHE_BYTES = 256 * 2**20  # per-word layer arrays remembered across requests
MAX_OCCURRENCES = 200  # occurrences analysed per request (the first ones, in sentence order)
PRESET_DIR = paths.ASSETS / "contextual"


# ---------------------------------------------------------------- models
class StaticLayers:
    """A static word-vector model seen through the contextual interface: one layer, and
    the same vector for a word wherever it stands (so nothing ever separates).

    kv: gensim KeyedVectors. Unknown words get a zero vector."""

    layer_names = ("static vector",)

    def __init__(self, kv: Any) -> None:
        self.kv = kv

    def vector(self, word: str) -> np.ndarray | None:
        """The word's vector, (d,) float32, trying it as written and lower-cased; None if unknown."""
        for key in (word, word.lower(), _base(word)):
            index = self.kv.key_to_index.get(key)
            if index is not None:
                return np.asarray(self.kv.vectors[index], dtype=np.float32)
        return None

    def word_layers(self, sentences: list[list[str]]) -> list[np.ndarray]:
        """(1, n_words, d) float32 per sentence; a word's row is its one vector (zeros if unknown)."""
        zero = np.zeros(self.kv.vector_size, dtype=np.float32)
        out = []
        for words in sentences:
            rows = [self.vector(w) for w in words]
            out.append(np.stack([zero if r is None else r for r in rows])[None] if rows
                       else np.zeros((1, 0, self.kv.vector_size), np.float32))
        return out


_static_adapters: dict[int, StaticLayers] = {}


@dataclass
class Encoder:
    """A model ready for the station: its registry entry and its `word_layers`."""

    kind: str  # "bert", "elmo" or "static"
    loaded: LoadedModel
    obj: Any  # has word_layers(...)

    @property
    def title(self) -> str:
        return self.loaded.spec.title

    def layer_names(self, n_layers: int) -> list[str]:
        names = list(getattr(self.obj, "layer_names", ()) or ())
        if len(names) == n_layers:
            return names
        if self.kind == "elmo":  # the character-CNN token layer, then the biLSTM layers
            return ["token layer"] + [f"biLSTM {i}" for i in range(1, n_layers)]
        return ["input embeddings"] + [f"layer {i}" for i in range(1, n_layers)]

    @property
    def max_length(self) -> int | None:
        value = getattr(self.obj, "max_length", None)
        return int(value) if value is not None else None


def get_encoder(model: str = "") -> Encoder:
    """The model for an API name: "bert" (default), "elmo", "static" (or "glove"), or the
    id of a registered model of one of those roles ("bert-base-uncased", "minilm").
    Raises ModelUnavailable when nothing of that role loads, UserInputError for an unknown name."""
    name = (model or "").strip()
    kind = MODEL_ALIASES.get(name.lower(), name.lower())
    model_id = ""
    if kind not in MODEL_ROLES:
        for k, role in MODEL_ROLES.items():
            try:
                REGISTRY.spec(role, name)
            except UserInputError:
                continue
            kind, model_id = k, name
            break
        else:
            raise UserInputError(f"unknown model {model!r}: choose bert, elmo or static "
                                 "(or a model id listed in the Models tab)")
    loaded = REGISTRY.get(MODEL_ROLES[kind], model_id)
    obj = loaded.obj
    if kind == "static":
        obj = _static_adapters.setdefault(id(loaded.obj), StaticLayers(loaded.obj))
    if not hasattr(obj, "word_layers"):
        raise UserInputError(f"{loaded.spec.title} does not offer per-word layers; choose another model")
    return Encoder(kind, loaded, obj)


def model_choices() -> list[tuple[str, str]]:
    """(label, API name) pairs for a model menu: the BERT role's default, every other
    BERT-family model that can load here (packaged, checkpoints/, or the hub when online),
    then ELMo and the static baseline (always listed: choosing one that is missing says why)."""
    choices: list[tuple[str, str]] = []
    pick = REGISTRY.would_load(MODEL_ROLES["bert"])
    if pick is not None:
        choices.append((f"BERT: {pick[0].title}", "bert"))
    for spec in REGISTRY.specs(MODEL_ROLES["bert"]):
        if (pick is None or spec.id != pick[0].id) and REGISTRY.would_load(MODEL_ROLES["bert"], spec.id):
            choices.append((spec.title, spec.id))
    return choices + [("ELMo", "elmo"), ("GloVe (static)", "static")]


_layer_cache: OrderedDict[tuple, list[np.ndarray]] = OrderedDict()
_layer_cache_lock = threading.Lock()


def cached_word_layers(encoder: Encoder, sentences: list[list[str]]) -> list[np.ndarray]:
    """`encoder.obj.word_layers(sentences)`, remembered for the last 32 requests (so moving a
    slider or comparing models never runs a model twice on the same sentences). The cache
    holds at most CACHE_BYTES; a result bigger than a quarter of that is not kept."""
    key = (encoder.kind, encoder.loaded.spec.id, id(encoder.obj), tuple(tuple(s) for s in sentences))
    with _layer_cache_lock:
        if key in _layer_cache:
            _layer_cache.move_to_end(key)
            return _layer_cache[key]
    layers = encoder.obj.word_layers(sentences)
    size = sum(int(arr.nbytes) for arr in layers)
    if size <= CACHE_BYTES // 4:
        with _layer_cache_lock:
            _layer_cache[key] = layers
            while len(_layer_cache) > 32 or _cache_bytes() > CACHE_BYTES:
                _layer_cache.popitem(last=False)
    return layers


def _cache_bytes() -> int:
    return sum(int(arr.nbytes) for layers in _layer_cache.values() for arr in layers)


# ---------------------------------------------------------------- presets
@dataclass(frozen=True)
class Preset:
    """A labelled sentence set: every sentence uses `word` in one of `senses`."""

    key: str
    word: str
    title: dict[str, str]
    senses: tuple[str, ...]
    sense_names: dict[str, dict[str, str]]
    sentences: tuple[str, ...]
    labels: tuple[str, ...]

    @property
    def text(self) -> str:
        """The sentences one per line, as the text box and the API take them."""
        return "\n".join(self.sentences)


@lru_cache(maxsize=1)
def presets() -> dict[str, Preset]:
    """The packaged sentence sets (assets/contextual/*.json), by key: bank, play, apple."""
    out: dict[str, Preset] = {}
    for path in sorted(PRESET_DIR.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        out[data["key"]] = Preset(
            key=data["key"], word=data["word"], title=data["title"],
            senses=tuple(s["id"] for s in data["senses"]),
            sense_names={s["id"]: s["name"] for s in data["senses"]},
            sentences=tuple(s["text"] for s in data["sentences"]),
            labels=tuple(s["sense"] for s in data["sentences"]),
        )
    order = {"bank": 0, "play": 1, "apple": 2}
    return dict(sorted(out.items(), key=lambda kv: order.get(kv[0], 99)))


@lru_cache(maxsize=1)
def _preset_labels() -> dict[tuple[str, str], str]:
    return {(p.word.lower(), " ".join(s.split())): label
            for p in presets().values() for s, label in zip(p.sentences, p.labels, strict=True)}


def known_sense(sentence: str, word: str) -> str | None:
    """The true sense of `word` in `sentence` when the sentence is one of a preset's, else None."""
    return _preset_labels().get((word.lower(), " ".join(sentence.split())))


# ---------------------------------------------------------------- inputs
def parse_sentences(text: str) -> list[str]:
    """One sentence a line; blank lines dropped. Raises UserInputError when there is none
    or over the caps (MAX_SENTENCES lines, MAX_CHARS characters)."""
    text = text or ""
    if len(text) > MAX_CHARS:
        raise UserInputError(f"the sentences are {len(text):,} characters long; the limit is {MAX_CHARS:,} "
                             "(one very long line is fine: it is cut at the model's maximum length)")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise UserInputError("type some sentences, one per line, that use the word (or pick a preset)")
    if len(lines) > MAX_SENTENCES:
        raise UserInputError(f"at most {MAX_SENTENCES} sentences at a time (got {len(lines)}): remove some lines")
    return lines


_SENSE_TAG = re.compile(r"^(.*\S)\s*\[([^\[\]]{1,30})\]\s*$")


def split_sense(line: str) -> tuple[str, str | None]:
    """A line with an optional sense label at its end: "We sat on the bank [river]" ->
    ("We sat on the bank", "river"). Lines without one give (line, None)."""
    found = _SENSE_TAG.match(line)
    if not found or not found.group(2).strip():
        return line, None
    return found.group(1), found.group(2).strip().lower()


def parse_word(word: str) -> str:
    """The word to follow, as one token of `engine.corpus.tokenize`, lower-cased."""
    tokens = tokenize((word or "").strip())
    if not tokens:
        raise UserInputError("type the word to follow, e.g. bank")
    if len(tokens) > 1:
        raise UserInputError(f"type one word, not {len(tokens)} ({' '.join(tokens)}): the station follows "
                             "one word through its uses (CJK text counts one character a word)")
    return tokens[0]


def _base(token: str) -> str:
    """A token lower-cased, with a possessive 's dropped ("Bank's" -> "bank")."""
    low = token.lower()
    for suffix in ("'s", "’s"):
        if low.endswith(suffix):
            return low[: -len(suffix)]
    return low


def find_word(words: list[str], word: str) -> list[int]:
    """Positions where `word` stands as a whole word (any case, possessive 's allowed)."""
    return [i for i, w in enumerate(words) if _base(w) == word]


def inside_words(words: list[str], word: str) -> list[str]:
    """Longer words that contain `word` without being it ("banking", "embankment")."""
    return list(dict.fromkeys(w for w in words if word in w.lower() and _base(w) != word))


# ---------------------------------------------------------------- maths
def cosine_similarity(vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity between rows, for (n, d) or stacked (L, n, d) input.

    Returns (n, n) or (L, n, n) float64 in [-1, 1]; a zero row has similarity 0 to everything."""
    x = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    unit = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    return np.clip(unit @ np.swapaxes(unit, -1, -2), -1.0, 1.0)


def two_means(vectors: np.ndarray, max_iter: int = 50, starts: int = 8) -> np.ndarray:
    """Split (n, d) rows into two groups by k-means (k = 2) on unit-length rows (cosine geometry).

    Deterministic: up to `starts` farthest-point initialisations from evenly spaced rows,
    keeping the split with the lowest inertia. Returns (n,) int64 in {0, 1}, the group of
    row 0 being 0; all zeros when the rows cannot be split (fewer than 2 distinct rows)."""
    x = np.asarray(vectors, dtype=np.float64)
    n = x.shape[0]
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    if n < 2 or np.allclose(x, x[0]):
        return np.zeros(n, dtype=np.int64)
    best, best_inertia = np.zeros(n, dtype=np.int64), np.inf
    for start in sorted({int(i) for i in np.linspace(0, n - 1, min(starts, n))}):
        far = int(np.argmax(((x - x[start]) ** 2).sum(1)))
        centres = x[[start, far]]  # (2, d)
        labels = np.full(n, -1)
        for _ in range(max_iter):
            dist = ((x[:, None, :] - centres[None]) ** 2).sum(-1)  # (n, 2)
            new = dist.argmin(1)
            if np.array_equal(new, labels):
                break
            labels = new
            for k in (0, 1):
                if np.any(labels == k):
                    centres[k] = x[labels == k].mean(0)
        inertia = float(((x - centres[labels]) ** 2).sum())
        if inertia < best_inertia - 1e-12:
            best, best_inertia = labels.copy(), inertia
    return (best != best[0]).astype(np.int64)


def silhouette(similarity: np.ndarray, labels: np.ndarray) -> float:
    """Mean silhouette of a split under cosine distance (1 - similarity), as scikit-learn
    computes it (a point alone in its group scores 0). In [-1, 1]; 0.0 when there are
    fewer than 2 groups or fewer than 3 points."""
    labels = np.asarray(labels)
    n = len(labels)
    groups = np.unique(labels)
    if n < 3 or len(groups) < 2 or len(groups) >= n:
        return 0.0
    dist = np.clip(1.0 - np.asarray(similarity, dtype=np.float64), 0.0, None)
    np.fill_diagonal(dist, 0.0)
    scores = np.zeros(n)
    for i in range(n):
        own = labels == labels[i]
        if own.sum() < 2:
            continue
        a = dist[i, own].sum() / (own.sum() - 1)
        b = min(dist[i, labels == g].mean() for g in groups if g != labels[i])
        scores[i] = 0.0 if max(a, b) == 0 else (b - a) / max(a, b)
    return float(scores.mean())


def _labelled(labels: list[str | None]) -> np.ndarray:
    return np.array([i for i, label in enumerate(labels) if label is not None], dtype=np.int64)


def within_minus_across(similarity: np.ndarray, labels: list[str | None]) -> float | None:
    """Mean cosine between occurrences of the same sense minus that between different
    senses, over the labelled occurrences (None labels left out). Positive when uses of a
    sense sit closer together; None without two senses and a same-sense pair."""
    idx = _labelled(labels)
    if len(idx) < 3:
        return None
    lab = np.array([labels[i] for i in idx])
    sim = np.asarray(similarity, dtype=np.float64)[np.ix_(idx, idx)]
    same = lab[:, None] == lab[None, :]
    off = ~np.eye(len(idx), dtype=bool)
    if not np.any(same & off) or not np.any(~same):
        return None
    return float(sim[same & off].mean() - sim[~same].mean())


def split_accuracy(groups: np.ndarray, labels: list[str | None]) -> float | None:
    """How well an automatic split matches the true senses: the share of labelled
    occurrences in the right group under the best one-to-one matching of groups to
    senses. 1.0 = perfect; with two equal senses a random split scores about 0.5.
    None without two senses."""
    idx = _labelled(labels)
    senses = sorted({labels[i] for i in idx})
    if len(senses) < 2:
        return None
    g = np.asarray(groups)[idx]
    lab = np.array([labels[i] for i in idx])
    names = sorted(set(g.tolist()))
    best = 0
    for perm in itertools.permutations(senses, min(len(names), len(senses))):
        best = max(best, sum(int(np.sum((g == k) & (lab == s))) for k, s in zip(names, perm, strict=False)))
    return best / len(idx)


def scalar_mix(layers: np.ndarray, weights: np.ndarray | list[float], gamma: float = 1.0) -> np.ndarray:
    """ELMo's task-specific mix of a model's layers: gamma * sum_j softmax(w)_j * h_j.

    layers: (L, n, d); weights: (L,) raw scores (softmax-normalised here); gamma: a scale.
    Returns (n, d) float32. Usable for any model; ELMo has L = 3."""
    h = np.asarray(layers, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if h.ndim != 3 or w.shape[0] != h.shape[0]:
        raise UserInputError(f"the mix needs one weight per layer: {w.shape[0]} weights for "
                             f"{h.shape[0] if h.ndim == 3 else '?'} layers")
    if not np.all(np.isfinite(w)) or not np.isfinite(gamma):
        raise UserInputError("mix weights and gamma must be finite numbers")
    s = softmax(w)
    return (float(gamma) * np.einsum("l,lnd->nd", s, h)).astype(np.float32)


def softmax(w: np.ndarray | list[float]) -> np.ndarray:
    """Softmax of a 1-D array, float64, sums to 1."""
    w = np.asarray(w, dtype=np.float64)
    e = np.exp(w - w.max())
    return e / e.sum()


def separation(vectors: np.ndarray, labels: list[str | None]) -> dict[str, Any]:
    """Every separation figure for one set of occurrence vectors (n, d): the similarity
    matrix (n, n), the 2-means groups (n,), its silhouette, the within-minus-across gap and
    the split accuracy (None without labels)."""
    sim = cosine_similarity(vectors)
    groups = two_means(vectors)
    return {"similarity": sim, "groups": groups, "silhouette": silhouette(sim, groups),
            "within_minus_across": within_minus_across(sim, labels),
            "split_accuracy": split_accuracy(groups, labels)}


# ---------------------------------------------------------------- the analysis
@dataclass
class Analysis:
    """One model on one sentence set, for one word.

    vectors: (L, n, d) float32, the n occurrences at each of the L layers (layer 0 = input).
    similarity: (L, n, n) float64 cosine matrices. groups: (L, n) int 2-means groups.
    curves: per-layer lists (length L) "silhouette", "within_minus_across",
    "split_accuracy" (the last two None when no occurrence has a known sense).
    """

    kind: str
    model: str
    model_id: str
    source: str
    provenance: str
    word: str
    sentences: list[str]
    occurrences: list[dict[str, Any]]
    labels: list[str | None]
    vectors: np.ndarray
    layer_names: list[str]
    similarity: np.ndarray
    groups: np.ndarray
    curves: dict[str, list[float | None]]
    skipped: list[int]
    truncated: list[int]
    inside: dict[int, list[str]]
    notes: list[str] = field(default_factory=list)
    _maps: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def n_layers(self) -> int:
        return int(self.vectors.shape[0])

    @property
    def best_layer(self) -> int:
        """The layer where the split is clearest: highest split accuracy (when labels are
        known), ties broken by silhouette. Layer 0 is left out when there are others: it
        has no context (in BERT it splits by position, not meaning)."""
        acc = [a if a is not None else 0.0 for a in self.curves["split_accuracy"]]
        sil = self.curves["silhouette"]
        return int(max(range(1 if self.n_layers > 1 else 0, self.n_layers), key=lambda k: (acc[k], sil[k])))

    @property
    def has_labels(self) -> bool:
        return any(label is not None for label in self.labels)


def _window(words: list[str], p: int, width: int = 8) -> dict[str, str]:
    """The words around position p, for hover text: {"left": ..., "right": ...}."""
    left = " ".join(words[max(0, p - width): p])
    right = " ".join(words[p + 1: p + 1 + width])
    return {"left": ("… " if p > width else "") + left,
            "right": right + (" …" if p + 1 + width < len(words) else "")}


def _numbers(items: list[int]) -> str:
    return ", ".join(str(i + 1) for i in items)


def analyse(sentences_text: str, word: str, model: str = "") -> Analysis:
    """Find every whole-word occurrence of `word` in the sentences (one per line), read its
    vector at every layer of `model`, and measure how the occurrences split.

    A line may end with its sense in brackets ("... the bank [river]"); preset sentences
    carry theirs. Sentences without the word are listed in `skipped`; a sentence cut at the model's
    maximum length is listed in `truncated`. Raises UserInputError when no sentence has
    the word, naming the word (and the longer words that merely contain it)."""
    sentences, tags = zip(*(split_sense(line) for line in parse_sentences(sentences_text)), strict=True)
    sentences = list(sentences)
    target = parse_word(word)
    tokenised = [tokenize(s, lower=False) for s in sentences]
    hits = [find_word(words, target) for words in tokenised]
    inside = {i: inside_words(words, target) for i, words in enumerate(tokenised)}
    inside = {i: found for i, found in inside.items() if found}
    used = [i for i, h in enumerate(hits) if h]
    if not used:
        longer = sorted({w.lower() for found in inside.values() for w in found})
        extra = (f" It appears only inside longer words ({', '.join(longer)}), and the station matches "
                 "whole words only." if longer else "")
        raise UserInputError(f"“{target}” is not in any of the sentences (whole words, any case).{extra} "
                             "Add sentences that use it, or change the word.")
    encoder = get_encoder(model)
    # A model that refuses long sentences (rather than cutting them) says so with `max_words`;
    # a model reads at most `max_length` pieces, so never more words than that. Cut there
    # (reported as truncated like any other cut), then bound the total the model must read.
    limit = min(x for x in (getattr(encoder.obj, "max_words", None), encoder.max_length, 10**9) if x)
    to_read = [tokenised[i][:limit] for i in used]
    total = sum(map(len, to_read))
    if total > MAX_WORDS_READ:
        raise UserInputError(f"the sentences that use “{target}” hold {total:,} words for {encoder.title} to "
                             f"read; the limit is {MAX_WORDS_READ:,} per request: remove or shorten some")
    layers = cached_word_layers(encoder, to_read)
    n_layers = int(layers[0].shape[0])
    occurrences, rows, labels, truncated, dropped = [], [], [], [], []
    for i, arr in zip(used, layers, strict=True):
        if arr.shape[1] < len(tokenised[i]):
            truncated.append(i)
        sense = tags[i] or known_sense(sentences[i], target)
        kept = [p for p in hits[i] if p < arr.shape[1]]
        if not kept:
            dropped.append(i)
        for p in kept:
            occurrences.append({"sentence": i, "text": sentences[i], "word": tokenised[i][p],
                                "position": p, "sense": sense, **_window(tokenised[i], p)})
            rows.append(arr[:, p])  # (L, d)
            labels.append(sense)
    capped = len(rows) > MAX_OCCURRENCES
    occurrences, rows, labels = occurrences[:MAX_OCCURRENCES], rows[:MAX_OCCURRENCES], labels[:MAX_OCCURRENCES]
    if not rows:
        raise UserInputError(f"every “{target}” lies beyond {encoder.title}'s maximum length "
                             f"({encoder.max_length} word pieces); put it nearer the start of the sentence")
    vectors = np.stack(rows, axis=1).astype(np.float32)  # (L, n, d)
    if not np.any(np.abs(vectors) > 0, axis=(0, 2)).all():
        raise UserInputError(f"{encoder.title} has no vector for “{target}”; try another word or model")
    per_layer = [separation(vectors[k], labels) for k in range(n_layers)]
    sim = np.stack([layer["similarity"] for layer in per_layer])  # (L, n, n)
    curves = {key: [layer[key] for layer in per_layer]
              for key in ("silhouette", "within_minus_across", "split_accuracy")}
    skipped = [i for i in range(len(sentences)) if i not in used or i in dropped]
    notes = _notes(target, encoder, len(occurrences), skipped, dropped, truncated, inside, hits)
    if capped:
        notes.insert(0, f"More than {MAX_OCCURRENCES} occurrences: the first {MAX_OCCURRENCES} are shown.")
    return Analysis(
        kind=encoder.kind, model=encoder.title, model_id=encoder.loaded.spec.id,
        source=encoder.loaded.source_kind, provenance=encoder.loaded.label(), word=target,
        sentences=sentences, occurrences=occurrences, labels=labels, vectors=vectors,
        layer_names=encoder.layer_names(n_layers), similarity=sim,
        groups=np.stack([layer["groups"] for layer in per_layer]), curves=curves,
        skipped=skipped, truncated=truncated, inside=inside, notes=notes,
    )


def _notes(target: str, encoder: Encoder, n: int, skipped: list[int], dropped: list[int],
           truncated: list[int], inside: dict[int, list[str]], hits: list[list[int]]) -> list[str]:
    """Plain sentences on what was left out and why (shown in the UI, returned by the API)."""
    notes = []
    missing = [i for i in skipped if i not in dropped]
    if missing:
        notes.append(f"Sentence(s) {_numbers(missing)} do not use “{target}” as a whole word: left out.")
    only_inside = {i: w for i, w in inside.items() if not hits[i]}
    if only_inside:
        words = sorted({w.lower() for found in only_inside.values() for w in found})
        notes.append(f"Not matched (whole words only): {', '.join(words)}, in sentence(s) "
                     f"{_numbers(sorted(only_inside))}.")
    if truncated:
        notes.append(f"Sentence(s) {_numbers(truncated)} are longer than {encoder.title} reads "
                     f"({encoder.max_length or 'its maximum'} word pieces): cut there.")
    if dropped:
        notes.append(f"In sentence(s) {_numbers(dropped)}, “{target}” comes after the cut: not shown.")
    if n == 1:
        notes.append(f"Only one occurrence of “{target}”: nothing to split or compare. Add sentences "
                     "where it means something else.")
    elif n == 2:
        notes.append("Two occurrences: their similarity is shown, but a split needs at least 3.")
    if encoder.kind == "static":
        notes.append(f"{encoder.title} is static: every occurrence gets the same vector, so nothing separates.")
    return notes


def to_api(a: Analysis) -> dict[str, Any]:
    """The `/contextual` result (API.md): model, layers, occurrences, similarity, skipped,
    plus curves, groups, notes and provenance."""
    return {
        "model": a.model, "model_id": a.model_id, "source": a.source, "provenance": a.provenance,
        "kind": a.kind, "word": a.word, "layers": a.n_layers, "layer_names": a.layer_names,
        "occurrences": a.occurrences,
        "similarity": np.round(a.similarity, 5),
        "skipped": a.skipped, "truncated": a.truncated,
        "inside_words": {str(i): w for i, w in a.inside.items()},
        "groups": a.groups, "curves": a.curves, "best_layer": a.best_layer, "notes": a.notes,
    }


def contextual(sentences: str, word: str, model: str = "") -> dict[str, Any]:
    """`/contextual`: the occurrences of `word` in `sentences` (one a line) and their cosine
    similarity at every layer of `model` ("bert", "elmo", "static"; "" = bert)."""
    return to_api(analyse(sentences, word, model))


# ---------------------------------------------------------------- views
def layer_map(vectors: np.ndarray, method: str = "pca", seed: int = 0) -> tuple[np.ndarray, str, str]:
    """2-D map of (n, d) occurrence vectors: (n, 2) float64 points, the method used and a note.

    "umap" falls back to PCA below UMAP_MIN_POINTS points, and while UMAP's one-off
    compilation is still running in the background (it is started on first request)."""
    if method == "umap":
        if vectors.shape[0] < UMAP_MIN_POINTS:
            return pca_2d(vectors), "pca", f"UMAP needs {UMAP_MIN_POINTS}+ occurrences: PCA shown."
        if cosine_similarity(vectors).min() > 1 - 1e-9:
            return pca_2d(vectors), "pca", "All occurrences are one point: PCA shown."
        if not umap_is_warm():
            _start_umap_warmup()
            return pca_2d(vectors), "pca", "UMAP is getting ready (a one-off ~10 s): PCA shown; try again shortly."
        return umap_2d(vectors, seed=seed, n_neighbors=min(8, vectors.shape[0] - 1)), "umap", ""
    return pca_2d(vectors), "pca", ""


_umap_thread: threading.Thread | None = None


def _start_umap_warmup() -> None:
    global _umap_thread
    if _umap_thread is None or not _umap_thread.is_alive():
        _umap_thread = threading.Thread(target=warm_umap, name="ptx-umap-warm", daemon=True)
        _umap_thread.start()


def all_layer_maps(a: Analysis) -> np.ndarray:
    """PCA maps of every layer, (L, n, 2) float64, for small multiples and the layer slider.

    Each layer's axes are flipped, where that helps, to agree with the layer below (PCA's
    sign is arbitrary), so moving through the layers moves points instead of mirroring them.
    Computed once per analysis."""
    if a._maps is None:
        maps = np.stack([pca_2d(a.vectors[k]) for k in range(a.n_layers)])  # (L, n, 2)
        for k in range(1, a.n_layers):
            for j in (0, 1):
                if float(maps[k, :, j] @ maps[k - 1, :, j]) < 0:
                    maps[k, :, j] *= -1
        a._maps = maps
    return a._maps


def analysis_map(a: Analysis, layer: int, method: str = "pca", seed: int = 0) -> tuple[np.ndarray, str, str]:
    """`layer_map` for one layer of an analysis; PCA maps come aligned across layers."""
    if method == "pca":
        return all_layer_maps(a)[layer], "pca", ""
    return layer_map(a.vectors[layer], method, seed)


def mix_view(a: Analysis, weights: list[float], gamma: float) -> dict[str, Any]:
    """The scalar mix of the analysis' layers with the given raw weights and gamma:
    normalised weights (L,), the mixed vectors (n, d), their PCA map (n, 2), and the
    separation figures of the mix (`separation`)."""
    mixed = scalar_mix(a.vectors, weights, gamma)
    return {"weights": softmax(weights), "gamma": float(gamma), "vectors": mixed,
            "points": pca_2d(mixed), "norm": float(np.linalg.norm(mixed, axis=1).mean()),
            **separation(mixed, a.labels)}


def compare(sentences_text: str, word: str, kinds: tuple[str, ...] = ("bert", "elmo", "static")) -> list[dict[str, Any]]:
    """Separation curves of each model kind on the same sentences: one dict per kind with
    `kind`, `available`, and either `analysis` (an Analysis) or `reason` (why not)."""
    out = []
    for kind in kinds:
        try:
            out.append({"kind": kind, "available": True, "analysis": analyse(sentences_text, word, kind)})
        except UserInputError as exc:
            out.append({"kind": kind, "available": False, "reason": str(exc)})
        except Exception as exc:  # a model that cannot load must not hide the others
            out.append({"kind": kind, "available": False, "reason": f"unavailable: {exc}"})
    return out
