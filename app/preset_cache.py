"""Cached preset outputs: the first click of each Overview preset answers at once.

The presets are the Overview's links (assets/timeline.json: a station and the inputs it
opens with). For each one, `install` finds the run button the deep link would press and
the event that button fires, and computes the event's full input list: the components'
start values with the preset's values put in. `prefetch` (a background thread, started
by `python -m app --warm` after the models load) runs each such event once and keeps its
outputs; the event's function is wrapped so that a call with exactly those inputs
returns the kept outputs instead of computing again. Any other input computes as usual,
so a changed slider or word is never answered from the cache.

Inputs are compared by value: numbers as numbers (6 == 6.0), files by their bytes (the
browser's copy of a packaged image has another path but the same content), everything
else by `repr`. Generators (live training runs) are never cached: their point is to run.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gradio as gr

from app.common import start_value

log = logging.getLogger("app.preset_cache")

MAX_FILE_BYTES = 50_000_000
# Stations whose presets start something live (a training run with its curves): never cached.
LIVE = {"finetune"}


def _norm(value: Any) -> Any:
    """A hashable stand-in for one input value (see the module docstring)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return ("bool", value)  # True == 1 in Python; a checkbox is not a slider
    if isinstance(value, int | float):
        f = float(value)
        return int(f) if f.is_integer() else round(f, 9)
    if isinstance(value, str | Path):
        text = str(value)
        if len(text) < 1024 and text[:1] in "/." and Path(text).is_file():
            path = Path(text)
            if path.stat().st_size <= MAX_FILE_BYTES:
                return ("file", hashlib.sha1(path.read_bytes()).hexdigest())
        return text
    if isinstance(value, dict) and isinstance(value.get("path"), str):  # a FileData-like dict
        return _norm(value["path"])
    if isinstance(value, list | tuple):
        return tuple(_norm(v) for v in value)
    return repr(value)


def _fresh(out: Any) -> Any:
    """New containers around the same values: gradio edits the update dicts it is given
    (it pops "value"), so each answer gets its own dicts, lists and tuples."""
    if isinstance(out, dict):
        return {k: _fresh(v) for k, v in out.items()}
    if type(out) in (list, tuple):
        return type(out)(_fresh(v) for v in out)
    return out


def key_of(args: Sequence[Any]) -> tuple:
    """The cache key of an event's inputs, leaving out what gradio injects (request, progress)."""
    return tuple(_norm(a) for a in args if not isinstance(a, gr.Request | gr.Progress | gr.EventData))


@dataclass
class _Job:
    label: str                      # "station: {preset}", for the log and bench/presets.py
    fn: Callable[..., Any]          # the event's own function (unwrapped)
    args: list[Any]
    key: tuple


@dataclass
class PresetCache:
    """Outputs of preset events, by (id of the event's own function, input key)."""

    jobs: list[_Job] = field(default_factory=list)
    outputs: dict[tuple[int, tuple], Any] = field(default_factory=dict)
    wrapped: dict[int, Callable[..., Any]] = field(default_factory=dict)   # BlockFunction._id -> its own fn
    hits: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wrap(self, fn_id: int, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` answering from the cache when its inputs are a cached preset's (fn_id: id(fn))."""
        @functools.wraps(fn)
        def cached(*args, **kwargs):
            found = self.outputs.get((fn_id, key_of(args))) if self.outputs and not kwargs else None
            if found is not None:
                with self.lock:
                    self.hits += 1
                return _fresh(found)
            return fn(*args, **kwargs)
        return cached

    def prefetch(self) -> dict[str, float | str]:
        """Run every preset once (in order) and keep its outputs; {label: seconds | reason}."""
        report: dict[str, float | str] = {}
        for job in self.jobs:
            t0 = time.perf_counter()
            try:
                out = job.fn(*job.args)
            except Exception as exc:  # a preset that fails simply stays uncached
                report[job.label] = f"not cached: {exc}"
                log.info("preset %s not cached: %s", job.label, exc)
                continue
            self.outputs[(id(job.fn), job.key)] = out
            report[job.label] = round(time.perf_counter() - t0, 3)
        log.info("preset outputs cached: %s", report)
        return report


def _event_for(demo: gr.Blocks, block: gr.components.Component | None, event: str):
    """The first event that `event` on `block` fires, or None."""
    if block is None:
        return None
    for block_fn in demo.fns.values():
        if any(t[0] == block._id and t[1] == event for t in block_fn.targets):
            return block_fn
    return None


def install(demo: gr.Blocks, presets: Sequence[tuple[str, dict[str, Any]]], known: set[str]) -> PresetCache:
    """Plan a cached output for each (station, preset) and wrap the events they fire.
    Call after `deeplinks.wire`; the cache is the app's (`demo.ptx_presets`), empty until
    `prefetch` runs."""
    from app import deeplinks

    cache = PresetCache()
    demo.ptx_presets = cache
    reg = deeplinks._registry()
    buttons = {b.elem_id: b for links in reg.tabs.values()
               for b in [links.run, *links.runs.values()] if b is not None}
    for station, preset in presets:
        label = f"{station}: {preset}"
        if station in LIVE:
            continue
        res = deeplinks.resolve({"tab": station, **{k: str(v) for k, v in preset.items()}}, reg.tabs, known)
        # The button the link presses; a station without one runs when its first input changes.
        block_fn = (_event_for(demo, buttons.get(res.run_id), "click") if res.run_id
                    else _event_for(demo, next(iter(res.values), None), "change"))
        if block_fn is None or block_fn.fn is None or block_fn.types_generator or res.skipped:
            log.info("preset %s: not cacheable (%s)", label, res.skipped or "no plain run event")
            continue
        if inspect.iscoroutinefunction(block_fn.fn) or block_fn.inputs_as_dict or block_fn.batch:
            continue
        fn = cache.wrapped.get(block_fn._id)
        if fn is None:
            fn = block_fn.fn
            cache.wrapped[block_fn._id] = fn
            block_fn.fn = cache.wrap(id(fn), fn)
        args = [res.values[c] if c in res.values else start_value(c) for c in block_fn.inputs]
        cache.jobs.append(_Job(label=label, fn=fn, args=args, key=key_of(args)))
    return cache


def prefetch_in_background(cache: PresetCache, after: threading.Thread | None = None) -> threading.Thread:
    """Fill the cache in a daemon thread, after `after` (the model warm-up) has finished."""
    def run() -> None:
        if after is not None:
            after.join()
        cache.prefetch()

    thread = threading.Thread(target=run, name="ptx-preset-cache", daemon=True)
    thread.start()
    return thread
