"""engine.mae: patches, nested masks, PSNR, baselines, and a tiny ViT-MAE end to end."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from engine import mae as M
from engine.errors import UserInputError
from engine.models.mae import new_mae, sincos_2d

TINY = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
            decoder_hidden_size=16, decoder_num_hidden_layers=1, decoder_num_attention_heads=2,
            decoder_intermediate_size=32, image_size=16, patch_size=4, num_channels=3, norm_pix_loss=False)


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    return new_mae(**TINY).eval()


# ---------------------------------------------------------------- patches
@pytest.mark.parametrize("shape,patch", [((2, 3, 16, 16), 4), ((1, 1, 12, 20), 4), ((3, 3, 64, 64), 8)])
def test_patchify_unpatchify_round_trip(shape, patch):
    x = torch.rand(shape)
    p = M.patchify(x, patch)
    assert p.shape == (shape[0], (shape[2] // patch) * (shape[3] // patch), patch * patch * shape[1])
    assert torch.equal(M.unpatchify(p, (shape[2] // patch, shape[3] // patch), patch), x)


def test_patchify_layout_matches_transformers(tiny):
    x = torch.rand(2, 3, 16, 16)
    assert torch.equal(M.patchify(x, 4), tiny.patchify(x))
    # patch 1 is the second patch of the first row
    assert torch.equal(M.patchify(x, 4)[0, 1].reshape(4, 4, 3), x[0, :, 0:4, 4:8].permute(1, 2, 0))


def test_patchify_rejects_sizes_that_do_not_divide():
    with pytest.raises(ValueError):
        M.patchify(torch.rand(1, 3, 10, 16), 4)


# ---------------------------------------------------------------- masks
@pytest.mark.parametrize("kind", M.MASK_KINDS)
@pytest.mark.parametrize("grid", [(8, 8), (14, 14), (4, 6)])
def test_masks_are_nested_and_counted(kind, grid):
    n = grid[0] * grid[1]
    for seed in (0, 1, 123):
        order = M.mask_order(grid, seed, kind)
        assert sorted(order.tolist()) == list(range(n))
        assert np.array_equal(order, M.mask_order(grid, seed, kind))  # fixed for a seed
        prev = np.zeros(n, dtype=np.uint8)
        for ratio in np.linspace(0, M.MAX_RATIO, 20):
            mask = M.mask_from_order(order, ratio)
            assert mask.sum() == M.n_hidden(n, ratio) == min(n - 1, round(ratio * n))
            assert np.all(mask >= prev), "a patch hidden at a lower ratio must stay hidden"
            prev = mask


def test_seeds_change_the_mask():
    assert not np.array_equal(M.mask_order((8, 8), 0), M.mask_order((8, 8), 1))


def test_grid_mask_at_75_percent_keeps_one_patch_per_2x2():
    mask = M.mask_from_order(M.mask_order((8, 8), 5, "grid"), 0.75).reshape(8, 8)
    visible = 1 - mask
    for i in range(0, 8, 2):
        for j in range(0, 8, 2):
            assert visible[i:i + 2, j:j + 2].sum() == 1


def test_block_mask_is_clustered():
    """Block-wise masks hide contiguous regions: hidden patches have more hidden neighbours
    than under random masking at the same ratio."""
    def neighbours(mask):
        m = mask.reshape(14, 14).astype(int)
        pad = np.pad(m, 1)
        around = pad[:-2, 1:-1] + pad[2:, 1:-1] + pad[1:-1, :-2] + pad[1:-1, 2:]
        return (around * m).sum() / m.sum()

    block = np.mean([neighbours(M.mask_from_order(M.mask_order((14, 14), s, "block"), 0.4)) for s in range(5)])
    rand = np.mean([neighbours(M.mask_from_order(M.mask_order((14, 14), s, "random"), 0.4)) for s in range(5)])
    assert block > rand + 0.5


@pytest.mark.parametrize("bad", [-0.1, 0.96, 1.5, "abc", None, float("nan")])
def test_ratio_out_of_range_is_a_user_error(bad):
    with pytest.raises(UserInputError, match="mask_ratio"):
        M.check_ratio(bad)


@pytest.mark.parametrize("bad", [1.5, "abc", -1, 2**40, True, None, float("inf")])
def test_seed_must_be_a_whole_number(bad):
    with pytest.raises(UserInputError, match="seed"):
        M.check_seed(bad)


def test_seed_accepts_whole_floats_and_strings():
    assert M.check_seed(7.0) == 7 and M.check_seed("42") == 42


def test_unknown_mask_kind():
    with pytest.raises(UserInputError, match="random"):
        M.mask_order((8, 8), 0, "checkerboard")


# ---------------------------------------------------------------- PSNR and baselines
def test_psnr_maths():
    a = np.zeros((4, 4, 3))
    b = np.full((4, 4, 3), 0.1)  # mse 0.01 -> 20 dB
    assert M.psnr(a, b) == pytest.approx(20.0)
    where = np.zeros((4, 4), dtype=bool)
    where[0, 0] = True
    b2 = a.copy()
    b2[0, 0] = 0.5  # only the selected pixel differs: mse 0.25 -> 6.02 dB
    assert M.psnr(a, b2, where) == pytest.approx(10 * math.log10(4))
    assert M.psnr(a, b2, ~where) == M.PSNR_CAP_DB  # identical elsewhere: capped, not inf
    assert M.psnr(a, b2, np.zeros((4, 4), dtype=bool)) is None  # nothing hidden


def test_mean_fill_uses_visible_colour_only():
    img = np.zeros((4, 4, 3))
    img[:, :2] = (1.0, 0.5, 0.0)
    hidden = np.zeros((4, 4), dtype=bool)
    hidden[:, 2:] = True
    out = M.mean_fill(img, hidden)
    assert np.allclose(out[:, 2:], (1.0, 0.5, 0.0)) and np.array_equal(out[:, :2], img[:, :2])


def test_biharmonic_beats_mean_fill_on_a_smooth_image():
    yy, xx = np.mgrid[0:32, 0:32] / 31.0
    img = np.stack([xx, yy, 0.5 * (xx + yy)], axis=-1)
    hidden = M.patch_mask_to_pixels(M.mask_from_order(M.mask_order((8, 8), 0), 0.5), (8, 8), 4)
    bh = M.psnr(M.biharmonic_fill(img, hidden), img, hidden)
    mf = M.psnr(M.mean_fill(img, hidden), img, hidden)
    assert bh > mf + 10


def test_patch_mask_to_pixels():
    px = M.patch_mask_to_pixels(np.array([1, 0, 0, 1]), (2, 2), 3)
    assert px.shape == (6, 6) and px[:3, :3].all() and not px[:3, 3:].any() and px[3:, 3:].all()


# ---------------------------------------------------------------- the model
def test_position_embeddings_are_filled(tiny):
    """The transformers bug (DESIGN.md): built from a config, both tables would be zero."""
    enc = tiny.vit.embeddings.position_embeddings
    dec = tiny.decoder.decoder_pos_embed
    assert float(enc[0, 1:].abs().sum()) > 0 and float(dec[0, 1:].abs().sum()) > 0
    assert torch.allclose(enc[0], torch.from_numpy(sincos_2d(32, 4)))
    # every patch position is different from every other
    pos = enc[0, 1:]
    assert torch.cdist(pos, pos).add(torch.eye(16) * 1e3).min() > 0.1


def test_masked_forward_matches_transformers_forward(tiny):
    x = torch.randn(2, 3, 16, 16)
    noise = torch.rand(2, 16)
    tiny.config.mask_ratio = 0.75  # HF keeps int(16 * 0.25) = 4 patches
    with torch.no_grad():
        ref = tiny(pixel_values=x, noise=noise)
        ours = M.masked_forward(tiny, x, torch.argsort(noise, dim=1), 4)
    assert torch.allclose(ref.logits, ours, atol=1e-5)


def test_runner_reconstruction_panels(tiny, tmp_path):
    runner = M.MAERunner(tiny, image_size=16, patch=4)
    img = np.random.default_rng(0).random((40, 30, 3))
    rec = runner.reconstruct((img * 255).astype(np.uint8), 0.5, 3, "random")
    hidden = M.patch_mask_to_pixels(rec.mask, rec.grid, 4)
    assert rec.original.shape == rec.composite.shape == rec.reconstruction.shape == (16, 16, 3)
    assert rec.mask.sum() == 8 and rec.grid == (4, 4)
    assert np.array_equal(rec.composite[~hidden], rec.original[~hidden])  # visible pasted back
    assert np.array_equal(rec.composite[hidden], rec.reconstruction[hidden])
    assert 0 <= rec.reconstruction.min() and rec.reconstruction.max() <= 1
    assert rec.psnr_masked is not None and rec.psnr_mean_fill is not None
    assert runner.reconstruct((img * 255).astype(np.uint8), 0.0, 3).psnr_masked is None
    curve = runner.curve((img * 255).astype(np.uint8), 3, "block", ratios=(0.25, 0.75))
    assert len(curve["mae"]) == len(curve["biharmonic"]) == len(curve["mean_fill"]) == 2


def test_norm_pix_loss_output_is_denormalised(tiny):
    cfg = dict(TINY, norm_pix_loss=True)
    model = new_mae(**cfg).eval()
    runner = M.MAERunner(model, image_size=16, patch=4)
    assert runner.norm_pix_loss
    img = np.full((16, 16, 3), 0.8)
    out = runner.predict(img, [M.mask_order((4, 4), 0)], [8])[0]
    # a flat patch has zero variance: denormalised predictions equal the patch mean
    assert np.allclose(out, 0.8, atol=1e-2)


# ---------------------------------------------------------------- the checkpoints trained here
@pytest.mark.parametrize("name", ["mae-faces", "mae-natural"])
def test_trained_checkpoint_manifest(name):
    from engine import paths
    from engine.sources import sha256_file

    folder = paths.ROOT / "checkpoints" / "trained" / name
    if not (folder / "manifest.json").exists():
        pytest.skip(f"{name} is not trained yet (python -m engine.train.mae --data {name[4:]})")
    manifest = json.loads((folder / "manifest.json").read_text())
    for key in ("command", "data", "steps", "minutes", "heldout_psnr_db", "files", "preprocess"):
        assert key in manifest
    for file, digest in manifest["files"].items():
        assert (folder / file).stat().st_size < 30e6
        assert sha256_file(folder / file) == digest
    table = manifest["heldout_psnr_db"]["kinds"]["random"]
    assert {"0.75", "0.9"} <= set(table)
    for row in table.values():
        assert {"mae", "mean_fill", "biharmonic"} <= set(row)
    # The bar (issue 11), on held-out images with random masks: above mean-colour fill at
    # every ratio, above biharmonic inpainting at 75% and 90%.
    for ratio, row in table.items():
        assert row["mae"] > row["mean_fill"], (name, ratio, row)
    for ratio in ("0.75", "0.9"):
        assert table[ratio]["mae"] > table[ratio]["biharmonic"], (name, ratio, table[ratio])


def test_sincos_matches_transformers_layouts():
    """Rows-first equals transformers' builder; cols-first equals the layout of facebook's weights."""
    from transformers.models.vit_mae import modeling_vit_mae as hf

    ref = hf.build_2d_sinusoidal_position_embedding(4, 4, embed_dim=32, cls_token=True).numpy()
    assert np.allclose(sincos_2d(32, 4), ref)
    assert np.allclose(sincos_2d(32, 4, cols_first=True), np.concatenate([ref[:, 16:], ref[:, :16]], axis=1))


def test_fill_only_zero_tables(tiny):
    from engine.models.mae import fill_position_embeddings

    assert fill_position_embeddings(tiny, only_zero=True) == []  # both already filled


# ---------------------------------------------------------------- centring on the visible colour
def test_visible_mean_is_the_mean_of_the_visible_patches_only():
    torch.manual_seed(1)
    x = torch.rand(2, 3, 16, 16)
    order = M.mask_order((4, 4), 3, "random")
    shuffle = torch.from_numpy(np.stack([M.shuffle_from_order(order)] * 2))
    n_keep = 4
    mu = M.visible_mean(x, shuffle, n_keep, 4)
    assert mu.shape == (2, 3, 1, 1)
    seen = np.zeros(16, dtype=bool)
    seen[shuffle[0, :n_keep].numpy()] = True
    pix = M.patch_mask_to_pixels(seen, (4, 4), 4)  # True where visible
    expected = x[0].permute(1, 2, 0).numpy()[pix].mean(axis=0)
    assert np.allclose(mu[0, :, 0, 0].numpy(), expected, atol=1e-6)


def test_centred_model_that_knows_nothing_is_exactly_mean_fill():
    """With the decoder's output zeroed, a centre_visible MAE paints the visible mean colour:
    the mean-colour baseline is its starting point, never a hidden pixel."""
    torch.manual_seed(0)
    model = new_mae(**TINY).eval()
    with torch.no_grad():
        model.decoder.decoder_pred.weight.zero_()
        model.decoder.decoder_pred.bias.zero_()
    runner = M.MAERunner(model, image_size=16, patch=4, centre_visible=True)
    rng = np.random.default_rng(0)
    img = rng.random((16, 16, 3))
    rec = runner.reconstruct_array(img, 0.75, 2)
    hidden = M.patch_mask_to_pixels(rec.mask.astype(bool), (4, 4), 4)
    assert np.allclose(rec.reconstruction[hidden], M.mean_fill(img, hidden)[hidden], atol=1e-5)
