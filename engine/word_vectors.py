"""Static word vectors at work: analogies, nearest neighbours, 2-D word maps, and the
one-vector-per-word limit ("bank").

Every ranking is one matrix-vector product with the model's row-normalised matrix
(`unit_vectors`, float32 (V, d), kept once per model), restricted to the N most
frequent words when a vocabulary limit is given. The query of an expression is what
gensim's `most_similar` uses (3CosAdd): the mean of the unit vectors of its terms, +1
for positive and -1 for negative ones, normalised; input words are left out of the
answers, and the result says where they would have ranked.

Entry points take a model id ("" = the role's default) and return plain dicts:
`analogy`, `neighbors`, `word_map`, `senses`.
"""

from __future__ import annotations

import difflib
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.errors import UserInputError
from engine.registry import REGISTRY, LoadedModel

ROLE = "static_vectors"
MAX_EXPRESSION_CHARS = 300
MAX_TERMS = 12
MAX_K = 100
MAP_MAX_WORDS = 200
HOVER_VOCAB = 50_000  # neighbours in the map's hover come from the most frequent words
SUGGEST_VOCAB = 100_000


# ---------------------------------------------------------------- the vectors of one model
@dataclass
class VectorTable:
    """One loaded model's vocabulary and normalised matrix.

    words: the vocabulary, most frequent first (index = frequency rank - 1).
    unit: float32 (V, d), rows of L2 norm 1, shared with the model (no copy).
    """

    model_id: str
    label: str
    source: str
    words: list[str]
    index: dict[str, int]
    unit: np.ndarray
    _by_initial: dict[str, list[str]] = field(default_factory=dict, repr=False)

    @property
    def size(self) -> int:
        return len(self.words)

    def header(self) -> dict[str, Any]:
        """The keys every result carries: which model, from where, how big."""
        return {"model": self.label, "model_id": self.model_id, "source": self.source,
                "vocab_size": self.size, "dim": int(self.unit.shape[1])}


_tables: dict[int, tuple[Any, VectorTable]] = {}
_tables_lock = threading.Lock()


def table_of(loaded: LoadedModel) -> VectorTable:
    """The VectorTable of a loaded static-vectors model (built once, then cached)."""
    from engine.models.static_vectors import unit_vectors

    key = id(loaded.obj)
    with _tables_lock:
        hit = _tables.get(key)
        if hit is None or hit[0] is not loaded.obj:  # ids are reused once a model is forgotten
            kv = loaded.obj
            hit = (kv, VectorTable(loaded.spec.id, loaded.label(), loaded.source_kind,
                                   kv.index_to_key, kv.key_to_index, unit_vectors(kv)))
            _tables[key] = hit
    return hit[1]


def forget(model_id: str) -> None:
    """Drop the cached tables of a model id (a retrained model replaced on disk)."""
    with _tables_lock:
        for key in [k for k, (_, t) in _tables.items() if t.model_id == model_id]:
            del _tables[key]


def default_model_id() -> str:
    """The role's default: the first spec, in preference order, that can load. (Resolved
    here rather than by `REGISTRY.get(role)`, which returns whichever model of the role
    happens to be loaded already, e.g. a word2vec trained here.)"""
    pick = REGISTRY.would_load(ROLE)
    return pick[0].id if pick else ""


def is_ready(model: str = "") -> bool:
    """Whether the model's vectors are loaded already (no loading starts here)."""
    return REGISTRY.is_loaded(ROLE, (model or "").strip() or default_model_id())


def load_in_background(model: str = "") -> None:
    """Load a model's vectors and build its table in a daemon thread (errors are logged
    by the registry and reported on the next real request)."""
    def body() -> None:
        try:
            get_table(model)
        except Exception:
            pass

    threading.Thread(target=body, name="ptx-vectors-load", daemon=True).start()


def get_table(model: str = "") -> VectorTable:
    """The table for a model id ("" = default). Unknown ids list the choices."""
    return table_of(REGISTRY.get(ROLE, (model or "").strip() or default_model_id()))


# ---------------------------------------------------------------- expressions
@dataclass(frozen=True)
class Expression:
    """A parsed vector expression: words added (positive) and subtracted (negative),
    as typed (case kept; vocabulary look-up happens later)."""

    positive: tuple[str, ...]
    negative: tuple[str, ...]
    order: tuple[str, ...] = ()  # "+word" / "-word" in typed order, for display

    @property
    def terms(self) -> tuple[str, ...]:
        return self.positive + self.negative

    def __str__(self) -> str:
        signed = self.order or tuple("+" + w for w in self.positive) + tuple("-" + w for w in self.negative)
        out = " ".join(f"{t[0]} {t[1:]}" for t in signed)
        return out[2:] if out.startswith("+ ") else out


_EXAMPLES = "Write it like `king - man + woman` or `man : king :: woman : ?`."


def _check_text(text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise UserInputError(f"The expression is empty. {_EXAMPLES}")
    text = text.strip()
    if len(text) > MAX_EXPRESSION_CHARS:
        raise UserInputError(f"The expression is {len(text):,} characters long; keep it under "
                             f"{MAX_EXPRESSION_CHARS} (a few words joined by + and -).")
    return text


def _parse_proportion(text: str) -> Expression:
    """`a : b :: c : ?` -> b - a + c."""
    sides = [s.strip() for s in text.split("::")]
    if len(sides) != 2:
        raise UserInputError(f"Use `::` once, between the two pairs: `man : king :: woman : ?` (got {text!r}).")
    left = [w.strip() for w in sides[0].split(":")]
    right = [w.strip() for w in sides[1].split(":")]
    if len(right) == 2 and right[1] in ("?", ""):
        right = right[:1]
    if len(left) != 2 or len(right) != 1 or not all(left + right):
        raise UserInputError(f"A proportion needs three words: `a : b :: c : ?` (got {text!r}).")
    words = left + right
    for w in words:
        if len(w.split()) != 1 or w in ("?", "+", "-"):
            raise UserInputError(f"{w!r} is not one word; a proportion is `a : b :: c : ?`.")
    a, b, c = words
    return Expression(positive=(b, c), negative=(a,), order=(f"+{b}", f"-{a}", f"+{c}"))


def _scan(text: str) -> list[str]:
    """Split into words and the operators + and -. A hyphen glued inside a word
    ("x-ray") stays part of it; one standing apart or in front of a word is an operator."""
    tokens: list[str] = []
    for chunk in re.split(r"[\s,]+", text.replace("+", " + ")):
        if not chunk:
            continue
        lead = re.match(r"^-+", chunk)
        if lead:
            tokens.extend("-" * len(lead.group()))
            chunk = chunk[lead.end():]
        trail = re.search(r"-+$", chunk)
        tail = []
        if trail:
            tail = list("-" * len(trail.group()))
            chunk = chunk[: trail.start()]
        if chunk:
            tokens.append(chunk)
        tokens.extend(tail)
    return tokens


def parse_expression(text: str) -> Expression:
    """Parse `king - man + woman` (words joined by + and -; a space or comma between two
    words means +) or the proportion `man : king :: woman : ?` (= king - man + woman).

    Raises UserInputError for an empty text, operators in a row (`king - - man`), an
    expression with no word (`+`), a trailing operator or more than MAX_TERMS words.
    """
    text = _check_text(text)
    if "::" in text:
        return _parse_proportion(text)
    if ":" in text:
        raise UserInputError(f"A proportion needs `::` between its pairs: `man : king :: woman : ?`. {_EXAMPLES}")
    positive: list[str] = []
    negative: list[str] = []
    order: list[str] = []
    sign: str | None = None
    for tok in _scan(text):
        if tok in ("+", "-"):
            if sign is not None:
                raise UserInputError(f"`{sign} {tok}`: two operators in a row in {text!r}; "
                                     "put exactly one + or - between two words.")
            sign = tok
            continue
        (negative if sign == "-" else positive).append(tok)
        order.append(("-" if sign == "-" else "+") + tok)
        sign = None
    if not positive and not negative:
        raise UserInputError(f"{text!r} has no words, only operators. {_EXAMPLES}")
    if sign is not None:
        raise UserInputError(f"{text!r} ends with `{sign}`: add a word after it.")
    if len(positive) + len(negative) > MAX_TERMS:
        raise UserInputError(f"That is {len(positive) + len(negative)} words; an expression takes at most {MAX_TERMS}.")
    return Expression(tuple(positive), tuple(negative), tuple(order))


# ---------------------------------------------------------------- vocabulary look-up
def suggest(table: VectorTable, word: str, n: int = 3) -> list[str]:
    """Up to n vocabulary words spelled like `word` (among the SUGGEST_VOCAB most
    frequent words, same first letter), best first; [] when nothing is close."""
    w = word.lower()
    if not w:
        return []
    if not table._by_initial:
        groups: dict[str, list[str]] = {}
        for cand in table.words[:SUGGEST_VOCAB]:
            if cand:
                groups.setdefault(cand[0], []).append(cand)
        table._by_initial = groups
    pool = [c for c in table._by_initial.get(w[0], []) if abs(len(c) - len(w)) <= 2]
    return difflib.get_close_matches(w, pool, n=n, cutoff=0.7)


def lookup(table: VectorTable, word: str) -> str | None:
    """The vocabulary key for a word as typed: exact, then lower-cased, then without
    surrounding punctuation; None when the model does not know it."""
    for cand in (word, word.lower(), word.strip(".,;:!?\"'()[]{}").lower()):
        if cand and cand in table.index:
            return cand
    return None


def _unknown_message(table: VectorTable, unknown: list[str]) -> str:
    parts = []
    for w in unknown:
        hint = suggest(table, w)
        if "-" in w.strip("-") and all(lookup(table, p) for p in w.split("-") if p):
            parts.append(f"{w!r} (to subtract, put spaces around the minus: `{w.replace('-', ' - ')}`)")
        elif hint:
            parts.append(f"{w!r} (did you mean {', '.join(hint)}?)")
        else:
            parts.append(f"{w!r} (no similar spelling)")
    kind = "lower-case English words" if table.model_id.startswith("glove") else "the words of its training text"
    return (f"Not in the vocabulary of {table.label}: {'; '.join(parts)}. "
            f"This model knows {table.size:,} {kind}; try another word.")


def resolve(table: VectorTable, words: tuple[str, ...] | list[str]) -> list[str]:
    """Map typed words to vocabulary keys; one UserInputError naming every unknown word
    with its nearest spellings."""
    keys = [lookup(table, w) for w in words]
    unknown = [w for w, k in zip(words, keys, strict=True) if k is None]
    if unknown:
        raise UserInputError(_unknown_message(table, unknown))
    return [k for k in keys if k is not None]


# ---------------------------------------------------------------- ranking
def query_vector(table: VectorTable, positive: list[str], negative: list[str]) -> np.ndarray:
    """Unit-length (d,) float32 query: the mean of the terms' unit vectors (+1 positive,
    -1 negative), normalised, as gensim's `most_similar` computes it."""
    idx = [table.index[w] for w in positive] + [table.index[w] for w in negative]
    weights = np.array([1.0] * len(positive) + [-1.0] * len(negative), dtype=np.float32)
    mean = weights @ table.unit[idx] / len(idx)  # (d,)
    norm = float(np.linalg.norm(mean))
    if norm < 1e-6:
        raise UserInputError("The terms cancel out (the sum is the zero vector); change the expression.")
    return (mean / norm).astype(np.float32)


def _limit(table: VectorTable, limit: int | None) -> int:
    if limit is None or int(limit) <= 0:
        return table.size
    return max(1, min(int(limit), table.size))


def top_k(table: VectorTable, query: np.ndarray, k: int, exclude: set[int] = frozenset(),
          limit: int | None = None) -> list[tuple[int, float]]:
    """The k rows most cosine-similar to a unit `query` (d,), best first, among the
    first `limit` rows (the most frequent words; None or 0 = all), leaving out `exclude`.

    Returns [(row index, cosine in [-1, 1])]. Cost: one (limit, d) x (d,) product and an
    argpartition; no copy of the matrix.
    """
    n = _limit(table, limit)
    scores = table.unit[:n] @ query  # (n,) float32
    want = min(n, k + len(exclude))
    if want <= 0:
        return []
    top = np.argpartition(-scores, want - 1)[:want] if want < n else np.arange(n)
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(int(i), float(scores[i])) for i in top if int(i) not in exclude][:k]


def _check_k(k: Any) -> int:
    try:
        k = int(k)
    except (TypeError, ValueError):
        raise UserInputError(f"k must be a whole number from 1 to {MAX_K}, not {k!r}.") from None
    if not 1 <= k <= MAX_K:
        raise UserInputError(f"k must be from 1 to {MAX_K}; got {k}.")
    return k


def _rows(table: VectorTable, hits: list[tuple[int, float]]) -> list[dict[str, Any]]:
    """[{word, score, rank}]: rank is the word's frequency rank (1 = most frequent)."""
    return [{"word": table.words[i], "score": round(s, 4), "rank": i + 1} for i, s in hits]


def _display(expr: Expression, table: VectorTable) -> str:
    """The expression in typed order with vocabulary spellings: `king - man + woman`."""
    order = tuple(t[0] + (lookup(table, t[1:]) or t[1:]) for t in expr.order)
    return str(Expression(expr.positive, expr.negative, order))


def rank_expression(table: VectorTable, expr: Expression, k: int, limit: int | None = None) -> dict[str, Any]:
    """Top-k words for an expression on one table, input words left out.

    Returns {positive, negative, expression, results: [{word, score, rank}], left_out:
    [{word, score, would_be}] (input words and the place each would have taken),
    vocab_limit, seconds}.
    """
    t0 = time.perf_counter()
    positive = resolve(table, expr.positive)
    negative = resolve(table, expr.negative)
    query = query_vector(table, positive, negative)
    exclude = {table.index[w] for w in positive + negative}
    ranked = top_k(table, query, k + len(exclude), set(), limit)  # one product serves both lists
    hits = [(i, s) for i, s in ranked if i not in exclude][:k]
    n = _limit(table, limit)
    left_out = [{"word": table.words[i], "score": round(s, 4), "would_be": place}
                for place, (i, s) in enumerate(ranked, start=1) if i in exclude and place <= k]
    return {
        **table.header(),
        "positive": positive,
        "negative": negative,
        "expression": _display(expr, table),
        "results": _rows(table, hits),
        "left_out": left_out,
        "vocab_limit": n,
        "seconds": round(time.perf_counter() - t0, 5),
    }


def analogy(expression: str, k: int = 10, model: str = "", limit: int | None = None) -> dict[str, Any]:
    """Solve a word analogy such as `king - man + woman` or `man : king :: woman : ?`.

    Needs at least two words (one word is a neighbours question). `limit` ranks only the
    `limit` most frequent words (None/0 = the whole vocabulary). Returns the keys of
    `rank_expression` plus the model's header (model, model_id, source, vocab_size, dim).
    """
    expr = parse_expression(expression)
    if len(expr.terms) < 2:
        raise UserInputError(f"{expression.strip()!r} is one word; an analogy needs at least two, like "
                             "`king - man + woman`. For the nearest words to one word, use Neighbours.")
    k = _check_k(k)
    return rank_expression(get_table(model), expr, k, limit)


def neighbors(word: str, k: int = 10, model: str = "", limit: int | None = None) -> dict[str, Any]:
    """Nearest words (cosine) to one word or to a vector expression (`bank + river`).

    Returns the model's header, word (as typed), positive, negative, results: [{word,
    score, rank}] best first (the input words left out), left_out, vocab_limit.
    """
    expr = parse_expression(word)
    k = _check_k(k)
    out = rank_expression(get_table(model), expr, k, limit)
    return {**out, "word": word.strip()}


# ---------------------------------------------------------------- word maps
@dataclass(frozen=True)
class MapRequest:
    """Words for a map, in order, without repeats; pairs (a, b) are drawn as arrows a -> b."""

    words: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]


def parse_map_words(text: str) -> MapRequest:
    """`man:woman, king:queen paris` -> words (man, woman, king, queen, paris), pairs
    ((man, woman), (king, queen)). Separators: commas, spaces, new lines; `a:b` (or a>b,
    a->b) is a pair. More than MAP_MAX_WORDS distinct words is refused."""
    if not isinstance(text, str) or not text.strip():
        raise UserInputError("No words for the map; type some, like `man:woman, king:queen, uncle:aunt`.")
    words: list[str] = []
    pairs: list[tuple[str, str]] = []
    for chunk in re.split(r"[\s,;，、]+", text.replace("->", ":").replace(">", ":").strip()):
        if not chunk:
            continue
        parts = [p for p in chunk.split(":") if p]
        if len(parts) == 2 and ":" in chunk:
            pairs.append((parts[0], parts[1]))
        for p in parts:
            if p not in words:
                words.append(p)
    if not words:
        raise UserInputError("No words for the map; type some, like `man:woman, king:queen, uncle:aunt`.")
    if len(words) > MAP_MAX_WORDS:
        raise UserInputError(f"That is {len(words)} words; the map shows at most {MAP_MAX_WORDS} "
                             "so that it stays readable. Remove some.")
    return MapRequest(tuple(words), tuple(pairs))


def pair_axes_projection(x: np.ndarray, diffs: np.ndarray) -> np.ndarray:
    """Project (n, d) vectors on two axes: axis 1 is the principal direction of the pair
    differences (PCA of the (m, d) diffs and their negatives, so the shared offset is
    kept, not centred away); axis 2 is the principal direction of the words once axis 1
    is taken out. Returns (n, 2) float64. Parallel offsets stay parallel: a linear map."""
    from engine.projection import pca_2d

    diffs = np.asarray(diffs, dtype=np.float64)
    sym = np.vstack([diffs, -diffs])  # mean zero: PCA keeps the common direction
    _, _, vt = np.linalg.svd(sym, full_matrices=False)
    a1 = vt[0]
    if a1 @ diffs.mean(axis=0) < 0:  # arrows point to +x
        a1 = -a1
    x = np.asarray(x, dtype=np.float64)
    resid = x - np.outer(x @ a1, a1)
    second = pca_2d(resid)[:, 0]
    return np.column_stack([x @ a1, second])


def _hover_neighbours(table: VectorTable, idx: list[int], n: int = 5) -> list[list[str]]:
    """n nearest words of each row among the HOVER_VOCAB most frequent words."""
    m = min(HOVER_VOCAB, table.size)
    sims = table.unit[idx] @ table.unit[:m].T  # (len(idx), m)
    want = min(m, n + 1)
    top = np.argpartition(-sims, want - 1, axis=1)[:, :want]
    out = []
    for row, i in enumerate(idx):
        order = top[row][np.argsort(-sims[row, top[row]])]
        out.append([table.words[j] for j in order if j != i][:n])
    return out


def word_map(words: str, method: str = "pca", model: str = "", seed: int = 0) -> dict[str, Any]:
    """A 2-D map of words by PCA or UMAP.

    PCA is linear: with pairs (`man:woman`) its first axis is fitted on the pair
    differences, so equal offsets show as parallel arrows. UMAP keeps neighbourhoods,
    not offsets; with fewer than 5 known words (or while its one-time compilation is
    still running) the map falls back to PCA and `note` says so.

    Returns the model's header, method (the one used), requested_method, points:
    [{word, x, y, neighbors}], pairs: [[a, b]] (both known), missing (typed words not in
    the vocabulary), suggestions {missing word: [spellings]}, note, seconds.
    """
    from engine import projection

    t0 = time.perf_counter()
    requested = (method or "pca").strip().lower()
    if requested not in ("pca", "umap"):
        raise UserInputError(f"method must be 'pca' or 'umap', not {method!r}.")
    req = parse_map_words(words)
    table = get_table(model)
    keys: list[str] = []
    missing: list[str] = []
    typed_to_key: dict[str, str] = {}
    for w in req.words:
        key = lookup(table, w)
        if key is None:
            missing.append(w)
        elif key not in keys:
            keys.append(key)
        if key is not None:
            typed_to_key[w] = key
    if len(keys) < 2:
        if missing:
            raise UserInputError(_unknown_message(table, missing) + " A map needs at least two known words.")
        raise UserInputError("A map needs at least two different words.")
    pairs = [(typed_to_key[a], typed_to_key[b]) for a, b in req.pairs
             if a in typed_to_key and b in typed_to_key and typed_to_key[a] != typed_to_key[b]]
    idx = [table.index[k] for k in keys]
    x = table.unit[idx]  # (n, d)
    note = ""
    used = requested
    if requested == "umap" and len(keys) < projection.UMAP_MIN_POINTS:
        used = "pca"
        note = (f"UMAP needs at least {projection.UMAP_MIN_POINTS} words (it has {len(keys)}); "
                "showing PCA instead.")
    elif requested == "umap" and not projection.umap_is_warm():
        used = "pca"
        start_umap_warmup()
        note = ("UMAP is compiling its code for the first time in this server (about 10-20 s); "
                "showing PCA meanwhile. Ask again in a moment.")
    if used == "umap":
        xy = projection.umap_2d(x, seed=seed)
        if not note:
            note = "UMAP keeps who is near whom, not the offsets between words: arrows need not be parallel."
    elif pairs:
        diffs = np.stack([table.unit[table.index[b]] - table.unit[table.index[a]] for a, b in pairs])
        xy = pair_axes_projection(x, diffs)
        note = note or ("PCA, horizontal axis fitted on the pair differences: a linear map, so equal "
                        "offsets show as parallel arrows.")
    else:
        xy = projection.pca_2d(x)
        note = note or "PCA: the two directions along which these words differ most."
    hover = _hover_neighbours(table, idx)
    points = [{"word": w, "x": float(xy[i, 0]), "y": float(xy[i, 1]), "rank": idx[i] + 1, "neighbors": hover[i]}
              for i, w in enumerate(keys)]
    return {
        **table.header(),
        "method": used,
        "requested_method": requested,
        "points": points,
        "pairs": [list(p) for p in pairs],
        "missing": missing,
        "suggestions": {w: suggest(table, w) for w in missing},
        "note": note,
        "seconds": round(time.perf_counter() - t0, 5),
    }


_warm_thread: threading.Thread | None = None


def start_umap_warmup() -> None:
    """Compile UMAP once in a background thread (no-op if started or done)."""
    global _warm_thread
    from engine import projection

    if projection.umap_is_warm() or (_warm_thread is not None and _warm_thread.is_alive()):
        return
    _warm_thread = threading.Thread(target=projection.warm_umap, name="ptx-umap-warm", daemon=True)
    _warm_thread.start()


# ---------------------------------------------------------------- the limit: one vector per word
def senses(word: str, sense_a: str, sense_b: str, k: int = 15, model: str = "",
           limit: int | None = 50_000) -> dict[str, Any]:
    """How one vector holds the senses of an ambiguous word.

    sense_a / sense_b: a few words typical of each sense ("money, loan, deposit" /
    "river, shore, stream"). Returns the model's header, word, neighbors: [{word, score,
    rank, a, b, leans}] (a, b: cosine of each neighbour to the sense centroids; leans:
    "a", "b" or "" when neither is clearly closer), similarity {a, b} of the word to
    each centroid, sense_words {a: [...], b: [...]} with each word's place among the
    word's neighbours (`place`, 1 = nearest, whole vocabulary), and with_a / with_b: the
    neighbours of word + centroid, where each sense shows once context is added by hand.
    """
    table = get_table(model)
    k = _check_k(k)
    expr = parse_expression(word)
    if len(expr.terms) != 1 or expr.negative:
        raise UserInputError(f"Type one word, like `bank`, not an expression ({word!r}).")
    key = resolve(table, expr.positive)[0]
    groups = {}
    for name, text in (("a", sense_a), ("b", sense_b)):
        e = parse_expression(text) if isinstance(text, str) and text.strip() else None
        if e is None or e.negative:
            raise UserInputError(f"List a few words for sense {name.upper()}, separated by commas "
                                 "(like `money, loan, deposit`).")
        groups[name] = [w for w in resolve(table, e.positive) if w != key]
        if not groups[name]:
            raise UserInputError(f"Sense {name.upper()} needs at least one word other than {key!r}.")
    i = table.index[key]
    v = table.unit[i]
    cent = {}
    for name, ws in groups.items():
        c = table.unit[[table.index[w] for w in ws]].mean(axis=0)
        cent[name] = c / max(float(np.linalg.norm(c)), 1e-9)
    hits = top_k(table, v, k, {i}, limit)
    rows = []
    for j, s in hits:
        a = float(table.unit[j] @ cent["a"])
        b = float(table.unit[j] @ cent["b"])
        leans = "a" if a - b > 0.05 else "b" if b - a > 0.05 else ""
        rows.append({"word": table.words[j], "score": round(s, 4), "rank": j + 1,
                     "a": round(a, 4), "b": round(b, 4), "leans": leans})
    all_scores = table.unit @ v  # (V,)
    places = {name: [{"word": w, "score": round(float(all_scores[table.index[w]]), 4),
                      "place": int((all_scores > all_scores[table.index[w]]).sum())}
                     for w in ws] for name, ws in groups.items()}

    def with_sense(name: str) -> list[dict[str, Any]]:
        q = v + cent[name]
        q = q / max(float(np.linalg.norm(q)), 1e-9)
        excl = {i} | {table.index[w] for w in groups[name]}
        return _rows(table, top_k(table, q.astype(np.float32), k, excl, limit))

    return {
        **table.header(),
        "word": key,
        "neighbors": rows,
        "similarity": {"a": round(float(v @ cent["a"]), 4), "b": round(float(v @ cent["b"]), 4)},
        "sense_words": places,
        "with_a": with_sense("a"),
        "with_b": with_sense("b"),
        "vocab_limit": _limit(table, limit),
    }


# ---------------------------------------------------------------- for the model picker and comparisons
def available_models(rescan: bool = False) -> list[dict[str, Any]]:
    """The static-vector models a person can pick: [{id, title, source, default,
    available, loaded}], the role's default first. `rescan` looks for newly trained or
    dropped-in vectors first (cheap: a directory listing, no hashing)."""
    from engine.models.static_vectors import discover

    if rescan:
        discover()
    specs = REGISTRY.specs(ROLE)
    default = REGISTRY.would_load(ROLE)
    rows = []
    for spec in specs:
        pick = REGISTRY.would_load(ROLE, spec.id)
        rows.append({"id": spec.id, "title": spec.title, "source": (pick or (spec, spec.sources[0]))[1].kind,
                     "default": default is not None and default[0].id == spec.id, "available": pick is not None,
                     "loaded": REGISTRY.is_loaded(ROLE, spec.id), "note": spec.note})
    rows.sort(key=lambda r: (not r["default"], not r["available"]))
    return rows


def side_by_side(models: list[str], expressions: list[str], k: int = 5) -> dict[str, Any]:
    """The same questions asked of several models: each expression with two or more words
    is an analogy, a single word a neighbours question. Unknown words give a cell saying
    so instead of an error. Returns {models: [label], rows: [{question, answers: [str per
    model]}]}."""
    tables = [get_table(m) for m in models]
    rows = []
    for text in expressions:
        expr = parse_expression(text)
        answers = []
        for table in tables:
            try:
                out = rank_expression(table, expr, k)
                answers.append(", ".join(r["word"] for r in out["results"]))
            except UserInputError:
                missing = [w for w in expr.terms if lookup(table, w) is None]
                answers.append("not in its vocabulary: " + ", ".join(missing))
        rows.append({"question": str(expr), "answers": answers})
    return {"models": [t.label for t in tables], "model_ids": [t.model_id for t in tables], "rows": rows}
