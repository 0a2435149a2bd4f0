"""Contextual station (issue 4)."""

from __future__ import annotations

from app.common import not_built

TITLE = "Contextual"
KEY = "contextual"


def build() -> None:
    not_built(4, "BERT and ELMo separating the senses of “bank” layer by layer")


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
