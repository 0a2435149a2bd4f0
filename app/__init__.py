"""Pretraining Explorer's Gradio UI. No tensor maths here: every callback calls engine/."""

import os

# Before gradio is imported anywhere: no analytics, no outside calls.
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
