"""Precompute the feature-visualisation gallery for a CNN (default: the `cnn` role's default).

    nice -n 5 python -m engine.train.feature_gallery [--model efficientnet-lite0]
        [--per-stage 3] [--steps 256] [--size 128] [--seed 0]

For each chosen stage it picks the channels that the packaged example images excite
most (the largest spatial-mean activation over any one image; so every picture is of a
channel that fires on real photos) and paints each with `engine.feature_vis.visualise`;
then a few ImageNet classes at the logits. Writes small PNGs and `manifest.json` (the
command, model, source, settings, per-image objective and seconds) to
assets/feature_vis/<model id>/. Resumes: pictures already in the manifest are skipped.
Runs on one CPU thread.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from datetime import datetime, timezone

import torch
from PIL import Image

from engine import cnn, feature_vis
from engine.images import example, example_names

DEFAULT_STAGES = ("stage 1", "stage 2", "stage 3", "stage 4", "stage 5", "stage 6", "stage 7")
# Classes of the packaged photos: tiger cat (chelsea), espresso (coffee), sorrel (horse), missile (rocket).
DEFAULT_CLASSES = (282, 967, 339, 657)


def pick_channels(model_id: str, stages: list[str], per_stage: int) -> dict[str, list[int]]:
    """The `per_stage` channels per stage with the largest spatial-mean activation on any
    packaged example image."""
    loaded = cnn.get_model(model_id)
    best: dict[str, torch.Tensor] = {}
    for name in example_names():
        for stage in cnn.stages_of(cnn.prepare(example(name), loaded), loaded):
            if stage.name in stages:
                mean = stage.act.flatten(1).mean(1)  # (C,)
                best[stage.name] = mean if stage.name not in best else torch.maximum(best[stage.name], mean)
    return {s: best[s].topk(per_stage).indices.tolist() for s in stages}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="")
    parser.add_argument("--stages", default=",".join(DEFAULT_STAGES))
    parser.add_argument("--classes", default=",".join(map(str, DEFAULT_CLASSES)))
    parser.add_argument("--per-stage", type=int, default=3)
    parser.add_argument("--steps", type=int, default=256)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)

    loaded = cnn.get_model(args.model)
    out = feature_vis.gallery_dir(loaded.spec.id)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    settings = {"steps": args.steps, "size": args.size, "seed": args.seed}
    if any(manifest.get(k) != v for k, v in settings.items()):
        manifest = {"images": []}  # different settings: start over
    manifest.update({
        "command": "nice -n 5 python -m engine.train.feature_gallery " + shlex.join(sys.argv[1:] if argv is None else argv),
        "model": loaded.label(), "model_id": loaded.spec.id, "source": loaded.source_kind,
        "method": "activation maximisation: 1/f Fourier parametrisation, decorrelated colour, sigmoid; "
                  "pad 12, jitter 8, scale 0.9-1.1, rotate +-10 deg, jitter 4; Adam lr 0.05",
        "channel_choice": "per stage, the channels with the largest spatial-mean activation on any packaged example image",
        "torch": torch.__version__, "threads": torch.get_num_threads(), **settings,
    })
    done = {(m["layer"], m["channel"]) for m in manifest["images"]}
    stages = [s for s in args.stages.split(",") if s]
    jobs = [(s, c) for s, chans in pick_channels(loaded.spec.id, stages, args.per_stage).items() for c in chans]
    jobs += [("logits", int(c)) for c in args.classes.split(",") if c]
    for n, (layer, channel) in enumerate(jobs, 1):
        if (layer, channel) in done:
            continue
        t0 = time.perf_counter()
        result = feature_vis.visualise(layer, channel, loaded.spec.id, steps=args.steps, size=args.size, seed=args.seed)
        file = f"{layer.replace(' ', '-')}_{channel:04d}.png"
        Image.fromarray(result["image"]).save(out / file, optimize=True)
        manifest["images"].append({
            "file": file, "layer": layer, "channel": channel, "label": result["label"],
            "objective_start": result["objective"][0][1], "objective_end": result["objective"][-1][1],
            "seconds": round(time.perf_counter() - t0, 1),
        })
        manifest["updated"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        manifest_path.write_text(json.dumps(manifest, indent=1))
        print(f"[{n}/{len(jobs)}] {layer} {channel} {result['label']} "
              f"{result['objective'][0][1]:.2f} -> {result['objective'][-1][1]:.2f} in {time.perf_counter() - t0:.1f}s",
              flush=True)
    print(f"gallery: {len(manifest['images'])} pictures in {out}")


if __name__ == "__main__":
    main()
