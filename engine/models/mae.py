"""Masked autoencoders (role `mae`): facebook's ViT-MAE or small ones trained here.

Loaded object: an `engine.mae.MAERunner` wrapping a transformers `ViTMAEForPreTraining`
(eval mode) with its input size, patch size, normalisation and whether it predicts
per-patch-normalised pixels (`norm_pix_loss`).

transformers 5.x bug (DESIGN.md): `ViTMAEForPreTraining(config)` leaves the encoder's and
the decoder's position embeddings all zero (and frozen), so a model built from a config
cannot tell patches apart. `new_mae` fills both with fixed 2-D sin-cos embeddings.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import torch

from engine.registry import ModelSpec, register
from engine.sources import Located, Source

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def sincos_2d(embed_dim: int, grid: int, cls_token: bool = True, cols_first: bool = False) -> np.ndarray:
    """Fixed 2-D sin-cos position embeddings as in the MAE paper.

    Returns (grid*grid [+1], embed_dim) float32; half the channels encode the row, half the
    column, each as sin/cos at geometric frequencies; the [CLS] row is zeros. facebook's
    released MAE weights put the column half first (`cols_first=True`).
    """
    if embed_dim % 4:
        raise ValueError(f"embed_dim must be a multiple of 4, not {embed_dim}")
    omega = 1.0 / 10000 ** (np.arange(embed_dim // 4, dtype=np.float64) / (embed_dim / 4))  # (D/4,)
    rows, cols = np.meshgrid(np.arange(grid, dtype=np.float64), np.arange(grid, dtype=np.float64), indexing="ij")
    parts = []
    for pos in ((cols.ravel(), rows.ravel()) if cols_first else (rows.ravel(), cols.ravel())):
        out = np.outer(pos, omega)  # (L, D/4)
        parts += [np.sin(out), np.cos(out)]
    emb = np.concatenate(parts, axis=1)  # (L, D)
    if cls_token:
        emb = np.concatenate([np.zeros((1, embed_dim)), emb], axis=0)
    return emb.astype(np.float32)


def fill_position_embeddings(model: Any, only_zero: bool = False, cols_first: bool = False) -> list[str]:
    """Write fixed sin-cos embeddings into the encoder and decoder of a ViTMAEForPreTraining
    (only the all-zero tables when `only_zero`); returns the names of the tables written."""
    grid = model.config.image_size // model.config.patch_size
    written = []
    with torch.no_grad():
        for name, table in (("encoder", model.vit.embeddings.position_embeddings),  # (1, L+1, D)
                            ("decoder", model.decoder.decoder_pos_embed)):  # (1, L+1, Dd)
            if only_zero and bool(table.abs().sum() > 0):
                continue
            table.copy_(torch.from_numpy(sincos_2d(table.shape[-1], grid, cols_first=cols_first)).unsqueeze(0))
            written.append(name)
    return written


def new_mae(**config: Any) -> Any:
    """A fresh ViTMAEForPreTraining from config keywords, with working position embeddings."""
    from transformers import ViTMAEConfig, ViTMAEForPreTraining

    model = ViTMAEForPreTraining(ViTMAEConfig(**config))
    fill_position_embeddings(model)
    return model


# Small MAEs trained here (engine/train/mae.py): 3.2M parameters each.
SMALL_MAE = dict(hidden_size=192, num_hidden_layers=6, num_attention_heads=3, intermediate_size=768,
                 decoder_hidden_size=128, decoder_num_hidden_layers=2, decoder_num_attention_heads=4,
                 decoder_intermediate_size=512, num_channels=3, mask_ratio=0.75, norm_pix_loss=False)


def _load_pretrained(located: Located, device: torch.device):
    """A `save_pretrained` folder or a hub id (facebook/vit-mae-base, -large)."""
    from transformers import ViTMAEForPreTraining

    from engine.mae import MAERunner

    model = ViTMAEForPreTraining.from_pretrained(located.target, local_files_only=located.local_only)
    # the fixed tables are not always in the released files; never leave them zero (DESIGN.md)
    refilled = fill_position_embeddings(model, only_zero=True, cols_first=True)
    model.eval().to(device)
    mean, std = IMAGENET_MEAN, IMAGENET_STD
    try:
        from transformers import AutoImageProcessor

        proc = AutoImageProcessor.from_pretrained(located.target, local_files_only=located.local_only)
        mean, std = tuple(proc.image_mean), tuple(proc.image_std)
    except Exception:  # noqa: BLE001 - no processor config: the MAE paper's ImageNet statistics
        pass
    cfg = model.config
    return MAERunner(model, image_size=cfg.image_size, patch=cfg.patch_size, mean=mean, std=std,
                     info={"norm_pix_loss": bool(cfg.norm_pix_loss), "refilled_position_tables": refilled})


def _load_trained(located: Located, device: torch.device):
    """checkpoints/trained/<id>/: config.json, model.safetensors, manifest.json."""
    from safetensors.torch import load_file
    from transformers import ViTMAEConfig, ViTMAEForPreTraining

    from engine.mae import MAERunner

    folder = located.path
    manifest = json.loads((folder / "manifest.json").read_text())
    model = ViTMAEForPreTraining(ViTMAEConfig.from_json_file(folder / "config.json"))
    model.load_state_dict(load_file(folder / "model.safetensors"), strict=True)
    if float(model.vit.embeddings.position_embeddings.abs().sum()) == 0:
        raise RuntimeError("the checkpoint's position embeddings are zero (the transformers config bug)")
    model.eval().to(device)
    pre = manifest.get("preprocess", {})
    return MAERunner(model, image_size=model.config.image_size, patch=model.config.patch_size,
                     mean=tuple(pre.get("mean", (0.5, 0.5, 0.5))), std=tuple(pre.get("std", (0.5, 0.5, 0.5))),
                     grayscale=bool(pre.get("grayscale", False)),
                     centre_visible=bool(pre.get("centre_visible", False)), info=manifest)


def _trained_note(name: str, fallback: str) -> str:
    """The honest one-liner for a trained-here MAE, from its manifest when present."""
    from engine import paths

    try:
        m = json.loads((paths.trained_dir() / name / "manifest.json").read_text())
        centred = (" It sees the image minus the visible patches' mean colour and paints the hidden ones "
                   "relative to it." if m.get("preprocess", {}).get("centre_visible") else "")
        return (f"a small MAE trained here: {m['params'] / 1e6:.1f}M parameters, {m['data']['summary']}, "
                f"{m.get('minutes_total', m['minutes']):.0f} CPU-minutes "
                f"({m.get('steps_total', m['steps'])} steps). Not facebook's MAE.{centred}")
    except (OSError, KeyError, ValueError, TypeError):
        return fallback


register(ModelSpec(
    id="vit-mae-base",
    role="mae",
    title="ViT-MAE base",
    sources=(Source("checkpoints", "vit-mae-base"), Source("hub", "facebook/vit-mae-base")),
    load=_load_pretrained,
    note="MAE ViT-B/16 pretrained on ImageNet-1k with 75% masking (224 px, 196 patches).",
))
register(ModelSpec(
    id="vit-mae-large",
    role="mae",
    title="ViT-MAE large",
    sources=(Source("checkpoints", "vit-mae-large"), Source("hub", "facebook/vit-mae-large")),
    load=_load_pretrained,
    note="MAE ViT-L/16 pretrained on ImageNet-1k with 75% masking (224 px, 196 patches).",
))
register(ModelSpec(
    id="mae-natural",
    role="mae",
    title="Small MAE (natural images, trained here)",
    sources=(Source("trained-here", "mae-natural"),),
    load=_load_trained,
    note=_trained_note("mae-natural", "a small MAE (64 px, patch 8) trained here on the packaged "
                       "scikit-image / scikit-learn photos. Not facebook's MAE."),
))
register(ModelSpec(
    id="mae-faces",
    role="mae",
    title="Small MAE (faces, trained here)",
    sources=(Source("trained-here", "mae-faces"),),
    load=_load_trained,
    note=_trained_note("mae-faces", "a small MAE (32 px, patch 4) trained here on scikit-image's "
                       "lfw_subset faces (grey). Not facebook's MAE."),
))
