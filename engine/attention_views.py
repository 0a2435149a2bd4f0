"""Pictures of an `AttentionResult`: one head's heatmap, the overview grid of all heads,
per-head statistics, and the head view (a standalone HTML page with its own script).

The overview grid is one PNG drawn here (layers x heads thumbnails), so the browser gets
one small image instead of every T x T matrix; `grid_cell(x, y, ...)` maps a click on it
back to (layer, head). The head view embeds the attention of every layer once (rounded
to 3 decimals) with the vendored script `assets/attention/head_view.js` (no CDN).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from engine import paths
from engine.attention import STAT_COLUMNS, STAT_LABELS, AttentionResult, check_head, head_stats

HEAD_VIEW_JS = paths.ASSETS / "attention" / "head_view.js"
# Indigo ramp from white: reads on a projector and in print.
_LOW = np.array([255, 255, 255], dtype=np.float64)
_HIGH = np.array([49, 46, 129], dtype=np.float64)


def _short(tokens: list[str], width: int = 12) -> list[str]:
    return [t if len(t) <= width else t[: width - 1] + "…" for t in tokens]


def heatmap_figure(result: AttentionResult, layer: int, head: int, height: int = 500):
    """Plotly heatmap of one head: rows = queries, columns = keys, token labels on both axes.
    Numeric axes with tick text, so repeated tokens ("the", "the") keep their own rows."""
    import plotly.graph_objects as go

    layer, head = check_head(result, layer, head)
    a = result.attention[layer, head]  # (T, T)
    T = len(result.tokens)
    labels = _short(result.tokens)
    hover = [[f"{result.tokens[i]} → {result.tokens[j]}: {a[i, j]:.3f}" for j in range(T)] for i in range(T)]
    fig = go.Figure(go.Heatmap(
        z=a, x=list(range(T)), y=list(range(T)), zmin=0, zmax=float(max(a.max(), 1e-6)),
        colorscale=[[0, "rgb(255,255,255)"], [1, "rgb(49,46,129)"]], text=hover,
        hovertemplate="%{text}<extra></extra>", colorbar={"title": {"text": "weight"}, "thickness": 12},
    ))
    font = 13 if T <= 32 else 10 if T <= 48 else 8
    fig.update_layout(
        title={"text": f"Layer {layer}, head {head}<br><sup>{result.model}</sup>", "font": {"size": 15},
               "y": 0.97, "yanchor": "top", "yref": "container"},
        height=height, margin={"l": 10, "r": 10, "t": 150, "b": 10},
        xaxis={"tickmode": "array", "tickvals": list(range(T)), "ticktext": labels, "side": "top",
               "tickangle": -60, "tickfont": {"size": font}},
        yaxis={"tickmode": "array", "tickvals": list(range(T)), "ticktext": labels, "autorange": "reversed",
               "title": {"text": "query (attending) → key (columns)"},
               "tickfont": {"size": font}},
        plot_bgcolor="white",
    )
    return fig


# ---------------------------------------------------------------- overview grid
@dataclass(frozen=True)
class GridLayout:
    """Where each thumbnail sits in the overview PNG (pixels)."""

    left: int
    top: int
    tile: int
    gap: int
    layers: int
    heads: int


def _font(size: int):
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow without FreeType sizes
        return ImageFont.load_default()


def grid_layout(layers: int, heads: int) -> GridLayout:
    """The overview's geometry for a model's size: thumbnails of 36..72 px, ~1100 px wide at most."""
    return GridLayout(left=44, top=30, tile=max(36, min(72, (1100 - 60) // heads - 6)), gap=6,
                      layers=layers, heads=heads)


def overview_image(result: AttentionResult, selected: tuple[int, int] | None = None
                   ) -> tuple[Image.Image, GridLayout]:
    """All layers x heads as thumbnails (rows = layers 0.., columns = heads 0..), each scaled
    to its own maximum (square-root, so weak patterns show); `selected` gets an amber frame.
    RGB uint8 PIL image and its layout."""
    L, H, T, _ = result.attention.shape
    layout = grid_layout(L, H)
    tile, gap, left, top = layout.tile, layout.gap, layout.left, layout.top
    width = left + H * (tile + gap) + 4
    height = top + L * (tile + gap) + 4
    img = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(img)
    font = _font(14)
    pick = (np.arange(tile) * T // tile)  # nearest-neighbour resampling of T onto tile pixels
    for layer in range(L):
        draw.text((6, top + layer * (tile + gap) + tile // 2 - 8), f"L{layer}", fill="#334155", font=font)
        for head in range(H):
            a = result.attention[layer, head][np.ix_(pick, pick)]
            v = np.sqrt(a / max(float(a.max()), 1e-9))[..., None]
            rgb = (_LOW * (1 - v) + _HIGH * v).astype(np.uint8)
            x, y = left + head * (tile + gap), top + layer * (tile + gap)
            img.paste(Image.fromarray(rgb), (x, y))
            if selected == (layer, head):
                draw.rectangle([x - 3, y - 3, x + tile + 2, y + tile + 2], outline="#f59e0b", width=3)
    for head in range(H):
        draw.text((left + head * (tile + gap) + tile // 2 - 8, 8), f"H{head}", fill="#334155", font=font)
    return img, layout


def grid_cell(x: float, y: float, layout: GridLayout) -> tuple[int, int] | None:
    """(layer, head) under pixel (x, y) of the overview image, or None between thumbnails."""
    col = (x - layout.left) // (layout.tile + layout.gap)
    row = (y - layout.top) // (layout.tile + layout.gap)
    if not (0 <= col < layout.heads and 0 <= row < layout.layers):
        return None
    return int(row), int(col)


# ---------------------------------------------------------------- statistics
def stats_figure(result: AttentionResult, stat: str = "prev", height: int = 360):
    """Layers x heads heatmap of one statistic (STAT_COLUMNS), the value written in each cell."""
    import plotly.graph_objects as go

    z = head_stats(result)[stat]
    zmax = float(np.log2(len(result.tokens))) if stat == "entropy" else (
        float(z.max()) if stat == "distance" else 1.0)
    fig = go.Figure(go.Heatmap(
        z=z, x=[f"H{h}" for h in range(result.heads)], y=[f"L{layer}" for layer in range(result.layers)],
        zmin=0, zmax=max(zmax, 1e-6), colorscale="Viridis", texttemplate="%{z:.2f}",
        textfont={"size": 11}, hovertemplate="layer %{y}, head %{x}: %{z:.3f}<extra></extra>",
        colorbar={"thickness": 12},
    ))
    fig.update_layout(
        title={"text": f"{STAT_LABELS[stat]}, per head<br><sup>{result.model}</sup>", "font": {"size": 15}},
        height=height, margin={"l": 10, "r": 10, "t": 60, "b": 10},
        yaxis={"autorange": "reversed"},
    )
    return fig


def stats_table(result: AttentionResult, sort_by: str = "prev") -> tuple[list[str], list[list]]:
    """(headers, rows) for a sortable table: layer, head, kind, then STAT_COLUMNS, best first."""
    from engine.attention import stats_rows

    rows = stats_rows(result, sort_by=sort_by, descending=sort_by != "entropy")
    headers = ["layer", "head", "kind", *[STAT_LABELS[c] for c in STAT_COLUMNS]]
    return headers, [[r["layer"], r["head"], r["kind"], *[r[c] for c in STAT_COLUMNS]] for r in rows]


# ---------------------------------------------------------------- head view (HTML + vendored JS)
def head_view_html(result: AttentionResult, layer: int = 0, labels: dict[str, str] | None = None) -> str:
    """A standalone HTML page (no network) drawing the head view of `result`, opening at `layer`."""
    data = {
        "tokens": result.tokens,
        "attention": np.round(result.attention.astype(np.float64), 3).tolist(),
        "layer": int(layer),
        "title": f"Head view · {result.model}",
        "labels": labels or {"layer": "Layer", "heads": "Heads (click: show/hide; double-click: only this)",
                             "head": "head", "all": "all heads", "png": "save PNG",
                             "hint": "Hover a token to keep only its lines. Left: the token attending; "
                                     "right: the tokens it attends to. Line strength = attention weight."},
    }
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    script = HEAD_VIEW_JS.read_text(encoding="utf-8")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
        f"{html.escape(data['title'])}</title><style>"
        "body{font-family:system-ui,'Segoe UI',Helvetica,Arial,sans-serif;margin:8px;color:#0f172a}"
        ".hv-title{font-weight:600;font-size:15px;margin-bottom:6px}"
        ".hv-bar{display:flex;flex-wrap:wrap;gap:6px;align-items:center;font-size:14px;margin-bottom:8px}"
        ".hv-swatch{display:inline-block;min-width:22px;padding:1px 4px;margin:1px;color:#fff;"
        "font-size:12px;text-align:center;border-radius:3px;cursor:pointer;user-select:none}"
        ".hv-hint{font-size:13px;color:#475569;margin-top:4px}"
        "button{font-size:13px;padding:2px 8px}select{font-size:14px}"
        "</style></head><body><div id='ptx-head-view'></div>"
        f"<script>window.PTX_ATTENTION={payload};</script><script>{script}</script></body></html>"
    )


def head_view_iframe(page: str, tokens: int) -> str:
    """The page inside an iframe `srcdoc` (gr.HTML does not run scripts itself)."""
    height = 120 + 20 * tokens
    return (f"<iframe title='head view' style='width:100%;height:{height}px;border:0' "
            f"srcdoc=\"{html.escape(page, quote=True)}\"></iframe>")


def save_head_view(page: str, name: str = "head_view") -> Path:
    """Write the standalone page under the outputs folder; returns its path."""
    import hashlib

    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:60] or "head_view"
    digest = hashlib.sha1(page.encode("utf-8")).hexdigest()[:10]  # one file per content: users never collide
    path = paths.outputs_dir() / f"{safe}_{digest}.html"
    path.write_text(page, encoding="utf-8")
    return path
