"""Relevance judgments (qrels): read TREC / BEIR files, derive them from gold titles, write them.

qrels map a query id to ``{passage id: relevance}``. Query ids are example ids; a perturbed
query's run id (``<example id>::<tag>``, see :func:`rr.pipeline.variant_qid`) is judged with
its example's qrels (:func:`base_qid`).

Sources, in order of preference for an example: a qrels file (TREC ``qid 0 docid rel`` or
BEIR ``query-id<TAB>corpus-id<TAB>score`` with a header), ``meta["gold_ids"]`` (passage ids), or
``meta["gold_titles"]`` mapped to every corpus passage with that title (the mini dataset: the
FanOutQA evidence pages in the bundled Wikipedia corpus).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rr.atomic import atomic_write
from rr.data.base import Corpus, DataError, numbered_lines
from rr.records import Example, MetaKey

Qrels = dict[str, dict[str, int]]


def base_qid(qid: str) -> str:
    """The example id of a run's query id (``q1::typo@0.1#2`` -> ``q1``)."""
    return qid.split("::", 1)[0]


def read_qrels(path: str | Path) -> Qrels:
    """Read TREC qrels (4 whitespace-separated fields) or BEIR qrels (3 tab-separated, header).

    A relevance may be written as a float (``1.0``; read as ``int(float(rel))``). Why not
    ``ir_measures.read_trec_qrels``: it reads only the 4-field TREC form, rejects ``1.0``, and
    a malformed line raises a bare ``ValueError`` naming neither file nor line.

    Raises:
        DataError: ``path:line`` for a line of another shape or a non-integer relevance.
    """
    qrels: Qrels = {}
    for lineno, line in numbered_lines(path):
        parts = line.split()
        if not parts:
            continue
        if lineno == 1 and parts[:2] == ["query-id", "corpus-id"]:
            continue
        if len(parts) == 4:
            qid, _, docid, rel = parts
        elif len(parts) == 3:
            qid, docid, rel = parts
        else:
            raise DataError(
                f"{path}:{lineno}: expected 'qid 0 docid rel' or 'qid<TAB>docid<TAB>rel', got {line!r}"
            )
        try:
            qrels.setdefault(qid, {})[docid] = int(float(rel))
        except ValueError as e:
            raise DataError(f"{path}:{lineno}: relevance {rel!r} is not a number") from e
    return qrels


def write_qrels(path: str | Path, qrels: Qrels) -> None:
    """Write TREC qrels atomically (``qid 0 docid rel`` per line)."""
    with atomic_write(path) as f:
        for qid, docs in qrels.items():
            for docid, rel in docs.items():
                f.write(f"{qid} 0 {docid} {rel}\n")


def gold_passage_ids(example: Example, corpus: Corpus) -> list[str] | None:
    """An example's gold passage ids from its meta (``gold_ids``, else ``gold_titles``); ``None``
    when it has neither. Ids not in the corpus are left out."""
    if example.meta.get(MetaKey.GOLD_IDS) is not None:
        return [str(i) for i in example.meta[MetaKey.GOLD_IDS] if str(i) in corpus]
    if example.meta.get(MetaKey.GOLD_TITLES) is not None:
        return corpus.ids_with_title(example.meta[MetaKey.GOLD_TITLES])
    return None


def qrels_from_examples(examples: Sequence[Example], corpus: Corpus) -> Qrels:
    """Qrels (relevance 1) for every example that carries gold ids or titles in its meta."""
    out: Qrels = {}
    for ex in examples:
        ids = gold_passage_ids(ex, corpus)
        if ids:
            out[ex.id] = dict.fromkeys(ids, 1)
    return out
