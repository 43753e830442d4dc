"""BM25 over an in-memory sparse index (``bm25s``), Lucene's scoring: the embedded default retriever.

With ``method="lucene"`` the score of a passage ``d`` for a query ``q`` is

    sum over query tokens t in d of  idf(t) * tf(t, d) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl)),
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5)),

which is Lucene's ``BM25Similarity`` (and so pyserini's): ``|d|`` counts the tokens left
after stop-word removal and ``avgdl`` is their mean over the corpus. Two differences to
Lucene remain: the tokenizer (a regex keeping runs of >= 2 word characters, lower-cased,
against Lucene's ``StandardAnalyzer``) and Lucene's one-byte document-length norm, which is
exact only up to ~24 tokens. A query token that occurs twice counts twice, as in Anserini's
bag-of-words queries.

Stemming uses PyStemmer (Snowball) when it is installed; it is not a dependency of ``rr``
(``pip install -c constraints.txt PyStemmer`` adds it). Without it the index is built
unstemmed, a warning says so, and :meth:`BM25Retriever.fingerprint` records
``stemmer: None``, so cached runs of the two set-ups never mix.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

import numpy as np

from rr.atomic import atomic_dir, discard
from rr.data.base import Corpus
from rr.hashing import content_hash
from rr.job_env import progress_enabled
from rr.records import Hit, Passage
from rr.registry import component

log = logging.getLogger(__name__)

#: Bumped when the on-disk layout of the cached index changes (part of the cache folder name).
_INDEX_LAYOUT = 1
#: bm25s's default token pattern (scikit-learn's CountVectorizer): runs of >= 2 word characters.
_TOKEN_PATTERN = r"(?u)\b\w\w+\b"
#: Queries at or above this count get a progress bar.
_PROGRESS_MIN_QUERIES = 1000


def index_text(passage: Passage) -> str:
    """The text a retriever indexes for ``passage``: ``"{title}\\n{text}"`` (just the text if untitled)."""
    return f"{passage.title}\n{passage.text}" if passage.title else passage.text


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest ``scores``, best first, ties broken by the lower index.

    Args:
        scores: 1-D array of scores, one per document.
        k: How many to return; clipped to ``len(scores)``.

    Returns:
        Integer array of ``min(k, len(scores))`` indices into ``scores``. The order is
        deterministic (it does not depend on ``argpartition``'s internal choices).
    """
    n = scores.shape[0]
    k = min(k, n)
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if k < n:
        threshold = np.partition(scores, n - k)[n - k]
        candidates = np.flatnonzero(scores >= threshold)
    else:
        candidates = np.arange(n)
    # lexsort: last key is primary -> by descending score, then ascending index.
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order[:k]]


def _stemmer_available() -> bool:
    return importlib.util.find_spec("Stemmer") is not None


_warned: set[str] = set()


def _warn_once(msg: str, *args: Any) -> None:
    if msg not in _warned:
        _warned.add(msg)
        log.warning(msg, *args)


@component("retriever", "bm25")
class BM25Retriever:
    """BM25 with Lucene's scoring (``bm25s``), indexing ``"{title}\\n{text}"`` of every passage.

    Args:
        k1: Term-frequency saturation (pyserini's default 0.9).
        b: Length normalisation (pyserini's default 0.4).
        method: bm25s scoring variant: ``lucene`` (default), ``robertson``, ``atire``,
            ``bm25l`` or ``bm25+``.
        stemmer: Snowball stemmer language (e.g. ``"english"``), or ``None`` for none. Only
            applied when PyStemmer is installed; otherwise ignored with a warning (see the
            module docstring).
        stopwords: Stop-word list for bm25s (``"en"`` is Lucene's 33-word English list), or
            ``None`` to keep every token.
        name: Name of this retriever in run files and the score table.

    The index is cached under ``<cache_dir>/bm25/<corpus fingerprint>-<params hash>/``
    (bm25s's own format), so a second :meth:`index` over the same corpus only loads it.
    """

    def __init__(
        self,
        k1: float = 0.9,
        b: float = 0.4,
        method: str = "lucene",
        stemmer: str | None = "english",
        stopwords: str | None = "en",
        name: str = "bm25",
    ) -> None:
        self.k1 = float(k1)
        self.b = float(b)
        self.method = method
        self.stopwords = stopwords
        self.name = name
        self.requested_stemmer = stemmer
        if stemmer is not None and not _stemmer_available():
            _warn_once(
                "bm25: PyStemmer is not installed, so stemmer=%r is ignored and the index is "
                "unstemmed (pip install -c constraints.txt PyStemmer to stem)",
                stemmer,
            )
            stemmer = None
        #: The stemmer actually applied (``None`` when PyStemmer is missing).
        self.stemmer = stemmer
        self._stem_fn: Any = None
        self._bm25: Any = None
        self._corpus: Corpus | None = None
        #: Folder of the index loaded or built by the last :meth:`index` call (``None`` if not cached).
        self.index_dir: Path | None = None
        #: Cached indexes found unloadable and rebuilt (reported in ``summary.json``).
        self.index_rebuilds = 0

    def fingerprint(self) -> dict:
        """Everything that determines the ranking: scoring parameters and the effective tokenizer."""
        return {
            "retriever": "bm25s",
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "stemmer": self.stemmer,
            "stopwords": self.stopwords,
            "token_pattern": _TOKEN_PATTERN,
        }

    def _stemmer(self) -> Any:
        if self.stemmer is None:
            return None
        if self._stem_fn is None:
            import Stemmer  # PyStemmer; presence checked in __init__

            self._stem_fn = Stemmer.Stemmer(self.stemmer)
        return self._stem_fn

    def _tokenize(self, texts: list[str], return_ids: bool, show_progress: bool) -> Any:
        import bm25s

        return bm25s.tokenize(
            texts,
            lower=True,
            token_pattern=_TOKEN_PATTERN,
            stopwords=self.stopwords or [],
            stemmer=self._stemmer(),
            return_ids=return_ids,
            show_progress=show_progress,
        )

    def _cache_path(self, corpus: Corpus, cache_dir: str) -> Path:
        import bm25s

        key = content_hash({**self.fingerprint(), "bm25s": bm25s.__version__, "layout": _INDEX_LAYOUT}, 12)
        return Path(cache_dir) / "bm25" / f"{corpus.fingerprint()}-{key}"

    def index(self, corpus: Corpus, cache_dir: str | None = None) -> None:
        """Build the index over ``corpus``, or load it from ``cache_dir`` when built before.

        Args:
            corpus: The passages; position ``i`` of ``corpus.passages`` is document ``i``.
            cache_dir: Root cache folder; ``None`` builds in memory without caching.

        The cache folder is written with :func:`rr.atomic.atomic_dir`, so a killed job never
        leaves a half index and concurrent jobs may build the same one. A cached index that
        does not load (damaged files) is derived data: warned about, counted in
        :attr:`index_rebuilds`, removed and rebuilt.
        """
        import bm25s

        if len(corpus) == 0:
            raise ValueError(f"bm25: corpus {corpus.name!r} is empty")
        self._corpus = corpus
        path = None if cache_dir is None else self._cache_path(corpus, cache_dir)
        self.index_dir = path
        if path is not None and (path / "params.index.json").exists():
            try:
                self._bm25 = bm25s.BM25.load(path, show_progress=False)
            except Exception as e:  # derived data: any failure to load means rebuild it
                self.index_rebuilds += 1
                log.warning(
                    "bm25: cached index %s does not load (%s: %s); rebuilding it", path, type(e).__name__, e
                )
                discard(path)
            else:
                log.info("bm25: loaded index of %s (%d passages) from %s", corpus.name, len(corpus), path)
                return
        log.info("bm25: indexing %s (%d passages)", corpus.name, len(corpus))
        bars = progress_enabled()
        tokens = self._tokenize([index_text(p) for p in corpus.passages], return_ids=True, show_progress=bars)
        model = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        model.index(tokens, show_progress=bars)
        self._bm25 = model
        if path is None:
            return
        with atomic_dir(path) as tmp:
            model.save(tmp, show_progress=False)
        log.info("bm25: cached index at %s", path)

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Top-``k`` passages per query, best first.

        Args:
            queries: Query texts; tokenized together in one pass.
            k: Hits per query; when ``k`` exceeds the corpus size every passage is returned.

        Returns:
            One list per query (same order) of ``min(k, len(corpus))`` hits with ranks
            ``1..min(k, len(corpus))``. Ties are broken by corpus position; a query with no
            indexed token gets the first passages of the corpus with score 0.

        Raises:
            RuntimeError: :meth:`index` was not called.
        """
        if self._bm25 is None or self._corpus is None:
            raise RuntimeError("bm25: call index(corpus) before search()")
        if k <= 0:
            raise ValueError(f"bm25: k must be positive, got {k}")
        if not queries:
            return []
        from tqdm.auto import tqdm

        ids = [p.id for p in self._corpus.passages]
        vocab = self._bm25.vocab_dict
        query_tokens = self._tokenize(list(queries), return_ids=False, show_progress=False)
        n_docs = len(ids)
        out: list[list[Hit]] = []
        for toks in tqdm(
            query_tokens,
            desc="bm25 search",
            disable=len(queries) < _PROGRESS_MIN_QUERIES or not progress_enabled(),
        ):
            token_ids = [vocab[t] for t in toks if t and t in vocab]
            if token_ids:
                scores = np.asarray(self._bm25.get_scores_from_ids(token_ids), dtype=np.float32)
            else:
                scores = np.zeros(n_docs, dtype=np.float32)
            top = top_k_indices(scores, k)
            out.append([Hit(ids[i], rank, float(scores[i])) for rank, i in enumerate(top.tolist(), 1)])
        return out
