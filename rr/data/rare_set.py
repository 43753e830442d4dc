"""RARE-Set (Zeng et al. 2025, "RARE: Retrieval-Aware Robustness Evaluation", §4) as a dataset and a corpus.

RARE-Set's unit is a tuple "(question, answer, ground truth chunks)" (§1) generated from SEC 10-K
filings, OECD economic surveys and HUD CAPER reports (§4), over three domains and four query
patterns (Table 2: single-hop, chained, star-shaped and inverted-star-shaped multi-hop). The paper
prints no file layout, so rr reads the tuple as one JSON object per line:

* ``id`` (string or integer; optional: the line number when absent);
* ``question`` (string);
* ``answer``: a string, or a list of acceptable strings (RARE's answers are one short string);
* ``golden_chunks``: the non-empty list of ground-truth chunks (strings) the question was made from;
* ``domain``: ``finance``, ``economics`` or ``policy``;
* ``hop_type``: ``single``, ``chained``, ``star`` or ``inverted_star``.

Other fields are left alone. The golden chunks go to ``Example.meta`` as the example's positive pool
(:data:`rr.records.MetaKey.POSITIVE`): RARE's d_gt, which ``perturbation/doc=ground_truth``,
``delete_answer`` and ``backtranslate`` perturb (:mod:`rr.perturbations.rare`); ``domain`` and
``hop_type`` go to ``Example.meta`` under those names (§6.3 breaks robustness down by them).
:class:`RARESetCorpus` makes the golden chunks of the whole file a retrievable corpus (ids
``<question id>/pos/<i>``, the ids its d_gt gets): a stand-in for the paper's chunked 527 documents, which a corpus file of
their chunks replaces (``corpus=jsonl``).

Every malformed row raises :class:`~rr.data.base.DataError` whose message starts with ``path:line``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rr.data.base import Corpus, DataError, sample_examples
from rr.data.jsonl import file_sha256, parse_answers, parse_id, parse_question, read_examples
from rr.records import Example, MetaKey, Passage
from rr.registry import component

#: RARE-Set's domains (§4) and query patterns (Table 2), as the ``domain`` / ``hop_type`` fields write them.
DOMAINS = ("finance", "economics", "policy")
HOP_TYPES = ("single", "chained", "star", "inverted_star")
FIELDS = ("question", "answer", "golden_chunks", "domain", "hop_type")


def _choice(row: dict[str, Any], field: str, allowed: tuple[str, ...], where: str) -> str:
    value = row[field]
    if value not in allowed:
        raise DataError(f"{where}: {field!r} must be one of {', '.join(allowed)}, got {value!r:.60}")
    return str(value)


def parse_rare_set_row(row: dict[str, Any], where: str, lineno: int) -> Example:
    """One RARE-Set row as an :class:`Example` (see the module docstring for the format).

    Raises:
        DataError: a missing or malformed field (message starts with ``where``).
    """
    missing = [f for f in FIELDS if f not in row]
    if missing:
        raise DataError(f"{where}: missing field(s) {missing} (RARE-Set rows hold {', '.join(FIELDS)})")
    chunks = row["golden_chunks"]
    if (
        not isinstance(chunks, list)
        or not chunks
        or any(not isinstance(c, str) or not c.strip() for c in chunks)
    ):
        raise DataError(
            f"{where}: 'golden_chunks' must be a non-empty list of non-empty strings, got {chunks!r:.120}"
        )
    return Example(
        id=parse_id(row.get("id", lineno), where),
        question=parse_question(row["question"], where),
        answers=parse_answers(row["answer"], where),
        meta={
            MetaKey.SOURCE: "rare_set",
            MetaKey.POSITIVE: list(chunks),
            "domain": _choice(row, "domain", DOMAINS, where),
            "hop_type": _choice(row, "hop_type", HOP_TYPES, where),
        },
    )


def read_rare_set(path: str | Path) -> list[Example]:
    """Every row of a RARE-Set file as an :class:`Example`, in file order (ids must be unique)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"RARE-Set file not found: {path} (one JSON object per line: {', '.join(FIELDS)})"
        )
    return read_examples(path, parse_rare_set_row)


@component("dataset", "rare_set")
class RARESetDataset:
    """RARE-Set's questions with their golden chunks (module docstring).

    Args:
        path: The RARE-Set JSON-lines file.
        domains: Keep only these domains (``None`` = all three).
        hop_types: Keep only these query patterns (``None`` = all four).
        n: Number of examples to sample after the filters (``None`` = all).
        seed: Sampling seed.
        name: Value of the score table's ``dataset`` column (the paper values' ``rare_set``).
    """

    def __init__(
        self,
        path: str,
        domains: list[str] | None = None,
        hop_types: list[str] | None = None,
        n: int | None = None,
        seed: int = 0,
        name: str = "rare_set",
    ) -> None:
        for what, chosen, allowed in (("domains", domains, DOMAINS), ("hop_types", hop_types, HOP_TYPES)):
            bad = [v for v in chosen or [] if v not in allowed]
            if bad:
                raise ValueError(f"dataset.{what}: {bad} not among {', '.join(allowed)}")
        self.path = path
        self.domains = list(domains) if domains else None
        self.hop_types = list(hop_types) if hop_types else None
        self.n = n
        self.seed = seed
        self.available: int | None = None  # after load: examples there were to sample n from
        self.name = name

    def fingerprint(self) -> dict:
        return {
            "name": self.name,
            "path": str(self.path),
            "sha256": file_sha256(self.path),
            "domains": self.domains,
            "hop_types": self.hop_types,
            "n": self.n,
            "seed": self.seed,
        }

    def load(self) -> list[Example]:
        population = [
            ex
            for ex in read_rare_set(self.path)
            if (self.domains is None or ex.meta["domain"] in self.domains)
            and (self.hop_types is None or ex.meta["hop_type"] in self.hop_types)
        ]
        self.available = len(population)
        return sample_examples(population, self.n, self.seed)


@component("corpus", "rare_set")
class RARESetCorpus:
    """The golden chunks of a RARE-Set file as a retrievable corpus (ids ``<question id>/pos/<i>``, the ids its d_gt gets;
    a chunk several questions share is indexed once, under its first id; titles empty).

    Args:
        path: The RARE-Set file (usually ``${dataset.path}``).
        name: Corpus name used in cache keys and file names.
    """

    def __init__(self, path: str, name: str = "rare_set") -> None:
        self.path = path
        self.name = name

    def load(self) -> Corpus:
        passages: list[Passage] = []
        seen: set[str] = set()
        for ex in read_rare_set(self.path):
            for i, text in enumerate(ex.meta[MetaKey.POSITIVE]):
                if text not in seen:
                    seen.add(text)
                    passages.append(Passage(id=f"{ex.id}/pos/{i}", text=text, title=""))
        if not passages:
            raise DataError(f"{self.path}: no golden chunks")
        return Corpus(passages, name=self.name, source=f"rare_set:{Path(self.path).name}")
