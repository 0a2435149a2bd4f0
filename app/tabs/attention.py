"""Attention & cloze station (issue 6)."""

from __future__ import annotations

from app.common import not_built

TITLE = "Attention & cloze"
KEY = "attention"


def build() -> None:
    not_built(6, "attention maps for every layer and head, and BERT's fill-in-the-blank task")


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
