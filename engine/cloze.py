"""BERT's pretraining task, the cloze: fill in the [MASK] from the words on BOTH sides.

`fill_mask(text, k, model)` is the API's `/fill_mask`: every `[MASK]` (any case) gets its
top-k word pieces with probabilities, each mask predicted independently from the same
forward pass (as in BERT's training). Scores are the softmax over the whole vocabulary at
that position; the ranking leaves out special and `[unused]` pieces, which a person
cannot read, so the listed scores need not sum to 1.

`words(text)` / `toggle_mask(text, index)` support the UI's "click a word to mask it".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch

from engine.errors import UserInputError
from engine.registry import REGISTRY

ROLE = "mlm"
MAX_CHARS = 10_000
MAX_MASKS = 20
MAX_K = 50
MASK_PATTERN = re.compile(r"\[\s*mask\s*\]", re.IGNORECASE)
# Words, [MASK] and single punctuation marks, for click-to-mask.
_WORD = re.compile(r"\[mask\]|[^\W_]+(?:['’][^\W_]+)*|[^\w\s]", re.IGNORECASE)


@dataclass
class ClozeResult:
    """predictions: one list per mask, in text order, of (token, probability) best first."""

    model: str
    source: str
    model_id: str
    note: str
    tokens: list[str]
    mask_positions: list[int]
    predictions: list[list[tuple[str, float]]]
    truncated: bool
    notes: list[str]

    def to_api(self) -> dict:
        return {
            "model": self.model,
            "model_id": self.model_id,
            "source": self.source,
            "model_note": self.note,
            "tokens": self.tokens,
            "mask_positions": self.mask_positions,
            "predictions": [[{"token": t, "score": round(float(s), 6)} for t, s in p] for p in self.predictions],
            "filled": fill_in(self.tokens, self.mask_positions, self.predictions),
            "truncated": self.truncated,
            "notes": self.notes,
        }


def normalise(text: str, mask_token: str = "[MASK]") -> str:
    """Stripped text with every spelling of [mask] written as the tokenizer's mask token;
    UserInputError for empty, over-long or mask-less text, and for too many masks."""
    if not isinstance(text, str) or not text.strip():
        raise UserInputError("The text is empty: type a sentence with [MASK] where a word is missing, "
                             "e.g. \"The capital of France is [MASK].\"")
    if len(text) > MAX_CHARS:
        raise UserInputError(f"The text has {len(text):,} characters; the limit is {MAX_CHARS:,}.")
    n = len(MASK_PATTERN.findall(text))
    if n == 0:
        raise UserInputError("There is no [MASK] in the text: write [MASK] where the model should guess a word, "
                             "e.g. \"The capital of France is [MASK].\" (or click a word in the sentence).")
    if n > MAX_MASKS:
        raise UserInputError(f"The text has {n} [MASK]s; the limit is {MAX_MASKS}. With so few words left, "
                             "the model has little context to go on anyway.")
    return MASK_PATTERN.sub(mask_token, text.strip())


def banned_ids(tokenizer) -> np.ndarray:
    """Ids never offered as answers: special tokens and [unused...] / [PAD]-like pieces."""
    vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    special = set(tokenizer.all_special_ids)
    return np.array([i for i, t in enumerate(vocab) if i in special or (t.startswith("[") and t.endswith("]"))],
                    dtype=np.int64)


_banned_cache: dict[int, torch.Tensor] = {}


def mask_logits(bundle, input_ids: torch.Tensor, attention_mask: torch.Tensor, positions: list[int]
                ) -> torch.Tensor:
    """Vocabulary logits (n_masks, vocab) float32 at `positions` of one sequence (batch of 1).
    For BERT-shaped models the output head runs on the masked positions only (the vocab
    projection is the costly part); otherwise the full model runs and is indexed."""
    model = bundle.model
    with torch.inference_mode():
        if hasattr(model, "bert") and hasattr(model, "cls"):
            hidden = model.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (1, T, H)
            return model.cls(hidden[0, positions]).float()
        return model(input_ids=input_ids, attention_mask=attention_mask).logits[0, positions].float()


def predict(bundle, text: str, k: int = 5, label: str = "", source: str = "", model_id: str = "") -> ClozeResult:
    """Top-k per [MASK] for `text` through `bundle` (MlmBundle-like: .model, .tokenizer, .note)."""
    tok = bundle.tokenizer
    k = int(k)
    if not 1 <= k <= MAX_K:
        raise UserInputError(f"k must be between 1 and {MAX_K}; got {k}")
    text = normalise(text, tok.mask_token)
    limit = int(min(tok.model_max_length, bundle.model.config.max_position_embeddings))
    full = tok(text, truncation=False, verbose=False)["input_ids"]
    enc = tok(text, return_tensors="pt", truncation=True, max_length=limit)
    ids = enc["input_ids"][0]
    positions = [i for i, t in enumerate(ids.tolist()) if t == tok.mask_token_id]
    notes: list[str] = []
    truncated = len(full) > len(ids)
    if truncated:
        n_all = sum(1 for t in full if t == tok.mask_token_id)
        if not positions:
            raise UserInputError(f"The text has {len(full)} word pieces and the model reads at most {limit}; "
                                 "every [MASK] is beyond that point. Shorten the text or move the [MASK] earlier.")
        notes.append(f"The text has {len(full)} word pieces; the model reads the first {limit}, so it was cut"
                     + (f" and {n_all - len(positions)} [MASK](s) after the cut were dropped." if n_all > len(positions)
                        else "."))
    if tok.unk_token_id in ids.tolist():
        notes.append(f"Some characters (emoji, rare symbols) are not in the vocabulary and read as {tok.unk_token}.")
    device = next(bundle.model.parameters()).device
    logits = mask_logits(bundle, ids[None].to(device), enc["attention_mask"].to(device), positions)  # (M, V)
    probs = torch.softmax(logits, dim=-1)
    key = id(tok)
    if key not in _banned_cache:
        _banned_cache[key] = torch.from_numpy(banned_ids(tok))
    ranked = probs.clone()
    ranked[:, _banned_cache[key].to(ranked.device)] = -1.0
    top = ranked.topk(k, dim=-1)
    preds = []
    for row_p, row_i in zip(top.values.cpu().tolist(), top.indices.cpu().tolist(), strict=True):
        preds.append(list(zip(tok.convert_ids_to_tokens(row_i), row_p, strict=True)))
    return ClozeResult(model=label, source=source, model_id=model_id, note=getattr(bundle, "note", ""),
                       tokens=tok.convert_ids_to_tokens(ids.tolist()), mask_positions=positions,
                       predictions=preds, truncated=truncated, notes=notes)


def predict_left_only(bundle, text: str, k: int = 5, **labels) -> ClozeResult:
    """Like `predict`, but each [MASK] sees only the words BEFORE it (the text is cut right after
    it): the context a left-to-right language model would have. One forward pass per mask."""
    text = normalise(text, bundle.tokenizer.mask_token)
    ends = [m.end() for m in MASK_PATTERN.finditer(text)]
    full = predict(bundle, text, k, **labels)
    preds = []
    for end in ends[: len(full.predictions)]:
        preds.append(predict(bundle, text[:end], k, **labels).predictions[-1])
    full.predictions = preds
    full.notes.append("Left context only: each [MASK] was guessed from the words before it, as a left-to-right "
                      "model would; the words after it were removed.")
    return full


def run(text: str, k: int = 5, model_id: str = "", left_only: bool = False) -> ClozeResult:
    """`predict` (or `predict_left_only`) with a registry model of role `mlm` ("" = the role's default)."""
    loaded = REGISTRY.get(ROLE, model_id)
    fn = predict_left_only if left_only else predict
    return fn(loaded.obj, text, k, label=loaded.label(), source=loaded.source_kind, model_id=loaded.spec.id)


def fill_mask(text: str, k: int = 5, model: str = "") -> dict:
    """`/fill_mask` (API.md): model, source, predictions (one list per [MASK] of {token, score})."""
    return run(text, k, model).to_api()


def model_card(model_id: str) -> str:
    """One line on how good the offline model is (held-out numbers from its manifest), or ""."""
    from engine.models.mlm import TRAINED_ID, trained_manifest

    if model_id != TRAINED_ID:
        return ""
    manifest = trained_manifest()
    if not manifest:
        return ""
    m = manifest["metrics"]
    return (f"Held-out masked pieces: top-1 {m['top1']:.0%}, top-5 {m['top5']:.0%} (always guessing the most "
            f"frequent pieces: {m['unigram_top5']:.0%}); content words top-5 {m['content_top5']:.0%} (most "
            f"frequent content words: {m['unigram_of_content_words_top5']:.0%}). "
            f"Trained {manifest['minutes']:.0f} min on 2 busy CPU cores, sequences of "
            f"<= {manifest['training']['seq']} pieces.")


def fill_in(tokens: list[str], positions: list[int], predictions: list[list[tuple[str, float]]]) -> str:
    """The text with each [MASK] replaced by its top guess (word pieces joined back)."""
    out = list(tokens)
    for pos, pred in zip(positions, predictions, strict=False):
        if pred:
            out[pos] = pred[0][0]
    words = [t for t in out if t not in ("[CLS]", "[SEP]", "[PAD]")]
    text = " ".join(words).replace(" ##", "")
    return re.sub(r" ([.,;:!?'])", r"\1", text)


# ---------------------------------------------------------------- click a word to mask it
def words(text: str) -> list[str]:
    """Words, [MASK]s and punctuation marks of `text`, in order (what the UI shows to click)."""
    return _WORD.findall(text or "")


def toggle_mask(text: str, index: int, original: str = "") -> str:
    """`text` with word `index` (of `words(text)`) replaced by [MASK]; a [MASK] clicked again
    gets its word back from `original` when the two texts line up, else stays masked."""
    spans = [m.span() for m in _WORD.finditer(text or "")]
    if not 0 <= index < len(spans):
        raise UserInputError(f"there is no word {index} in the text (it has {len(spans)})")
    start, end = spans[index]
    current = text[start:end]
    if MASK_PATTERN.fullmatch(current):
        back = words(original)
        if original and len(back) == len(spans) and not MASK_PATTERN.fullmatch(back[index]):
            return text[:start] + back[index] + text[end:]
        return text
    return text[:start] + "[MASK]" + text[end:]


def bar_figure(result: ClozeResult, max_masks: int = 6, height: int | None = None):
    """Horizontal bars of the top-k per mask (up to `max_masks` panels), best on top."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    n = min(len(result.predictions), max_masks)
    cols = 1 if n == 1 else 2 if n <= 4 else 3
    rows = -(-n // cols)
    titles = [f"[MASK] #{i + 1}" for i in range(n)]
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=0.14,
                        vertical_spacing=0.12 if rows > 1 else 0.05)
    for i, pred in enumerate(result.predictions[:n]):
        toks = [t for t, _ in pred][::-1]
        scores = [s for _, s in pred][::-1]
        fig.add_trace(go.Bar(x=scores, y=[f"{t} " for t in toks], orientation="h", marker_color="#4f46e5",
                             text=[f"{s:.1%}" for s in scores], textposition="auto", showlegend=False,
                             hovertemplate="%{y}: %{x:.4f}<extra></extra>"),
                      row=i // cols + 1, col=i % cols + 1)
    k = max((len(p) for p in result.predictions[:n]), default=1)
    height = height or max(260, rows * (60 + 24 * k) + 70)
    more = f" (first {n} of {len(result.predictions)} masks)" if len(result.predictions) > n else ""
    fig.update_layout(title={"text": f"Top guesses{more}<br><sup>{result.model}</sup>", "font": {"size": 15}},
                      height=height, margin={"l": 10, "r": 20, "t": 70, "b": 30}, plot_bgcolor="white")
    top = max((p[0][1] for p in result.predictions[:n] if p), default=1.0)
    fig.update_xaxes(range=[0, min(1.0, top * 1.3 + 0.02)], tickformat=".1%" if top < 0.1 else ".0%",
                     gridcolor="#e2e8f0")
    return fig
