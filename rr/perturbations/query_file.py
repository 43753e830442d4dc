"""Perturbed query sets as JSON-lines files, and the ``file`` query perturbation that reads them.

A query file holds one perturbed query per line, keyed by example id and variant tag::

    {"id": "q1", "variant": "typo@0.25#3", "question": "when does the cznnes film ...",
     "original": "when does the cannes film festival take place"}

``original`` is optional; when present it must equal the dataset's question for that id (a
file made from another version of the dataset is an error, not a silent mismatch). Files are
written by ``rr perturb-queries`` (any query perturbation, TextAttack's typos included) and consumed with ``perturbation/query=file
perturbation.query.path=...``, so the expensive or incompatible step runs once, elsewhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rr.atomic import atomic_write
from rr.data.base import DataError
from rr.data.jsonl import iter_jsonl, parse_id
from rr.perturbations.base import PerturbationTag, QueryVariant
from rr.records import Example, MetaKey
from rr.registry import component

if TYPE_CHECKING:
    from rr.runtime import Runtime


@dataclass(frozen=True)
class QueryRow:
    """One line of a query file (``line``: 1-based line number, for messages)."""

    id: str
    variant: str
    question: str
    original: str | None
    line: int


def read_query_file(path: str | Path) -> list[QueryRow]:
    """Read and validate a query file.

    Raises:
        DataError: ``path:line`` for a line that is not a JSON object, lacks ``id``, ``variant``
            or ``question``, has an empty or ``none`` variant or one that is not a
            :class:`~rr.perturbations.base.PerturbationTag`, an empty question, or repeats an
            ``(id, variant)`` pair; or when the file holds no row.
        FileNotFoundError: no such file.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"query file {path} does not exist (write one with rr perturb-queries)")
    rows: list[QueryRow] = []
    first: dict[tuple[str, str], int] = {}
    for lineno, obj in iter_jsonl(path):
        where = f"{path}:{lineno}"
        for field in ("id", "variant", "question"):
            if field not in obj:
                raise DataError(f"{where}: missing field {field!r} (fields: {sorted(obj)})")
        variant, question, original = obj["variant"], obj["question"], obj.get("original")
        if not isinstance(variant, str) or not variant.strip() or variant == "none":
            raise DataError(f"{where}: variant must be a non-empty tag other than 'none', got {variant!r}")
        if any(c.isspace() for c in variant):  # the tag is part of the query id in TREC runs
            raise DataError(f"{where}: variant {variant!r} contains whitespace; use e.g. '_' instead")
        try:  # the score table's parameter columns read it back
            PerturbationTag.parse(variant)
        except ValueError as e:
            raise DataError(f"{where}: variant is not a tag like 'formal#2' or 'typo@0.25#3': {e}") from e
        if not isinstance(question, str) or not question.strip():
            raise DataError(f"{where}: question must be a non-empty string, got {question!r}")
        if original is not None and not isinstance(original, str):
            raise DataError(f"{where}: original must be a string, got {type(original).__name__}")
        row = QueryRow(parse_id(obj["id"], where), variant, question, original, lineno)
        key = (row.id, row.variant)
        if key in first:
            raise DataError(f"{where}: duplicate (id, variant) {key} (first at line {first[key]})")
        first[key] = lineno
        rows.append(row)
    if not rows:
        raise DataError(f"{path}: no queries")
    return rows


def write_query_file(path: str | Path, variants: Iterable[QueryVariant], originals: dict[str, str]) -> int:
    """Write the perturbed variants (tag != ``none``) atomically; return how many were written.

    Args:
        path: The output ``.jsonl``.
        variants: Variants from a query perturbation; originals (tag ``none``) are skipped.
        originals: Example id -> original question (written as ``original``).
    """
    n = 0
    with atomic_write(path) as f:
        for v in variants:
            if v.tag == "none":
                continue
            row = {"id": v.example.id, "variant": v.tag, "question": v.example.question}
            if v.example.id in originals:
                row["original"] = originals[v.example.id]
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


@component("perturbation/query", "file")
class FileQueryPerturbation:
    """Query variants read from a query file (see the module docstring for its format).

    Args:
        path: The query file.
        include_original: Also emit each unperturbed query (tag ``none``).
        on_missing: What to do with a dataset example that has no row in the file: ``error``
            (default; the message lists them) or ``skip`` (only its original is used; counted
            as ``file:missing_example``).
        variants: Keep only these tags (``None`` = all), e.g. ``[typo@0.25#1, typo@0.25#2]``.

    Rows of ids that are not in the (sampled) dataset are ignored and counted
    (``file:rows_not_in_dataset``); a row whose question equals its original is dropped and
    counted (``file:unchanged``), never emitted as a perturbed variant.
    """

    name = "file"

    def __init__(
        self,
        path: str,
        include_original: bool = True,
        on_missing: str = "error",
        variants: list[str] | None = None,
    ) -> None:
        if on_missing not in ("error", "skip"):
            raise ValueError(f"perturbation.query.on_missing must be 'error' or 'skip', got {on_missing!r}")
        self.path = path
        self.include_original = include_original
        self.on_missing = on_missing
        self.keep = set(variants) if variants is not None else None

    def perturb(
        self, examples: Sequence[Example], count: Callable[[str, int], None] | None = None
    ) -> list[QueryVariant]:
        """The variants of ``examples`` from the file (``count(name, n)`` receives the counters)."""

        def tally(key: str, n: int) -> None:
            if count is not None and n:
                count(f"file:{key}", n)

        rows = read_query_file(self.path)
        by_id: dict[str, list[QueryRow]] = {}
        for r in rows:
            if self.keep is None or r.variant in self.keep:
                by_id.setdefault(r.id, []).append(r)
        known = {ex.id for ex in examples}
        tally("rows_not_in_dataset", sum(len(rs) for i, rs in by_id.items() if i not in known))
        missing = [ex.id for ex in examples if ex.id not in by_id]
        if missing and self.on_missing == "error":
            raise DataError(
                f"{self.path}: no perturbed query for {len(missing)} of {len(examples)} examples "
                f"(e.g. {missing[:5]}); regenerate the file for this dataset or set "
                "perturbation.query.on_missing=skip"
            )
        tally("missing_example", len(missing))
        out = [QueryVariant(ex, "none") for ex in examples] if self.include_original else []
        for ex in examples:
            for r in by_id.get(ex.id, []):
                if r.original is not None and r.original != ex.question:
                    raise DataError(
                        f"{self.path}:{r.line}: original {r.original!r} differs from the dataset's question "
                        f"{ex.question!r} for id {ex.id!r} (file made from another dataset version?)"
                    )
                if r.question == ex.question:
                    tally("unchanged", 1)
                    continue
                meta = {**ex.meta, MetaKey.ORIGINAL_QUESTION: ex.question}
                out.append(QueryVariant(replace(ex, question=r.question, meta=meta), r.variant))
        return out

    def variants(self, examples: Sequence[Example], rt: Runtime) -> list[QueryVariant]:
        return self.perturb(examples, rt.count)
