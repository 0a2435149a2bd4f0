"""`python -m app`: launch Pretraining Explorer.

    python -m app [--host 127.0.0.1] [--port 7860] [--share] [--device auto|cpu|cuda]
                  [--offline] [--warm] [--auth user:password]
"""

from __future__ import annotations

import argparse
import logging
import os


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m app", description="Pretraining Explorer")
    p.add_argument("--host", default=os.environ.get("PTX_HOST", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("PTX_PORT", "7860")))
    p.add_argument("--share", action="store_true", help="make a public gradio.live link (off by default)")
    p.add_argument("--device", default=os.environ.get("PTX_DEVICE", "auto"), choices=["auto", "cpu", "cuda", "mps"])
    p.add_argument("--offline", action="store_true", help="never contact the Hugging Face hub or any outside host")
    p.add_argument("--warm", action="store_true", help="load the default models and compile UMAP in the background")
    p.add_argument("--auth", default=os.environ.get("PTX_AUTH", ""), help="user:password required to open the app")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from engine import device, sources

    if args.offline:
        sources.set_offline(True)  # before transformers / huggingface_hub read the env
    device.set_preference(args.device)

    import app  # noqa: F401  (sets GRADIO_ANALYTICS_ENABLED before gradio loads)
    from app.main import build_app, launch_kwargs
    from engine import paths

    demo = build_app()
    if args.warm:
        from app.preset_cache import prefetch_in_background
        from engine.warmup import warm_in_background

        prefetch_in_background(demo.ptx_presets, after=warm_in_background())
    auth = None
    if args.auth:
        user, _, password = args.auth.partition(":")
        auth = (user, password)
    demo.launch(
        server_name=args.host,
        server_port=args.port,
        share=args.share,
        auth=auth,
        allowed_paths=[str(paths.outputs_dir()), str(paths.ASSETS)],
        max_file_size="25mb",
        **launch_kwargs(),
    )


if __name__ == "__main__":
    main()
