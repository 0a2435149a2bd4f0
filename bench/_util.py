"""Small helpers the benchmarks share: timing statistics, RSS, a launched app."""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(fn: Callable[[], object], repeat: int = 20, warmup: int = 1) -> dict[str, float]:
    """Call fn `warmup` times untimed, then `repeat` times; milliseconds: median, p95, min."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return {
        "median_ms": statistics.median(samples),
        "p95_ms": samples[min(len(samples) - 1, int(round(0.95 * (len(samples) - 1))))],
        "min_ms": samples[0],
        "n": len(samples),
    }


def rss_mb(pid: int | None = None) -> float:
    """Resident set size of a process in MB (Linux /proc)."""
    with open(f"/proc/{pid or os.getpid()}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_app(*extra: str, port: int | None = None) -> tuple[subprocess.Popen, str, float]:
    """Start `python -m app --offline` on a free port; return (process, url, seconds to first page)."""
    port = port or free_port()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "--offline", "--port", str(port), *extra],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:
                if resp.status == 200:
                    return proc, url, time.perf_counter() - t0
        except OSError:
            time.sleep(0.05)
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited with code {proc.returncode}")
    proc.kill()
    raise RuntimeError("the app did not serve its page within 120 s")


def table(rows: list[dict], columns: list[str]) -> str:
    """A plain-text table for printing."""
    cells = [[str(c) for c in columns]] + [[_fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"
    return str(v)
