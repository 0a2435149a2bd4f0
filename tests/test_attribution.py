"""engine.attribution (captum) and engine.feature_vis: shapes, ranges, progress, targets,
and that the shared model is left untouched."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine import attribution, cnn, feature_vis
from engine.errors import UserInputError
from engine.images import example_path


@pytest.fixture(scope="module")
def chelsea() -> str:
    return str(example_path("chelsea"))


def _check_map(result: dict, shape: tuple[int, int]) -> None:
    heat = result["heat"]
    assert heat.shape == shape and heat.dtype == np.float32
    assert 0.0 <= float(heat.min()) and float(heat.max()) <= 1.0 and float(heat.max()) > 0
    assert result["overlay"].shape == (224, 224, 3) and result["overlay"].dtype == np.uint8
    assert "EfficientNet-Lite0" in result["model"]


def test_gradcam_shapes_per_stage_and_default_target(chelsea):
    layers = attribution.gradcam_layers(cnn.get_model())
    assert list(layers)[-1] == "head" and "stage 3" in layers
    result = attribution.gradcam(chelsea)
    _check_map(result, (7, 7))
    assert result["target"]["label"] == "tiger cat"
    fine = attribution.gradcam(chelsea, target="tabby", stage="stage 3")
    _check_map(fine, (28, 28))
    assert fine["target"]["index"] == 281
    with pytest.raises(UserInputError, match="no stage"):
        attribution.gradcam(chelsea, stage="stage 99")


def test_integrated_gradients_reports_progress_and_completeness(chelsea):
    seen: list[float] = []
    result = attribution.integrated_gradients(chelsea, target="282", steps=8, progress=lambda f, _: seen.append(f))
    _check_map(result, (224, 224))
    assert result["steps"] == 8 and np.isfinite(result["delta"])
    assert seen and seen == sorted(seen) and seen[-1] == pytest.approx(1.0)
    with pytest.raises(UserInputError, match="steps"):
        attribution.integrated_gradients(chelsea, steps=1000)


def test_occlusion_windows(chelsea):
    result = attribution.occlusion(chelsea, window=112, stride=56)
    _check_map(result, (224, 224))
    assert result["windows"] == 9
    with pytest.raises(UserInputError, match="window"):
        attribution.occlusion(chelsea, window=4)
    with pytest.raises(UserInputError, match="unknown attribution method"):
        attribution.attribute("lime", chelsea)


def _weights_snapshot(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten()[:50] for p in model.parameters()]).clone()


def test_feature_vis_paints_deterministically_and_leaves_the_model_alone():
    model = cnn.get_model().obj
    before = _weights_snapshot(model)
    a = feature_vis.visualise("stage 1", 3, steps=6, size=64, seed=1)
    b = feature_vis.visualise("stage 1", 3, steps=6, size=64, seed=1)
    assert a["image"].shape == (64, 64, 3) and a["image"].dtype == np.uint8
    assert np.array_equal(a["image"], b["image"])
    assert a["objective"][-1][1] > a["objective"][0][1] or len(a["objective"]) == 1
    cls = feature_vis.visualise("logits", 967, steps=2, size=64)
    assert cls["label"] == "espresso"
    assert torch.equal(before, _weights_snapshot(model))
    assert all(p.grad is None for p in model.parameters())
    assert not model.training


def test_feature_vis_refuses_bad_settings():
    with pytest.raises(UserInputError, match="channels 0..15"):
        feature_vis.visualise("stage 1", 16, steps=1, size=64)
    with pytest.raises(UserInputError, match="size"):
        feature_vis.visualise("stage 1", 0, steps=1, size=5000)
    with pytest.raises(UserInputError, match="unknown layer"):
        feature_vis.visualise("stage 42", 0, steps=1, size=64)


def test_fourier_image_is_an_rgb_picture_in_range():
    gen = torch.Generator().manual_seed(0)
    img = feature_vis.FourierImage.random(32, gen).rgb().detach()
    assert img.shape == (1, 3, 32, 32) and 0 <= float(img.min()) and float(img.max()) <= 1


def test_precomputed_gallery_manifest_points_at_real_files():
    info = feature_vis.gallery("")
    assert info["model_id"] == "efficientnet-lite0"
    if info["items"]:  # the committed gallery
        assert "engine.train.feature_gallery" in info["command"]
        layers = [item["layer"] for item in info["items"]]
        assert "stage 1" in layers and "logits" in layers
    assert feature_vis.gallery("resnet50")["model_id"] == "resnet50"
