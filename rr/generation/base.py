"""The generator protocol: a batch of exact prompt strings in, one completion per prompt out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

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


class ConfiguredDecoding:
    """Mixin: :meth:`default_params` from the backend's ``max_new_tokens``, ``temperature``,
    ``top_p`` and ``seed`` attributes (set from its config)."""

    max_new_tokens: int
    temperature: float
    top_p: float
    seed: int | None

    def default_params(self) -> GenerationParams:
        return GenerationParams(
            max_new_tokens=self.max_new_tokens, temperature=self.temperature, top_p=self.top_p, seed=self.seed
        )
