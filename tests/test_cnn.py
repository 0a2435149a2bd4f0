"""engine.cnn: preprocessing, stages and their shapes, receptive fields, classify, transfer, bad inputs."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest
import torch
from PIL import Image

from engine import cnn
from engine.errors import UserInputError
from engine.images import example, example_path, load_image

LITE0_STAGES = [  # name, channels, side
    ("input", 3, 224), ("stem", 32, 112), ("stage 1", 16, 112), ("stage 2", 24, 56), ("stage 3", 40, 28),
    ("stage 4", 80, 14), ("stage 5", 112, 14), ("stage 6", 192, 7), ("stage 7", 320, 7), ("head", 1280, 7),
    ("logits", 1000, 1),
]


@pytest.fixture(scope="module")
def chelsea() -> str:
    return str(example_path("chelsea"))


def test_prepare_matches_timms_own_transform(chelsea):
    from timm.data import create_transform, resolve_data_config

    loaded = cnn.get_model()
    prep = cnn.prepare(chelsea, loaded)
    expected = create_transform(**resolve_data_config({}, model=loaded.obj))(example("chelsea"))
    assert prep.x.shape == (1, 3, 224, 224) and prep.x.dtype == torch.float32
    assert torch.allclose(prep.x[0].cpu(), expected, atol=1e-6)
    assert prep.shown.size == (224, 224)
    # mean = std = 0.5: the input lives in [-1, 1]
    assert -1.0 - 1e-6 <= float(prep.x.min()) and float(prep.x.max()) <= 1.0 + 1e-6
    assert torch.allclose(cnn.denormalise(prep.x, loaded.spec.preprocess),
                          torch.from_numpy(np.array(prep.shown)).permute(2, 0, 1)[None].float() / 255, atol=0.02)


def test_stage_shapes_of_lite0_from_input_to_logits(chelsea):
    result = cnn.feature_maps(chelsea)
    assert "EfficientNet-Lite0" in result["model"]
    got = [(s["name"], s["channels"], s["height"]) for s in result["stages"]]
    assert got == LITE0_STAGES
    assert all(s["height"] == s["width"] for s in result["stages"])
    fields = [s["receptive_field"] for s in result["stages"][:-1]]
    assert fields == sorted(fields) and fields[0] == 1 and fields[-1] > 224
    assert result["predictions"][0]["label"] == "tiger cat"


def test_receptive_fields_match_known_values_for_vgg16_and_resnet50():
    import timm

    with torch.device("meta"):  # shapes only, no memory, no weights
        vgg, resnet = timm.create_model("vgg16"), timm.create_model("resnet50")
    assert cnn.receptive_fields(vgg, ["features.29", "features.30"]) == [(196, 16), (212, 32)]
    assert cnn.receptive_fields(resnet, ["act1", "layer4"]) == [(7, 2), (427, 32)]


def test_classify_top_k_and_k_limits(chelsea):
    result = cnn.classify(chelsea, 10)
    preds = result["predictions"]
    assert len(preds) == 10
    assert [p["score"] for p in preds] == sorted((p["score"] for p in preds), reverse=True)
    assert {p["label"] for p in preds[:3]} == {"tiger cat", "Egyptian cat", "tabby, tabby cat"}
    assert sum(p["score"] for p in preds) <= 1.0 + 1e-6
    for bad in (0, 1001, "five"):
        with pytest.raises(UserInputError, match="k must be"):
            cnn.classify(chelsea, bad)


def test_class_index_by_name_or_number():
    assert cnn.class_index("tabby") == 281
    assert cnn.class_index("Egyptian cat") == 285
    assert cnn.class_index(" 967 ") == 967
    with pytest.raises(UserInputError, match="0..999"):
        cnn.class_index("1000")
    with pytest.raises(UserInputError, match="not an ImageNet class"):
        cnn.class_index("unicorn")


def test_stage_view_grid_box_and_clipping(chelsea):
    view = cnn.stage_view(chelsea, 4)
    assert view["stage"]["name"] == "stage 3" and len(view["channels"]) == 8
    assert view["grid"].dtype == np.uint8 and view["grid"].shape[2] == 3
    assert view["box"].shape == (224, 224, 3)
    means = view["channel_means"]
    assert means == sorted(means, reverse=True)
    last = cnn.stage_view(chelsea, 99)
    assert last["index"] == len(LITE0_STAGES) - 1 and last["grid"] is None
    assert cnn.stage_view(chelsea, -5)["stage"]["name"] == "input"


def test_transfer_low_stages_alike_high_stages_not(chelsea):
    result = cnn.stage_similarity(chelsea, str(example_path("coffee")))
    rows = {r["name"]: r for r in result["stages"]}
    assert all(-1 - 1e-6 <= r["gram"] <= 1 + 1e-6 for r in result["stages"])
    assert rows["stem"]["gram"] > 0.8 > rows["head"]["gram"]
    assert rows["stage 2"]["gram"] > rows["stage 6"]["gram"]


def bomb_png(side: int = 20000) -> bytes:
    """A PNG whose header claims side x side pixels, with a tiny body (a decompression bomb)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0))
    return png + chunk(b"IDAT", zlib.compress(b"\x00" * 100)) + chunk(b"IEND", b"")


def _png(img: Image.Image, fmt: str = "PNG", **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


@pytest.mark.parametrize("make", [
    lambda: Image.new("L", (300, 200), 128),
    lambda: Image.new("RGBA", (300, 200), (255, 0, 0, 100)),
    lambda: Image.new("CMYK", (300, 200), (0, 255, 0, 0)),
    lambda: Image.fromarray(np.arange(300 * 200, dtype=np.uint16).reshape(200, 300)),
    lambda: Image.new("P", (300, 200), 3),
], ids=["grayscale", "rgba", "cmyk", "16-bit", "palette"])
def test_any_image_mode_classifies(tmp_path, make):
    img = make()
    path = tmp_path / "in.tiff"
    img.save(path)
    assert len(cnn.classify(str(path), 3)["predictions"]) == 3


def test_animated_gif_and_exif_rotation(tmp_path):
    frames = [Image.new("RGB", (64, 32), c) for c in ("red", "blue")]
    gif = tmp_path / "anim.gif"
    frames[0].save(gif, save_all=True, append_images=frames[1:], duration=100, loop=0)
    assert len(cnn.classify(str(gif), 1)["predictions"]) == 1
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees on display
    wide = tmp_path / "wide.jpg"
    Image.new("RGB", (400, 100), "green").save(wide, exif=exif)
    assert load_image(str(wide)).size == (100, 400)  # upright, as a viewer shows it
    assert cnn.prepare(str(wide), cnn.get_model()).x.shape == (1, 3, 224, 224)


@pytest.mark.parametrize("content,name,message", [
    (b"%PDF-1.4 not really", "doc.png", "PDF"),
    (b"hello, I am text", "note.png", "not an image"),
    (b"", "empty.png", "empty"),
], ids=["pdf", "text", "empty"])
def test_bad_files_say_what_is_wrong(tmp_path, content, name, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(UserInputError, match=message):
        cnn.classify(str(path), 5)


def test_tiny_corrupt_and_bomb_images_are_refused(tmp_path):
    tiny = tmp_path / "tiny.png"
    Image.new("RGB", (1, 1)).save(tiny)
    with pytest.raises(UserInputError, match="1 x 1"):
        cnn.feature_maps(str(tiny))
    corrupt = tmp_path / "cut.png"
    corrupt.write_bytes(_png(Image.new("RGB", (200, 200), "red"))[:60])
    with pytest.raises(UserInputError):
        cnn.classify(str(corrupt), 5)
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(bomb_png())
    with pytest.raises(UserInputError, match="megapixels|too many pixels"):
        cnn.classify(str(bomb), 5)
