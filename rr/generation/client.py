"""The one door to a model: render, key, deduplicate, serve from cache, batch the rest."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from tqdm.auto import tqdm

from rr.generation.base import Generator
from rr.generation.cache import GenerationCache
from rr.hashing import content_hash
from rr.records import Generation, Request

log = logging.getLogger(__name__)


@dataclass
class LLMStats:
    """Counters reported in ``summary.json``."""

    requests: int = 0
    unique_requests: int = 0
    cache_hits: int = 0
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    steps: list[dict] = field(default_factory=list)


class LLM:
    """Cached, deduplicating front of a :class:`Generator`.

    Every request of a step is rendered to its exact prompt, keyed by
    ``hash(model identity, prompt, decoding params)``, deduplicated, and looked up in the
    cache; only the misses reach the backend, sorted by prompt text so that prompts sharing
    a prefix are adjacent (vLLM's prefix cache reuses them), in chunks of ``flush_every``
    that are written to the cache as soon as they return (a killed job loses at most one chunk).

    Args:
        generator: The backend.
        cache: Its cache (must have been built with ``generator.identity()``).
        flush_every: Prompts per backend call / cache write.
        show_progress: One progress bar per step, over the prompts that reach the model.
    """

    #: Texts whose token counts :meth:`count_tokens_cached` keeps (oldest forgotten first).
    TOKEN_MEMO_SIZE = 1 << 18
    #: Window fitting settles which documents fit with exact counts (a planner may estimate).
    fit_exactly = True

    def __init__(
        self, generator: Generator, cache: GenerationCache, flush_every: int = 64, show_progress: bool = True
    ) -> None:
        self.generator = generator
        self.cache = cache
        self.flush_every = flush_every
        self.show_progress = show_progress
        self.identity = generator.identity()
        self.stats = LLMStats()
        self._token_memo: dict[int, int] = {}  # hash(text) -> token count

    def sibling(self, generator: Generator, cache: GenerationCache) -> LLM:
        """An LLM of the same kind and settings for another model (judges, rewriters)."""
        return LLM(generator, cache, flush_every=self.flush_every, show_progress=self.show_progress)

    def key(self, prompt: str, request: Request) -> str:
        return content_hash({"model": self.identity, "prompt": prompt, "params": request.params.key_fields()})

    def render(self, request: Request) -> str:
        return self.generator.render(request)

    def count_tokens(self, prompts: list[str]) -> list[int]:
        """Exact token count of each rendered prompt (the backend's tokenizer)."""
        return self.generator.count_tokens(prompts)

    def count_tokens_cached(self, texts: list[str]) -> list[int]:
        """:meth:`count_tokens`, remembered per text: for texts that recur, such as a document
        formatted for a prompt (the same in every k, order and strategy of an example).

        Keyed by Python's 64-bit string hash; at most :attr:`TOKEN_MEMO_SIZE` texts are kept.
        """
        memo = self._token_memo
        keys = [hash(t) for t in texts]
        found = {k: memo[k] for k in keys if k in memo}
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if todo:
            for k, n in zip(todo, self.generator.count_tokens(list(todo.values())), strict=True):
                found[k] = n
                self._remember_tokens(k, n)
        return [found[k] for k in keys]

    def count_tokens_keyed(self, key: Hashable, text: Callable[[], str]) -> int:
        """The token count of ``text()``, remembered under ``key``: ``text`` is only called for a
        new key. For texts that recur and cost more to build than to look up, such as a prompt
        rendered without its documents (the same for every order of an example's documents).
        Shares :meth:`count_tokens_cached`'s memo (keyed by the 64-bit hash of ``key``)."""
        h = hash(("keyed", key))
        if h not in self._token_memo:
            self._remember_tokens(h, self.generator.count_tokens([text()])[0])
        return self._token_memo[h]

    def _remember_tokens(self, h: int, n: int) -> None:
        """Store a count in the token memo, forgetting the oldest beyond :attr:`TOKEN_MEMO_SIZE`."""
        memo = self._token_memo
        memo[h] = n
        while len(memo) > self.TOKEN_MEMO_SIZE:
            del memo[next(iter(memo))]

    def note_prompt_tokens(self, request: Request, tokens: int, exact: bool) -> None:
        """Told by window fitting the token count of each request's prompt it built: exact, or
        its estimate (:class:`~rr.context.WindowEstimate`) when the prompt was not counted whole.
        Nothing to do here; the planner (:class:`~rr.plan.PlanningLLM`) uses it."""

    @property
    def context_window(self) -> int:
        return self.generator.context_window

    def generate(self, requests: list[Request], step: str = "generate") -> list[Generation]:
        """One :class:`Generation` per request, same order; identical requests are sent once."""
        t0 = time.perf_counter()
        prompts = [self.render(r) for r in requests]
        keys = [self.key(p, r) for p, r in zip(prompts, requests, strict=True)]
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        hits = {k for k in first if self.cache.get(k) is not None}
        misses = sorted((k for k in first if k not in hits), key=lambda k: prompts[first[k]])
        # Same params within a chunk: group misses by their decoding parameters.
        by_params: dict[str, list[str]] = {}
        for k in misses:
            by_params.setdefault(content_hash(requests[first[k]].params.key_fields(), 16), []).append(k)
        bar = tqdm(
            total=len(misses),
            desc=f"{step} [{self.generator.name}]",
            unit="prompt",
            disable=not self.show_progress or not misses,
        )
        for group in by_params.values():
            params = requests[first[group[0]]].params
            for start in range(0, len(group), self.flush_every):
                chunk = group[start : start + self.flush_every]
                completions = self.generator.generate(
                    [prompts[first[k]] for k in chunk], params, progress=bar
                )
                self.cache.put_many(zip(chunk, completions, strict=True))
        bar.close()
        out = []
        for k in keys:
            c = self.cache.get(k)
            assert c is not None
            out.append(
                Generation(
                    text=c.text,
                    key=k,
                    prompt_tokens=c.prompt_tokens,
                    completion_tokens=c.completion_tokens,
                    cached=k in hits,
                )
            )
        dt = time.perf_counter() - t0
        s = self.stats
        s.requests += len(requests)
        s.unique_requests += len(first)
        s.cache_hits += len(hits)
        s.model_calls += len(misses)
        fresh = [c for c in (self.cache.get(k) for k in misses) if c is not None]
        s.prompt_tokens += sum(c.prompt_tokens for c in fresh)
        s.completion_tokens += sum(c.completion_tokens for c in fresh)
        s.seconds += dt
        s.steps.append(
            {
                "step": step,
                "requests": len(requests),
                "unique": len(first),
                "cache_hits": len(hits),
                "model_calls": len(misses),
                "seconds": round(dt, 3),
            }
        )
        log.info(
            "%s: %d requests, %d unique, %d cached, %d model calls (%.1fs)",
            step,
            len(requests),
            len(first),
            len(hits),
            len(misses),
            dt,
        )
        return out
