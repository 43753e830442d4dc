"""What a job's components share while it runs: the model under test, other models, counters.

Strategies, judges and perturbations receive one :class:`Runtime`. They call models only
through :class:`~rr.generation.client.LLM` objects obtained here, so every call goes through
the one generation cache, and they report every fallback, retry or dropped item with
:meth:`Runtime.count` (the counts land in ``summary.json`` under ``counters``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from rr.generation.base import Closable
from rr.generation.cache import GenerationCache
from rr.generation.client import LLM
from rr.hashing import content_hash


@dataclass
class Runtime:
    """Shared services of one job.

    Attributes:
        llm: The model under test (``cfg.generator``), cached and deduplicating.
        cache_dir: The job's cache root (``paths.cache_dir``).
        seed: The job's seed; derive every RNG with :func:`rr.hashing.rng_for` from it.
        job_id: The job's content hash (names this job's cache shards).
        show_progress: Whether long steps show progress bars.
        counters: Named counts reported in ``summary.json`` (``counters``).
    """

    llm: LLM
    cache_dir: Path
    seed: int = 0
    job_id: str = "job"
    show_progress: bool = True
    counters: Counter[str] = field(default_factory=Counter)
    _llms: dict[str, LLM] = field(default_factory=dict, repr=False)

    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to counter ``name`` (e.g. ``"s2a:no_valid_selection"``)."""
        self.counters[name] += n

    def llm_for(self, generator: Any = None) -> LLM:
        """An :class:`LLM` for a generator config node (``None``: the model under test).

        Other models (an LLM judge, a rewriting model) share the job's cache root; the same
        model identity is loaded once per job and then reused.
        """
        if generator is None:
            return self.llm
        from rr.config.instantiation import instantiate  # rr.config imports every component module

        gen = instantiate(generator) if isinstance(generator, Mapping | DictConfig) else generator
        key = content_hash(gen.identity(), 16)
        if key == content_hash(self.llm.identity, 16):
            return self.llm
        if key not in self._llms:
            cache = GenerationCache(self.cache_dir, gen.identity(), writer=self.job_id)
            self._llms[key] = self.llm.sibling(gen, cache)  # same kind (a planner plans) and settings
        return self._llms[key]

    def close(self) -> None:
        """Release what the job's backends hold beyond the job (data-parallel workers) and index
        the cache shards the job wrote (:meth:`~rr.generation.cache.GenerationCache.close`)."""
        for llm in self.all_llms:
            llm.cache.close()
            if isinstance(llm.generator, Closable):
                llm.generator.close()

    @property
    def all_llms(self) -> list[LLM]:
        """The model under test followed by every other model this job used."""
        return [self.llm, *self._llms.values()]
