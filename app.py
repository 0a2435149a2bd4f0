"""Hugging Face Spaces entry point (`app_file: app.py`, see docs/SPACE.md).

On a Space (SPACE_ID is set) it serves on 0.0.0.0:7860, online, so the canonical hub
models are used, and warms the default models in the background. Elsewhere it is the
same as `python -m app` and takes the same options.
"""

from __future__ import annotations

import os
import sys


def space_args(argv: list[str], env: dict[str, str] | os._Environ = os.environ) -> list[str]:
    """The launch options for this environment: a Space binds every interface on its port."""
    if not env.get("SPACE_ID"):
        return argv
    port = env.get("PORT") or env.get("GRADIO_SERVER_PORT") or "7860"
    return ["--host", "0.0.0.0", "--port", port, "--warm", *argv]


if __name__ == "__main__":
    from app.__main__ import main  # the app/ package, not this file: a package wins the import

    main(space_args(sys.argv[1:]))
