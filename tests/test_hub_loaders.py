"""The hub loading code of the vision stations (facebook/vit-mae-*, facebook/dinov2-small,
google/vit-base-patch16-224), run on tiny models the tests build and `save_pretrained`
into a private checkpoints/ folder: the same `from_pretrained` calls a Space makes online."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.registry import ModelSpec, Registry
from engine.sources import Source


def _registry(spec: ModelSpec) -> Registry:
    reg = Registry()
    reg._specs_imported = True  # only this spec, not the app's real ones
    reg.register(spec)
    return reg


def _photo() -> np.ndarray:
    """(96, 96, 3) uint8: a smooth gradient with a square, so patches differ."""
    y, x = np.mgrid[0:96, 0:96]
    img = np.stack([x / 95, y / 95, np.full_like(x, 0.3, dtype=float)], axis=-1)
    img[30:60, 30:60] = (0.9, 0.1, 0.1)
    return (img * 255).astype(np.uint8)


@pytest.mark.parametrize("norm_pix", [False, True])
def test_vit_mae_from_pretrained_folder(checkpoints, norm_pix):
    from transformers import ViTImageProcessor, ViTMAEConfig, ViTMAEForPreTraining

    from engine.models.mae import _load_pretrained

    folder = checkpoints / "vit-mae-base"
    torch.manual_seed(0)
    cfg = ViTMAEConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=64, decoder_hidden_size=32, decoder_num_hidden_layers=1,
                       decoder_num_attention_heads=2, decoder_intermediate_size=64, norm_pix_loss=norm_pix)
    ViTMAEForPreTraining(cfg).save_pretrained(folder)
    ViTImageProcessor(size={"height": 32, "width": 32}, image_mean=[0.4, 0.4, 0.4],
                      image_std=[0.2, 0.2, 0.2]).save_pretrained(folder)
    reg = _registry(ModelSpec("vit-mae-base", "mae", "ViT-MAE base",
                              (Source("checkpoints", "vit-mae-base"), Source("hub", "facebook/vit-mae-base")),
                              _load_pretrained))
    loaded = reg.get("mae")
    runner = loaded.obj
    assert loaded.source_kind == "checkpoints"
    assert runner.grid == (4, 4) and runner.patch == 8 and runner.norm_pix_loss == norm_pix
    assert np.allclose(runner.mean.flatten().tolist(), 0.4) and np.allclose(runner.std.flatten().tolist(), 0.2)
    # the position tables were zero in the saved file's config-built model: refilled on load
    assert float(runner.model.vit.embeddings.position_embeddings.detach().abs().sum()) > 0
    rec = runner.reconstruct(_photo(), 0.75, 0)
    assert rec.reconstruction.shape == (32, 32, 3) and int(rec.mask.sum()) == 12
    assert np.isfinite(rec.reconstruction).all() and 0 <= rec.reconstruction.min() <= rec.reconstruction.max() <= 1
    visible = ~np.repeat(np.repeat(rec.mask.reshape(4, 4).astype(bool), 8, 0), 8, 1)
    assert np.allclose(rec.composite[visible], rec.original[visible])


@pytest.mark.parametrize("family", ["dinov2", "vit"])
def test_vit_attention_from_pretrained_folder(checkpoints, family):
    from transformers import Dinov2Config, Dinov2Model, ViTConfig, ViTModel

    from engine.models.vit import INPUT_SIZE, _load_hub

    torch.manual_seed(0)
    if family == "dinov2":
        name = "dinov2-small"
        Dinov2Model(Dinov2Config(image_size=56, patch_size=14, hidden_size=32, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=64)).save_pretrained(checkpoints / name)
        side, patch = INPUT_SIZE, 14
    else:
        name = "vit-base-patch16-224"
        ViTModel(ViTConfig(image_size=64, patch_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64), add_pooling_layer=False).save_pretrained(checkpoints / name)
        side, patch = 64, 16
    reg = _registry(ModelSpec(name, "vit", name, (Source("checkpoints", name), Source("hub", f"tiny/{name}")),
                              _load_hub))
    loaded = reg.get("vit")
    runner = loaded.obj
    assert loaded.source_kind == "checkpoints" and runner.kind == family
    assert runner.image_size == side and runner.grid == (side // patch, side // patch)
    att = runner.attentions(_photo())
    tokens = 1 + (side // patch) ** 2
    assert att.att.shape == (2, 2, tokens, tokens)
    assert np.allclose(att.att.sum(-1), 1, atol=1e-4)
    sim = runner.position_similarity()
    assert sim.shape == (side // patch,) * 4
    assert np.allclose([sim[i, j, i, j] for i in range(2) for j in range(2)], 1, atol=1e-4)
