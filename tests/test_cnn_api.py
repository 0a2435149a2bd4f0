"""/classify_image and /feature_maps through gradio_client (API.md), bad files included."""

from __future__ import annotations

import pytest
from gradio_client import handle_file
from PIL import Image

from engine.images import example_path
from tests.test_cnn import bomb_png


def test_classify_image_coffee_is_espresso(client):
    result = client.predict(handle_file(str(example_path("coffee"))), 5, "", api_name="/classify_image")
    assert "EfficientNet-Lite0" in result["model"]
    preds = result["predictions"]
    assert len(preds) == 5 and preds[0]["label"] == "espresso" and preds[0]["index"] == 967
    assert set(preds[0]) >= {"label", "index", "score"} and 0 < preds[0]["score"] <= 1


def test_feature_maps_lists_stages_from_input_to_output(client):
    result = client.predict(handle_file(str(example_path("chelsea"))), "efficientnet-lite0", api_name="/feature_maps")
    stages = result["stages"]
    assert stages[0] == {**stages[0], "name": "input", "channels": 3, "height": 224, "width": 224}
    assert stages[-1]["name"] == "logits" and stages[-1]["channels"] == 1000
    assert all(set(s) >= {"name", "channels", "height", "width"} for s in stages)


@pytest.mark.parametrize("name,content,message", [
    ("renamed.png", b"%PDF-1.4\n%%EOF", "PDF"),
    ("text.png", b"just some words", "not an image"),
], ids=["pdf", "text"])
def test_bad_files_give_clear_errors_and_the_server_keeps_serving(client, tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(Exception, match=message):
        client.predict(handle_file(str(path)), 5, "", api_name="/classify_image")
    ok = client.predict(handle_file(str(example_path("coffee"))), 1, "", api_name="/classify_image")
    assert ok["predictions"][0]["label"] == "espresso"


def test_tiny_bomb_and_unknown_model_are_refused(client, tmp_path):
    tiny = tmp_path / "tiny.png"
    Image.new("RGB", (1, 1)).save(tiny)
    with pytest.raises(Exception, match="1 x 1"):
        client.predict(handle_file(str(tiny)), "", api_name="/feature_maps")
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(bomb_png())
    with pytest.raises(Exception, match="megapixels"):
        client.predict(handle_file(str(bomb)), 5, "", api_name="/classify_image")
    with pytest.raises(Exception, match="unknown cnn model"):
        client.predict(handle_file(str(example_path("coffee"))), 5, "alexnet", api_name="/classify_image")
