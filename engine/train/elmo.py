"""Train a small ELMo biLM on the packaged English text (Wikipedia leads + World English Bible).

    python -m engine.train.elmo                       # the default config (CPU, ~40 min on 2 busy cores)
    python -m engine.train.elmo --resume              # carry on from the last checkpoint
    python -m engine.train.elmo --steps 50 --out /tmp/x   # a quick smoke run

The model is `engine.elmo.BiLM` (char CNN, highway, projection, forward and backward LSTM
stacks with projection, cell clipping and residual connections). Both directions are trained
as language models at once: the forward top layer at position t predicts word t+1, the
backward one predicts word t-1, through one shared softmax over the most frequent cased
words (+ <S>, </S>, <UNK>), computed exactly with an adaptive softmax (frequent words in a
full head, rare ones in smaller clusters) so perplexities are true full-vocabulary ones.

Held out: every 50th sentence of each source. The manifest reports held-out forward and
backward perplexity next to a unigram and an interpolated Kneser-Ney bigram baseline on the
same tokens and the same vocabulary. Uses CUDA when present; seeded; checkpoints every few
hundred steps under the data directory (`--resume` continues exactly, data order included).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shlex
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import torch
from torch import nn

from engine import corpus, paths
from engine.elmo import BiLM, word_char_ids
from engine.sources import sha256_file

SPECIALS = ("<S>", "</S>", "<UNK>")
HELD_OUT_EVERY = 50

DEFAULT_OPTIONS = {
    "char_cnn": {
        "activation": "relu",
        "embedding": {"dim": 16},
        "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 128], [6, 128]],
        "max_characters_per_token": 20,
        "n_characters": 262,
        "n_highway": 1,
    },
    "lstm": {
        "cell_clip": 3,
        "dim": 512,
        "n_layers": 2,
        "proj_clip": 3,
        "projection_dim": 128,
        "use_skip_connections": True,
        "dropout": 0.0,
    },
}


# ------------------------------------------------------------------ data
def load_chunks(sources: tuple[str, ...], max_words: int,
                limit: int | None = None) -> tuple[list[list[str]], list[list[str]]]:
    """(train, held-out) word sequences: cased tokens, sentences cut into pieces of at most
    `max_words` words. Every HELD_OUT_EVERY-th sentence of each source is held out.
    `limit`: only the first `limit` sentences of each source (smoke runs and tests)."""
    train, held = [], []
    for src in sources:
        for k, sent in enumerate(corpus.sentences(src)[:limit]):
            words = corpus.tokenize(sent, lower=False)
            pieces = [words[i:i + max_words] for i in range(0, len(words), max_words)]
            (held if k % HELD_OUT_EVERY == HELD_OUT_EVERY - 1 else train).extend(p for p in pieces if p)
    return train, held


def build_vocab(train: list[list[str]], size: int) -> list[str]:
    """Output vocabulary in frequency order: the `size` most frequent words + specials."""
    counts = Counter(w for s in train for w in s)
    words = [w for w, _ in counts.most_common(size)]
    kept = set(words)
    special_counts = {"<S>": len(train), "</S>": len(train),
                      "<UNK>": sum(c for w, c in counts.items() if w not in kept)}
    ranked = sorted([(c, w) for w, c in special_counts.items()] + [(counts[w], w) for w in words],
                    key=lambda cw: -cw[0])
    return [w for _, w in ranked]


class Encoded:
    """Sequences as arrays: word ids into a char table, and target ids ([<S>, words, </S>])."""

    def __init__(self, seqs: list[list[str]], vocab: dict[str, int], word_row: dict[str, int]) -> None:
        unk, bos, eos = vocab["<UNK>"], vocab["<S>"], vocab["</S>"]
        self.rows = [np.array([word_row[w] for w in s], dtype=np.int64) for s in seqs]
        self.targets = [np.array([bos] + [vocab.get(w, unk) for w in s] + [eos], dtype=np.int64)
                        for s in seqs]

    def __len__(self) -> int:
        return len(self.rows)


def make_batches(lengths: list[int], tokens_per_batch: int, rng: random.Random) -> list[list[int]]:
    """Group sequence indices of similar length into batches of ~tokens_per_batch words."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i] + rng.random() * 3))
    batches, cur, longest = [], [], 0
    for i in order:
        longest = max(longest, lengths[i])
        if cur and longest * (len(cur) + 1) > tokens_per_batch:
            batches.append(cur)
            cur, longest = [], lengths[i]
        cur.append(i)
    if cur:
        batches.append(cur)
    rng.shuffle(batches)
    return batches


def collate(data: Encoded, idx: list[int], char_table: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """char ids (batch, words, chars), targets (batch, words + 2) padded with -1, lengths (batch,)."""
    n = max(len(data.rows[i]) for i in idx)
    rows = torch.full((len(idx), n), -1, dtype=torch.long)
    tgt = torch.full((len(idx), n + 2), -1, dtype=torch.long)
    for b, i in enumerate(idx):
        rows[b, :len(data.rows[i])] = torch.from_numpy(data.rows[i])
        tgt[b, :len(data.targets[i])] = torch.from_numpy(data.targets[i])
    ids = char_table[rows.clamp(min=0)]
    ids[rows < 0] = 0
    return ids, tgt, torch.tensor([len(data.rows[i]) + 2 for i in idx])


# ------------------------------------------------------------------ model + loss
class BiLMWithSoftmax(nn.Module):
    """The biLM and one adaptive softmax shared by both directions."""

    def __init__(self, options: dict, vocab_size: int, cutoffs: list[int]) -> None:
        super().__init__()
        self.bilm = BiLM(options)
        self.proj = int(options["lstm"]["projection_dim"])
        self.softmax = nn.AdaptiveLogSoftmaxWithLoss(self.proj, vocab_size, cutoffs, div_value=4.0)
        self.drop = nn.Dropout(float(options["lstm"].get("dropout", 0.0)))

    def token_logprobs(self, ids: torch.Tensor, tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities of each target: forward (N,) and backward (N,) over the same
        N real target positions (words and </S> forward; <S> and words backward)."""
        top = self.bilm(ids)["layers"][-1]  # (batch, T, 2p); T = words + 2
        fwd_h, bwd_h = top[..., :self.proj], top[..., self.proj:]
        fwd_t, bwd_t = tgt[:, 1:], tgt[:, :-1]
        keep = fwd_t >= 0  # same positions for both: sequences are [<S> w... </S>] then -1s
        fwd = self.softmax(self.drop(fwd_h[:, :-1][keep]), fwd_t[keep]).output
        bwd = self.softmax(self.drop(bwd_h[:, 1:][keep]), bwd_t[keep]).output
        return fwd, bwd


def evaluate(model: BiLMWithSoftmax, data: Encoded, char_table: torch.Tensor, device: torch.device,
             limit: int | None = None, tokens_per_batch: int = 2000) -> dict[str, float]:
    """Held-out perplexity per direction (exp of mean negative log-likelihood); `limit`:
    an evenly spaced sample of that many sequences (so every source is in it)."""
    model.eval()
    chosen = list(range(len(data)))
    if limit is not None and limit < len(data):
        chosen = [int(i) for i in np.linspace(0, len(data) - 1, limit)]
    groups = make_batches([len(data.rows[i]) for i in chosen], tokens_per_batch, random.Random(0))
    batches = [[chosen[j] for j in group] for group in groups]
    nll_f = nll_b = 0.0
    count = 0
    with torch.inference_mode():
        for idx in batches:
            ids, tgt, _ = collate(data, idx, char_table)
            f, b = model.token_logprobs(ids.to(device), tgt.to(device))
            nll_f -= float(f.sum())
            nll_b -= float(b.sum())
            count += f.numel()
    model.train()
    return {"forward_ppl": math.exp(nll_f / count), "backward_ppl": math.exp(nll_b / count), "tokens": count}


# ------------------------------------------------------------------ baselines
def baselines(train: Encoded, held: Encoded, vocab_size: int, discount: float = 0.75) -> dict[str, float]:
    """Unigram (maximum likelihood) and interpolated Kneser-Ney bigram perplexities on the
    held-out targets, forward (context = previous word) and backward (context = next word)."""
    out = {}
    uni = np.zeros(vocab_size)
    for t in train.targets:
        uni += np.bincount(t[1:-1], minlength=vocab_size)
    n_seq = len(train.targets)
    out_f, out_b = uni.copy(), uni.copy()
    bos, eos = int(train.targets[0][0]), int(train.targets[0][-1])
    out_f[eos] += n_seq  # </S> is a forward target, <S> a backward one
    out_b[bos] += n_seq
    for name, counts, targets in (("forward", out_f, [t[1:] for t in held.targets]),
                                  ("backward", out_b, [t[:-1] for t in held.targets])):
        p = counts / counts.sum()
        lp = np.concatenate([np.log(np.maximum(p[t], 1e-12)) for t in targets])
        out[f"unigram_{name}_ppl"] = float(np.exp(-lp.mean()))
    for name, pairs_of in (("forward", lambda t: zip(t[:-1], t[1:], strict=True)),
                           ("backward", lambda t: zip(t[1:], t[:-1], strict=True))):
        big: dict[int, Counter] = defaultdict(Counter)
        for t in train.targets:
            for v, w in pairs_of(t):
                big[int(v)][int(w)] += 1
        cont = np.zeros(vocab_size)
        for ws in big.values():
            for w in ws:
                cont[w] += 1
        p_cont = (cont + 0.5) / (cont.sum() + 0.5 * vocab_size)
        totals = {v: sum(ws.values()) for v, ws in big.items()}
        lp = []
        for t in held.targets:
            for v, w in pairs_of(t):
                v, w = int(v), int(w)
                c_v = totals.get(v, 0)
                if c_v == 0:
                    lp.append(math.log(p_cont[w]))
                    continue
                ws = big[v]
                prob = max(ws.get(w, 0) - discount, 0) / c_v + discount * len(ws) / c_v * p_cont[w]
                lp.append(math.log(prob))
        out[f"bigram_{name}_ppl"] = float(math.exp(-np.mean(lp)))
    return out


# ------------------------------------------------------------------ training
def progress(state: dict, steps: int, minutes: float) -> float:
    """How far training is, 0..1: the larger of the step fraction and the time fraction
    (so a busy machine ends on time, with the learning rate fully decayed)."""
    by_time = state["seconds"] / (60 * minutes) if minutes > 0 else 0.0
    return max(state["step"] / steps, by_time)


def lr_at(step: int, frac: float, base: float, warmup: int) -> float:
    """Linear warmup over `warmup` steps, then cosine from base to base/10 over progress `frac`."""
    if step < warmup:
        return base * (step + 1) / warmup
    return base * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, frac))))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=4000, help="stop after this many updates ...")
    ap.add_argument("--minutes", type=float, default=70.0,
                    help="... or after this many minutes of training, whichever comes first (0: no limit)")
    ap.add_argument("--tokens-per-batch", type=int, default=1024)
    ap.add_argument("--max-words", type=int, default=30, help="longer sentences are cut into pieces")
    ap.add_argument("--vocab", type=int, default=30000, help="output words (+ <S>, </S>, <UNK>)")
    ap.add_argument("--lr", type=float, default=2.5e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sources", default="wiki,bible")
    ap.add_argument("--limit", type=int, default=None, help="first N sentences per source (smoke runs)")
    ap.add_argument("--options", help="a JSON file of biLM options (default: a small ELMo)")
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--ckpt-every", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="auto", help="auto (CUDA when present) or cpu")
    ap.add_argument("--work", type=Path, default=None, help="checkpoint folder (default under the data dir)")
    ap.add_argument("--out", type=Path, default=paths.trained_dir() / "elmo-small")
    ap.add_argument("--resume", action="store_true")
    args = ap.parse_args(argv)

    from tqdm import tqdm

    torch.set_num_threads(args.threads)
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          ("cpu" if args.device == "auto" else args.device))
    work = args.work or paths.data_dir() / "train" / "elmo-small"
    work.mkdir(parents=True, exist_ok=True)
    ckpt_path = work / "last.pt"
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    options = json.loads(Path(args.options).read_text()) if args.options else DEFAULT_OPTIONS
    sources = tuple(s.strip() for s in args.sources.split(",") if s.strip())
    train_seqs, held_seqs = load_chunks(sources, args.max_words, args.limit)
    vocab = build_vocab(train_seqs, args.vocab)
    vindex = {w: i for i, w in enumerate(vocab)}
    max_chars = int(options["char_cnn"]["max_characters_per_token"])
    all_words = sorted({w for s in train_seqs + held_seqs for w in s})
    word_row = {w: i for i, w in enumerate(all_words)}
    char_table = torch.tensor([word_char_ids(w, max_chars) for w in all_words], dtype=torch.long)
    train, held = Encoded(train_seqs, vindex, word_row), Encoded(held_seqs, vindex, word_row)
    n_train_tokens = sum(len(r) for r in train.rows)
    print(f"data: {len(train)} train sequences ({n_train_tokens} words), {len(held)} held out; "
          f"vocab {len(vocab)}; device {device}", flush=True)

    cutoffs = [c for c in (2000, 10000) if c < len(vocab) - 1] or [max(1, len(vocab) // 4)]
    model = BiLMWithSoftmax(options, len(vocab), cutoffs).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    print(f"parameters: biLM {sum(p.numel() for p in model.bilm.parameters()):,}, "
          f"softmax {sum(p.numel() for p in model.softmax.parameters()):,}", flush=True)

    state = {"step": 0, "epoch": 0, "batch": 0, "seconds": 0.0, "tokens": 0, "log": []}
    if args.resume and ckpt_path.exists():
        ck = torch.load(ckpt_path, map_location=device, weights_only=False)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        state = ck["state"]
        random.setstate(ck["py_rng"])
        torch.set_rng_state(ck["torch_rng"])
        print(f"resumed at step {state['step']} ({state['seconds'] / 60:.1f} min so far)", flush=True)

    state.setdefault("runs", []).append({"argv": sys.argv[1:], "from_step": state["step"],
                                         "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())})

    def save_ckpt() -> None:
        tmp = ckpt_path.with_suffix(".tmp")
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "state": state,
                    "py_rng": random.getstate(), "torch_rng": torch.get_rng_state()}, tmp)
        tmp.replace(ckpt_path)

    def epoch_batches(epoch: int) -> list[list[int]]:
        return make_batches([len(r) for r in train.rows], args.tokens_per_batch,
                            random.Random(args.seed * 1000 + epoch))

    batches = epoch_batches(state["epoch"])
    model.train()
    bar = tqdm(total=args.steps, initial=state["step"], desc="elmo", mininterval=20, file=sys.stdout)
    run_f = run_b = None
    t_last = time.perf_counter()
    while progress(state, args.steps, args.minutes) < 1.0:
        if state["batch"] >= len(batches):
            state["epoch"] += 1
            state["batch"] = 0
            batches = epoch_batches(state["epoch"])
        idx = batches[state["batch"]]
        state["batch"] += 1
        ids, tgt, _ = collate(train, idx, char_table)
        for g in opt.param_groups:
            g["lr"] = lr_at(state["step"], progress(state, args.steps, args.minutes), args.lr, args.warmup)
        f, b = model.token_logprobs(ids.to(device), tgt.to(device))
        loss = -(f.mean() + b.mean()) / 2
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        state["step"] += 1
        state["tokens"] += int(f.numel())
        lf, lb = -float(f.detach().mean()), -float(b.detach().mean())
        run_f = lf if run_f is None else 0.98 * run_f + 0.02 * lf
        run_b = lb if run_b is None else 0.98 * run_b + 0.02 * lb
        now = time.perf_counter()
        state["seconds"] += now - t_last
        t_last = now
        bar.update(1)
        bar.set_postfix(min=f"{state['seconds'] / 60:.1f}", fwd_ppl=f"{math.exp(run_f):.0f}", bwd_ppl=f"{math.exp(run_b):.0f}",
                        tok_s=f"{state['tokens'] / max(state['seconds'], 1e-9):.0f}", refresh=False)
        if state["step"] % args.eval_every == 0:
            ev = evaluate(model, held, char_table, device, limit=300)
            state["log"].append({"step": state["step"], "minutes": round(state["seconds"] / 60, 2),
                                 "train_fwd_ppl": round(math.exp(run_f), 1),
                                 "heldout_subset_fwd_ppl": round(ev["forward_ppl"], 1),
                                 "heldout_subset_bwd_ppl": round(ev["backward_ppl"], 1)})
            print(f"\nstep {state['step']}: held-out (300 seqs) fwd {ev['forward_ppl']:.1f} "
                  f"bwd {ev['backward_ppl']:.1f}", flush=True)
            t_last = time.perf_counter()
        if state["step"] % args.ckpt_every == 0:
            save_ckpt()
            t_last = time.perf_counter()
    bar.close()
    save_ckpt()

    print("final evaluation on all held-out sequences ...", flush=True)
    ev = evaluate(model, held, char_table, device)
    base = baselines(train, held, len(vocab))
    export(model, options, vocab, args, ev, base, state, n_train_tokens, len(train), len(held), sources)


def export(model: BiLMWithSoftmax, options: dict, vocab: list[str], args: argparse.Namespace,
           ev: dict, base: dict, state: dict, n_tokens: int, n_train: int, n_held: int,
           sources: tuple[str, ...]) -> None:
    """Write model.safetensors (biLM + softmax), options.json, vocab.txt and manifest.json."""
    from safetensors.torch import save_file

    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    tensors = {f"bilm.{k}": v.detach().float().cpu().contiguous() for k, v in model.bilm.state_dict().items()}
    tensors.update({f"softmax.{k}": v.detach().float().cpu().contiguous()
                    for k, v in model.softmax.state_dict().items()})
    save_file(tensors, str(out / "model.safetensors"))
    opts = json.loads(json.dumps(options))
    opts["lstm"].pop("dropout", None)
    (out / "options.json").write_text(json.dumps(opts, indent=2) + "\n")
    (out / "vocab.txt").write_text("\n".join(vocab) + "\n")
    files = ("model.safetensors", "options.json", "vocab.txt")
    n_bilm = sum(p.numel() for p in model.bilm.parameters())
    argv = [a for a in sys.argv[1:] if a != "--resume"]
    manifest = {
        "id": "elmo-small",
        "model": "ELMo-architecture biLM (char CNN + highway + projection, 2-layer biLSTM with "
                 "projection, cell clipping, residual), trained here",
        "command": "python -m engine.train.elmo " + " ".join(shlex.quote(a) for a in argv),
        "data": {"sources": [corpus.CREDITS[s] for s in sources], "train_sequences": n_train,
                 "train_words": n_tokens, "held_out_sequences": n_held,
                 "held_out": f"every {HELD_OUT_EVERY}th sentence of each source",
                 "tokenizer": "engine.corpus.tokenize(text, lower=False); sentences cut at "
                              f"{args.max_words} words"},
        "vocab": {"size": len(vocab), "note": f"the {args.vocab} most frequent cased training words "
                                              "+ <S>, </S>, <UNK>; input is characters, so any word is read"},
        "softmax_cutoffs": list(model.softmax.cutoffs[:-1]),
        "params": {"bilm": int(n_bilm), "softmax": int(sum(p.numel() for p in model.softmax.parameters()))},
        "runs": state.get("runs", []),
        "steps": state["step"], "epochs_seen": round(state["tokens"] / max(1, n_tokens), 2),
        "tokens_seen": state["tokens"], "tokens_per_batch": args.tokens_per_batch,
        "optimizer": f"Adam lr {args.lr} (warmup {args.warmup} steps, then cosine to 10% over "
                     f"{args.steps} steps or {args.minutes} minutes, whichever ends first), grad clip 1.0, dropout "
                     f"{options['lstm'].get('dropout', 0.0)}",
        "seed": args.seed, "device": "cuda" if torch.cuda.is_available() and args.device != "cpu" else "cpu",
        "threads": args.threads,
        "minutes": round(state["seconds"] / 60, 1),
        "metrics": {
            "held_out_tokens": ev["tokens"],
            "forward_ppl": round(ev["forward_ppl"], 2), "backward_ppl": round(ev["backward_ppl"], 2),
            **{k: round(v, 2) for k, v in base.items()},
            "note": "perplexity per predicted token (words and </S> forward; <S> and words backward) "
                    "over the same vocabulary; bigram = interpolated Kneser-Ney (discount 0.75)",
        },
        "log": state["log"],
        "files": {f: {"sha256": sha256_file(out / f), "bytes": (out / f).stat().st_size} for f in files},
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(json.dumps(manifest["metrics"], indent=2), flush=True)


if __name__ == "__main__":
    main()
