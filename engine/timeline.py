"""The map of pretraining as data: milestones, the lines between them, and where each sits.

The data is `assets/timeline.json` (our own words; facts from the seed articles and the
papers). This module reads and checks it and computes positions; drawing is the
Overview tab's job (app/tabs/overview.py). No gradio, no torch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from engine.paths import ASSETS

TIMELINE_FILE = ASSETS / "timeline.json"
LANGUAGES = ("en", "zh")
LANES = ("nlp", "meet", "vision")
EDGE_KINDS = ("line", "transformer", "idea")

# Year -> horizontal position. Piecewise linear: the quiet years before 2012 are squeezed
# and 2018-2022 are stretched, where five milestones can share one year. Monotone, so
# order in time is order on the page.
YEAR_BREAKS: tuple[tuple[float, float], ...] = (
    (2000.0, 0.0), (2003.0, 0.8), (2012.0, 1.7), (2013.0, 2.4), (2015.0, 3.4), (2017.0, 4.3),
    (2018.0, 5.2), (2019.0, 6.8), (2020.0, 8.0), (2021.0, 9.3), (2022.0, 10.6),
)


@dataclass(frozen=True, eq=False)
class Milestone:
    """One node of the map. Text fields are {"en": str, "zh": str}."""

    id: str
    lane: str            # "nlp", "meet" or "vision"
    level: int           # 0 = on the lane, 1 = one row further from the centre
    date: float          # year + month/12 of the first paper (2000.0 stands for "earlier")
    year: int
    year_label: str
    name: dict[str, str]
    who: str
    station: str         # a tab KEY (app/stations.py)
    preset: dict[str, object]
    solved: dict[str, str]
    open: dict[str, str]


@dataclass(frozen=True, eq=False)
class Timeline:
    lanes: dict[str, dict[str, str]]
    nodes: tuple[Milestone, ...]
    edges: tuple[tuple[str, str, str], ...]   # (from id, to id, kind)

    def node(self, node_id: str) -> Milestone:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    def ancestors(self, node_id: str) -> set[str]:
        """Every milestone with a path of edges leading to `node_id` (not itself)."""
        parents: dict[str, list[str]] = {}
        for a, b, _ in self.edges:
            parents.setdefault(b, []).append(a)
        seen: set[str] = set()
        todo = list(parents.get(node_id, []))
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(parents.get(n, []))
        return seen


def year_to_x(date: float) -> float:
    """Horizontal position of a date on the map (see YEAR_BREAKS); clamped at both ends."""
    xs = YEAR_BREAKS
    if date <= xs[0][0]:
        return xs[0][1]
    for (y0, x0), (y1, x1) in zip(xs, xs[1:], strict=False):
        if date <= y1:
            return x0 + (date - y0) / (y1 - y0) * (x1 - x0)
    return xs[-1][1]


def _check(raw: dict) -> None:
    """Raise ValueError naming the first thing wrong in the timeline data."""
    ids = [n["id"] for n in raw["nodes"]]
    if len(ids) != len(set(ids)):
        raise ValueError(f"duplicate milestone ids in {TIMELINE_FILE}")
    for n in raw["nodes"]:
        if n["lane"] not in LANES:
            raise ValueError(f"{n['id']}: lane {n['lane']!r} is not one of {LANES}")
        for key in ("name", "solved", "open"):
            for lang in LANGUAGES:
                if not str(n[key].get(lang, "")).strip():
                    raise ValueError(f"{n['id']}: {key} has no {lang} text")
    for a, b, kind in raw["edges"]:
        if a not in ids or b not in ids:
            raise ValueError(f"edge {a} -> {b} names a milestone that does not exist")
        if kind not in EDGE_KINDS:
            raise ValueError(f"edge {a} -> {b}: kind {kind!r} is not one of {EDGE_KINDS}")


@lru_cache(maxsize=4)
def load_timeline(path: Path = TIMELINE_FILE) -> Timeline:
    """Read and check the timeline (cached; the file is small and never changes at run time)."""
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    _check(raw)
    fields = Milestone.__dataclass_fields__
    nodes = tuple(Milestone(**{k: v for k, v in n.items() if k in fields}) for n in raw["nodes"])
    edges = tuple((a, b, kind) for a, b, kind in raw["edges"])
    return Timeline(lanes=raw["lanes"], nodes=nodes, edges=edges)
