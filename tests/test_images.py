"""Safe image loading: every odd input gives RGB or a clear UserInputError."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from PIL import Image

from engine.errors import UserInputError
from engine.images import example, example_names, load_image


def _save(tmp_path, name, img, **kw):
    path = tmp_path / name
    img.save(path, **kw)
    return path


@pytest.mark.parametrize("mode", ["L", "RGBA", "CMYK", "P", "1", "LA", "I;16", "I", "F"])
def test_modes_become_rgb(tmp_path, mode):
    img = Image.new("RGB", (32, 24), (200, 30, 30)).convert(mode) if mode not in ("I;16", "I", "F") else None
    if img is None:
        arr = (np.arange(32 * 24).reshape(24, 32) * 50).astype(np.uint16 if mode == "I;16" else np.int32 if mode == "I" else np.float32)
        img = Image.fromarray(arr, mode=mode) if mode != "I;16" else Image.fromarray(arr)
    fmt = "TIFF" if mode in ("CMYK", "I;16", "I", "F") else "PNG"
    out = load_image(_save(tmp_path, f"x.{fmt.lower()}", img, format=fmt))
    assert out.mode == "RGB" and out.size == (32, 24)


def test_rgba_transparent_goes_on_white(tmp_path):
    out = load_image(_save(tmp_path, "t.png", Image.new("RGBA", (16, 16), (0, 0, 0, 0))))
    assert np.asarray(out).min() == 255


def test_exif_rotation_is_honoured(tmp_path):
    img = Image.new("RGB", (40, 20), "red")
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise
    out = load_image(_save(tmp_path, "r.jpg", img, exif=exif.tobytes()))
    assert out.size == (20, 40)


def test_animated_gif_first_frame(tmp_path):
    frames = [Image.new("RGB", (16, 16), c) for c in ("red", "blue")]
    path = tmp_path / "a.gif"
    frames[0].save(path, save_all=True, append_images=frames[1:])
    assert np.asarray(load_image(path))[0, 0, 0] > 200


@pytest.mark.parametrize(("data", "message"), [
    (b"%PDF-1.4\n%...", "is a PDF"),
    (b"hello, I am text", "not an image"),
    (b"", "empty"),
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "not an image|corrupt"),
])
def test_not_images(tmp_path, data, message):
    path = tmp_path / "fake.png"
    path.write_bytes(data)
    with pytest.raises(UserInputError, match=message):
        load_image(path)


def test_truncated_jpeg(tmp_path):
    path = _save(tmp_path, "ok.jpg", Image.new("RGB", (64, 64), "green"))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(UserInputError, match="corrupt|truncated"):
        load_image(path)


def test_decompression_bomb_refused_before_decoding(tmp_path):
    # A PNG header that claims 20000 x 20000 pixels, with a tiny body.
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 20000, 20000, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(b"\x00" * 100)) + chunk(b"IEND", b"")
    path = tmp_path / "bomb.png"
    path.write_bytes(png)
    with pytest.raises(UserInputError, match="megapixels"):
        load_image(path)


def test_tiny_and_missing(tmp_path):
    with pytest.raises(UserInputError, match="1 x 1"):
        load_image(_save(tmp_path, "p.png", Image.new("RGB", (1, 1))))
    with pytest.raises(UserInputError, match="not found"):
        load_image(tmp_path / "nope.png")
    with pytest.raises(UserInputError, match="no image"):
        load_image("")


def test_examples_are_rgb():
    for name in example_names():
        img = example(name)
        assert img.mode == "RGB" and min(img.size) >= 64, name
