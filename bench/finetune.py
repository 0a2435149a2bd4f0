"""Fine-tuning lab timings: per-step time of each mode on each task, the held-out test
time, and the run store's latency.

    nice -n 5 python bench/finetune.py [--steps 8]

For each task's default model and each mode, one short run (after a warm-up run that
loads the model) gives the median / p95 time of a training step, the time to test on the
held-out split, and the default budget's projected run time (steps x median step + test).
Timings on a shared machine are noisy: CPU seconds of this process are printed beside
wall seconds (CPU ~ wall on an idle core).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.finetune import lab  # noqa: E402
from engine.finetune.store import RunStore  # noqa: E402
from engine.finetune.tasks import get_task  # noqa: E402

CASES = [("sentiment", "bert"), ("sentiment", "glove"), ("faces", "cnn"), ("digits", "cnn")]


def p95(values: list[float]) -> float:
    return float(np.percentile(values, 95)) if values else float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=8)
    args = p.parse_args()
    store = RunStore(Path(tempfile.mkdtemp()) / "bench.sqlite")
    print("| task | model | mode | step median ms | step p95 ms | test s | default steps | projected run s | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for task, family in CASES:
        budget = get_task(task).budgets[family]
        lab.last_result(lab.finetune(task, "frozen", 1, budget.lr, 0, model=family, store=store))  # load, warm
        for mode in ("frozen", "finetune", "scratch"):
            c0 = time.process_time()
            final = lab.last_result(lab.finetune(task, mode, args.steps, budget.lr, 0, model=family,
                                                 max_seconds=600, store=store))
            cpu = time.process_time() - c0
            marks = [0.0] + [h["seconds"] for h in final["history"]]
            # The first step also fills the frozen-prefix cache for its batch: keep it, it is real.
            steps = [b - a for a, b in zip(marks, marks[1:])]
            row = store.get(final["run_id"])
            test_s = row.get("eval_seconds") or 0.0
            med = statistics.median(steps)
            projected = budget.steps * med + test_s
            print(f"| {task} | {family} | {mode} | {med * 1000:.0f} | {p95(steps) * 1000:.0f} | {test_s:.1f} | "
                  f"{budget.steps} | {projected:.0f} | {cpu:.1f} |", flush=True)
    t = []
    for _ in range(20):
        t0 = time.perf_counter()
        store.list()
        t.append(time.perf_counter() - t0)
    print(f"\nrun store list(): median {statistics.median(t) * 1000:.1f} ms, p95 {p95(t) * 1000:.1f} ms "
          f"({len(store.list())} runs)")


if __name__ == "__main__":
    main()
