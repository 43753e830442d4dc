"""Which model a run verifiably is, and where that came from (issue 49, item 7): what the paper values are
matched on.

A job's recorded model (``summary.json`` ``model``: the backend's identity; ``public_model``) is read back
as one of

* the model its server reported answering with (``generator=openai``: ``reported_model``), a snapshot;
* a hub id with the commit it loaded (``model_id`` + ``revision``);
* a local folder's claim: the hub id its ``config.json`` names (``_name_or_path``) or a
  ``generator.model_name`` label, checked against the folder's weights: their parameter count
  (the safetensors headers) against the size the claimed model's name states (``7B``, ``135M``). A claim
  the weights do not bear out, or that cannot be checked (no size in the name, no readable weights), is
  shown as "claimed by config.json, not verified" and gets no verdict;
* a packaged model (its package's hub id).

A ``generator.model_name`` label that contradicts what the server reported (or the hub id loaded) is
warned about and never matched: the job's model is then unknown to the paper values.
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rr.generation.base import looks_like_path

#: A model's size as its name states it: ``Qwen-7B-Chat`` (7e9), ``SmolLM2-135M`` (1.35e8), ``8x7B``.
_SIZE = re.compile(r"(?<![A-Za-z0-9.])(?:(\d+)x)?(\d+(?:\.\d+)?)([BM])(?![A-Za-z])", re.IGNORECASE)
#: How far a folder's parameter count may be from the size the claimed name states (names round:
#: Llama-3.1-8B has 8.03e9, Qwen-7B 7.7e9, Mistral-7B 7.24e9, Llama-3.2-1B 1.24e9).
SIZE_TOLERANCE = (0.6, 1.6)
NOT_VERIFIED = "claimed by config.json, not verified"


@dataclass(frozen=True)
class RunIdentity:
    """What a job's model is, for matching paper values.

    Attributes:
        model: The id to match on ("" where nothing may be matched: a contradicted label).
        source: Where it came from, for a person: ``hub meta-llama/Llama-3.1-8B-Instruct@<commit>``,
            ``server-reported gpt-4o-2024-08-06``, ``local folder /m/x: config.json claims Qwen/Qwen-7B-Chat
            (1.35e+08 parameters: not a 7B model)``.
        verified: False where the identity is a claim the weights do not bear out (no verdict beside it).
        warning: A label that contradicts the recorded model ("" if none).
    """

    model: str
    source: str
    verified: bool = True
    warning: str = ""


def stated_parameters(model: str) -> float | None:
    """The parameter count a model's name states (``Qwen/Qwen-7B-Chat`` -> 7e9), None where it states none."""
    name = model.rsplit("/", 1)[-1]
    found = _SIZE.findall(name)
    if not found:
        return None
    experts, number, unit = found[-1]
    return float(number) * (1e9 if unit.upper() == "B" else 1e6) * (int(experts) if experts else 1)


def folder_parameters(folder: str | Path) -> int | None:
    """The parameter count of a local model folder's safetensors weights (their headers' tensor shapes;
    None where the folder holds no readable ``*.safetensors``)."""
    files = sorted(Path(folder).glob("*.safetensors")) if Path(folder).is_dir() else []
    total = 0
    for f in files:
        try:
            with f.open("rb") as fh:
                (size,) = struct.unpack("<Q", fh.read(8))
                header = json.loads(fh.read(size))
        except (OSError, ValueError, struct.error):
            return None
        total += sum(math.prod(t["shape"]) for k, t in header.items() if k != "__metadata__")
    return total or None


def check_claim(folder: str, claimed: str) -> tuple[bool, str]:
    """(whether ``folder``'s weights bear out the claim that it is ``claimed``, why)."""
    stated = stated_parameters(claimed)
    have = folder_parameters(folder)
    if stated is None:
        return False, f"{claimed}'s name states no size to check the weights against"
    if have is None:
        return False, f"no safetensors weights in {folder} to count"
    low, high = SIZE_TOLERANCE
    if not low * stated <= have <= high * stated:
        return False, f"its weights hold {have:.3g} parameters, not a {stated:.3g}-parameter model"
    return True, f"its weights hold {have:.3g} parameters, as a {stated:.3g}-parameter model does"


def run_identity(model: Any, public: str, label: str | None) -> RunIdentity:
    """A job's :class:`RunIdentity` from its recorded backend identity (``summary.json`` ``model``: a
    :class:`rr.jobfolder.ModelRecord`, or its dict), its ``public_model`` and its config's
    ``generator.model_name`` (``label``)."""
    if not isinstance(model, dict):
        fields = {"model_id": getattr(model, "model_id", None), "revision": getattr(model, "revision", None)}
        model = {**(getattr(model, "extra", None) or {}), **fields}
    loaded = str(model.get("model_id") or "")
    revision = str(model.get("revision") or "")
    reported = str(model.get("reported_model") or "")
    if reported:
        if label and label != reported:
            return RunIdentity(
                "",
                f"server-reported {reported}",
                warning=f"generator.model_name={label} contradicts the model the server reported answering "
                f"with ({reported}): the job is matched to no paper value",
            )
        return RunIdentity(reported, f"server-reported {reported}")
    if loaded and looks_like_path(loaded):
        claimed = label or public
        if not claimed or claimed == loaded:
            return RunIdentity(loaded, f"local folder {loaded} ({revision or 'no digest'})")
        how = "generator.model_name" if label else "config.json"
        ok, why = check_claim(loaded, claimed)
        source = f"local folder {loaded}: {how} claims {claimed} ({why})"
        if not ok:
            return RunIdentity(claimed, f"{source}: {NOT_VERIFIED}", verified=False)
        return RunIdentity(claimed, source)
    if label and loaded and label != loaded and "/" in loaded:
        return RunIdentity(
            "",
            f"hub {loaded}@{revision}",
            warning=f"generator.model_name={label} contradicts the hub model loaded ({loaded}): the job is "
            "matched to no paper value",
        )
    if loaded and revision and "/" in loaded:
        return RunIdentity(public or loaded, f"hub {loaded}@{revision}")
    return RunIdentity(
        public or loaded, f"recorded {public or loaded}" + (f" ({revision})" if revision else "")
    )
