"""Security: file access limited to the app's own files, uploads bounded, optional auth,
and no path from user input to eval, a shell or a pickle."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _status(url: str, data: bytes | None = None, headers: dict | None = None) -> int:
    req = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=20) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


@pytest.mark.parametrize("path", [
    "gradio_api/file=/etc/passwd",
    "gradio_api/file=../../../../etc/passwd",
    "gradio_api/file=%2Fetc%2Fpasswd",
    "gradio_api/file=" + str(ROOT / "engine" / "registry.py"),
    "file=/etc/passwd",
])
def test_files_outside_the_app_are_refused(app_url, path):
    assert _status(app_url + path) in (400, 403, 404, 405)


def test_uploads_are_bounded(app_url):
    boundary = "ptxboundary"
    big = b"0" * (26 * 1024 * 1024)  # over the 25 MB limit
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.png\"\r\n"
            "Content-Type: image/png\r\n\r\n").encode() + big + f"\r\n--{boundary}--\r\n".encode()
    status = _status(app_url + "gradio_api/upload", data=body,
                     headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert status == 413


def test_auth_when_asked():
    from app.main import build_app, launch_kwargs
    from tests.conftest import free_port

    demo = build_app()
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                            quiet=True, auth=("speaker", "s3cret"), **launch_kwargs())
    try:
        assert _status(url.rstrip("/") + "/config") == 401
        from gradio_client import Client

        with pytest.raises(Exception):  # noqa: B017 - any refusal (401, auth error) will do
            Client(url, verbose=False).predict(api_name="/models")
        result = Client(url, auth=("speaker", "s3cret"), verbose=False).predict(api_name="/models")
        assert result["models"]
    finally:
        demo.close()


DANGEROUS = [
    (re.compile(r"(?<![\w.])eval\("), "eval("),
    (re.compile(r"(?<![\w.])exec\("), "exec("),
    (re.compile(r"shell\s*=\s*True"), "shell=True"),
    (re.compile(r"os\.system\("), "os.system("),
    (re.compile(r"pickle\.loads?\("), "pickle.load"),
    (re.compile(r"weights_only\s*=\s*False"), "weights_only=False"),
]


def test_no_eval_shell_or_pickle_in_the_code():
    """Everything the server runs. engine/train/ is left out: those scripts run offline, by a
    developer, and reload only the resume files they wrote themselves."""
    offenders = []
    for folder in ("app", "engine"):
        for file in (ROOT / folder).rglob("*.py"):
            if "train" in file.relative_to(ROOT).parts[1:2]:
                continue
            text = file.read_text()
            for pattern, name in DANGEROUS:
                if pattern.search(text):
                    offenders.append(f"{file.relative_to(ROOT)}: {name}")
            # torch.load must always say weights_only=True
            for call in re.finditer(r"torch\.load\(([^)]*)\)", text):
                if "weights_only=True" not in call.group(1):
                    offenders.append(f"{file.relative_to(ROOT)}: torch.load without weights_only=True")
    assert not offenders, offenders
