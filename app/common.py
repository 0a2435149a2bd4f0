"""What every tab shares: error handling, the device queue, progress text, launching alone."""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any

import gradio as gr

from engine.errors import ModelUnavailable, UserInputError
from engine.jsonsafe import jsonable
from engine.registry import REGISTRY

log = logging.getLogger("app")

# Every model call shares one device through one queue: two users never fight over a GPU.
DEVICE_QUEUE: dict[str, Any] = {"concurrency_id": "device", "concurrency_limit": 1}
# Training runs get their own queue so they never block interactive inference.
TRAIN_QUEUE: dict[str, Any] = {"concurrency_id": "train", "concurrency_limit": 1}


def _as_gr_error(exc: Exception, name: str) -> gr.Error:
    if isinstance(exc, gr.Error):
        return exc
    if isinstance(exc, UserInputError):
        return gr.Error(str(exc))
    if isinstance(exc, ModelUnavailable):
        return gr.Error(f"Model unavailable: {exc}")
    if "out of memory" in str(exc).lower():
        return gr.Error("The device ran out of memory for this request; try a smaller input. "
                        "The server is still running.")
    log.exception("unexpected error in %s", name)
    return gr.Error(f"Something went wrong in {name} ({type(exc).__name__}: {exc}). "
                    "The server is still running; try another input.")


def guarded(fn: Callable) -> Callable:
    """Wrap a callback so that any failure reaches the person as a gr.Error with a
    readable message (never a stack trace), and results are JSON-safe. Keeps the
    signature and type hints, so `gr.api` can read them; works for generators too."""
    name = fn.__name__
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def gen_wrapper(*args, **kwargs):
            try:
                for item in fn(*args, **kwargs):
                    yield jsonable(item) if isinstance(item, dict) else item
            except Exception as exc:
                raise _as_gr_error(exc, name) from None
        return gen_wrapper

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            out = fn(*args, **kwargs)
        except Exception as exc:
            raise _as_gr_error(exc, name) from None
        return jsonable(out) if isinstance(out, dict) else out
    return wrapper


def api(fn: Callable, name: str, **queue: Any) -> None:
    """Register a scriptable endpoint `/name` (API.md) from a fully typed function."""
    gr.api(guarded(fn), api_name=name, **(queue or DEVICE_QUEUE))


def announce_loading(role: str, model_id: str, progress: gr.Progress | None) -> None:
    """Show "loading <model> from <source>" in the progress bar while a model loads."""
    message = REGISTRY.loading_message(role, model_id)
    if message and progress is not None:
        progress(0, desc=message + " ...")


def not_built(issue: int, what: str) -> None:
    """The honest placeholder for a station that is not built yet: says so, shows nothing fake."""
    gr.Markdown(
        f"**This station is not built yet** (issue {issue}). It will show {what}. "
        "Nothing here is simulated in the meantime.",
        elem_classes=["ptx-notice"],
    )


def standalone(build: Callable[[], None], title: str) -> gr.Blocks:
    """A Blocks holding one tab, so a tab module can be launched alone for development."""
    import inspect as _inspect

    from app.i18n import build_i18n
    from app.theme import CSS, THEME

    module = _inspect.getmodule(build)
    with gr.Blocks(title=title) as demo:
        build()
    demo.queue()
    demo.launch(theme=THEME, css=CSS, i18n=build_i18n([module] if module else []))
    return demo


def quiet_on_bad_input(fn: Callable, n_outputs: int) -> Callable:
    """`fn` for a secondary listener of an input that another event already checks: a
    UserInputError leaves its outputs as they are (one message per bad upload, not one
    per panel). Any other failure still goes through `guarded`."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except UserInputError:
            return (gr.skip(),) * n_outputs if n_outputs > 1 else gr.skip()
    return guarded(wrapper)


def start_value(component: gr.components.Component) -> Any:
    """What an event receives from a component nobody has touched: its start value (a file
    component's as its path)."""
    value = getattr(component, "value", None)
    if isinstance(value, dict) and isinstance(value.get("path"), str):
        return value["path"]
    return value
