"""ELMo biLMs (role `contextual_elmo`): official weights or a small one trained here."""

from __future__ import annotations

import torch

from engine.registry import ModelSpec, register
from engine.sources import Located, Source


def _load(located: Located, device: torch.device):
    raise RuntimeError("the ELMo loader is not written yet (issue 5)")


register(ModelSpec(
    id="elmo-small-here",
    role="contextual_elmo",
    title="ELMo (small, trained here)",
    sources=(Source("checkpoints", "elmo"), Source("trained-here", "elmo-small")),
    load=_load,
    note="A small biLM of the ELMo architecture trained here on packaged English text.",
))
