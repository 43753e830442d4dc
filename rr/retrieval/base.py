"""The retriever protocol."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from rr.data.base import Corpus
from rr.records import Hit


@runtime_checkable
class Retriever(Protocol):
    """Ranks corpus passages for a batch of queries.

    Lifecycle: ``index(corpus)`` once (implementations may cache their index on disk
    under ``cache_dir``), then any number of ``search`` calls.
    """

    name: str

    def index(self, corpus: Corpus, cache_dir: str | None = None) -> None:
        """Build (or load from ``cache_dir``) the index over ``corpus``."""
        ...

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Top-``k`` hits per query, best first, ranks 1..k. One list per query, same order."""
        ...

    def fingerprint(self) -> dict:
        """Everything that determines the ranking (model name, parameters), for cache keys."""
        ...
