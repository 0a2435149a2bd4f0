"""Faults reach a person as a clear message and the next request works."""

from __future__ import annotations

import gradio as gr
import pytest
import torch

from app.common import guarded, quiet_on_bad_input
from engine.errors import ModelUnavailable, UserInputError


def test_user_error_becomes_gr_error_with_its_message():
    @guarded
    def f(x: str) -> dict:
        raise UserInputError("'qwzx' is not in the vocabulary")

    with pytest.raises(gr.Error, match="qwzx"):
        f("a")


def test_cuda_out_of_memory_is_caught_and_next_call_works():
    calls = {"n": 0}

    @guarded
    def f(x: str) -> dict:
        calls["n"] += 1
        if calls["n"] == 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")
        return {"ok": True, "value": float("nan")}

    with pytest.raises(gr.Error, match="ran out of memory"):
        f("a")
    assert f("a") == {"ok": True, "value": None}  # and NaN never leaves as NaN


def test_unexpected_error_says_the_server_is_still_running():
    @guarded
    def f() -> dict:
        raise ZeroDivisionError("division by zero")

    with pytest.raises(gr.Error, match="still running"):
        f()


def test_model_unavailable_message():
    @guarded
    def f() -> dict:
        raise ModelUnavailable("no mae model could be loaded: checkpoints/vit-mae-base: missing")

    with pytest.raises(gr.Error, match="Model unavailable: no mae model"):
        f()


def test_generators_are_guarded_too():
    @guarded
    def g():
        yield {"step": 1}
        raise UserInputError("learning rate must be positive")

    it = g()
    assert next(it) == {"step": 1}
    with pytest.raises(gr.Error, match="learning rate"):
        next(it)


def test_a_secondary_listener_stays_quiet_on_bad_input_but_not_on_bugs():
    def panel(image):
        if image == "bad":
            raise UserInputError("bad.png is a PDF")
        if image == "bug":
            raise KeyError("oops")
        return "a", "b"

    quiet = quiet_on_bad_input(panel, 2)
    assert quiet("fine") == ("a", "b")
    skipped = quiet("bad")
    assert len(skipped) == 2 and all(isinstance(s, type(gr.skip())) for s in skipped)
    with pytest.raises(gr.Error, match="server is still running"):
        quiet("bug")
