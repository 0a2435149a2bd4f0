"""Run every benchmark under bench/ in turn and print its figures (`make bench`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    scripts = sorted(p for p in HERE.glob("*.py") if not p.name.startswith("_") and p.name != "run_all.py" and "sweep" not in p.name)
    for script in scripts:
        print(f"\n=== {script.name}", flush=True)
        result = subprocess.run([sys.executable, str(script)], cwd=HERE.parent)
        if result.returncode:
            print(f"({script.name} exited with {result.returncode})")


if __name__ == "__main__":
    main()
