"""Load: 20 concurrent gradio_client users mixing every inference endpoint for a bounded
time against the launched app (loopback only). Zero errors, p95 reported, RSS bounded."""

from __future__ import annotations

import os
import statistics
import threading
import time

import pytest

from bench._util import rss_mb
from bench.api import calls

pytestmark = pytest.mark.slow

USERS = int(os.environ.get("PTX_LOAD_USERS", "20"))
SECONDS = float(os.environ.get("PTX_LOAD_SECONDS", "60"))
MAX_CALLS_PER_USER = 400


def test_twenty_users_mixing_endpoints(app_url):
    from gradio_client import Client

    from engine.images import example_path

    mix = [c for c in calls(str(example_path("coffee"))) if c[0] not in ("/models", "/runs")]
    # Warm every endpoint once (first loads are start-up cost, not load behaviour).
    warm = Client(app_url, verbose=False)
    usable = []
    for endpoint, _, arguments in mix:
        try:
            warm.predict(*arguments, api_name=endpoint)
            usable.append((endpoint, arguments))
        except Exception as exc:  # only a model that is honestly unavailable may be skipped
            assert "unavailable" in str(exc).lower(), f"{endpoint}: {exc}"
    assert len(usable) >= 6, f"too few endpoints available for a load test: {usable}"
    rss_before = rss_mb()

    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + SECONDS

    def user(index: int) -> None:
        client = Client(app_url, verbose=False)
        for n in range(MAX_CALLS_PER_USER):
            if time.monotonic() > deadline:
                return
            endpoint, arguments = usable[(index + n) % len(usable)]
            t0 = time.perf_counter()
            try:
                client.predict(*arguments, api_name=endpoint)
            except Exception as exc:
                with lock:
                    errors.append(f"{endpoint}: {exc}")
                continue
            with lock:
                latencies.append(time.perf_counter() - t0)

    samples: list[tuple[float, float]] = []  # (seconds since start, RSS MB), sampled each second
    start = time.monotonic()

    def monitor() -> None:
        while time.monotonic() < deadline:
            samples.append((time.monotonic() - start, rss_mb()))
            time.sleep(1)

    threads = [threading.Thread(target=user, args=(i,), daemon=True) for i in range(USERS)]
    watcher = threading.Thread(target=monitor, daemon=True)
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SECONDS + 120)
    assert not any(t.is_alive() for t in threads), "a user hung"
    rss_after = rss_mb()
    half = next((mb for s, mb in samples if s >= SECONDS / 2), rss_after)
    latencies.sort()
    p95 = latencies[int(0.95 * (len(latencies) - 1))] if latencies else float("nan")
    print(f"\nload: {USERS} users, {len(latencies)} calls in {SECONDS:.0f} s, "
          f"median {statistics.median(latencies) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, "
          f"RSS {rss_before:.0f} -> {half:.0f} (half-way) -> {rss_after:.0f} MB")
    assert not errors, errors[:5]
    assert len(latencies) >= USERS
    # The app runs in this test process. Caches fill in the first half (bounded by design);
    # in the second half, with as many requests again, memory must not keep growing.
    assert rss_after - half < 400, f"RSS kept growing: {half:.0f} -> {rss_after:.0f} MB in the second half"
    assert rss_after - rss_before < 1500, f"RSS grew by {rss_after - rss_before:.0f} MB"
    assert Client(app_url, verbose=False).predict(api_name="/models")["models"]
