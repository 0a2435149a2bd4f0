"""The Hugging Face Space entry point (root app.py) and its front matter (docs/SPACE.md)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _entry():
    # Loaded by path: `import app` means the app/ package.
    spec = importlib.util.spec_from_file_location("space_entry", ROOT / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_on_a_space_it_binds_every_interface_on_the_space_port():
    entry = _entry()
    assert entry.space_args(["--share"], {}) == ["--share"]
    args = entry.space_args([], {"SPACE_ID": "someone/pretraining-explorer"})
    assert args[:4] == ["--host", "0.0.0.0", "--port", "7860"] and "--offline" not in args
    assert entry.space_args([], {"SPACE_ID": "x", "PORT": "8080"})[3] == "8080"


def test_front_matter_names_gradio_the_pinned_version_and_the_entry_point():
    text = (ROOT / "docs" / "SPACE.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n---\n(.*?)\n---\n```", text, re.S)
    assert block, "docs/SPACE.md holds the README front matter in a ```yaml block"
    fields = dict(line.split(": ", 1) for line in block.group(1).splitlines() if ": " in line and not line.startswith(" "))
    assert fields["sdk"] == "gradio" and fields["app_file"] == "app.py"
    assert fields["python_version"].strip('"') == "3.11"
    pinned = re.search(r"^gradio==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert fields["sdk_version"] == pinned
