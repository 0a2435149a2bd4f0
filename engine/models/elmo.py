"""ELMo biLMs (role `contextual_elmo`): the official AllenNLP weights when they sit in
`checkpoints/elmo/`, else the small biLM trained here (`checkpoints/trained/elmo-small/`).

Both load into the same native torch module (`engine.elmo.BiLM`) and are served as an
`engine.elmo.ElmoEmbedder`, whose `word_layers(sentences)` gives (3, n_words, 2*proj) per
sentence. The official files (options .json + weights .hdf5, e.g. AllenNLP's
elmo_2x1024_128_2048cnn_1xhighway_*) are not on the Hugging Face hub; download them from
AllenNLP's ELMo page and drop both into `checkpoints/elmo/`.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from engine import paths
from engine.elmo import BiLM, ElmoEmbedder
from engine.registry import ModelSpec, register
from engine.sources import Located, Source


def _load_official(located: Located, device: torch.device) -> ElmoEmbedder:
    from engine.elmo_weights import find_official_files, load_hdf5, read_options, size_name

    assert located.path is not None
    options_file, weight_file = find_official_files(located.path)
    options = read_options(options_file)
    bilm, unused = load_hdf5(options, weight_file)
    return ElmoEmbedder(bilm, device, name=f"ELMo {size_name(options)}",
                        kind="official AllenNLP weights",
                        extra={"options_file": options_file.name, "weight_file": weight_file.name,
                               "unused_tensors": unused})


def load_trained(folder: Path, device: torch.device | str = "cpu") -> ElmoEmbedder:
    """The biLM trained here: options.json + model.safetensors ("bilm.*" tensors), checked
    against the sha256 in manifest.json when located through the registry
    (`engine.sources.locate`). ValueError if a file is missing."""
    from safetensors.torch import load_file

    manifest_file, weights = folder / "manifest.json", folder / "model.safetensors"
    if not manifest_file.is_file() or not weights.is_file():
        raise ValueError(f"{folder} needs manifest.json and model.safetensors "
                         "(train with `python -m engine.train.elmo`)")
    manifest = json.loads(manifest_file.read_text())
    options = json.loads((folder / "options.json").read_text())
    bilm = BiLM(options)
    tensors = load_file(str(weights))
    bilm.load_state_dict({k[len("bilm."):]: v for k, v in tensors.items() if k.startswith("bilm.")}, strict=True)
    metrics = manifest.get("metrics", {})
    return ElmoEmbedder(bilm, torch.device(device), name="ELMo small (trained here)",
                        kind=f"trained here on {manifest.get('data', {}).get('train_words', '?')} words of "
                             "packaged English text",
                        extra={"forward_ppl": metrics.get("forward_ppl"),
                               "backward_ppl": metrics.get("backward_ppl"),
                               "minutes": manifest.get("minutes")})


def _load_trained(located: Located, device: torch.device) -> ElmoEmbedder:
    assert located.path is not None
    return load_trained(located.path, device)


register(ModelSpec(
    id="elmo-original",
    role="contextual_elmo",
    title="ELMo (official AllenNLP weights)",
    sources=(Source("checkpoints", "elmo"),),
    load=_load_official,
    aliases=("elmo-official",),
    note="The published ELMo biLM (Peters et al. 2018; small 13.6M, medium 28M or original 93.6M "
         "parameters, whichever options/hdf5 pair is in checkpoints/elmo/), run by our own torch "
         "port. Not on the hub: download the two files from AllenNLP and drop them there.",
))

def _trained_note() -> str:
    """The trained-here model's note, with its size and perplexities read from its manifest."""
    base = ("A small biLM of the ELMo architecture (char CNN of 512 filters, 1 highway layer, 2 biLSTM "
            "layers of 512 cells projected to 128, so 256-d vectors; about 3.0M parameters) trained here on "
            "~1.8M words of Wikipedia leads and the World English Bible")
    try:
        m = json.loads((paths.trained_dir() / "elmo-small" / "manifest.json").read_text())
        x = m["metrics"]
        return (f"{base} for {m['minutes']:.0f} minutes on a shared CPU ({m['steps']} steps). Held-out "
                f"perplexity forward {x['forward_ppl']:.0f} / backward {x['backward_ppl']:.0f} "
                f"(bigram {x['bigram_forward_ppl']:.0f}, unigram {x['unigram_forward_ppl']:.0f}). "
                "Far smaller and less trained than the official ELMo (93.6M parameters, 1B words).")
    except (OSError, ValueError, KeyError, TypeError):
        return f"{base}. Far smaller and less trained than the official ELMo (93.6M parameters, 1B words)."


register(ModelSpec(
    id="elmo-small-here",
    role="contextual_elmo",
    title="ELMo small (trained here)",
    sources=(Source("trained-here", "elmo-small"),),
    load=_load_trained,
    aliases=("elmo-small",),
    params=3_000_000,
    note=_trained_note(),
))
