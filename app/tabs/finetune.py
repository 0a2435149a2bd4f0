"""Fine-tuning station (issue 8)."""

from __future__ import annotations

from app.common import not_built

TITLE = "Fine-tuning"
KEY = "finetune"


def build() -> None:
    not_built(8, "small live training runs: frozen vs fine-tuned vs from scratch")


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
