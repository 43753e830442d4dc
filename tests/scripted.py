"""A scripted generator for testing strategies and judges without a model.

It answers each prompt with the first rule whose pattern occurs in the prompt and records every
prompt it was sent, so tests can assert what the model saw and how many calls were made. Real
caching and deduplication still happen in :class:`rr.generation.client.LLM`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rr.generation.base import Completion
from rr.generation.cache import GenerationCache
from rr.generation.client import LLM
from rr.records import GenerationParams, Request
from rr.runtime import Runtime


class ScriptedGenerator:
    """Generator whose output is chosen by substring rules over the prompt."""

    def __init__(
        self,
        rules: list[tuple[str, str]] | None = None,
        default: str = "Answer: unknown",
        model_id: str = "scripted",
        context_window: int = 100_000,
        max_new_tokens: int = 16,
    ) -> None:
        self.rules = list(rules or [])
        self.default = default
        self.name = model_id
        self.model_id = model_id
        self.context_window = context_window
        self.max_new_tokens = max_new_tokens
        self.sent: list[str] = []
        self.sent_params: list[GenerationParams] = []

    def identity(self) -> dict:
        return {"model_id": self.model_id, "revision": "test"}

    def default_params(self) -> GenerationParams:
        return GenerationParams(max_new_tokens=self.max_new_tokens)

    def render(self, request: Request) -> str:
        return "\n".join(c for _, c in request.messages)

    def count_tokens(self, prompts: list[str]) -> list[int]:
        return [len(p.split()) for p in prompts]

    def respond(self, prompt: str, params: GenerationParams) -> str:
        for pattern, text in self.rules:
            if pattern in prompt:
                return text
        return self.default

    def generate(
        self, prompts: list[str], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        self.sent.extend(prompts)
        self.sent_params.extend([params] * len(prompts))
        return [Completion(self.respond(p, params), len(p.split()), 3) for p in prompts]


def scripted_runtime(gen: Any, tmp_path: Path) -> Runtime:
    """A Runtime whose model under test is ``gen``, with a real cache under ``tmp_path``."""
    cache = GenerationCache(tmp_path, gen.identity(), writer="test")
    return Runtime(LLM(gen, cache, show_progress=False), tmp_path, job_id="test", show_progress=False)
