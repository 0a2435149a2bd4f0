"""The official ELMo files (options JSON + hdf5 weights) <-> `engine.elmo.BiLM`.

The published weights (AllenNLP's small / medium / original / 5.5B ELMo) were dumped from
TensorFlow (bilm-tf). Their hdf5 layout, as AllenNLP reads it:

    char_embed                                  (261, char_dim)        ids 1..261 (0 = no word)
    CNN/W_cnn_{i}                               (1, width, char_dim, n_filters_i)
    CNN/b_cnn_{i}                               (n_filters_i,)
    CNN_high_{k}/W_transform, W_carry           (n_filters, n_filters)  x @ W
    CNN_high_{k}/b_transform, b_carry           (n_filters,)
    CNN_proj/W_proj                             (n_filters, proj)
    CNN_proj/b_proj                             (proj,)
    RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_0   (input + proj, 4*cell)  [x, h] @ W, gates i, j, f, o
    RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/B     (4*cell,)   (TF adds 1.0 to the forget gate at run time)
    RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/W_P_0 (cell, proj)

with d = 0 forward, 1 backward, l the layer. TensorFlow's highway output is
c * relu(transform) + (1 - c) * x with c = sigmoid(carry); ours keeps g = 1 - c on x, so the
carry weights change sign. Gates are reordered i, j, f, o -> i, f, j, o and the forget bias
gets its +1. This module is our own reading of that layout (written from the format, not
copied); `save_hdf5` writes the same layout back, so a model trained here can be used by
any ELMo reader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from engine.elmo import BiLM, check_options

_LSTM = "RNN_{d}/RNN/MultiRNNCell/Cell{l}/LSTMCell/"


def read_options(path: str | Path) -> dict[str, Any]:
    """The options JSON, validated (ValueError says what is wrong)."""
    try:
        options = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{Path(path).name} is not valid JSON: {exc}") from exc
    return check_options(options)


def _tf_to_torch_gates(m: np.ndarray, cell: int) -> np.ndarray:
    """Reorder the 4*cell gate axis (axis 0) from TF's i, j, f, o to i, f, j, o."""
    i, j, f, o = (m[k * cell:(k + 1) * cell] for k in range(4))
    return np.concatenate([i, f, j, o], axis=0)


def _torch_to_tf_gates(m: np.ndarray, cell: int) -> np.ndarray:
    i, f, j, o = (m[k * cell:(k + 1) * cell] for k in range(4))
    return np.concatenate([i, j, f, o], axis=0)


def tensors_from_hdf5(weight_file: str | Path, options: dict[str, Any]) -> tuple[dict[str, np.ndarray], list[str]]:
    """Read the hdf5 file into BiLM state-dict arrays (float32).

    Returns (state, unused): `unused` lists the file's datasets the biLM does not need (e.g.
    a softmax); every BiLM parameter must be present with the right shape, else ValueError.
    """
    import h5py

    cnn, lstm = options["char_cnn"], options["lstm"]
    n_filters = sum(int(n) for _, n in cnn["filters"])
    cell, proj = int(lstm["dim"]), int(lstm["projection_dim"])
    used: set[str] = set()
    state: dict[str, np.ndarray] = {}
    with h5py.File(weight_file, "r") as fin:
        names: list[str] = []
        fin.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)

        def get(name: str, shape: tuple[int, ...]) -> np.ndarray:
            if name not in fin or not isinstance(fin[name], h5py.Dataset):
                raise ValueError(f"the weight file has no {name!r}: it does not match the options file")
            arr = np.asarray(fin[name][...], dtype=np.float32)
            if arr.shape != shape:
                raise ValueError(f"{name} has shape {arr.shape}, the options imply {shape}")
            used.add(name)
            return arr

        emb = get("char_embed", (261, int(cnn["embedding"]["dim"])))
        state["char_cnn.char_embedding.weight"] = np.concatenate([np.zeros_like(emb[:1]), emb])
        for i, (width, num) in enumerate(cnn["filters"]):
            w = get(f"CNN/W_cnn_{i}", (1, int(width), emb.shape[1], int(num)))
            state[f"char_cnn.convolutions.{i}.weight"] = np.transpose(w[0], (2, 1, 0))  # (num, dim, width)
            state[f"char_cnn.convolutions.{i}.bias"] = get(f"CNN/b_cnn_{i}", (int(num),))
        for k in range(int(cnn["n_highway"])):
            g = f"CNN_high_{k}/"
            w_t = get(g + "W_transform", (n_filters, n_filters)).T
            w_c = get(g + "W_carry", (n_filters, n_filters)).T
            b_t = get(g + "b_transform", (n_filters,))
            b_c = get(g + "b_carry", (n_filters,))
            state[f"char_cnn.highway.layers.{k}.weight"] = np.concatenate([w_t, -w_c])
            state[f"char_cnn.highway.layers.{k}.bias"] = np.concatenate([b_t, -b_c])
        state["char_cnn.projection.weight"] = get("CNN_proj/W_proj", (n_filters, proj)).T
        state["char_cnn.projection.bias"] = get("CNN_proj/b_proj", (proj,))
        for d, side in enumerate(("forward", "backward")):
            for layer in range(int(lstm["n_layers"])):
                g = _LSTM.format(d=d, l=layer)
                w = _tf_to_torch_gates(get(g + "W_0", (2 * proj, 4 * cell)).T, cell)  # (4c, in + proj)
                b = get(g + "B", (4 * cell,)).copy()
                b[2 * cell:3 * cell] += 1.0  # TF's forget_bias=1.0 (TF order: f is third)
                prefix = f"lstm.{side}_layers.{layer}."
                state[prefix + "input_linearity.weight"] = np.ascontiguousarray(w[:, :proj])
                state[prefix + "state_linearity.weight"] = np.ascontiguousarray(w[:, proj:])
                state[prefix + "state_linearity.bias"] = _tf_to_torch_gates(b, cell)
                state[prefix + "state_projection.weight"] = get(g + "W_P_0", (cell, proj)).T
    return state, sorted(set(names) - used)


def load_hdf5(options: dict[str, Any], weight_file: str | Path) -> tuple[BiLM, list[str]]:
    """A BiLM with every parameter filled from the hdf5 file, and the file's unused datasets.
    Raises ValueError if a parameter is missing or mis-shaped."""
    bilm = BiLM(options)
    state, unused = tensors_from_hdf5(weight_file, bilm.options)
    expected = bilm.state_dict()
    missing = sorted(set(expected) - set(state))
    if missing:  # pragma: no cover - the mapping above covers every BiLM parameter
        raise ValueError(f"the weight file leaves these parameters empty: {', '.join(missing)}")
    bilm.load_state_dict({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}, strict=True)
    return bilm, unused


def save_hdf5(bilm: BiLM, weight_file: str | Path) -> None:
    """Write the BiLM's weights in the official hdf5 layout (the inverse of `load_hdf5`)."""
    import h5py

    sd = {k: v.detach().float().cpu().numpy() for k, v in bilm.state_dict().items()}
    cnn, lstm = bilm.options["char_cnn"], bilm.options["lstm"]
    cell = int(lstm["dim"])
    n_filters = sum(int(n) for _, n in cnn["filters"])
    with h5py.File(weight_file, "w") as fout:
        fout["char_embed"] = sd["char_cnn.char_embedding.weight"][1:]
        for i in range(len(cnn["filters"])):
            fout[f"CNN/W_cnn_{i}"] = np.transpose(sd[f"char_cnn.convolutions.{i}.weight"], (2, 1, 0))[None]
            fout[f"CNN/b_cnn_{i}"] = sd[f"char_cnn.convolutions.{i}.bias"]
        for k in range(int(cnn["n_highway"])):
            w, b = sd[f"char_cnn.highway.layers.{k}.weight"], sd[f"char_cnn.highway.layers.{k}.bias"]
            fout[f"CNN_high_{k}/W_transform"] = w[:n_filters].T
            fout[f"CNN_high_{k}/W_carry"] = -w[n_filters:].T
            fout[f"CNN_high_{k}/b_transform"] = b[:n_filters]
            fout[f"CNN_high_{k}/b_carry"] = -b[n_filters:]
        fout["CNN_proj/W_proj"] = sd["char_cnn.projection.weight"].T
        fout["CNN_proj/b_proj"] = sd["char_cnn.projection.bias"]
        for d, side in enumerate(("forward", "backward")):
            for layer in range(int(lstm["n_layers"])):
                g, prefix = _LSTM.format(d=d, l=layer), f"lstm.{side}_layers.{layer}."
                w = np.concatenate([sd[prefix + "input_linearity.weight"],
                                    sd[prefix + "state_linearity.weight"]], axis=1)
                fout[g + "W_0"] = _torch_to_tf_gates(w, cell).T
                b = _torch_to_tf_gates(sd[prefix + "state_linearity.bias"], cell).copy()
                b[2 * cell:3 * cell] -= 1.0
                fout[g + "B"] = b
                fout[g + "W_P_0"] = sd[prefix + "state_projection.weight"].T


def find_official_files(folder: Path) -> tuple[Path, Path]:
    """(options.json, weights.hdf5) inside a folder such as checkpoints/elmo/; ValueError if
    the pair is missing or ambiguous."""
    options = sorted(folder.glob("*.json"))
    weights = sorted(list(folder.glob("*.hdf5")) + list(folder.glob("*.h5")))
    if len(options) != 1 or len(weights) != 1:
        raise ValueError(f"{folder} should hold exactly one options .json and one .hdf5 weight file "
                         f"(found {len(options)} and {len(weights)}); e.g. AllenNLP's "
                         "elmo_2x1024_128_2048cnn_1xhighway_options.json + _weights.hdf5")
    return options[0], weights[0]


def size_name(options: dict[str, Any]) -> str:
    """AllenNLP's name for a published size ("small", "medium", "original"), else the shape."""
    lstm, cnn = options["lstm"], options["char_cnn"]
    shape = (int(lstm["dim"]), int(lstm["projection_dim"]), int(cnn["n_highway"]))
    known = {(1024, 128, 1): "small", (2048, 256, 1): "medium", (4096, 512, 2): "original"}
    tag = f"2x{lstm['dim']}_{lstm['projection_dim']}_{sum(int(n) for _, n in cnn['filters'])}cnn_{cnn['n_highway']}xhighway"
    return f"{known[shape]} ({tag})" if shape in known and int(lstm["n_layers"]) == 2 else tag
