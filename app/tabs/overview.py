"""Overview station (issue 9)."""

from __future__ import annotations

from app.common import not_built

TITLE = "Overview"
KEY = "overview"


def build() -> None:
    not_built(9, "the map of pretraining: the NLP line and the vision line meeting at the Transformer")


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
