"""CNN station (issue 7)."""

from __future__ import annotations

from app.common import not_built

TITLE = "CNN"
KEY = "cnn"


def build() -> None:
    not_built(7, "a CNN's feature hierarchy, from edges to objects, with captum attributions")


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
