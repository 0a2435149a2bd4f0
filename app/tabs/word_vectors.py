"""Word vectors station (issue 3)."""

from __future__ import annotations

from app.common import not_built

TITLE = "Word vectors"
KEY = "word_vectors"


def build() -> None:
    not_built(3, "word2vec and GloVe analogies, neighbours and maps, and why one vector per word fails on “bank”")


if __name__ == "__main__":
    from app.common import standalone

    standalone(build, TITLE)
