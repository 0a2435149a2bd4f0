"""ELMo's bidirectional language model (biLM), natively in torch.

The architecture of Peters et al. (2018), laid out like the published AllenNLP weights:

    words -> UTF-8 bytes -> character ids            (batch, words, max_chars) int64
          -> character embedding                      (batch*words, max_chars, char_dim)
          -> 1-D convolutions of several widths, max over positions, activation
          -> highway layers (relu)                    (batch*words, n_filters)
          -> linear projection = the token layer      (batch, words + 2, proj)
          -> forward and backward LSTM stacks with a projection after each cell
             (cell clipping, projection clipping, residual connection from layer 2 up)
    layers: [token, token] and each LSTM layer's [forward, backward]  (batch, words + 2, 2*proj)

Sentence boundaries <S> and </S> are added as two extra "words" made of special
characters, exactly as the original does; `ElmoEmbedder.word_layers` strips them again.

Options use the official JSON layout (`{"char_cnn": {...}, "lstm": {...}}`), so the same
module runs the published weights (`engine.elmo_weights`) and the small biLM trained here
(`engine.train.elmo`). Unlike AllenNLP's embedder, every call starts from zero LSTM states,
so a sentence's vectors never depend on what was embedded before it.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from engine.errors import UserInputError

# Special characters (byte values 0-255 are the UTF-8 bytes themselves). Stored ids are
# these plus one, so that id 0 means "no word here" (padding of the sentence).
BOS_CHAR, EOS_CHAR, BOW_CHAR, EOW_CHAR, PAD_CHAR = 256, 257, 258, 259, 260
N_CHARACTERS = 262  # 261 characters + the "no word" id 0
MAX_WORDS = 400  # per sentence; longer input is refused with a clear message


def word_char_ids(word: str, max_chars: int = 50) -> list[int]:
    """Character ids of one word, as the original: [BOW, bytes..., EOW, PAD, ...] + 1.

    The word is UTF-8 encoded (so any character, emoji or CJK, becomes 1-4 bytes) and cut
    to `max_chars - 2` bytes. Returns `max_chars` ints in 1..261.
    """
    data = word.encode("utf-8", "ignore")[: max_chars - 2]
    ids = [PAD_CHAR] * max_chars
    ids[0] = BOW_CHAR
    ids[1:1 + len(data)] = list(data)
    ids[1 + len(data)] = EOW_CHAR
    return [c + 1 for c in ids]


def _boundary_ids(char: int, max_chars: int) -> list[int]:
    ids = [PAD_CHAR] * max_chars
    ids[0], ids[1], ids[2] = BOW_CHAR, char, EOW_CHAR
    return [c + 1 for c in ids]


def batch_to_ids(sentences: Sequence[Sequence[str]], max_chars: int = 50) -> torch.Tensor:
    """Character ids for a batch of tokenised sentences.

    Returns int64 (batch, max_words, max_chars); rows of shorter sentences are all 0.
    Sentence boundaries are *not* included (the biLM adds them).
    """
    width = max((len(s) for s in sentences), default=0)
    out = torch.zeros((len(sentences), width, max_chars), dtype=torch.long)
    for i, sent in enumerate(sentences):
        for j, word in enumerate(sent):
            out[i, j] = torch.tensor(word_char_ids(word, max_chars))
    return out


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """Validate an options dict in the official layout; raise ValueError naming what is off.
    Returns a deep copy with defaults filled (activation relu, n_characters 262)."""
    try:
        opts = copy.deepcopy(options)
        cnn, lstm = opts["char_cnn"], opts["lstm"]
        cnn.setdefault("activation", "relu")
        cnn.setdefault("n_characters", N_CHARACTERS)
        filters = [(int(w), int(n)) for w, n in cnn["filters"]]
        ok = (filters and int(cnn["embedding"]["dim"]) > 0 and int(cnn["n_highway"]) >= 0
              and int(cnn["max_characters_per_token"]) >= 3 and int(lstm["projection_dim"]) > 0
              and int(lstm["dim"]) > 0 and int(lstm["n_layers"]) >= 1)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"ELMo options are incomplete or malformed ({exc!r}); expected "
                         "char_cnn.{filters, embedding.dim, n_highway, max_characters_per_token} "
                         "and lstm.{projection_dim, dim, n_layers}") from exc
    if not ok:
        raise ValueError("ELMo options have a non-positive size")
    if cnn["activation"] not in ("relu", "tanh"):
        raise ValueError(f"unknown char_cnn activation {cnn['activation']!r} (relu or tanh)")
    if any(w > int(cnn["max_characters_per_token"]) for w, _ in filters):
        raise ValueError("a char_cnn filter is wider than max_characters_per_token")
    if not lstm.get("use_skip_connections", True):
        raise ValueError("only biLMs with residual (skip) connections are supported, as in AllenNLP")
    return opts


class Highway(nn.Module):
    """Highway layers on (N, dim): x <- g * x + (1 - g) * relu(W_h x + b_h), g = sigmoid(W_g x + b_g).

    Each layer is one Linear(dim, 2*dim): rows [:dim] give the transform, rows [dim:] the gate
    (AllenNLP's packing; the gate g is the *carry* fraction)."""

    def __init__(self, dim: int, n_layers: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, 2 * dim) for _ in range(n_layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            transform, gate = layer(x).chunk(2, dim=-1)
            g = torch.sigmoid(gate)
            x = g * x + (1.0 - g) * F.relu(transform)
        return x


class CharCNN(nn.Module):
    """Context-free token vectors from characters.

    forward(char_ids int64 (batch, words, max_chars), ids 0..261) -> float (batch, words, proj).
    A word whose ids are all 0 (sentence padding) still gets a vector; callers mask it.
    """

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__()
        cnn = options["char_cnn"]
        self.max_chars = int(cnn["max_characters_per_token"])
        dim = int(cnn["embedding"]["dim"])
        self.activation = torch.tanh if cnn["activation"] == "tanh" else F.relu
        self.char_embedding = nn.Embedding(N_CHARACTERS, dim, padding_idx=0)
        self.convolutions = nn.ModuleList(nn.Conv1d(dim, int(n), int(w)) for w, n in cnn["filters"])
        n_filters = sum(int(n) for _, n in cnn["filters"])
        self.highway = Highway(n_filters, int(cnn["n_highway"]))
        self.projection = nn.Linear(n_filters, int(options["lstm"]["projection_dim"]))

    def forward(self, char_ids: torch.Tensor) -> torch.Tensor:
        batch, words, chars = char_ids.shape
        x = self.char_embedding(char_ids.reshape(-1, chars)).transpose(1, 2)  # (N, dim, chars)
        feats = [self.activation(conv(x).max(dim=-1).values) for conv in self.convolutions]
        x = self.highway(torch.cat(feats, dim=-1))
        return self.projection(x).reshape(batch, words, -1)


class LstmCellWithProjection(nn.Module):
    """The weights of one LSTM-with-projection layer in one direction (gates i, f, g, o).

    input_linearity: Linear(input, 4*cell, no bias); state_linearity: Linear(proj, 4*cell);
    state_projection: Linear(cell, proj, no bias). `BiLstm` runs them; this module only
    holds parameters so names match AllenNLP's."""

    def __init__(self, input_size: int, proj_size: int, cell_size: int) -> None:
        super().__init__()
        self.input_size, self.proj_size, self.cell_size = input_size, proj_size, cell_size
        self.input_linearity = nn.Linear(input_size, 4 * cell_size, bias=False)
        self.state_linearity = nn.Linear(proj_size, 4 * cell_size, bias=True)
        self.state_projection = nn.Linear(cell_size, proj_size, bias=False)


def reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each sequence of x (batch, time, ...) within its own length; padding stays last.
    Applying it twice gives x back."""
    batch, time = x.shape[:2]
    t = torch.arange(time, device=x.device).unsqueeze(0).expand(batch, time)
    lens = lengths.to(x.device).unsqueeze(1)
    idx = torch.where(t < lens, lens - 1 - t, t)
    idx = idx.reshape(batch, time, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, idx)


class BiLstm(nn.Module):
    """Forward and backward stacks of LSTM-with-projection layers, run together.

    forward(x (batch, time, proj), lengths int64 (batch,)) -> list of n_layers tensors
    (batch, time, 2*proj): [forward output, backward output] per position, in text order.
    The memory cell is clipped to +-cell_clip and the projected state to +-proj_clip (when
    set); from the second layer up each direction adds its input (residual connection).
    States start at zero. Positions at or after a sequence's length hold garbage: mask them.
    """

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__()
        lstm = options["lstm"]
        proj, cell, n = int(lstm["projection_dim"]), int(lstm["dim"]), int(lstm["n_layers"])
        self.cell_clip = lstm.get("cell_clip") or None
        self.proj_clip = lstm.get("proj_clip") or None
        self.forward_layers = nn.ModuleList(LstmCellWithProjection(proj, proj, cell) for _ in range(n))
        self.backward_layers = nn.ModuleList(LstmCellWithProjection(proj, proj, cell) for _ in range(n))
        self.dropout = nn.Dropout(float(lstm.get("dropout", 0.0)))

    def _run_layer(self, fwd: LstmCellWithProjection, bwd: LstmCellWithProjection,
                   x: torch.Tensor) -> torch.Tensor:
        """x (2, batch, time, in) -> (2, batch, time, proj); direction 1 is already reversed."""
        w_in = torch.stack([fwd.input_linearity.weight, bwd.input_linearity.weight])  # (2, 4c, in)
        w_st = torch.stack([fwd.state_linearity.weight, bwd.state_linearity.weight])  # (2, 4c, p)
        b_st = torch.stack([fwd.state_linearity.bias, bwd.state_linearity.bias]).unsqueeze(1)
        w_pr = torch.stack([fwd.state_projection.weight, bwd.state_projection.weight])  # (2, p, c)
        two, batch, time, _ = x.shape
        c_size, p_size = fwd.cell_size, fwd.proj_size
        pre = torch.einsum("dbti,dgi->dbtg", x, w_in)  # (2, batch, time, 4c)
        h = x.new_zeros(two, batch, p_size)
        c = x.new_zeros(two, batch, c_size)
        w_st_t, w_pr_t = w_st.transpose(1, 2), w_pr.transpose(1, 2)
        outs = []
        for t in range(time):
            gates = torch.baddbmm(b_st, h, w_st_t) + pre[:, :, t]
            i, f, g, o = gates.chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            if self.cell_clip:
                c = c.clamp(-self.cell_clip, self.cell_clip)
            h = torch.bmm(torch.sigmoid(o) * torch.tanh(c), w_pr_t)
            if self.proj_clip:
                h = h.clamp(-self.proj_clip, self.proj_clip)
            outs.append(h)
        return torch.stack(outs, dim=2)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        state = torch.stack([x, reverse_padded(x, lengths)])  # (2, batch, time, proj)
        layers = []
        for k, (fwd, bwd) in enumerate(zip(self.forward_layers, self.backward_layers, strict=True)):
            out = self._run_layer(fwd, bwd, state)
            if k > 0:
                out = out + state
            state = self.dropout(out) if self.training else out
            layers.append(torch.cat([out[0], reverse_padded(out[1], lengths)], dim=-1))
        return layers


class BiLM(nn.Module):
    """The whole biLM: CharCNN + BiLstm.

    forward(char_ids int64 (batch, words, max_chars), 0 rows = padding) -> dict with
      "layers": float (n_layers + 1, batch, words + 2, 2*proj), boundaries included;
      "mask": bool (batch, words + 2), True at real positions (<S>, words, </S>);
      "lengths": int64 (batch,) = words + 2 per sentence.
    """

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__()
        self.options = check_options(options)
        self.char_cnn = CharCNN(self.options)
        self.lstm = BiLstm(self.options)
        mc = self.char_cnn.max_chars
        self.register_buffer("bos_ids", torch.tensor(_boundary_ids(BOS_CHAR, mc)), persistent=False)
        self.register_buffer("eos_ids", torch.tensor(_boundary_ids(EOS_CHAR, mc)), persistent=False)

    @property
    def output_dim(self) -> int:
        return 2 * int(self.options["lstm"]["projection_dim"])

    def add_boundaries(self, char_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(batch, words, chars) -> ids with <S> first and </S> after each last word
        (batch, words + 2, chars), and lengths (batch,)."""
        n_words = (char_ids > 0).any(dim=-1).sum(dim=1)
        batch, words, chars = char_ids.shape
        out = char_ids.new_zeros(batch, words + 2, chars)
        out[:, 1:-1] = char_ids
        out[:, 0] = self.bos_ids
        out[torch.arange(batch, device=out.device), n_words + 1] = self.eos_ids
        return out, n_words + 2

    def forward(self, char_ids: torch.Tensor) -> dict[str, torch.Tensor]:
        ids, lengths = self.add_boundaries(char_ids)
        tokens = self.char_cnn(ids)
        lstm_layers = self.lstm(tokens, lengths)
        layers = torch.stack([torch.cat([tokens, tokens], dim=-1), *lstm_layers])
        mask = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0) < lengths.unsqueeze(1)
        return {"layers": layers, "mask": mask, "lengths": lengths}


class ElmoEmbedder:
    """A loaded biLM ready for the stations.

    `word_layers(sentences)` gives one float32 array (n_layers + 1, n_words, 2*proj) per
    sentence: layer 0 the character-CNN token vector (duplicated to full width, as the
    original does), then each biLSTM layer, forward and backward halves concatenated.
    """

    def __init__(self, bilm: BiLM, device: torch.device, name: str, kind: str,
                 extra: dict[str, Any] | None = None, batch_size: int = 32) -> None:
        self.model = bilm.to(device).eval()
        self.device = device
        self.name, self.kind = name, kind
        self.extra = dict(extra or {})
        self.batch_size = batch_size
        self.options = bilm.options
        self.max_chars = bilm.char_cnn.max_chars

    @property
    def n_layers(self) -> int:
        return int(self.options["lstm"]["n_layers"]) + 1

    @property
    def dim(self) -> int:
        return self.model.output_dim

    @property
    def n_params(self) -> int:
        return int(sum(p.numel() for p in self.model.parameters()))

    def describe(self) -> str:
        """One line: what this ELMo is and how big."""
        lstm = self.options["lstm"]
        return (f"{self.name}: {self.kind}, {self.n_params / 1e6:.1f}M parameters, "
                f"{lstm['n_layers']} biLSTM layers (cell {lstm['dim']}, projection "
                f"{lstm['projection_dim']}), vectors of {self.dim}")

    def word_layers(self, sentences: list[list[str]]) -> list[np.ndarray]:
        """float32 (n_layers + 1, n_words, 2*proj) per sentence; an empty sentence gives
        (n_layers + 1, 0, 2*proj). Words longer than the character limit are truncated.
        Raises UserInputError for a sentence over MAX_WORDS words or non-string words."""
        if isinstance(sentences, (str, bytes)) or not isinstance(sentences, (list, tuple)):
            raise UserInputError("give a list of sentences, each a list of words")
        for s in sentences:
            if isinstance(s, (str, bytes)) or not all(isinstance(w, str) for w in s):
                raise UserInputError("each sentence must be a list of words (strings)")
            if len(s) > MAX_WORDS:
                raise UserInputError(f"a sentence has {len(s)} words; ELMo here reads at most "
                                     f"{MAX_WORDS} per sentence: split it into shorter sentences")
        out: list[np.ndarray | None] = [None] * len(sentences)
        todo = [i for i, s in enumerate(sentences) if len(s)]
        for i, s in enumerate(sentences):
            if not len(s):
                out[i] = np.zeros((self.n_layers, 0, self.dim), dtype=np.float32)
        todo.sort(key=lambda i: len(sentences[i]))
        with torch.inference_mode():
            for start in range(0, len(todo), self.batch_size):
                chunk = todo[start:start + self.batch_size]
                ids = batch_to_ids([sentences[i] for i in chunk], self.max_chars).to(self.device)
                layers = self.model(ids)["layers"].float().cpu().numpy()
                for row, i in enumerate(chunk):
                    n = len(sentences[i])
                    out[i] = np.ascontiguousarray(layers[:, row, 1:n + 1])
        return out  # type: ignore[return-value]
