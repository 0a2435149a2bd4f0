"""Masked language models (role `mlm`) for the cloze task."""

from __future__ import annotations

import torch

from engine.registry import ModelSpec, register
from engine.sources import Located, Source


def _load(located: Located, device: torch.device):
    raise RuntimeError("the masked-LM loader is not written yet (issue 6)")


register(ModelSpec(
    id="bert-base-uncased",
    role="mlm",
    title="BERT-base uncased (masked LM)",
    sources=(Source("checkpoints", "bert-base-uncased"), Source("hub", "google-bert/bert-base-uncased")),
    load=_load,
    note="BERT-base with its pretrained masked-LM head.",
))
