"""Dataset and corpus protocols, shared sampling, and row-validation errors."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from rr.errors import ConfigError, UserError
from rr.hashing import content_hash_streamed, rng_for
from rr.records import Example, Passage


class DataError(UserError, ValueError):
    """A dataset or corpus row is malformed. The message names the file and the row.

    A :class:`~rr.errors.UserError`: the ``rr`` command prints it as one line.
    """


def numbered_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line of a UTF-8 text file (numbered from 1, newline removed).

    Raises:
        DataError: ``path:line`` of the first line that is not UTF-8.
        OSError: the file cannot be read.
    """
    for lineno, raw in enumerate(Path(path).read_bytes().split(b"\n"), 1):
        try:
            yield lineno, raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataError(f"{path}:{lineno}: not UTF-8 ({e.reason} at byte {e.start})") from None


@runtime_checkable
class Dataset(Protocol):
    """A source of :class:`Example` records.

    Implementations take ``n`` (sample size, ``None`` = all) and ``seed`` in their
    constructor and return the same examples, in the same order, on every call.
    """

    name: str

    def load(self) -> list[Example]:
        """Return the (sampled) examples. Raises :class:`DataError` on malformed rows."""
        ...

    def fingerprint(self) -> dict:
        """Everything that determines :meth:`load`'s output (source, split, n, seed)."""
        ...


@runtime_checkable
class FilteringDataset(Dataset, Protocol):
    """A dataset that drops examples by a rule (mini's answerable filter) and says how many."""

    #: After :meth:`load`: what was kept/dropped at each step (``summary.json`` ``dataset:<what>``).
    filter_counts: dict[str, int]


@runtime_checkable
class SampledDataset(Dataset, Protocol):
    """A dataset that samples ``n`` of the examples its source holds (:func:`sample_examples`) and
    says how many there were, so a job can print ``examples: 12 of 78``."""

    #: After :meth:`load`: how many examples there were to sample ``n`` from (after any filter, such as
    #: mini's answerable one); ``None`` before.
    available: int | None


class Corpus:
    """An in-memory passage collection with id lookup.

    Args:
        passages: The passages; ids must be unique.
        name: Short name used in cache keys and file names.
        source: Where the passages came from (a path or package), part of the fingerprint.
    """

    def __init__(self, passages: Iterable[Passage], name: str, source: str = "") -> None:
        self.passages: list[Passage] = list(passages)
        self.name = name
        self.source = source
        if self.passages and not any(p.text.strip() for p in self.passages):
            raise DataError(
                f"corpus {name!r} ({source or 'no source'}): all {len(self.passages)} passage texts are "
                "empty; check the corpus file and its text field (corpus.text_field)"
            )
        self._by_id: dict[str, Passage] = {}
        for i, p in enumerate(self.passages):
            if p.id in self._by_id:
                raise DataError(f"corpus {name!r}: duplicate passage id {p.id!r} at position {i}")
            self._by_id[p.id] = p
        # streamed: the same digest as content_hash of the lists, without their JSON in memory
        self._fingerprint = content_hash_streamed(
            {
                "name": name,
                "source": source,
                "ids": (p.id for p in self.passages),
                "text": content_hash_streamed(p.title + "\x00" + p.text for p in self.passages),
            },
            16,
        )

    def __len__(self) -> int:
        return len(self.passages)

    def __iter__(self) -> Iterator[Passage]:
        """The passages in corpus order (without it, ``for p in corpus`` would call
        ``__getitem__`` with 0, 1, ... as ids)."""
        return iter(self.passages)

    def __getitem__(self, passage_id: str) -> Passage:
        return self._by_id[passage_id]

    def __contains__(self, passage_id: object) -> bool:
        return passage_id in self._by_id

    def ids_with_title(self, titles: Iterable[str]) -> list[str]:
        """Ids of passages whose title is one of ``titles`` (gold passages for oracle settings)."""
        wanted = set(titles)
        return [p.id for p in self.passages if p.title in wanted]

    def fingerprint(self) -> str:
        """A 16-hex-digit hash of the corpus content (ids, titles, texts)."""
        return self._fingerprint


def sample_examples(examples: Sequence[Example], n: int | None, seed: int) -> list[Example]:
    """Sample ``n`` examples without replacement, reproducibly (``None`` or ``n >= len`` = all).

    The sample keeps the source order of the chosen examples, so growing ``n`` with the same
    seed does not reshuffle what was already there in the table.
    """
    if n is None or n >= len(examples):
        return list(examples)
    if n <= 0:
        raise ConfigError("dataset.n", f"must be a positive integer or null, got {n}")
    idx = rng_for("sample", seed, len(examples)).choice(len(examples), size=n, replace=False)
    return [examples[i] for i in sorted(idx.tolist())]
