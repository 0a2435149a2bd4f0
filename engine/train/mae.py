"""Train a small MAE on packaged images, with progress, checkpoints and resume.

    python -m engine.train.mae --data faces   --steps 3000   # lfw_subset faces, 32 px, patch 4
    python -m engine.train.mae --data natural --steps 3000   # skimage/sklearn photos, 64 px, patch 8

The model is transformers' `ViTMAEForPreTraining` built by `engine.models.mae.new_mae`
(with the position-embedding fix). Training state goes to
`<data dir>/cache/train_mae/<id>/state.pt` every `--save-every` steps; rerunning the same
command resumes. At the end the model is exported to `checkpoints/trained/mae-<data>/`
(model.safetensors, config.json, manifest.json with held-out PSNR per ratio against
mean-colour fill and biharmonic inpainting). Held-out images are never used for training.
All randomness is seeded per step, so a resumed run draws the same batches.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from engine import mae as M
from engine import paths

# ---------------------------------------------------------------- data
FACES_HELD_OUT = tuple(range(88, 100))  # lfw_subset: images 0..99 are faces; the last 12 are held out
NATURAL_HELD_OUT = ("chelsea", "coffee", "rocket", "china")
NATURAL_TRAIN = ("astronaut", "horse", "camera", "coins", "moon", "hubble_deep_field", "grass",
                 "gravel", "brick", "stereo_motorcycle", "flower")
# More photos that installed packages ship (training only; versions pinned in requirements).
NATURAL_EXTRA = {
    "gradio:cheetah": ("gradio", "media_assets/images/cheetah.jpg"),
    "gradio:cheetah1": ("gradio", "media_assets/images/cheetah1.jpg"),
    "gradio:cheetah2": ("gradio", "test_data/cheetah2.jpg"),
    "gradio:lion": ("gradio", "media_assets/images/lion.jpg"),
    "gradio:groot": ("gradio", "media_assets/images/groot.jpeg"),
    "gradio:tower": ("gradio", "media_assets/images/tower.jpg"),
    "matplotlib:grace_hopper": ("matplotlib", "mpl-data/sample_data/grace_hopper.jpg"),
    "skimage:retina": ("skimage", "data/retina.jpg"),
    "skimage:ihc": ("skimage", "data/ihc.png"),
    "skimage:cell": ("skimage", "data/cell.png"),
    "skimage:motorcycle_right": ("skimage", "data/motorcycle_right.png"),
    "skimage:clock_motion": ("skimage", "data/clock_motion.png"),
    "skimage:color": ("skimage", "data/color.png"),
}

DATASETS: dict[str, dict[str, Any]] = {
    "faces": dict(image_size=32, patch_size=4, grayscale=True,
                  summary="88 grey 25x25 faces from scikit-image's lfw_subset, upscaled to 32 px, "
                          "random crops, flips and contrast jitter; 12 other faces held out"),
    "natural": dict(image_size=64, patch_size=8, grayscale=False,
                    summary="random 64 px crops (scale 64 px..whole image) and flips of 24 photos that "
                            "installed packages ship (scikit-image, scikit-learn, gradio, matplotlib); "
                            "chelsea, coffee, rocket and china held out"),
}


def _faces() -> torch.Tensor:
    """(100, 1, 25, 25) float in [0, 1]: the lfw_subset faces."""
    import skimage.data

    return torch.from_numpy(skimage.data.lfw_subset()[:100]).float().unsqueeze(1)


def _package_photo(name: str):
    """A photo file shipped inside an installed package (NATURAL_EXTRA), as RGB PIL."""
    import importlib.util

    from engine.images import load_image

    package, rel = NATURAL_EXTRA[name]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(f"{package} is not installed")
    return load_image(Path(spec.origin).parent / rel)


def _natural(names: tuple[str, ...]) -> list[torch.Tensor]:
    """Packaged photos as (3, H, W) float in [0, 1]: engine.images examples, or NATURAL_EXTRA."""
    from engine.images import example

    imgs = [_package_photo(n) if n in NATURAL_EXTRA else example(n) for n in names]
    return [torch.from_numpy(np.asarray(im, dtype=np.float32) / 255.0).permute(2, 0, 1) for im in imgs]


def _resize(x: torch.Tensor, size: int) -> torch.Tensor:
    """(C, h, w) -> (C, size, size), antialiased bilinear."""
    return F.interpolate(x.unsqueeze(0), size=(size, size), mode="bilinear", antialias=True,
                         align_corners=False)[0].clamp(0, 1)


def random_crop(img: torch.Tensor, size: int, rng: np.random.Generator, min_side: int) -> torch.Tensor:
    """A square crop of random side (log-uniform min_side..min(H, W)) at a random place,
    resized to size x size. img (C, H, W) -> (C, size, size)."""
    _, h, w = img.shape
    top_side = min(h, w)
    side = int(round(math.exp(rng.uniform(math.log(min(min_side, top_side)), math.log(top_side)))))
    y, x = rng.integers(0, h - side + 1), rng.integers(0, w - side + 1)
    return _resize(img[:, y:y + side, x:x + side], size)


class Batches:
    """Seeded batches: `batch(step)` is the same for a step whatever happened before."""

    def __init__(self, data: str, batch: int, seed: int) -> None:
        self.data, self.batch_size, self.seed = data, batch, seed
        self.size = DATASETS[data]["image_size"]
        if data == "faces":
            faces = _faces()
            self.train = [faces[i] for i in range(100) if i not in FACES_HELD_OUT]
        else:
            self.train = _natural(NATURAL_TRAIN + tuple(NATURAL_EXTRA))

    def batch(self, step: int) -> torch.Tensor:
        """(B, 3, S, S) float in [0, 1]."""
        rng = np.random.default_rng([self.seed, step, 1])
        out = []
        for _ in range(self.batch_size):
            img = self.train[rng.integers(len(self.train))]
            if self.data == "faces":
                x = random_crop(img, self.size, rng, min_side=20)
                x = ((x - 0.5) * rng.uniform(0.8, 1.25) + 0.5 + rng.uniform(-0.08, 0.08)).clamp(0, 1)
                x = x.expand(3, -1, -1)
            else:
                x = random_crop(img, self.size, rng, min_side=self.size)
            if rng.random() < 0.5:
                x = x.flip(-1)
            out.append(x)
        return torch.stack(out)


def held_out_images(data: str, seed: int = 1234) -> tuple[list[np.ndarray], list[str]]:
    """Held-out evaluation images (S, S, 3) float64 in [0, 1] and their names; never trained on.

    faces: the 12 held-out faces, whole. natural: each held-out photo's centre square
    (what the app shows) plus 5 seeded random crops of it."""
    size = DATASETS[data]["image_size"]
    imgs, names = [], []
    if data == "faces":
        faces = _faces()
        for i in FACES_HELD_OUT:
            imgs.append(_resize(faces[i], size).expand(3, -1, -1))
            names.append(f"lfw_subset[{i}]")
    else:
        rng = np.random.default_rng(seed)
        for name, img in zip(NATURAL_HELD_OUT, _natural(NATURAL_HELD_OUT), strict=True):
            _, h, w = img.shape
            s = min(h, w)
            imgs.append(_resize(img[:, (h - s) // 2:(h - s) // 2 + s, (w - s) // 2:(w - s) // 2 + s], size))
            names.append(f"{name} (centre)")
            for k in range(5):
                imgs.append(random_crop(img, size, rng, min_side=size))
                names.append(f"{name} crop {k}")
    return [x.permute(1, 2, 0).double().numpy() for x in imgs], names


# ---------------------------------------------------------------- masks for training
def batch_shuffle(b: int, grid: tuple[int, int], rng: np.random.Generator, block_frac: float) -> torch.Tensor:
    """(B, L) long visible-first shuffles: random masks, some block-wise."""
    rows, cols = grid
    out = np.empty((b, rows * cols), dtype=np.int64)
    for i in range(b):
        kind = "block" if rng.random() < block_frac else "random"
        order = M.mask_order(grid, int(rng.integers(2**31)), kind)
        out[i] = M.shuffle_from_order(order)
    return torch.from_numpy(out)


# ---------------------------------------------------------------- evaluation
EVAL_SEEDS = {"random": (0, 1), "block": (0,), "grid": (0,)}


def evaluate(runner: M.MAERunner, data: str, ratios=(0.25, 0.5, 0.75, 0.9, 0.95),
             seeds_by_kind: dict[str, tuple[int, ...]] | None = None) -> dict[str, Any]:
    """Mean held-out PSNR (dB, over hidden patches) per kind and ratio for the MAE and both
    baselines, plus how often the MAE beats each baseline (over images x mask seeds)."""
    imgs, names = held_out_images(data)
    grid, patch = runner.grid, runner.patch
    seeds_by_kind = seeds_by_kind or EVAL_SEEDS
    result: dict[str, Any] = {"images": len(imgs), "seeds": {k: list(v) for k, v in seeds_by_kind.items()},
                              "ratios": list(ratios), "kinds": {}}
    for kind, seeds in seeds_by_kind.items():
        per: dict[str, dict[str, list[float]]] = {str(r): {"mae": [], "mean_fill": [], "biharmonic": []} for r in ratios}
        for img in imgs:
            for seed in seeds:
                order = M.mask_order(grid, seed, kind)
                recs = runner.predict(img, [order] * len(ratios), [M.n_hidden(len(order), r) for r in ratios])
                for r, rec in zip(ratios, recs, strict=True):
                    hidden = M.patch_mask_to_pixels(M.mask_from_order(order, r), grid, patch)
                    per[str(r)]["mae"].append(M.psnr(rec, img, hidden))
                    per[str(r)]["mean_fill"].append(M.psnr(M.mean_fill(img, hidden), img, hidden))
                    per[str(r)]["biharmonic"].append(M.psnr(M.biharmonic_fill(img, hidden), img, hidden))
        table = {}
        for r, d in per.items():
            mae, mf, bh = (np.asarray(d[k]) for k in ("mae", "mean_fill", "biharmonic"))
            table[r] = {"mae": round(float(mae.mean()), 3), "mean_fill": round(float(mf.mean()), 3),
                        "biharmonic": round(float(bh.mean()), 3),
                        "mae_beats_mean_fill": round(float((mae > mf).mean()), 3),
                        "mae_beats_biharmonic": round(float((mae > bh).mean()), 3)}
        result["kinds"][kind] = table
    return result


# ---------------------------------------------------------------- training
def lr_at(step: int, total: int, base: float, warmup: int) -> float:
    if step < warmup:
        return base * (step + 1) / warmup
    t = (step - warmup) / max(1, total - warmup)
    return base * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


def export(model, data: str, out: Path, args: argparse.Namespace, steps: int, minutes: float,
           losses: list[float]) -> dict[str, Any]:
    """Write model.safetensors, config.json and manifest.json (with held-out metrics)."""
    from safetensors.torch import save_file

    from engine.sources import sha256_file

    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(state, out / "model.safetensors")
    model.config.to_json_file(out / "config.json")
    info = DATASETS[data]
    pre = {"image_size": info["image_size"], "patch_size": info["patch_size"], "mean": [0.5] * 3,
           "std": [0.5] * 3, "grayscale": info["grayscale"], "centre_visible": bool(args.centre_visible)}
    runner = M.MAERunner(model.eval(), image_size=info["image_size"], patch=info["patch_size"],
                         grayscale=info["grayscale"], centre_visible=bool(args.centre_visible))
    t0 = time.time()
    metrics = evaluate(runner, data)
    import transformers

    manifest = {
        "id": out.name,
        "files": {n: sha256_file(out / n) for n in ("model.safetensors", "config.json")},
        "command": "python -m engine.train.mae " + " ".join(sys.argv[1:]),
        "data": {"summary": info["summary"],
                 "train": list(NATURAL_TRAIN) + list(NATURAL_EXTRA) if data == "natural" else "lfw_subset faces 0..87",
                 "held_out": list(NATURAL_HELD_OUT) if data == "natural" else "lfw_subset faces 88..99"},
        "params": int(sum(p.numel() for p in model.parameters())),
        "steps": steps, "batch": args.batch, "lr": args.lr, "seed": args.seed,
        "mask_ratio_train": [args.ratio_lo, args.ratio_hi], "block_mask_fraction": args.block_frac,
        "minutes": round(minutes, 1),
        "hardware": args.hardware,
        "init_from": args.init_from_note,
        # With --init-from, the totals count the earlier model's training too.
        "steps_total": steps + int((args.init_from_note or {}).get("steps") or 0),
        "minutes_total": round(minutes + float((args.init_from_note or {}).get("minutes") or 0), 1),
        "final_loss": round(float(np.mean(losses[-50:])), 5) if losses else None,
        "preprocess": pre,
        "heldout_psnr_db": metrics,
        "eval_seconds": round(time.time() - t0, 1),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def train(args: argparse.Namespace) -> None:
    from engine.models.mae import SMALL_MAE, new_mae

    torch.set_num_threads(args.threads)
    info = DATASETS[args.data]
    name = f"mae-{args.data}"
    work = paths.cache_dir("train_mae") / name
    work.mkdir(parents=True, exist_ok=True)
    state_file = work / "state.pt"
    torch.manual_seed(args.seed)
    model = new_mae(**SMALL_MAE, image_size=info["image_size"], patch_size=info["patch_size"])
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=args.lr,
                            betas=(0.9, 0.95), weight_decay=0.05)
    step, elapsed, losses = 0, 0.0, []
    args.init_from_note = None
    if args.init_from:
        from safetensors.torch import load_file

        init = Path(args.init_from)
        model.load_state_dict(load_file(init / "model.safetensors"))
        prior = json.loads((init / "manifest.json").read_text()) if (init / "manifest.json").exists() else {}
        args.init_from_note = {"dir": str(init), "steps": prior.get("steps_total", prior.get("steps")),
                               "minutes": prior.get("minutes_total", prior.get("minutes")),
                               "model.safetensors": prior.get("files", {}).get("model.safetensors")}
        print(f"initialised from {init} ({args.init_from_note['steps']} steps before)", flush=True)
    if state_file.exists() and not args.restart:
        st = torch.load(state_file, weights_only=True)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        step, elapsed, losses = int(st["step"]), float(st["elapsed"]), list(st["losses"])
        print(f"resumed {name} at step {step} ({elapsed / 60:.1f} min so far)", flush=True)
    grid = (info["image_size"] // info["patch_size"],) * 2
    n = grid[0] * grid[1]
    batches = Batches(args.data, args.batch, args.seed)
    mean = torch.full((1, 3, 1, 1), 0.5)
    warmup = max(1, args.steps // 20)
    model.train()

    def save() -> None:
        tmp = state_file.with_suffix(".tmp")
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                    "elapsed": elapsed, "losses": losses}, tmp)
        tmp.replace(state_file)

    t_last = time.time()
    deadline = time.time() + args.max_minutes * 60 if args.max_minutes else None
    while step < args.steps:
        rng = np.random.default_rng([args.seed, step, 2])
        x = (batches.batch(step) - mean) / 0.5  # (B, 3, S, S) in [-1, 1]
        ratio = rng.uniform(args.ratio_lo, args.ratio_hi)
        nh = M.n_hidden(n, ratio)
        shuffle = batch_shuffle(x.shape[0], grid, rng, args.block_frac)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps, args.lr, warmup)
        if args.centre_visible:  # the model sees (and predicts) the image minus its visible mean colour
            x = x - M.visible_mean(x, shuffle, n - nh, info["patch_size"])
        logits = M.masked_forward(model, x, shuffle, n - nh)  # (B, L, p*p*3)
        target = M.patchify(x, info["patch_size"])
        hidden = torch.zeros(x.shape[0], n)
        hidden.scatter_(1, shuffle[:, n - nh:], 1.0)
        loss = (((logits - target) ** 2).mean(-1) * hidden).sum() / hidden.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        now = time.time()
        elapsed += now - t_last
        t_last = now
        losses.append(loss.item())
        if step % args.log_every == 0 or step == args.steps:
            rate = step / max(elapsed, 1e-9)
            print(f"step {step}/{args.steps} loss {np.mean(losses[-args.log_every:]):.4f} "
                  f"lr {opt.param_groups[0]['lr']:.2e} {elapsed / 60:.1f} min "
                  f"eta {(args.steps - step) / max(rate, 1e-9) / 60:.1f} min", flush=True)
        if step % args.save_every == 0:
            save()
        if deadline and now > deadline and step < args.steps:
            save()
            print(f"stopped at step {step} (--max-minutes); rerun the same command to resume", flush=True)
            return
    save()
    out = paths.trained_dir() / name
    manifest = export(model, args.data, out, args, step, elapsed / 60, losses)
    print(json.dumps(manifest["heldout_psnr_db"]["kinds"]["random"], indent=1), flush=True)
    print(f"exported to {out}", flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", choices=sorted(DATASETS), required=True)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ratio-lo", type=float, default=0.6)
    p.add_argument("--ratio-hi", type=float, default=0.9)
    p.add_argument("--block-frac", type=float, default=0.25)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--log-every", type=int, default=25)
    p.add_argument("--save-every", type=int, default=100)
    p.add_argument("--max-minutes", type=float, default=0.0, help="stop (resumable) after this much wall time")
    p.add_argument("--restart", action="store_true", help="ignore a saved state and start over")
    p.add_argument("--centre-visible", action="store_true",
                   help="feed and predict the image minus its visible patches' mean colour")
    p.add_argument("--init-from", default="", help="start from an exported model folder's weights")
    p.add_argument("--hardware", default="2-core CPU", help="what it ran on, for the manifest")
    train(p.parse_args(argv))


if __name__ == "__main__":
    main()
