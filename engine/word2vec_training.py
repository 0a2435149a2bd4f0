"""Train your own word2vec (gensim) on the packaged English text, with live progress.

The corpus (Wikipedia lead sections, the World English Bible, tweets) is tokenised once
with `engine.corpus.tokenize`, words only, and cached as gzip text (one sentence a line).
Training reports, at each epoch end, the loss of the model's own objective on held-out
sentences (every 50th sentence, never trained on), and the fraction done while an epoch
runs; it stops at the next epoch end when cancelled. The result is saved in word2vec binary format (no pickle) under
`checkpoints/trained/word2vec-<name>/vectors.bin` with a `manifest.json`, and registered
as a `static_vectors` model at once.

    python -m engine.train.word2vec --name packaged-text --epochs 5
"""

from __future__ import annotations

import gzip
import json
import logging
import re
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from engine import paths
from engine.corpus import CREDITS, SOURCES, sentences, tokenize
from engine.errors import UserInputError

log = logging.getLogger(__name__)

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
PROGRESS_EVERY = 2_000  # sentences between progress events


@dataclass
class Word2VecConfig:
    """What to train. sg: 1 = skip-gram (predict the context from a word), 0 = CBOW
    (predict a word from its context); hs: 1 = hierarchical softmax, 0 = negative
    sampling with `negative` noise words; window: context words on each side."""

    name: str = "packaged-text"
    sources: tuple[str, ...] = ("wiki", "bible", "tweets")
    sg: int = 1
    hs: int = 0
    negative: int = 5
    window: int = 5
    vector_size: int = 100
    epochs: int = 5
    min_count: int = 5
    sample: float = 1e-3
    seed: int = 0
    workers: int = 2
    max_sentences: int = 0  # 0 = all; tests use a few hundred

    def check(self) -> Word2VecConfig:
        """Normalise and validate; raises UserInputError with what to change."""
        self.name = (self.name or "").strip().lower().replace(" ", "-")
        if not NAME_RE.match(self.name):
            raise UserInputError("The name may use a-z, 0-9, - and _ (up to 40 characters), like `my-run`.")
        self.sources = tuple(self.sources) or ("wiki",)
        bad = [s for s in self.sources if s not in SOURCES]
        if bad:
            raise UserInputError(f"Unknown text {bad}; choose from {', '.join(SOURCES)}.")
        limits = {"window": (1, 20), "vector_size": (8, 300), "epochs": (1, 50), "negative": (1, 25),
                  "min_count": (1, 100), "workers": (1, 16)}
        for key, (lo, hi) in limits.items():
            value = int(getattr(self, key))
            if not lo <= value <= hi:
                raise UserInputError(f"{key} must be from {lo} to {hi}; got {value}.")
            setattr(self, key, value)
        self.sg, self.hs = int(bool(self.sg)), int(bool(self.hs))
        return self

    @property
    def model_id(self) -> str:
        return f"word2vec-{self.name}"

    def describe(self) -> str:
        arch = "skip-gram" if self.sg else "CBOW"
        obj = "hierarchical softmax" if self.hs else f"negative sampling ({self.negative})"
        return f"{arch}, {obj}, {self.vector_size}d, window {self.window}, {self.epochs} epochs"


class Cancelled(Exception):
    """Training was cancelled; nothing was saved."""


# ---------------------------------------------------------------- the corpus, tokenised once
_corpus_lock = threading.Lock()
_corpus_mem: dict[str, list[list[str]]] = {}


def corpus(source: str) -> list[list[str]]:
    """One packaged source as lists of lower-case words (punctuation dropped), cached as
    gzip text under the data dir and in memory; equal words share one str object."""
    with _corpus_lock:
        if source in _corpus_mem:
            return _corpus_mem[source]
        cache = paths.cache_dir("word2vec") / f"{source}.txt.gz"
        interned: dict[str, str] = {}
        if cache.exists():
            with gzip.open(cache, "rt", encoding="utf-8") as fh:
                sents = [[interned.setdefault(w, w) for w in line.split()] for line in fh]
        else:
            sents = []
            for s in sentences(source):
                words = [interned.setdefault(w, w) for w in tokenize(s) if any(c.isalnum() for c in w)]
                if len(words) > 1:
                    sents.append(words)
            tmp = cache.with_suffix(".tmp")
            with gzip.open(tmp, "wt", encoding="utf-8") as fh:
                fh.writelines(" ".join(ws) + "\n" for ws in sents)
            tmp.replace(cache)
        _corpus_mem[source] = sents
        return sents


class _Sentences:
    """The training sentences as a re-iterable; counts what gensim has read (for the
    progress bar) and stops early, without raising, once cancelled (gensim reads it
    from its producer thread, where an exception would strand the workers)."""

    def __init__(self, sents: list[list[str]], cancel: threading.Event, on_read: Callable[[int], None]):
        self.sents, self.cancel, self.on_read = sents, cancel, on_read

    def __iter__(self) -> Iterator[list[str]]:
        for i, s in enumerate(self.sents):
            if self.cancel.is_set():
                return
            if i % PROGRESS_EVERY == 0:
                self.on_read(i)
            yield s

    def __len__(self) -> int:
        return len(self.sents)


# ---------------------------------------------------------------- held-out loss
HOLDOUT_EVERY = 50  # every 50th sentence is held out of training, to measure the loss on
HELDOUT_PAIRS = 20_000


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


class HeldOutLoss:
    """The model's own objective on sentences it never trains on, computed in numpy at
    each epoch end (workers idle): skip-gram predicts a context word from a word, CBOW a
    word from the mean of its context; negative sampling scores the true word against
    `negative` noise words drawn from gensim's unigram^0.75 table, hierarchical softmax
    sums the binary decisions along the word's Huffman path. Fixed pairs and noise words
    (seeded), so epochs compare. Value: mean loss per predicted word, in nats."""

    def __init__(self, model, held_out: list[list[str]], seed: int = 0, max_pairs: int = HELDOUT_PAIRS):
        rng = np.random.default_rng(seed)
        k2i = model.wv.key_to_index
        inputs: list[list[int]] = []
        targets: list[int] = []
        for sent in held_out:
            ids = [k2i[w] for w in sent if w in k2i]
            for i, t in enumerate(ids):
                ctx = ids[max(0, i - model.window): i] + ids[i + 1: i + 1 + model.window]
                if not ctx:
                    continue
                if model.sg:
                    inputs.extend([[c] for c in ctx])
                    targets.extend([t] * len(ctx))
                else:
                    inputs.append(ctx)
                    targets.append(t)
        if not targets:
            raise UserInputError("No held-out sentence has two known words; use more text or a lower min_count.")
        pick = rng.permutation(len(targets))[:max_pairs]
        self.inputs = [inputs[i] for i in pick]
        self.targets = np.array([targets[i] for i in pick])  # (m,)
        self.flat = np.array([c for ctx in self.inputs for c in ctx])  # all input rows, example after example
        self.starts = np.cumsum([0] + [len(c) for c in self.inputs[:-1]])  # (m,)
        self.lengths = np.array([len(c) for c in self.inputs], dtype=np.float32)[:, None]
        self.hs = bool(model.hs)
        if self.hs:
            codes = model.wv.expandos["code"]
            points = model.wv.expandos["point"]
            self.ex = np.concatenate([[e] * len(codes[t]) for e, t in enumerate(self.targets)])
            self.node = np.concatenate([points[t] for t in self.targets]).astype(np.int64)
            self.sign = 1.0 - 2.0 * np.concatenate([codes[t] for t in self.targets]).astype(np.float32)
        else:
            draws = rng.integers(0, int(model.cum_table[-1]), size=(len(self.targets), model.negative))
            self.noise = np.searchsorted(model.cum_table, draws, side="right")  # (m, negative)

    def __call__(self, model) -> float:
        h = np.add.reduceat(model.wv.vectors[self.flat], self.starts, axis=0) / self.lengths  # (m, d)
        if self.hs:
            f = np.einsum("ij,ij->i", h[self.ex], model.syn1[self.node])
            loss = -np.bincount(self.ex, weights=_log_sigmoid(self.sign * f), minlength=len(self.targets))
        else:
            out = model.syn1neg
            pos = np.einsum("ij,ij->i", h, out[self.targets])
            neg = np.einsum("ij,ikj->ik", h, out[self.noise])
            loss = -_log_sigmoid(pos) - _log_sigmoid(-neg).sum(axis=1)
        return float(np.mean(loss))


# ---------------------------------------------------------------- training
def train(config: Word2VecConfig, progress: Callable[[dict[str, Any]], None] | None = None,
          cancel: threading.Event | None = None, out_dir: Path | None = None) -> dict[str, Any]:
    """Train, save and register a word2vec model; blocking.

    progress(event) is called with {stage: "corpus"|"vocab"|"epoch"|"train"|"done",
    fraction in [0, 1], epoch, epochs, history: [{epoch, loss, train_loss_gensim}] (loss:
    held-out, nats per predicted word; epoch 0 = before training), message}. Raises Cancelled when
    `cancel` is set (checked while reading and at each epoch end; nothing is saved).
    Returns the manifest: {id, file, sha256, command, data, params, vocab_size,
    corpus_words, history, seconds, minutes, metrics, created_at, ...}.
    """
    from gensim.models import Word2Vec
    from gensim.models.callbacks import CallbackAny2Vec

    config.check()
    cancel = cancel or threading.Event()
    emit = progress or (lambda event: None)
    t0 = time.perf_counter()
    history: list[dict[str, float]] = []

    def event(stage: str, fraction: float, message: str, epoch: int = 0) -> None:
        emit({"stage": stage, "fraction": round(min(max(fraction, 0.0), 1.0), 4), "epoch": epoch,
              "epochs": config.epochs, "history": list(history), "message": message,
              "seconds": round(time.perf_counter() - t0, 1)})

    event("corpus", 0.0, "reading and tokenising the packaged text (cached after the first time)")
    everything = [s for src in config.sources for s in corpus(src)]
    if config.max_sentences:
        everything = everything[: config.max_sentences]
    sents = [s for i, s in enumerate(everything) if i % HOLDOUT_EVERY != HOLDOUT_EVERY - 1]
    held_out = [s for i, s in enumerate(everything) if i % HOLDOUT_EVERY == HOLDOUT_EVERY - 1]
    n_words = sum(len(s) for s in sents)
    if cancel.is_set():
        raise Cancelled()

    state = {"epoch": 0}
    total = max(1, len(sents))

    def on_read(i: int) -> None:
        if state["epoch"] > 0:
            done = (state["epoch"] - 1 + i / total) / config.epochs
            event("train", done, f"epoch {state['epoch']}/{config.epochs}", state["epoch"])

    stream = _Sentences(sents, cancel, on_read)

    class Progress(CallbackAny2Vec):
        def on_epoch_begin(self, model) -> None:
            model.running_training_loss = 0.0  # per-epoch loss; keeps the float32 sum small
            state["epoch"] += 1

        def on_epoch_end(self, model) -> None:
            if cancel.is_set():
                raise Cancelled()
            loss = heldout(model)
            history.append({"epoch": state["epoch"], "loss": round(loss, 4),
                            "train_loss_gensim": round(float(model.get_latest_training_loss()), 1)})
            event("epoch", state["epoch"] / config.epochs,
                  f"epoch {state['epoch']}/{config.epochs}: held-out loss {loss:.4f}", state["epoch"])

    model = Word2Vec(vector_size=config.vector_size, window=config.window, min_count=config.min_count,
                     sg=config.sg, hs=config.hs, negative=0 if config.hs else config.negative,
                     sample=config.sample, seed=config.seed, workers=config.workers, compute_loss=True)
    event("vocab", 0.0, f"building the vocabulary of {n_words:,} words")
    model.build_vocab(stream)
    if cancel.is_set():
        raise Cancelled()
    if not model.wv.index_to_key:
        raise UserInputError(f"No word occurs {config.min_count} times in this text; lower min_count.")
    heldout = HeldOutLoss(model, held_out, seed=config.seed)
    before = heldout(model)  # random start: the loss before any training
    history.append({"epoch": 0, "loss": round(before, 4), "train_loss_gensim": None})
    model.train(stream, total_examples=len(sents), epochs=config.epochs, compute_loss=True,
                callbacks=[Progress()])
    seconds = time.perf_counter() - t0
    manifest = save(model, config, history, n_words, seconds, out_dir)
    event("done", 1.0, f"saved {manifest['id']} ({manifest['vocab_size']:,} words) in {seconds:.0f} s",
          config.epochs)
    return manifest


def save(model, config: Word2VecConfig, history: list[dict[str, float]], n_words: int, seconds: float,
         out_dir: Path | None = None) -> dict[str, Any]:
    """Write vectors.bin (word2vec binary, frequency order) and manifest.json, register
    the model, and measure it on the station's analogy set. Returns the manifest."""
    import gensim

    from engine.sources import sha256_file

    folder = Path(out_dir) if out_dir else paths.trained_dir() / config.model_id
    folder.mkdir(parents=True, exist_ok=True)
    vectors = folder / "vectors.bin"
    tmp = folder / "vectors.bin.tmp"
    model.wv.save_word2vec_format(str(tmp), binary=True)
    tmp.replace(vectors)
    manifest: dict[str, Any] = {
        "id": config.model_id,
        "role": "static_vectors",
        "file": vectors.name,
        "sha256": sha256_file(vectors),
        "bytes": vectors.stat().st_size,
        "format": "word2vec binary (KeyedVectors.save_word2vec_format, binary=True)",
        "command": command_line(config),
        "data": " + ".join(CREDITS[s] for s in config.sources),
        "corpus_sentences": int(model.corpus_count),
        "corpus_words": int(n_words),
        "params": {k: v for k, v in asdict(config).items() if k != "name"},
        "vocab_size": len(model.wv.index_to_key),
        "history": history,
        "loss_note": "loss: the model's own objective (negative sampling or hierarchical softmax) on "
                     f"held-out sentences (every {HOLDOUT_EVERY}th, never trained on), mean nats per predicted "
                     "word; train_loss_gensim: gensim's running loss summed over the epoch (approximate: "
                     "worker threads share one float32 counter)",
        "seconds": round(seconds, 1),
        "minutes": round(seconds / 60, 2),
        "gensim": gensim.__version__,
        "determinism": "seeded; with more than one worker thread gensim's scheduling makes runs differ slightly",
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    manifest["metrics"] = _analogy_metrics(model.wv, config.model_id)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    _register(folder)
    return manifest


def _analogy_metrics(kv, model_id: str) -> dict[str, Any]:
    """Top-1 / top-5 accuracy on the station's analogy set (questions with an unknown
    word count as wrong and are reported as not covered)."""
    from engine.analogy_set import evaluate
    from engine.models.static_vectors import unit_vectors
    from engine.word_vectors import VectorTable

    table = VectorTable(model_id, model_id, "trained-here", kv.index_to_key, kv.key_to_index, unit_vectors(kv))
    result = evaluate(table, k=5)
    return {"analogy_top1": round(result["top1"], 4), "analogy_top5": round(result["topk"], 4),
            "analogy_questions": result["questions"], "analogy_not_covered": result["not_covered"]}


def _register(folder: Path) -> None:
    from engine.models.static_vectors import trained_spec
    from engine.registry import REGISTRY

    spec = trained_spec(folder)
    if spec is not None:
        REGISTRY.register(spec)  # replaces an older run of the same name and forgets its cache
        from engine import word_vectors

        word_vectors.forget(spec.id)


def command_line(config: Word2VecConfig) -> str:
    """The command that reproduces this run."""
    parts = ["python -m engine.train.word2vec", f"--name {config.name}", f"--sources {','.join(config.sources)}",
             f"--sg {config.sg}", f"--hs {config.hs}", f"--negative {config.negative}", f"--window {config.window}",
             f"--dim {config.vector_size}", f"--epochs {config.epochs}", f"--min-count {config.min_count}",
             f"--seed {config.seed}", f"--workers {config.workers}"]
    return " ".join(parts)


def trained_manifests() -> list[dict[str, Any]]:
    """Manifests of the word2vec models under checkpoints/trained/, newest first."""
    out = []
    base = paths.trained_dir()
    for file in base.glob("word2vec-*/manifest.json") if base.is_dir() else []:
        try:
            out.append(json.loads(file.read_text()))
        except (OSError, ValueError):
            continue
    return sorted(out, key=lambda m: m.get("created_at", ""), reverse=True)


# ---------------------------------------------------------------- runs in the background (the app)
@dataclass
class Run:
    """A training run in a background thread: its events, cancel flag and outcome."""

    config: Word2VecConfig
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:10])
    cancel: threading.Event = field(default_factory=threading.Event)
    latest: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    error: str = ""
    done: threading.Event = field(default_factory=threading.Event)
    changed: threading.Condition = field(default_factory=threading.Condition)


RUNS: dict[str, Run] = {}
_train_lock = threading.Lock()  # one training at a time per process: the CPU is shared


def start(config: Word2VecConfig) -> Run:
    """Start training in a daemon thread and return its Run at once. A name already
    used under checkpoints/trained/ gets a suffix (-2, -3, ...), so the app never
    overwrites an earlier model (the command line does, on purpose)."""
    config.check()
    base, n = config.name, 2
    while (paths.trained_dir() / config.model_id).exists():  # never overwrite an earlier run from the app
        config.name = f"{base[:36]}-{n}"
        n += 1
    if not _train_lock.acquire(blocking=False):
        raise UserInputError("Another word2vec training is running on this server; wait for it or cancel it.")
    run = Run(config)
    RUNS[run.id] = run

    def on_event(event: dict[str, Any]) -> None:
        with run.changed:
            run.latest = event
            run.changed.notify_all()

    def body() -> None:
        try:
            run.result = train(config, on_event, run.cancel)
        except Cancelled:
            run.error = "cancelled: nothing was saved"
        except UserInputError as exc:
            run.error = str(exc)
        except Exception as exc:  # reported to the person; the server keeps serving
            log.exception("word2vec training failed")
            run.error = f"training failed ({type(exc).__name__}: {exc})"
        finally:
            _train_lock.release()
            run.done.set()
            with run.changed:
                run.changed.notify_all()

    threading.Thread(target=body, name=f"word2vec-{run.id}", daemon=True).start()
    return run


def follow(run: Run, every: float = 0.5) -> Iterator[dict[str, Any]]:
    """Yield the run's latest event whenever it changes (at most every `every` s) until
    it ends; the last item carries `result` (the manifest) or `error`."""
    last = None
    while not run.done.is_set():
        with run.changed:
            run.changed.wait(timeout=every)
            current = run.latest
        if current is not last and current:
            last = current
            yield dict(current)
    yield {**run.latest, "result": run.result, "error": run.error, "finished": True}


def cancel(run_id: str) -> bool:
    """Ask a run to stop at its next check; True if such a run is going."""
    run = RUNS.get(run_id or "")
    if run is None or run.done.is_set():
        return False
    run.cancel.set()
    return True


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import argparse

    p = argparse.ArgumentParser(prog="python -m engine.train.word2vec", description=__doc__.split("\n")[0])
    d = Word2VecConfig()
    p.add_argument("--name", default=d.name)
    p.add_argument("--sources", default=",".join(d.sources))
    p.add_argument("--sg", type=int, default=d.sg)
    p.add_argument("--hs", type=int, default=d.hs)
    p.add_argument("--negative", type=int, default=d.negative)
    p.add_argument("--window", type=int, default=d.window)
    p.add_argument("--dim", type=int, default=d.vector_size)
    p.add_argument("--epochs", type=int, default=d.epochs)
    p.add_argument("--min-count", type=int, default=d.min_count)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--workers", type=int, default=d.workers)
    a = p.parse_args(argv)
    config = Word2VecConfig(name=a.name, sources=tuple(a.sources.split(",")), sg=a.sg, hs=a.hs, negative=a.negative,
                            window=a.window, vector_size=a.dim, epochs=a.epochs, min_count=a.min_count,
                            seed=a.seed, workers=a.workers)

    def show(event: dict[str, Any]) -> None:
        if event["stage"] != "train":
            print(f"[{event['seconds']:6.1f}s] {event['message']}", file=sys.stderr, flush=True)

    manifest = train(config, show)
    print(json.dumps({k: manifest[k] for k in ("id", "vocab_size", "corpus_words", "minutes", "history", "metrics")},
                     indent=1))
    return manifest
