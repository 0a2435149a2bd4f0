"""The fine-tuning lab's results table: held-out accuracy of every mode on every task at
the default budget, over several seeds.

    nice -n 5 python bench/finetune_sweep.py [--seeds 0 1 2] [--out bench/results/finetune_sweep.jsonl]

Each run uses the task's default steps and learning rate (the app's defaults) with the
time budget lifted to 600 s, so a busy machine changes the timings, not the result.
Results are appended one JSON line per run (re-running skips runs already there), and
runs go to a private SQLite store beside the output. Prints a markdown table at the end:
accuracy mean +- std over seeds, each seed's value, and the median wall and CPU seconds
per run (CPU seconds of this process ~ wall time on an idle core).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.finetune import lab  # noqa: E402
from engine.finetune.store import RunStore  # noqa: E402
from engine.finetune.tasks import get_task  # noqa: E402

# (task, model family, lr multiplier, label): the defaults, plus scratch at a 10x lower rate
# to check that scratch's weakness is not just its learning rate.
GRID = [("sentiment", "bert", 1.0), ("faces", "cnn", 1.0), ("digits", "cnn", 1.0), ("sentiment", "glove", 1.0)]
EXTRA = [("sentiment", "bert", 0.1, "scratch"), ("digits", "cnn", 0.1, "scratch")]
MODES = ("frozen", "finetune", "scratch")


def key(r: dict) -> tuple:
    return (r["task"], r["family"], r["mode"], r["seed"], round(r["lr"], 12))


def run_one(task: str, family: str, mode: str, seed: int, lr: float, store: RunStore) -> dict:
    budget = get_task(task).budgets[family]
    t0, c0 = time.perf_counter(), time.process_time()
    final = lab.last_result(lab.finetune(task, mode, budget.steps, lr, seed, model=family, max_seconds=3600,
                                         store=store))
    row = {"task": task, "family": family, "mode": mode, "seed": seed, "lr": lr, "steps": final["step"],
           "status": final["status"], "accuracy": (final["eval"] or {}).get("accuracy"),
           "n": (final["eval"] or {}).get("n"), "wall_s": round(time.perf_counter() - t0, 2),
           "cpu_s": round(time.process_time() - c0, 2), "run_seconds": round(final["seconds"], 2),
           "model": final["model"], "source": final["source"], "device": final["device"],
           "run_id": final["run_id"], "message": final["message"]}
    return row


def table(rows: list[dict]) -> str:
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["task"], r["family"], r["mode"], r["lr"]), []).append(r)
    lines = ["| task | model | mode | lr | accuracy mean ± std | per seed | median wall s | median CPU s |",
             "|---|---|---|---|---|---|---|---|"]
    for (task, family, mode, lr), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], MODES.index(kv[0][2]), -kv[0][3])):
        accs = [r["accuracy"] for r in sorted(rs, key=lambda r: r["seed"]) if r["accuracy"] is not None]
        mean = statistics.mean(accs) if accs else float("nan")
        std = statistics.pstdev(accs) if len(accs) > 1 else 0.0
        per = ", ".join(f"s{r['seed']}={r['accuracy']:.3f}" for r in sorted(rs, key=lambda r: r["seed"])
                        if r["accuracy"] is not None)
        lines.append(f"| {task} | {family} | {mode} | {lr:g} | {mean:.3f} ± {std:.3f} | {per} | "
                     f"{statistics.median(r['wall_s'] for r in rs):.1f} | {statistics.median(r['cpu_s'] for r in rs):.1f} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--out", default="bench/results/finetune_sweep.jsonl")
    p.add_argument("--tasks", nargs="+", default=None, help="only these tasks")
    p.add_argument("--no-extra", action="store_true", help="skip the scratch-at-lower-rate check")
    p.add_argument("--table-only", action="store_true")
    args = p.parse_args()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = [json.loads(line) for line in out.read_text().splitlines() if line.strip()] if out.exists() else []
    if not args.table_only:
        store = RunStore(out.with_suffix(".sqlite"))
        plan = [(t, f, m, s, get_task(t).budgets[f].lr * mult)
                for s in args.seeds for (t, f, mult) in GRID for m in MODES]
        if not args.no_extra:
            plan += [(t, f, m, s, get_task(t).budgets[f].lr * mult) for s in args.seeds for (t, f, mult, m) in EXTRA]
        have = {key(r) for r in done}
        for task, family, mode, seed, lr in plan:
            if args.tasks and task not in args.tasks:
                continue
            if (task, family, mode, seed, round(lr, 12)) in have:
                continue
            row = run_one(task, family, mode, seed, lr, store)
            print(json.dumps(row), flush=True)
            with out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            done.append(row)
    print(table(done))


if __name__ == "__main__":
    main()
