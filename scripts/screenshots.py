"""Screenshots of every tab from the running app, for the README (so they never go stale).

    python scripts/screenshots.py                      # launch offline on a free port, shoot, stop
    python scripts/screenshots.py --url http://127.0.0.1:7860/ --tabs overview models
    python scripts/screenshots.py --talk --lang zh     # talk mode, Chinese UI

Writes docs/screenshots/<tab>.png (the 1280 x 720 viewport, what a projector shows) and
docs/screenshots/<tab>-full.png (the whole page). Each tab is opened by its deep link
(`?tab=<key>`), so this also exercises app/deeplinks.py. Uses Debian's /usr/bin/chromium
through Playwright (never `playwright install`); no outside request is made.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHROMIUM = os.environ.get("PTX_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
VIEWPORT = {"width": 1280, "height": 720}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_offline() -> tuple[object, str]:
    """The whole app, offline, on a free loopback port, in this process."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from engine import sources

    sources.set_offline(True)
    import app  # noqa: F401  (sets the environment before gradio loads)
    from app.main import build_app, launch_kwargs
    from engine import paths

    demo = build_app()
    _, url, _ = demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                            quiet=True, allowed_paths=[str(paths.outputs_dir()), str(paths.ASSETS)],
                            max_file_size="25mb", **launch_kwargs())
    return demo, url.rstrip("/") + "/"


# True while the tab still has a running event (a visible status tracker).
_BUSY_JS = """(key) => {
  const tab = document.getElementById('tab-' + key);
  if (!tab) return false;
  return [...tab.querySelectorAll('[data-testid="status-tracker"]')]
    .some((el) => !el.classList.contains('hide') && el.offsetParent !== null);
}"""


def settle(page, key: str, settle_ms: int, cap_ms: int = 25_000) -> None:
    """Wait `settle_ms`, then until the tab has no running event and its number of drawn
    plotly figures has held still for 2 s (plotly loads lazily), at most `cap_ms`."""
    page.wait_for_timeout(settle_ms)
    waited, still, last = 0, 0, -1
    while waited < cap_ms and still < 2000:
        count = page.locator(f"#tab-{key} .js-plotly-plot").count()
        busy = page.evaluate(_BUSY_JS, key)
        still = still + 250 if (count == last and not busy) else 0
        last = count
        page.wait_for_timeout(250)
        waited += 250


def shoot(url: str, keys: list[str], out: Path, talk: bool, lang: str, settle_ms: int) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    suffix = ("-talk" if talk else "") + (f"-{lang}" if lang != "en" else "")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        locale = "zh-CN" if lang == "zh" else "en-US"
        page = browser.new_page(viewport=VIEWPORT, locale=locale)
        for key in keys:
            page.goto(f"{url}?tab={key}&run=0&talk={int(talk)}", wait_until="load")
            page.wait_for_selector(f"#tab-{key}", state="visible", timeout=30_000)
            settle(page, key, settle_ms)
            # Error toasts (often another tab's start-up) are reported here, then dismissed so the
            # picture shows the tab itself.
            for text in filter(str.strip, page.locator(".toast-wrap").all_inner_texts()):
                print(f"  note: a toast on {key}: {' '.join(text.split())[:160]}", flush=True)
            for close in page.locator(".toast-close").all():
                close.click()
            page.wait_for_timeout(300)
            shot = out / f"{key}{suffix}.png"
            page.screenshot(path=str(shot))
            full = out / f"{key}{suffix}-full.png"
            page.screenshot(path=str(full), full_page=True)
            written += [shot, full]
            print(f"{key}: {shot.relative_to(ROOT) if shot.is_relative_to(ROOT) else shot}", flush=True)
        browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    from app.stations import STATION_MODULES

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", help="a running app (default: launch one offline here)")
    ap.add_argument("--tabs", nargs="*", default=list(STATION_MODULES), help="tab keys (default: all)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    ap.add_argument("--talk", action="store_true", help="talk mode (large type, high contrast)")
    ap.add_argument("--lang", choices=["en", "zh"], default="en", help="the browser's language")
    ap.add_argument("--settle-ms", type=int, default=1500, help="wait after a tab opens (plots draw)")
    args = ap.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: apt-get install chromium", file=sys.stderr)
        return 2
    demo = None
    url = args.url
    start = time.perf_counter()
    if not url:
        demo, url = launch_offline()
    try:
        shoot(url.rstrip("/") + "/", args.tabs, args.out, args.talk, args.lang, args.settle_ms)
    finally:
        if demo is not None:
            demo.close()
    print(f"done in {time.perf_counter() - start:.0f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
