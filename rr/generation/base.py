"""The generator protocol: a batch of exact prompt strings in, one completion per prompt out."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from rr.errors import ConfigError, require_non_negative, require_positive
from rr.records import GenerationParams, Request


@dataclass(frozen=True)
class Completion:
    """What a backend returns for one prompt."""

    text: str
    prompt_tokens: int
    completion_tokens: int


@runtime_checkable
class Generator(Protocol):
    """A text-generation backend.

    ``render`` turns a :class:`Request` into the exact prompt string the model sees (chat
    template applied); that string, :meth:`identity` and the decoding parameters make the
    cache key, so two backends serving the same model and revision share cache entries
    and two different models never do. ``render`` and ``count_tokens`` need only the
    tokenizer; the model itself is loaded on the first ``generate`` call, so a fully cached
    re-run never loads it.
    """

    name: str
    context_window: int

    def identity(self) -> dict:
        """Backend-independent model identity: ``{"model_id": ..., "revision": ...}``."""
        ...

    def default_params(self) -> GenerationParams:
        """Decoding parameters from the generator's config."""
        ...

    def render(self, request: Request) -> str:
        """The exact prompt string for ``request``."""
        ...

    def count_tokens(self, prompts: list[str]) -> list[int]:
        """Token count of each rendered prompt."""
        ...

    def generate(
        self, prompts: list[str], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        """One completion per prompt, same order. Batching is the backend's business.

        ``progress``, when given, is a tqdm-like bar; the backend calls ``progress.update(n)``
        as batches of ``n`` prompts finish.
        """
        ...


# Optional capabilities of a backend, asked for with isinstance (runtime_checkable), never by name.


@runtime_checkable
class Closable(Protocol):
    """A backend holding something beyond the job (worker processes, an engine) to release at its end."""

    def close(self) -> None:
        """Release it; called once when the job ends (also after a failure). Must be idempotent."""
        ...


@runtime_checkable
class CountingBackend(Protocol):
    """A backend counting its own events (retries, failures by cause) for ``summary.json`` ``counters``."""

    #: event name -> count; the pipeline reports them as ``<generator name>:<event>``.
    counters: dict[str, int]


@runtime_checkable
class PrefixCacheReporting(Protocol):
    """A backend with a prefix cache that reports its use (vLLM)."""

    def prefix_cache_stats(self) -> dict[str, int] | None:
        """Prompt tokens looked up in / found in the prefix cache so far (``None``: not available)."""
        ...


@runtime_checkable
class ChecksStrategies(Protocol):
    """A backend that reads only some strategies' prompts (the simulated reader) and says so early."""

    def check_strategies(self, strategies: Sequence[Any]) -> None:
        """Raise :class:`~rr.errors.ConfigError` (one line) for a strategy it cannot serve; called
        when the job builds its components, before any data or model loads."""
        ...


@dataclass(frozen=True)
class PlantedScores:
    """A planted score table: the job's score table repeated ``reps`` times, each copy scored by
    one draw of the reader's randomness (``example_id`` suffixed ``#<draw>``; ``refused`` too).

    The job's metric step (:func:`rr.summary.job_metrics`) turns it into the planted (true)
    values beside the measured ones, with the same code as the job's own metrics.
    """

    table: Any
    reps: int
    method: str
    params: dict


@runtime_checkable
class PlantsValues(Protocol):
    """A backend whose answers follow planted parameters, so a job's metrics have known true values."""

    def planted_scores(self, scores: Any, examples: Sequence[Any], corpus: Any) -> PlantedScores | None:
        """The planted score table of a finished job (``None``: none can be computed)."""
        ...


class ConfiguredDecoding:
    """Base of the backends: the decoding block of their config, and :meth:`default_params` from it.

    A backend's constructor declares its own parameters and hands the rest (``**kwargs``) to
    this one, so its config schema (:func:`rr.registry.init_parameters`) has these too.

    Args:
        max_new_tokens: Cao et al. (2025) Appendix B: at most 100 new tokens.
        temperature: 0 = greedy decoding (the papers' setting).
        top_p: Nucleus sampling when ``temperature > 0``.
        seed: Sampling seed (only used and keyed when sampling).
        batch_size: Prompts per backend call (see each backend: some schedule batches
            themselves and only accept it so that experiments setting it compose).
        model_name: The model's public name (a hub id, an API model), where the model setting does not
            say it: a local folder, a server's alias. Recorded as the job's ``public_model``
            (:func:`public_model`); not part of the job id (what the model *is* is its weights).

    Raises:
        ConfigError: A decoding setting is out of range (see :func:`check_decoding`).
    """

    max_new_tokens: int
    temperature: float
    top_p: float
    seed: int | None

    def __init__(
        self,
        max_new_tokens: int = 100,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        batch_size: int = 8,
        model_name: str | None = None,
    ) -> None:
        check_decoding(max_new_tokens, temperature, top_p, batch_size)
        self.model_name = model_name
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.batch_size = batch_size

    def default_params(self) -> GenerationParams:
        return GenerationParams(
            max_new_tokens=self.max_new_tokens, temperature=self.temperature, top_p=self.top_p, seed=self.seed
        )


def _hub_id_in_folder(folder: str) -> str | None:
    """The hub id a local model folder was saved from: its ``config.json``'s ``_name_or_path`` when that
    is a hub id (``org/name``), not another path."""
    import json
    from pathlib import Path

    config = Path(folder).expanduser() / "config.json"
    try:
        name = json.loads(config.read_text(encoding="utf-8")).get("_name_or_path")
    except (OSError, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) and name and not looks_like_path(name) and "/" in name else None


def public_model(generator: Any) -> str:
    """Which public model a generator serves, apart from where it was loaded from: its ``model_name``
    setting where given; else the model the API reported answering with (an OpenAI-compatible server's
    ``model`` field, e.g. the dated ``gpt-4o-2024-08-06``); else, for a local folder, the hub id in its
    ``config.json`` (``_name_or_path``); else its ``model`` setting (a hub id), or its identity's
    ``model_id`` (a packaged model's hub id, ``rr-simulated-reader``). The paper values match a job on this (and on ``model_id``)."""
    name = getattr(generator, "model_name", None)
    if name:
        return str(name)
    reported = getattr(generator, "reported_model", None)
    if reported:
        return str(reported)
    model = getattr(generator, "model", None)
    if isinstance(model, str) and looks_like_path(model):
        return _hub_id_in_folder(model) or model
    if isinstance(model, str) and model and not model.startswith("packaged:"):
        return model
    return str(generator.identity().get("model_id") or "")  # a packaged model's hub id, the simulated reader


def check_decoding(max_new_tokens: Any, temperature: Any, top_p: Any, batch_size: Any = 1) -> None:
    """Validate a backend's decoding settings when its config is instantiated (before any load).

    Raises:
        ConfigError: naming the key (``max_new_tokens``, ``temperature``, ``top_p``,
            ``batch_size``); :func:`rr.config.instantiation.instantiate` prefixes the node (``generator.``).
    """
    require_positive("max_new_tokens", max_new_tokens)
    require_non_negative("temperature", temperature)
    require_positive("batch_size", batch_size)
    if isinstance(top_p, bool) or not isinstance(top_p, int | float) or not 0 < top_p <= 1:
        raise ConfigError("top_p", f"must be in (0, 1], got {top_p!r}")


def looks_like_path(model: str) -> bool:
    """Whether a model name can only be a local path (absolute, ``./``, ``../``, ``~`` or more
    than one ``/``): Hugging Face hub ids are ``name`` or ``org/name``."""
    return model.startswith(("/", "./", "../", "~", ".\\")) or model.count("/") > 1 or "\\" in model


def check_local_model(model: str, gguf: bool = False) -> None:
    """Raise :class:`ConfigError` (key ``model``) if ``model`` is a local path that does not exist,
    or (unless ``gguf``: the backend runs GGUF files) a ``.gguf`` file or a folder holding only
    GGUF files, naming ``generator=llamacpp generator.model=<the file>``, which runs it.

    Without this check transformers reads a missing folder as a hub id and fails with a
    misleading "Repo id must be in the form ..." after loading nothing, and a GGUF-only folder with
    a traceback (``Unrecognized model``). A ``packaged:<alias>`` model passes
    (:func:`rr.generation.packaged.lookup` raises ``KeyError`` on an unknown alias).
    """
    import os
    from pathlib import Path

    from rr.generation import packaged

    if packaged.lookup(model) is not None:
        return
    path = Path(os.path.expanduser(model))
    if looks_like_path(model) and not path.exists():
        raise ConfigError(
            "model",
            f"{model} does not exist; give an existing local model folder, a Hugging Face id "
            "(org/name) or packaged:<alias>",
        )
    if gguf:
        return
    files = [path] if path.is_file() and path.suffix == ".gguf" else []
    if path.is_dir() and not (path / "config.json").exists():
        files = sorted(path.glob("*.gguf"))
    if files:
        what = "is a GGUF file" if path.is_file() else f"holds only GGUF files ({len(files)})"
        raise ConfigError(
            "model",
            f"{model} {what}, which this backend cannot load; run it with llama.cpp: "
            f"`generator=llamacpp generator.model={shlex.quote(str(files[0]))}`",
        )
