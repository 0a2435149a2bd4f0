"""Start-up: process start -> first page served, and RSS, with no model loaded and with every
offline default loaded (`python bench/startup.py`). Prints figures; never fails a build."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._util import launch_app, rss_mb, table  # noqa: E402


def main() -> None:
    from gradio_client import Client

    rows = []
    proc, url, seconds = launch_app()
    try:
        time.sleep(0.5)
        rows.append({"state": "no model loaded", "first_page_s": seconds, "rss_mb": rss_mb(proc.pid)})
    finally:
        proc.terminate()
        proc.wait()

    proc, url, seconds = launch_app("--warm")
    try:
        client = Client(url, verbose=False)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 300:
            report = client.predict(api_name="/models")
            loaded = {r["role"] for r in report["models"] if r["loaded"]}
            # Roles whose default can still load (a failed load marks it unavailable).
            pending = {r["role"] for r in report["models"] if r["default"] and r["available"]} - loaded
            if not pending:
                break
            time.sleep(0.5)
        rows.append({
            "state": f"offline defaults loaded ({len(loaded)} roles)",
            "first_page_s": seconds,
            "rss_mb": rss_mb(proc.pid),
            "warm_s": time.perf_counter() - t0,
        })
        detail = [{"role": r["role"], "id": r["id"], "source": r["source"], "load_s": r.get("load_seconds")}
                  for r in report["models"] if r["loaded"]]
    finally:
        proc.terminate()
        proc.wait()
    print(table(rows, ["state", "first_page_s", "rss_mb", "warm_s"]))
    print()
    print(table(detail, ["role", "id", "source", "load_s"]))


if __name__ == "__main__":
    main()
