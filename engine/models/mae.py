"""Masked autoencoders (role `mae`): facebook's ViT-MAE or small ones trained here."""

from __future__ import annotations

import torch

from engine.registry import ModelSpec, register
from engine.sources import Located, Source


def _load(located: Located, device: torch.device):
    raise RuntimeError("the MAE loader is not written yet (issue 11)")


register(ModelSpec(
    id="vit-mae-base",
    role="mae",
    title="ViT-MAE base",
    sources=(Source("checkpoints", "vit-mae-base"), Source("hub", "facebook/vit-mae-base")),
    load=_load,
    note="MAE ViT-B/16 pretrained on ImageNet-1k with 75% masking.",
))
