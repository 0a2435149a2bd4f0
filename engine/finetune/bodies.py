"""Networks cut into units ("layers", bottom to top) so a run can freeze the lowest N.

A `Body` turns raw examples into per-example input states (`encode`), runs one unit at
a time (`run_unit`) and pools the top state into a feature vector (`pool`). States are
dicts of tensors with the batch first: `x` (token ids (B, T) int64, hidden states
(B, T, d) float32, or feature maps (B, C, H, W) float32) and, for text, `mask`
(B, T) int64 (1 = real token, 0 = padding).

Bodies:
- `BertBody`: the registry's BERT encoder; units = embeddings, then each Transformer layer;
  pooled by the masked mean of the last layer (as the MiniLM sentence encoder was trained).
- `WordBagBody`: a GloVe embedding layer over the task's vocabulary; one unit (the
  embedding table); pooled by the masked mean ("bag of vectors").
- `CnnBody`: the registry's timm CNN; units = stem, each stage, head convolution; pooled
  by global average pooling. Grey task images are resized and copied to 3 channels.

Every body here owns its weights: `pretrained=True` deep-copies the registry's shared
model (never trains the shared one), `pretrained=False` builds the same architecture
with fresh random weights.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

State = dict[str, torch.Tensor]


# ------------------------------------------------------------------ batching helpers
def split_state(state: State) -> list[State]:
    """A batched state -> one state per example (padding cut off where there is a mask)."""
    x = state["x"]
    if "mask" not in state:
        return [{"x": x[i]} for i in range(x.shape[0])]
    lengths = state["mask"].sum(dim=1).tolist()
    return [{"x": x[i, :n], "mask": state["mask"][i, :n]} for i, n in enumerate(lengths)]


def collate(items: list[State], device: torch.device) -> State:
    """Per-example states -> one batched state on `device` (right-padded with zeros)."""
    if "mask" not in items[0]:
        return {"x": torch.stack([it["x"] for it in items]).to(device)}
    x = nn.utils.rnn.pad_sequence([it["x"] for it in items], batch_first=True)
    mask = nn.utils.rnn.pad_sequence([it["mask"] for it in items], batch_first=True)
    return {"x": x.to(device), "mask": mask.to(device)}


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, T, d) and (B, T) -> (B, d): the mean over real tokens."""
    m = mask.unsqueeze(-1).to(x.dtype)
    return (x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)


class Body(nn.Module):
    """Base class: `units` bottom to top, `unit_names`, `feature_dim`."""

    units: nn.ModuleList
    unit_names: list[str]
    feature_dim: int

    def encode(self, inputs: Any) -> list[State]:
        raise NotImplementedError

    def run_unit(self, i: int, state: State) -> State:
        raise NotImplementedError

    def pool(self, state: State) -> torch.Tensor:
        raise NotImplementedError


# ------------------------------------------------------------------ BERT
class BertBody(Body):
    """A BERT-family encoder (transformers BertModel-like: `.embeddings`, `.encoder.layer`)."""

    def __init__(self, model: nn.Module, tokenizer: Any, max_length: int = 64) -> None:
        super().__init__()
        self.config = model.config
        self.units = nn.ModuleList([model.embeddings, *model.encoder.layer])
        self.unit_names = ["embeddings"] + [f"layer {i + 1}" for i in range(len(model.encoder.layer))]
        self.feature_dim = int(model.config.hidden_size)
        self.tokenizer = tokenizer
        self.max_length = max_length

    def encode(self, inputs: list[str]) -> list[State]:
        ids = self.tokenizer(list(inputs), truncation=True, max_length=self.max_length)["input_ids"]
        return [{"x": torch.tensor(row, dtype=torch.long), "mask": torch.ones(len(row), dtype=torch.long)}
                for row in ids]

    def run_unit(self, i: int, state: State) -> State:
        if i == 0:
            return {"x": self.units[0](input_ids=state["x"]), "mask": state["mask"]}  # (B, T, d)
        from transformers.masking_utils import create_bidirectional_mask

        h = state["x"]
        additive = create_bidirectional_mask(config=self.config, inputs_embeds=h, attention_mask=state["mask"])
        out = self.units[i](h, attention_mask=additive)
        out = out[0] if isinstance(out, tuple) else out
        return {"x": out, "mask": state["mask"]}  # (B, T, d)

    def pool(self, state: State) -> torch.Tensor:
        return masked_mean(state["x"], state["mask"])  # (B, d)


def bert_body(bundle: Any, pretrained: bool) -> BertBody:
    """A trainable copy of a `BertBundle` (or a random-init model of the same config)."""
    if pretrained:
        model = copy.deepcopy(bundle.model)
    else:
        from transformers import AutoModel

        model = AutoModel.from_config(copy.deepcopy(bundle.model.config), attn_implementation="eager")
    # The tokenizer is copied too: a fast tokenizer keeps truncation state, and other tabs
    # call the shared one from other threads.
    return BertBody(model.float(), copy.deepcopy(bundle.tokenizer))


# ------------------------------------------------------------------ GloVe bag of vectors
class WordBagBody(Body):
    """Mean of word vectors. vocab[0] is padding, vocab[1] unknown words."""

    def __init__(self, vocab: list[str], weight: torch.Tensor, max_words: int = 64) -> None:
        super().__init__()
        self.vocab = vocab
        self.index = {w: i for i, w in enumerate(vocab)}
        self.units = nn.ModuleList([nn.Embedding.from_pretrained(weight, freeze=False, padding_idx=0)])
        self.unit_names = ["word embeddings"]
        self.feature_dim = int(weight.shape[1])
        self.max_words = max_words

    def encode(self, inputs: list[str]) -> list[State]:
        from engine.corpus import tokenize

        out = []
        for text in inputs:
            ids = [self.index.get(w, 1) for w in tokenize(text)][: self.max_words] or [1]
            out.append({"x": torch.tensor(ids, dtype=torch.long), "mask": torch.ones(len(ids), dtype=torch.long)})
        return out

    def run_unit(self, i: int, state: State) -> State:
        return {"x": self.units[0](state["x"]), "mask": state["mask"]}  # (B, T, d)

    def pool(self, state: State) -> torch.Tensor:
        return masked_mean(state["x"], state["mask"])  # (B, d)


def word_bag_body(kv: Any, texts: list[str], pretrained: bool, seed: int) -> WordBagBody:
    """The task's vocabulary (words of all its texts that the vectors know, by frequency
    rank) with GloVe rows (pretrained) or random rows of the same scale (scratch)."""
    from engine.corpus import tokenize

    words = sorted({w for t in texts for w in tokenize(t) if w in kv.key_to_index}, key=kv.key_to_index.get)
    vocab = ["<pad>", "<unk>", *words]
    vectors = np.stack([kv[w] for w in words]).astype(np.float32) if words else np.zeros((0, kv.vector_size), np.float32)
    dim = kv.vector_size
    if pretrained:
        table = np.concatenate([np.zeros((1, dim), np.float32), vectors.mean(0, keepdims=True) if words
                                else np.zeros((1, dim), np.float32), vectors])
        weight = torch.from_numpy(table)
    else:
        g = torch.Generator().manual_seed(seed)
        std = float(vectors.std()) if words else 0.4
        weight = torch.randn(len(vocab), dim, generator=g) * std
        weight[0] = 0.0
    return WordBagBody(vocab, weight.float())


# ------------------------------------------------------------------ CNN
class CnnBody(Body):
    """A timm CNN cut into stem / stages / head. Images: float32 (N, H, W) grey in [0, 1]."""

    def __init__(self, model: nn.Module, image_px: int, mean: tuple[float, ...], std: tuple[float, ...]) -> None:
        super().__init__()
        units, names = _cnn_units(model)
        self.units = nn.ModuleList(units)
        self.unit_names = names
        self.feature_dim = int(getattr(model, "num_features", 0) or _probe_channels(self.units, image_px))
        self.image_px = image_px
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(3, 1, 1), persistent=False)

    def encode(self, inputs: np.ndarray) -> list[State]:
        x = torch.from_numpy(np.asarray(inputs, dtype=np.float32)).unsqueeze(1)  # (N, 1, H, W)
        x = F.interpolate(x, size=(self.image_px, self.image_px), mode="bilinear", align_corners=False)
        x = (x.clamp(0, 1).expand(-1, 3, -1, -1) - self.mean.cpu()) / self.std.cpu()  # (N, 3, px, px)
        return [{"x": x[i].contiguous()} for i in range(x.shape[0])]

    def run_unit(self, i: int, state: State) -> State:
        return {"x": self.units[i](state["x"])}  # (B, C, H', W')

    def pool(self, state: State) -> torch.Tensor:
        return state["x"].mean(dim=(2, 3))  # (B, C)


def _cnn_units(model: nn.Module) -> tuple[list[nn.Module], list[str]]:
    """EfficientNet/MobileNet-style (conv_stem, bn1, blocks, conv_head, bn2), ResNet-style
    (conv1, bn1, act1, maxpool, layer1-4), else the whole feature extractor as one unit."""
    if hasattr(model, "conv_stem") and hasattr(model, "blocks"):
        units = [nn.Sequential(model.conv_stem, model.bn1), *model.blocks]
        names = ["stem"] + [f"stage {i + 1}" for i in range(len(model.blocks))]
        if hasattr(model, "conv_head"):
            units.append(nn.Sequential(model.conv_head, model.bn2))
            names.append("head conv")
        return units, names
    if hasattr(model, "layer1") and hasattr(model, "conv1"):
        stem = nn.Sequential(model.conv1, model.bn1, getattr(model, "act1", nn.ReLU()), model.maxpool)
        layers = [getattr(model, f"layer{i}") for i in range(1, 5) if hasattr(model, f"layer{i}")]
        return [stem, *layers], ["stem"] + [f"stage {i + 1}" for i in range(len(layers))]

    class _Features(nn.Module):
        def __init__(self, m: nn.Module) -> None:
            super().__init__()
            self.m = m

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.m.forward_features(x)

    return [_Features(model)], ["features"]


def _probe_channels(units: nn.ModuleList, px: int) -> int:
    x = torch.zeros(1, 3, px, px)
    with torch.no_grad():
        for u in units:
            x = u(x)
    return int(x.shape[1])


def cnn_body(model: nn.Module, preprocess: dict, image_px: int, pretrained: bool) -> CnnBody:
    """A trainable copy of a timm CNN, or the same architecture freshly initialised."""
    if pretrained:
        net = copy.deepcopy(model)
    else:
        arch = (getattr(model, "pretrained_cfg", None) or {}).get("architecture")
        try:
            import timm

            net = timm.create_model(arch, pretrained=False)
        except Exception:  # not a timm name: same modules, every layer re-initialised
            net = copy.deepcopy(model)
            for module in net.modules():
                if hasattr(module, "reset_parameters"):
                    module.reset_parameters()
    mean = tuple(preprocess.get("mean", (0.5, 0.5, 0.5)))
    std = tuple(preprocess.get("std", (0.5, 0.5, 0.5)))
    return CnnBody(net.float(), image_px, mean, std)
