"""TREC run files and the retrieve-once cache.

Each (corpus, retriever, query set) is retrieved once at the largest k of the grid and
stored as a standard TREC run file (``qid Q0 docid rank score tag``), readable by
``trec_eval``, ``ir_measures`` and pyserini; every k and order is a slice of it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from rr.atomic import atomic_write
from rr.data.base import Corpus, DataError, numbered_lines
from rr.hashing import content_hash
from rr.records import Hit
from rr.retrieval.base import ApproximateSearch, ExampleAwareRetriever, Retriever

log = logging.getLogger(__name__)


def _check_token(value: str, what: str, path: Path) -> None:
    if not value or any(c.isspace() for c in value):
        raise ValueError(
            f"{path}: {what} {value!r} is empty or contains whitespace; a TREC run cannot hold it "
            "(dataset and corpus loaders reject such ids)"
        )


def write_trec_run(path: str | Path, runs: dict[str, list[Hit]], tag: str) -> None:
    """Write ``{qid: hits}`` atomically (:func:`rr.atomic.atomic_write`): no half file, ever.

    Raises:
        ValueError: a query id, passage id or the tag is empty or contains whitespace (it
            would split into extra fields and poison every later read of the run).
    """
    path = Path(path)
    _check_token(tag, "tag", path)
    for qid, hits in runs.items():
        _check_token(qid, "query id", path)
        for h in hits:
            _check_token(h.passage_id, "passage id", path)
    with atomic_write(path) as f:
        for qid, hits in runs.items():
            for h in hits:
                f.write(f"{qid} Q0 {h.passage_id} {h.rank} {h.score:.6f} {tag}\n")


def read_trec_run(path: str | Path) -> dict[str, list[Hit]]:
    """Read a TREC run file into ``{qid: hits sorted by rank}``.

    Any content gives either the runs or a :class:`~rr.data.base.DataError` naming the file
    and line (a line that is not UTF-8, lacks the six fields ``qid Q0 docid rank score tag``,
    or has a non-integer rank or non-numeric score); never another exception. Blank lines
    are skipped.

    Why not ``ir_measures.read_trec_run``: it yields ``ScoredDoc(query_id, doc_id, score)``
    without the rank, and rr orders hits by their rank (scores tie; :func:`run_problem` checks
    ranks ``1..n``); a malformed line raises a bare ``ValueError`` (``not enough values to
    unpack``) or ``UnicodeDecodeError`` naming neither file nor line; a ``pathlib.Path``
    yields no hits at all, silently. Wrapping it would leave all of the above to this function.

    Raises:
        DataError: as above (a :class:`ValueError`).
        OSError: the file cannot be read.
    """
    runs: dict[str, list[Hit]] = {}
    for lineno, line in numbered_lines(path):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise DataError(f"{path}:{lineno}: expected 'qid Q0 docid rank score tag', got {line[:200]!r}")
        qid, _, docid, rank, score, _ = parts
        try:
            hit = Hit(docid, int(rank), float(score))
        except ValueError:
            raise DataError(
                f"{path}:{lineno}: rank {rank[:50]!r} or score {score[:50]!r} is not a number"
            ) from None
        runs.setdefault(qid, []).append(hit)
    for hits in runs.values():
        hits.sort(key=lambda h: h.rank)
    return runs


def run_problem(runs: dict[str, list[Hit]], qids: Sequence[str], corpus: Corpus) -> str | None:
    """Why a cached run cannot be what :class:`RunCache` wrote for ``qids`` over ``corpus``
    (``None`` when it can): a query missing or unexpected, ranks not ``1..n``, a docid repeated or not in
    the corpus."""
    missing = [q for q in qids if q not in runs]
    if missing:
        return f"{len(missing)} of {len(qids)} queries missing (e.g. {missing[0]!r})"
    extra = set(runs).difference(qids)
    if extra:
        return f"{len(extra)} unexpected queries (e.g. {min(extra)!r})"
    for qid, hits in runs.items():
        if [h.rank for h in hits] != list(range(1, len(hits) + 1)):
            return f"query {qid!r}: ranks are not 1..{len(hits)}"
        ids = [h.passage_id for h in hits]
        if len(set(ids)) != len(ids):
            return f"query {qid!r}: a passage is listed twice"
        unknown = next((d for d in ids if d not in corpus), None)
        if unknown is not None:
            return f"query {qid!r}: passage {unknown!r} is not in corpus {corpus.name!r}"
    return None


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
        #: Cached runs found corrupt (unreadable, cut, wrong docids), warned about and recomputed.
        self.rebuilt = 0

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

        ``index`` is only called on the retriever when the run must be computed. A cached run
        that is corrupt (see :meth:`_read_cached`) is derived data: it is warned about,
        counted in :attr:`rebuilt` and recomputed, never fatal.
        """
        path = self._path(retriever, corpus, qids, queries)
        runs = self._read_cached(path, qids, corpus)
        if runs is not None:
            stored = min((len(runs[q]) for q in qids), default=0)
            # A query with fewer hits than asked means the corpus ran out, not a shallow run.
            if stored >= depth or stored == len(corpus):
                self.hits += 1
                log.info("retrieval: read %s (%d queries) from %s", retriever.name, len(qids), path)
                _restore_index_info(retriever, path)
                return {q: runs[q][:depth] for q in qids}
        self.misses += 1
        retriever.index(corpus, None if index_dir is None else str(index_dir))
        results = (
            retriever.search_qids(list(qids), list(queries), depth)
            if isinstance(retriever, ExampleAwareRetriever)  # keyed by example (oracle)
            else retriever.search(list(queries), depth)
        )
        runs = dict(zip(qids, results, strict=True))
        write_trec_run(path, runs, tag=retriever.name)
        if isinstance(retriever, ApproximateSearch) and retriever.index_info:
            with atomic_write(_index_info_path(path)) as f:
                json.dump(retriever.index_info, f, indent=1, sort_keys=True)
        return runs

    def _read_cached(self, path: Path, qids: Sequence[str], corpus: Corpus) -> dict[str, list[Hit]] | None:
        """The cached run at ``path``, or ``None`` when there is none or it is corrupt (a line
        cut or not UTF-8, a non-integer rank, a query missing, a docid not in the corpus):
        then a warning names the file and the reason and :attr:`rebuilt` counts it."""
        try:
            runs = read_trec_run(path)
        except FileNotFoundError:
            return None
        except (OSError, DataError) as e:
            problem: str | None = str(e)
        else:
            problem = run_problem(runs, qids, corpus)
        if problem is None:
            return runs
        self.rebuilt += 1
        log.warning("retrieval: cached run %s is corrupt (%s); recomputing it", path, problem)
        return None


def _index_info_path(run: Path) -> Path:
    """Beside a run searched through an approximate index: that index's info and its recall on
    the run's own queries, so a job that reads the run from the cache reports them too."""
    return run.with_name(run.name + ".index.json")


def _restore_index_info(retriever: Retriever, run: Path) -> None:
    if not isinstance(retriever, ApproximateSearch):
        return
    try:
        retriever.index_info = json.loads(_index_info_path(run).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, ValueError) as e:  # derived data: report nothing rather than fail the job
        log.warning("retrieval: %s is unreadable (%s); its recall is not reported", _index_info_path(run), e)
