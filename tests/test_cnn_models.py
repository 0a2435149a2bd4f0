"""The `cnn` role: the Lite0 name mapping, strict loading, preprocessing against timm, labels."""

from __future__ import annotations

import pytest
import torch

from engine.models import cnn as cnn_specs
from engine.registry import REGISTRY


def test_lukemelas_names_map_onto_every_timm_tensor():
    import timm

    timm_keys = set(timm.create_model("tf_efficientnet_lite0", pretrained=False).state_dict())
    # A fake lukemelas state dict with the same structure, built from the known layout.
    fake = {"_conv_stem.weight": 0, "_fc.weight": 0}
    mapped = cnn_specs.lukemelas_to_timm({
        "_blocks.0._depthwise_conv.weight": 0, "_blocks.15._project_conv.weight": 0,
        "_blocks.3._expand_conv.weight": 0, "_blocks.3._bn2.running_var": 0, **fake})
    assert set(mapped) <= timm_keys
    assert mapped.keys() == {"blocks.0.0.conv_dw.weight", "blocks.6.0.conv_pwl.weight",
                             "blocks.2.0.conv_pw.weight", "blocks.2.0.bn3.running_var",
                             "conv_stem.weight", "classifier.weight"}
    with pytest.raises(KeyError):
        cnn_specs.lukemelas_to_timm({"_blocks.16._bn0.weight": 0})
    with pytest.raises(KeyError):
        cnn_specs.lukemelas_to_timm({"something.weight": 0})


@pytest.mark.parametrize("model_id,arch", [
    ("efficientnet-lite0", "tf_efficientnet_lite0.in1k"),
    ("resnet50", "resnet50.a1_in1k"),
    ("vgg16", "vgg16.tv_in1k"),
])
def test_spec_preprocessing_is_timms_data_config(model_id, arch):
    import timm
    from timm.data import resolve_data_config

    spec = REGISTRY.spec("cnn", model_id)
    expected = resolve_data_config({}, model=timm.create_model(arch, pretrained=False))
    assert spec.preprocess == expected


def test_default_cnn_loads_offline_strictly_and_classifies_the_packaged_cat_and_coffee():
    from timm.data import ImageNetInfo, create_transform, resolve_data_config

    from engine.images import example

    loaded = REGISTRY.get("cnn")
    assert loaded.spec.id == "efficientnet-lite0"
    assert loaded.source_kind in ("package", "checkpoints", "hub")
    model = loaded.obj
    assert not model.training
    assert resolve_data_config({}, model=model) == loaded.spec.preprocess
    transform = create_transform(**loaded.spec.preprocess)
    info = ImageNetInfo()
    x = torch.stack([transform(example("chelsea")), transform(example("coffee"))]).to(loaded.device)
    with torch.inference_mode():
        probs = model(x).softmax(-1).cpu()
    cat_classes = {info.index_to_description(i) for i in probs[0].topk(3).indices.tolist()}
    assert {"tiger cat", "Egyptian cat", "tabby, tabby cat"} == cat_classes
    assert info.index_to_description(int(probs[1].argmax())) == "espresso"
    assert float(probs[1].max()) > 0.8


def test_checkpoints_folder_with_timm_safetensors_wins_and_loads_strictly(checkpoints):
    from safetensors.torch import save_file

    from engine.registry import Registry

    folder = checkpoints / "efficientnet-lite0"
    folder.mkdir()
    state = {k: v.contiguous() for k, v in REGISTRY.get("cnn", "efficientnet-lite0").obj.state_dict().items()}
    save_file(state, str(folder / "model.safetensors"))
    reg = Registry()
    reg._specs_imported = True
    reg.register(REGISTRY.spec("cnn", "efficientnet-lite0"))
    loaded = reg.get("cnn")
    assert loaded.source_kind == "checkpoints"
    assert torch.equal(loaded.obj.classifier.weight, state["classifier.weight"])
    (folder / "model.safetensors").unlink()
    save_file({"conv_stem.weight": state["conv_stem.weight"]}, str(folder / "model.safetensors"))
    reg.forget("cnn", "efficientnet-lite0")
    assert reg.get("cnn").source_kind == "package"  # a partial file fails strict loading; the package is next


def test_resnet50_offline_without_checkpoint_says_why(checkpoints):
    from engine.errors import ModelUnavailable

    with pytest.raises(ModelUnavailable, match="offline|not reachable"):
        REGISTRY.get("cnn", "resnet50")
    row = next(r for r in REGISTRY.status() if r["id"] == "resnet50")
    assert row["available"] is False and "unavailable" in row["note"]
