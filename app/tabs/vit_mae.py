"""ViT & MAE station (issue 11)."""

from __future__ import annotations

from app.common import not_built

TITLE = "ViT & MAE"
KEY = "vit_mae"


def build() -> None:
    not_built(11, "ViT patches and attention, and MAE masked reconstruction")


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
