"""A clean theme that reads on a projector, using only local/system fonts (no web fonts:
offline means zero outside requests)."""

import gradio as gr

SYSTEM_SANS = ["Inter", "ui-sans-serif", "system-ui", "Segoe UI", "Helvetica Neue", "Arial", "Noto Sans CJK SC", "sans-serif"]
SYSTEM_MONO = ["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"]

THEME = gr.themes.Soft(
    primary_hue="indigo",
    secondary_hue="amber",
    neutral_hue="slate",
    font=SYSTEM_SANS,
    font_mono=SYSTEM_MONO,
).set(
    body_text_size="16px",
    block_title_text_size="15px",
)

CSS = """
.gradio-container { max-width: 1400px !important; }
.ptx-notice { border-left: 4px solid #f59e0b; padding-left: 12px; }
.ptx-explain { font-size: 15px; line-height: 1.5; }
.ptx-provenance { font-size: 13px; color: #475569; }
"""
