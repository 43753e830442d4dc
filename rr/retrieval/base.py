"""The retriever protocol and the optional capabilities a retriever may declare.

Every retriever implements :class:`Retriever`. The pipeline asks for more only through the small
``runtime_checkable`` protocols below (``isinstance(r, ExampleAwareRetriever)``), never by probing
attribute names: a class has a capability when it implements its protocol's members.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rr.data.base import Corpus
from rr.records import Example, Hit

if TYPE_CHECKING:
    from rr.retrieval.dense_store import EmbeddingStore, EncodeReport


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


@runtime_checkable
class ExampleAwareRetriever(Retriever, Protocol):
    """A retriever that ranks by *example*, not by query text: gold-based oracles.

    The pipeline hands it the job's examples before indexing and asks it by query id
    (``<example id>`` or ``<example id>::<query variant tag>``) instead of by text.
    """

    def bind_examples(self, examples: Sequence[Example], corpus: Corpus) -> None:
        """Remember what each example's ranking is built from (its gold passages)."""
        ...

    def search_qids(self, qids: list[str], queries: list[str], k: int) -> list[list[Hit]]:
        """Top-``k`` hits per query id (``queries``: the texts, same order), as :meth:`Retriever.search`."""
        ...


@runtime_checkable
class RebuildsIndexes(Protocol):
    """A retriever with an on-disk index (or embeddings) that it checks and rebuilds when corrupt."""

    #: Cached indexes/embeddings found corrupt and rebuilt by this object (``summary.json`` ``index_rebuilds``).
    index_rebuilds: int


@runtime_checkable
class ApproximateSearch(Protocol):
    """A retriever that may search an approximate index (dense with a faiss factory spec)."""

    #: The index opened by the last ``index`` call: spec, parameters, recall@k vs exact search;
    #: ``None`` for exact search (``summary.json`` ``approximate_indexes``).
    index_info: dict[str, Any] | None


@runtime_checkable
class CorpusEncoder(Retriever, Protocol):
    """A retriever whose corpus embeddings can be computed ahead of jobs (``rr encode``, ``rr plan``)."""

    def set_device(self, device: str | None) -> None:
        """Encode on ``device`` (``cuda:1``; ``None``: the configured one) from the next model load."""
        ...

    def load_model(self) -> Any:
        """Load the encoder now (so that its loading time is not counted as encoding throughput)."""
        ...

    def store(self, corpus: Corpus, cache_dir: str) -> EmbeddingStore:
        """The on-disk embedding store of ``corpus`` for this encoder."""
        ...

    def encode_corpus(
        self, corpus: Corpus, cache_dir: str, shard: int = 0, shards: int = 1, progress: bool = True
    ) -> EncodeReport:
        """Encode shard ``shard`` of ``shards`` of ``corpus`` into the on-disk store under ``cache_dir``."""
        ...

    def storage_plan(self, corpus: Corpus, cache_dir: str | None) -> dict[str, Any]:
        """What embedding ``corpus`` costs and how much of it is already done, computing nothing."""
        ...
