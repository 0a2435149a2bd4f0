"""The station's own word-analogy set (assets/word_vectors/analogies.json) and its
evaluation: top-1 / top-5 accuracy of a vector model, per category.

A question takes two pairs (a, b), (c, d) of one category and asks b - a + c, expecting
d; input words never count as answers (as in gensim's `most_similar`). Questions are
built deterministically: each pair with the next QUESTIONS_PER_PAIR pairs of its
category (wrapping around).
"""

from __future__ import annotations

import json
import time
from functools import lru_cache
from typing import Any

import numpy as np

from engine import paths
from engine.word_vectors import VectorTable, get_table

QUESTIONS_PER_PAIR = 5
CATEGORIES = ("capitals", "gender", "plural", "comparative", "tense", "currency", "nationality")


@lru_cache(maxsize=1)
def load() -> dict[str, Any]:
    """The raw set: {about, presets: [{category, expression, expected}], categories:
    {name: [[a, b], ...]}}."""
    return json.loads((paths.ASSETS / "word_vectors" / "analogies.json").read_text(encoding="utf-8"))


def questions(category: str | None = None) -> list[tuple[str, str, str, str, str]]:
    """(category, a, b, c, d) tuples: b - a + c should give d."""
    out = []
    for name, pairs in load()["categories"].items():
        if category and name != category:
            continue
        n = len(pairs)
        for i in range(n):
            for step in range(1, min(QUESTIONS_PER_PAIR, n - 1) + 1):
                (a, b), (c, d) = pairs[i], pairs[(i + step) % n]
                if len({a, b, c, d}) == 4:
                    out.append((name, a, b, c, d))
    return out


def evaluate(table: VectorTable, limit: int | None = None, k: int = 5, batch: int = 64) -> dict[str, Any]:
    """Accuracy of `table` on the set: the answer d must be among the top k words (input
    words left out), searching the `limit` most frequent words (None = all).

    Questions with a word outside the searched vocabulary count as wrong and are also
    reported as `not_covered`. Returns {model, k, vocab_limit, questions, top1, topk,
    not_covered, by_category: {name: {questions, top1, topk}}, seconds}; accuracies in [0, 1].
    """
    t0 = time.perf_counter()
    n = table.size if not limit else min(int(limit), table.size)
    qs = questions()
    covered = [q for q in qs if all(w in table.index and table.index[w] < n for w in q[1:])]
    stats = {c: {"questions": 0, "top1": 0, "topk": 0} for c in load()["categories"]}
    for q in qs:
        stats[q[0]]["questions"] += 1
    sub = table.unit[:n]  # (n, d), a view
    for start in range(0, len(covered), batch):
        chunk = covered[start:start + batch]
        idx = np.array([[table.index[w] for w in q[1:4]] for q in chunk])  # (m, 3): a, b, c
        query = (table.unit[idx[:, 1]] - table.unit[idx[:, 0]] + table.unit[idx[:, 2]]) / 3.0  # (m, d)
        query /= np.linalg.norm(query, axis=1, keepdims=True).clip(1e-9)
        scores = query @ sub.T  # (m, n)
        scores[np.arange(len(chunk))[:, None], idx] = -np.inf  # input words never answer
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        for row, q in enumerate(chunk):
            answer = table.index[q[4]]
            order = top[row][np.argsort(-scores[row, top[row]])]
            stats[q[0]]["topk"] += int(answer in order)
            stats[q[0]]["top1"] += int(order[0] == answer)
    total = len(qs)
    by_cat = {c: {"questions": s["questions"], "top1": s["top1"] / max(1, s["questions"]),
                  "topk": s["topk"] / max(1, s["questions"])} for c, s in stats.items()}
    return {
        "model": table.label,
        "k": k,
        "vocab_limit": n,
        "questions": total,
        "top1": sum(s["top1"] for s in stats.values()) / max(1, total),
        "topk": sum(s["topk"] for s in stats.values()) / max(1, total),
        "not_covered": total - len(covered),
        "by_category": by_cat,
        "seconds": round(time.perf_counter() - t0, 3),
    }


def evaluate_model(model: str = "", limit: int | None = None, k: int = 5) -> dict[str, Any]:
    """`evaluate` on a registry model id ("" = default)."""
    return evaluate(get_table(model), limit=limit, k=k)


if __name__ == "__main__":  # python -m engine.analogy_set [model] [limit]
    import sys

    result = evaluate_model(sys.argv[1] if len(sys.argv) > 1 else "",
                            int(sys.argv[2]) if len(sys.argv) > 2 else None)
    print(json.dumps(result, indent=1))
