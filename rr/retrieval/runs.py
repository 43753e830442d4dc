"""TREC run files and the retrieve-once cache.

Each (corpus, retriever, query set) is retrieved once at the largest k of the grid and
stored as a standard TREC run file (``qid Q0 docid rank score tag``), readable by
``trec_eval``, ``ir_measures`` and pyserini; every k and order is a slice of it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from rr.data.base import Corpus
from rr.hashing import content_hash
from rr.records import Hit
from rr.retrieval.base import Retriever

log = logging.getLogger(__name__)


def write_trec_run(path: str | Path, runs: dict[str, list[Hit]], tag: str) -> None:
    """Write ``{qid: hits}`` atomically (temp file + rename) so a killed job leaves no half file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + f".tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as f:
        for qid, hits in runs.items():
            for h in hits:
                f.write(f"{qid} Q0 {h.passage_id} {h.rank} {h.score:.6f} {tag}\n")
    os.replace(tmp, path)


def read_trec_run(path: str | Path) -> dict[str, list[Hit]]:
    """Read a TREC run file into ``{qid: hits sorted by rank}``.

    Raises:
        ValueError: a line does not have the six TREC fields; the message names the line.
    """
    runs: dict[str, list[Hit]] = {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 6:
                raise ValueError(f"{path}:{lineno}: expected 'qid Q0 docid rank score tag', got {line!r}")
            qid, _, docid, rank, score, _ = parts
            runs.setdefault(qid, []).append(Hit(docid, int(rank), float(score)))
    for hits in runs.values():
        hits.sort(key=lambda h: h.rank)
    return runs


class RunCache:
    """Retrieve once at ``max(k)``, store as a TREC run, and serve every smaller k from it.

    Args:
        cache_dir: Folder for run files (``<cache_dir>/runs/``).

    The file name is a hash of the corpus fingerprint, the retriever fingerprint and the
    exact query texts, so a changed query (a perturbation) or corpus gets its own run,
    and a run retrieved at depth 100 also serves a later request for depth 50.
    """

    def __init__(self, cache_dir: str | Path) -> None:
        self.dir = Path(cache_dir) / "runs"
        self.hits = 0
        self.misses = 0

    def _path(
        self, retriever: Retriever, corpus: Corpus, qids: Sequence[str], queries: Sequence[str]
    ) -> Path:
        key = content_hash(
            {
                "corpus": corpus.fingerprint(),
                "retriever": retriever.fingerprint(),
                "queries": [[q, t] for q, t in zip(qids, queries, strict=True)],
            },
            20,
        )
        return self.dir / f"{retriever.name}-{corpus.name}-{key}.trec"

    def retrieve(
        self,
        retriever: Retriever,
        corpus: Corpus,
        qids: Sequence[str],
        queries: Sequence[str],
        depth: int,
        index_dir: str | Path | None = None,
    ) -> dict[str, list[Hit]]:
        """Hits for every query at ``depth``, from the cached run when it is deep enough.

        ``index`` is only called on the retriever when the run must be computed.
        """
        path = self._path(retriever, corpus, qids, queries)
        if path.exists():
            runs = read_trec_run(path)
            stored = min((len(h) for h in runs.values()), default=0)
            # A query with fewer hits than asked means the corpus ran out, not a shallow run.
            if set(runs) == set(qids) and (stored >= depth or stored == len(corpus)):
                self.hits += 1
                log.info("retrieval: read %s (%d queries) from %s", retriever.name, len(qids), path)
                return {q: runs[q][:depth] for q in qids}
        self.misses += 1
        retriever.index(corpus, None if index_dir is None else str(index_dir))
        search_qids = getattr(retriever, "search_qids", None)  # retrievers keyed by example (oracle)
        results = (
            search_qids(list(qids), list(queries), depth)
            if search_qids
            else retriever.search(list(queries), depth)
        )
        runs = dict(zip(qids, results, strict=True))
        write_trec_run(path, runs, tag=retriever.name)
        return runs
