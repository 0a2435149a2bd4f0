"""Safe image loading and the packaged example images.

`load_image(path)` turns any upload into an RGB `PIL.Image` or raises `UserInputError`
saying what was wrong: not an image (a PDF or text renamed .png), corrupt or truncated,
too large a file, too many pixels (decompression-bomb guard), too small. It honours EXIF
orientation, takes the first frame of an animation, and converts grayscale, RGBA (onto
white), CMYK, palette and 16-bit images to 8-bit RGB.
"""

from __future__ import annotations

import io
import os
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from engine.errors import UserInputError

MAX_FILE_BYTES = 25 * 1024 * 1024
MAX_PIXELS = 40_000_000  # e.g. 8000 x 5000; a 20000 x 20000 image is refused before decoding
MIN_SIDE = 8

# PIL's own guard raises DecompressionBombError at 2x this; we check the header first anyway.
Image.MAX_IMAGE_PIXELS = MAX_PIXELS


def _to_rgb(img: Image.Image) -> Image.Image:
    """8-bit RGB from any PIL mode (1, L, P, RGBA, LA, CMYK, I;16, I, F)."""
    if img.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        arr = np.asarray(img, dtype=np.float64)
        finite = np.isfinite(arr)
        if not finite.any():
            raise UserInputError("the image has no finite pixel values")
        lo, hi = float(arr[finite].min()), float(arr[finite].max())
        scaled = np.zeros_like(arr) if hi <= lo else (np.nan_to_num(arr, nan=lo) - lo) / (hi - lo)
        img = Image.fromarray((scaled * 255).round().astype(np.uint8), mode="L")
    if img.mode == "P":
        img = img.convert("RGBA") if "transparency" in img.info else img.convert("RGB")
    if img.mode in ("RGBA", "LA", "PA"):
        rgba = img.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        img = Image.alpha_composite(background, rgba)
    return img.convert("RGB")


def load_image(source: str | Path | bytes | Image.Image | np.ndarray, max_bytes: int = MAX_FILE_BYTES) -> Image.Image:
    """Any image input -> RGB PIL image, or UserInputError with a reason a person understands."""
    if source is None or (isinstance(source, str) and not source.strip()):
        raise UserInputError("no image given: upload one or pick an example")
    if isinstance(source, np.ndarray):
        arr = source
        if arr.dtype != np.uint8:
            arr = np.clip(np.nan_to_num(arr.astype(np.float64)), 0, 255 if arr.max() > 1 else 1)
            arr = (arr * (255 if arr.max() <= 1 else 1)).astype(np.uint8)
        return load_image(Image.fromarray(arr))
    if isinstance(source, Image.Image):
        img = source
        name = "the image"
    else:
        if isinstance(source, bytes):
            data, name = source, "the upload"
        else:
            path = Path(source)
            name = path.name
            if not path.is_file():
                raise UserInputError(f"{name} was not found")
            size = path.stat().st_size
            if size > max_bytes:
                raise UserInputError(f"{name} is {size / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.0f} MB")
            data = path.read_bytes()
        if not data:
            raise UserInputError(f"{name} is empty")
        if len(data) > max_bytes:
            raise UserInputError(f"{name} is {len(data) / 1e6:.1f} MB; the limit is {max_bytes / 1e6:.0f} MB")
        try:
            img = Image.open(io.BytesIO(data))
        except UnidentifiedImageError:
            kind = "a PDF" if data[:5] == b"%PDF-" else "not an image PIL can read"
            raise UserInputError(f"{name} is {kind}; upload a PNG, JPEG, GIF, BMP, TIFF or WebP image") from None
        except Image.DecompressionBombError:
            raise UserInputError(f"{name} has too many pixels (limit {MAX_PIXELS / 1e6:.0f} megapixels)") from None
        except (OSError, SyntaxError, ValueError) as exc:
            raise UserInputError(f"{name} is corrupt or truncated ({exc}); try another file") from None
    w, h = img.size
    if w * h > MAX_PIXELS:
        raise UserInputError(f"{name} is {w} x {h} pixels; the limit is {MAX_PIXELS / 1e6:.0f} megapixels")
    if min(w, h) < MIN_SIDE:
        raise UserInputError(f"{name} is only {w} x {h} pixels; use an image at least {MIN_SIDE} pixels on each side")
    try:
        if getattr(img, "is_animated", False):
            img.seek(0)  # first frame of an animated GIF / WebP / APNG
        img.load()
        img = ImageOps.exif_transpose(img) or img
        return _to_rgb(img)
    except UserInputError:
        raise
    except Image.DecompressionBombError:
        raise UserInputError(f"{name} has too many pixels (limit {MAX_PIXELS / 1e6:.0f} megapixels)") from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise UserInputError(f"{name} is corrupt or truncated ({exc}); try another file") from None


# ------------------------------------------------------------------ packaged examples
_SKIMAGE = ("chelsea", "coffee", "astronaut", "rocket", "horse", "camera", "coins", "moon",
            "hubble_deep_field", "grass", "gravel", "brick", "stereo_motorcycle")
_SKLEARN = ("china", "flower")


def example_names() -> list[str]:
    """Names of the packaged example images (scikit-image and scikit-learn)."""
    return list(_SKIMAGE) + list(_SKLEARN)


@lru_cache(maxsize=32)
def example(name: str) -> Image.Image:
    """A packaged example image as RGB (horse, a boolean silhouette, becomes black on white)."""
    if name in _SKLEARN:
        from sklearn.datasets import load_sample_image

        return Image.fromarray(load_sample_image(f"{name}.jpg"))
    if name in _SKIMAGE:
        import skimage.data

        arr = getattr(skimage.data, name)()
        if name == "stereo_motorcycle":
            arr = arr[0]
        if arr.dtype == bool:
            arr = np.where(arr, 0, 255).astype(np.uint8)
        return load_image(arr)
    raise UserInputError(f"unknown example image {name!r}; choose one of {', '.join(example_names())}")


def save_png_whole(img: Image.Image, path: Path, **options) -> Path:
    """Save `img` as PNG at `path` through a temporary file of this process and thread,
    then rename: a reader in another thread (or a web server) never sees half a file."""
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.png")
    img.save(tmp, format="PNG", **options)
    tmp.replace(path)
    return path


def example_path(name: str) -> Path:
    """The example saved once as PNG under the data dir (for gr.Examples and the API)."""
    from engine import paths

    path = paths.cache_dir("examples") / f"{name}.png"
    if not path.exists():
        save_png_whole(example(name), path)
    return path
