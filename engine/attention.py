"""Self-attention weights of a BERT-family encoder, for every layer and head, and per-head statistics.

`compute(bundle, text)` runs the encoder once with `output_attentions=True` (the model is
loaded with eager attention; SDPA would return none) and returns an `AttentionResult`:
`attention` is float32 (layers, heads, T, T), row i = how query token i spreads its
attention over the T keys (each row sums to 1). `head_stats(result)` summarises each
head in numbers the audience can sort by: entropy, mean distance, and the share that
goes to [CLS], [SEP], the token itself, the previous and the next token.

`attention(text, model_id)` is the API's `/attention`; it memoises the last few texts so
that clicking through heads in the UI never reruns the model.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import torch

from engine.errors import UserInputError
from engine.registry import REGISTRY

ROLE = "contextual_bert"
# Pieces shown in the attention views (incl. [CLS] and [SEP]). Longer text is cut there and
# the result says so: a 64 x 64 map is already at the edge of what a projector can show, and
# layers x heads x T x T grows fast (BERT-base at 64 pieces is 590k numbers).
MAX_TOKENS = 64
MAX_CHARS = 10_000

STAT_COLUMNS: tuple[str, ...] = ("entropy", "distance", "cls", "sep", "self", "prev", "next")
STAT_LABELS: dict[str, str] = {
    "entropy": "entropy (bits)",
    "distance": "mean distance (tokens)",
    "cls": "on [CLS]",
    "sep": "on [SEP]",
    "self": "on itself",
    "prev": "on previous",
    "next": "on next",
}


@dataclass
class AttentionResult:
    """One text through one encoder.

    tokens: T word pieces including [CLS] and [SEP].
    attention: float32 (layers, heads, T, T); rows sum to 1 (softmax over keys).
    truncated: the text had more than `max_tokens` pieces and was cut (`total_tokens` says how many).
    """

    model: str
    source: str
    model_id: str
    tokens: list[str]
    attention: np.ndarray
    truncated: bool = False
    total_tokens: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def layers(self) -> int:
        return int(self.attention.shape[0])

    @property
    def heads(self) -> int:
        return int(self.attention.shape[1])

    def to_api(self, decimals: int = 5) -> dict:
        """The `/attention` dict (API.md): model, tokens, layers, heads, attention (nested lists)."""
        return {
            "model": self.model,
            "model_id": self.model_id,
            "source": self.source,
            "tokens": list(self.tokens),
            "layers": self.layers,
            "heads": self.heads,
            "attention": np.round(self.attention.astype(np.float64), decimals).tolist(),
            "truncated": self.truncated,
            "total_tokens": self.total_tokens,
            "notes": list(self.notes),
        }


def check_text(text: str) -> str:
    """The text stripped; UserInputError for empty or over MAX_CHARS characters."""
    if not isinstance(text, str) or not text.strip():
        raise UserInputError("The text is empty: type a sentence, e.g. \"The cat sat on the mat because it was tired.\"")
    if len(text) > MAX_CHARS:
        raise UserInputError(f"The text has {len(text):,} characters; the limit is {MAX_CHARS:,}. "
                             "Paste a sentence or a short paragraph.")
    return text.strip()


def compute(bundle, text: str, max_tokens: int = MAX_TOKENS, label: str = "", source: str = "",
            model_id: str = "") -> AttentionResult:
    """Attention of every layer and head for `text` through `bundle` (a BertBundle-like object
    with `.model` and `.tokenizer`). Cut to `max_tokens` pieces (and to the model's maximum)."""
    text = check_text(text)
    tok = bundle.tokenizer
    limit = int(min(max_tokens, getattr(bundle, "max_length", max_tokens)))
    total = len(tok(text, add_special_tokens=True, truncation=False, verbose=False)["input_ids"])
    enc = tok(text, return_tensors="pt", truncation=True, max_length=limit)
    ids = enc["input_ids"][0].tolist()
    if len(ids) <= 2:
        raise UserInputError("The tokenizer found nothing to read in that text; type some words.")
    device = next(bundle.model.parameters()).device
    inputs = {k: v.to(device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
    with torch.inference_mode():
        out = bundle.model(**inputs, output_attentions=True)
    if not out.attentions or out.attentions[0] is None:
        raise RuntimeError("the model returned no attention weights: load it with attn_implementation='eager'")
    att = torch.stack([a[0] for a in out.attentions]).float().cpu().numpy()  # (L, H, T, T)
    notes = []
    if total > len(ids):
        notes.append(f"The text has {total} word pieces; the attention views show the first {len(ids)} "
                     f"(limit {limit}, [CLS] and [SEP] included).")
    unk = tok.unk_token
    tokens = tok.convert_ids_to_tokens(ids)
    if unk in tokens:
        notes.append(f"{tokens.count(unk)} piece(s) the vocabulary lacks (emoji, rare symbols) are read as {unk}.")
    return AttentionResult(model=label, source=source, model_id=model_id, tokens=tokens, attention=att,
                           truncated=total > len(ids), total_tokens=total, notes=notes)


# ---------------------------------------------------------------- the API call, memoised
_CACHE: OrderedDict[tuple[str, str, int], AttentionResult] = OrderedDict()
_CACHE_SIZE = 8
_cache_lock = threading.Lock()


def run(text: str, model_id: str = "", max_tokens: int = MAX_TOKENS) -> AttentionResult:
    """`compute` for a registry model (role contextual_bert; "" = its default), memoised by
    (model, text) for the last few calls. The result is shared: treat it as read-only."""
    text = check_text(text)
    loaded = REGISTRY.get(ROLE, model_id)
    key = (loaded.spec.id, text, max_tokens)
    with _cache_lock:
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
    result = compute(loaded.obj, text, max_tokens, label=loaded.label(), source=loaded.source_kind,
                     model_id=loaded.spec.id)
    with _cache_lock:
        _CACHE[key] = result
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return result


def attention(text: str, model: str = "") -> dict:
    """`/attention` (API.md): model, tokens, layers, heads, attention layers x heads x T x T."""
    return run(text, model).to_api()


# ---------------------------------------------------------------- statistics per head
def head_stats(result: AttentionResult) -> dict[str, np.ndarray]:
    """Per-head summaries, each a float64 (layers, heads) array, averaged over query rows:

    entropy: bits, 0 (all on one key) .. log2(T) (uniform).
    distance: mean |i - j| in tokens, weighted by attention.
    cls / sep / self / prev / next: share of attention (0..1) on [CLS], on any [SEP], on the
        query's own position, on position i-1 (rows i >= 1) and i+1 (rows i <= T-2).
    """
    a = result.attention.astype(np.float64)  # (L, H, T, T)
    T = a.shape[-1]
    idx = np.arange(T)
    dist = np.abs(idx[:, None] - idx[None, :])  # (T, T)
    ent = -(a * np.log2(np.clip(a, 1e-12, None))).sum(-1).mean(-1)
    sep_cols = [i for i, t in enumerate(result.tokens) if t == "[SEP]"]
    cls_cols = [i for i, t in enumerate(result.tokens) if t == "[CLS]"]
    stats = {
        "entropy": ent,
        "distance": (a * dist).sum(-1).mean(-1),
        "cls": a[..., cls_cols].sum(-1).mean(-1) if cls_cols else np.zeros(a.shape[:2]),
        "sep": a[..., sep_cols].sum(-1).mean(-1) if sep_cols else np.zeros(a.shape[:2]),
        "self": a[..., idx, idx].mean(-1),
        "prev": a[..., idx[1:], idx[:-1]].mean(-1) if T > 1 else np.zeros(a.shape[:2]),
        "next": a[..., idx[:-1], idx[1:]].mean(-1) if T > 1 else np.zeros(a.shape[:2]),
    }
    return stats


def head_kind(stats: dict[str, np.ndarray], layer: int, head: int, threshold: float = 0.5) -> str:
    """A one-word reading of a head: the share (cls/sep/self/prev/next) above `threshold`,
    else "broad" (entropy over 70% of its maximum would be uniform-ish) or "mixed"."""
    best = max(("prev", "next", "self", "sep", "cls"), key=lambda k: stats[k][layer, head])
    if stats[best][layer, head] >= threshold:
        return {"prev": "previous token", "next": "next token", "self": "itself",
                "sep": "[SEP] sink", "cls": "[CLS]"}[best]
    return "mixed"


def stats_rows(result: AttentionResult, sort_by: str = "", descending: bool = True) -> list[dict]:
    """One dict per head: layer, head (both 0-based), kind, and every STAT_COLUMNS value
    (rounded to 3 decimals), sorted by `sort_by` when given."""
    stats = head_stats(result)
    rows = []
    for layer in range(result.layers):
        for head in range(result.heads):
            row = {"layer": layer, "head": head, "kind": head_kind(stats, layer, head)}
            row.update({c: round(float(stats[c][layer, head]), 3) for c in STAT_COLUMNS})
            rows.append(row)
    if sort_by:
        if sort_by not in STAT_COLUMNS:
            raise UserInputError(f"cannot sort by {sort_by!r}; choose one of {', '.join(STAT_COLUMNS)}")
        rows.sort(key=lambda r: r[sort_by], reverse=descending)
    return rows


def check_head(result: AttentionResult, layer: int, head: int) -> tuple[int, int]:
    """(layer, head) as ints inside the model's range; UserInputError otherwise."""
    layer, head = int(layer), int(head)
    if not 0 <= layer < result.layers or not 0 <= head < result.heads:
        raise UserInputError(f"layer must be 0..{result.layers - 1} and head 0..{result.heads - 1} "
                             f"for {result.model}; got layer {layer}, head {head}")
    return layer, head
