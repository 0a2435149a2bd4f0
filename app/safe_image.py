"""An image input that lets the engine explain a bad upload.

A gr.Image (type="filepath") whose upload step hands files PIL cannot open (a PDF, text,
a decompression bomb) straight to the handler, so `engine.images.load_image` says what is
wrong instead of Gradio failing with a bare "Error". Used by every station that takes an
image.
"""

from __future__ import annotations

import gradio as gr


def _preprocess_or_path(self, payload):
    """gr.Image's preprocessing, except that a file PIL cannot open is passed on as a path."""
    try:
        return gr.Image.preprocess(self, payload)
    except Exception:
        if payload is not None and getattr(payload, "path", None):
            return str(payload.path)
        raise


# A gr.Image (type="filepath") whose upload step hands files PIL cannot open (a PDF, text,
# a bomb) straight to the engine, so `engine.images.load_image` says what is wrong instead
# of Gradio failing with a bare "Error". It renders as the ordinary image component
# (is_template). The class is made with type.__new__ because a `class` statement would run
# Gradio's ComponentMeta, which writes a .pyi stub beside this file; the events and the
# wrapped __init__ are inherited from gr.Image unchanged. (Patching one instance is not
# enough: Gradio rebuilds a component from its class after a gr.update, e.g. an example click.)
SafeImage = type.__new__(type(gr.Image), "SafeImage", (gr.Image,), {
    "__module__": __name__, "__qualname__": "SafeImage", "is_template": True, "preprocess": _preprocess_or_path,
})


def safe_image(**kwargs) -> gr.Image:
    """A `SafeImage` for file paths."""
    return SafeImage(type="filepath", **kwargs)
