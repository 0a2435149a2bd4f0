"""Shared fixtures: a launched app for API and browser tests, and a private checkpoints dir."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

CHROMIUM = os.environ.get("PTX_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_SESSION: dict = {}


@pytest.fixture(scope="session")
def app_demo(app_url: str):
    """The gr.Blocks behind `app_url` (same process), for tests that look inside it."""
    return _SESSION["demo"]


@pytest.fixture(scope="session")
def app_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The whole app, launched once for the session on a free loopback port, offline."""
    os.environ.setdefault("PTX_DATA_DIR", str(tmp_path_factory.mktemp("ptx-data")))
    from engine import sources

    sources.set_offline(True)
    import app  # noqa: F401
    from app.main import build_app, launch_kwargs
    from engine import paths

    demo = build_app()
    _SESSION["demo"] = demo
    _, url, _ = demo.launch(
        server_name="127.0.0.1",
        server_port=free_port(),
        prevent_thread_lock=True,
        quiet=True,
        allowed_paths=[str(paths.outputs_dir()), str(paths.ASSETS)],
        max_file_size="25mb",
        **launch_kwargs(),
    )
    yield url.rstrip("/") + "/"
    demo.close()


@pytest.fixture(scope="session")
def client(app_url: str):
    """A gradio_client talking to the launched app."""
    from gradio_client import Client

    return Client(app_url, verbose=False)


@pytest.fixture
def checkpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private, empty checkpoints/ folder for this test."""
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    monkeypatch.setenv("PTX_CHECKPOINTS", str(folder))
    return folder


@pytest.fixture(scope="session")
def browser():
    """Headless Debian chromium driven by Playwright (never `playwright install`)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does this)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
