"""Dense retrieval over a pyserini prebuilt FAISS index (e.g. DPR over the 21 M-passage Wikipedia).

Needs the ``pyserini`` extra (``pip install -c constraints.txt -e .[pyserini]``): pyserini's
``pyserini.search.faiss`` imports its Lucene searcher, so Java 21 is started first by
:func:`rr.retrieval.pyserini_bm25.ensure_java`, even though the search itself is pure FAISS.

On first use the index is downloaded by pyserini (``pyserini.util.download_prebuilt_index``)
into ``$PYSERINI_CACHE/indexes`` (default ``~/.cache/pyserini/indexes``), and the query
encoder from the Hugging Face Hub; later runs read both from disk. Sizes come from pyserini's
own metadata (``pyserini.prebuilt_index_info.FAISS_INDEX_INFO``): the DPR Wikipedia flat
indexes are a 59.8 GB tarball each, unpack to about 65 GB (21 M x 768 float32 vectors) and are
loaded whole into memory. Without network, :meth:`PyseriniFaissRetriever.index` stops with one
:class:`PrebuiltIndexUnavailableError` (an rr :class:`~rr.errors.UserError`) that names the
index, its download size and the free disk it needs.

The searcher is built as ``FaissSearcher(index_dir, query_encoder)``, which is what
``FaissSearcher.from_prebuilt_index(name, query_encoder)`` does after downloading, minus two
things rr does not want: that method returns ``None`` on failure (the reason only printed), and
it also downloads the index's Lucene "texts" index (9.2 GB for ``wikipedia-dpr-100w``) just to
serve ``doc()``, which rr never calls (the passages come from the job's corpus).
"""

from __future__ import annotations

import logging
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rr.data.base import Corpus
from rr.errors import ConfigError, UserError
from rr.job_env import torch_device
from rr.model_identity import content_identities
from rr.records import Hit
from rr.registry import component

log = logging.getLogger(__name__)

#: Query encoder classes (pyserini's ``--encoder-class`` names) of the Wikipedia FAISS indexes:
#: ``dpr`` (DPR multi / single-nq), ``ance`` (ANCE multi), ``dkrr`` (DKRR NQ / TQA), ``auto``
#: (any Hugging Face encoder with ``pooling``/``l2_norm``/``query_prefix``: BGE, Contriever).
ENCODER_CLASSES = ("auto", "dpr", "ance", "dkrr")
POOLINGS = ("cls", "mean")
#: Free disk needed to download and unpack, as a multiple of the tarball: the tarball and its
#: unpacked copy exist together until unpacking ends, and flat float32 vectors barely compress
#: (the DPR multi tarball is 93 % of its 64.6 GB index).
UNPACK_FACTOR = 2.1
#: At most this many extra hits are fetched per query to make up for index passages that are
#: not in the corpus (see :meth:`PyseriniFaissRetriever.search`).
MAX_EXTRA_DEPTH = 1000


class PrebuiltIndexUnavailableError(UserError, RuntimeError):
    """The prebuilt index or its query encoder cannot be obtained (no network, no disk space)."""


def _gb(n_bytes: float) -> str:
    return f"{n_bytes / 1e9:.1f} GB"


def _existing_parent(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


@contextmanager
def _socket_timeout(seconds: float) -> Iterator[None]:
    """Give sockets opened without a timeout (pyserini's ``urlopen``) one, so no download hangs.

    It bounds each connect and each read, not the whole download. Process-wide while it lasts.
    """
    old = socket.getdefaulttimeout()
    socket.setdefaulttimeout(seconds)
    try:
        yield
    finally:
        socket.setdefaulttimeout(old)


@component("retriever", "pyserini_faiss")
class PyseriniFaissRetriever:
    """Inner-product search over a pyserini prebuilt FAISS index, with its query encoder.

    Args:
        prebuilt_index: A pyserini prebuilt FAISS index name (``FAISS_INDEX_INFO``, e.g.
            ``"wikipedia-dpr-100w.dpr-multi"``), or a local folder in pyserini's FAISS layout
            (a faiss ``index`` file and a ``docid`` file, one docid per row), e.g. a
            downloaded tarball unpacked by hand on a machine without network.
        query_encoder: Hugging Face id or local folder of the query encoder the index was
            built for (``facebook/dpr-question_encoder-multiset-base`` for DPR multi).
        encoder_class: pyserini query encoder class, one of :data:`ENCODER_CLASSES`.
        pooling: ``"cls"`` or ``"mean"`` (``encoder_class="auto"`` only).
        l2_norm: L2-normalise query vectors (``encoder_class="auto"`` only; BGE: true).
        query_prefix: Text put before each query, joined by a space (``encoder_class="auto"``
            only; BGE: ``"Represent this sentence for searching relevant passages:"``).
        device: Torch device of the query encoder; ``None`` picks ``cuda`` when available.
        threads: FAISS search threads (throughput only).
        batch_size: Queries per ``batch_search`` call (bounds memory; throughput only).
        download_timeout_s: Socket timeout of each connect / read of the index download, so
            a firewalled machine fails instead of hanging.
        name: Name of this retriever in run files and the score table.
    """

    def __init__(
        self,
        prebuilt_index: str = "wikipedia-dpr-100w.dpr-multi",
        query_encoder: str = "facebook/dpr-question_encoder-multiset-base",
        encoder_class: str = "dpr",
        pooling: str = "cls",
        l2_norm: bool = False,
        query_prefix: str | None = None,
        device: str | None = None,
        threads: int = 1,
        batch_size: int = 64,
        download_timeout_s: float = 60.0,
        name: str = "pyserini_faiss",
    ) -> None:
        if encoder_class not in ENCODER_CLASSES:
            raise ConfigError(
                "encoder_class", f"must be one of {list(ENCODER_CLASSES)}, got {encoder_class!r}"
            )
        if pooling not in POOLINGS:
            raise ConfigError("pooling", f"must be one of {list(POOLINGS)}, got {pooling!r}")
        if encoder_class != "auto":
            for key, value, default in (
                ("pooling", pooling, "cls"),
                ("l2_norm", l2_norm, False),
                ("query_prefix", query_prefix, None),
            ):
                if value != default:
                    raise ConfigError(
                        key,
                        f"only applies to encoder_class=auto (the {encoder_class!r} encoder fixes it); "
                        f"got {value!r} with encoder_class={encoder_class!r}",
                    )
        if isinstance(threads, bool) or int(threads) <= 0:
            raise ConfigError("threads", f"must be a positive integer, got {threads!r}")
        if isinstance(batch_size, bool) or int(batch_size) <= 0:
            raise ConfigError("batch_size", f"must be a positive integer, got {batch_size!r}")
        if not float(download_timeout_s) > 0:
            raise ConfigError("download_timeout_s", f"must be > 0 seconds, got {download_timeout_s!r}")
        self.prebuilt_index = prebuilt_index
        self.query_encoder = query_encoder
        self.encoder_class = encoder_class
        self.pooling = pooling
        self.l2_norm = bool(l2_norm)
        self.query_prefix = query_prefix
        self.device = device
        self.threads = int(threads)
        self.batch_size = int(batch_size)
        self.download_timeout_s = float(download_timeout_s)
        self.name = name
        self._searcher: Any = None
        self._encoder: Any = None
        self._corpus: Corpus | None = None
        #: Folder of the FAISS index searched (set by :meth:`index`).
        self.index_dir: Path | None = None
        #: Index passages that are also corpus passages, and index passages that are not.
        self.n_searchable = 0
        self.n_outside = 0

    def fingerprint(self) -> dict:
        """Everything that determines the ranking: the index and the query encoder's settings, and
        what they are where known (``query_encoder_identity``: a local folder's digest or a hub
        id's commit; ``prebuilt_index_identity``: a local index folder's digest)."""
        return {
            "retriever": "pyserini_faiss",
            "prebuilt_index": self.prebuilt_index,
            "query_encoder": self.query_encoder,
            "encoder_class": self.encoder_class,
            "pooling": self.pooling,
            "l2_norm": self.l2_norm,
            "query_prefix": self.query_prefix,
            **content_identities(
                {"prebuilt_index": self.prebuilt_index, "query_encoder": self.query_encoder}
            ),
        }

    # -- loading -------------------------------------------------------------------------

    def _index_info(self) -> dict[str, Any] | None:
        """pyserini's metadata of ``prebuilt_index``; ``None`` for a local folder."""
        if _is_local_index(self.prebuilt_index):
            return None
        from pyserini.prebuilt_index_info import FAISS_INDEX_INFO

        info = FAISS_INDEX_INFO.get(self.prebuilt_index)
        if info is None:
            wiki = sorted(n for n in FAISS_INDEX_INFO if n.startswith(("wikipedia-", "beir-v1.0.0-nq.")))
            raise ConfigError(
                "prebuilt_index",
                f"{self.prebuilt_index!r} is neither a pyserini prebuilt FAISS index nor a folder with "
                f"`index` and `docid` files; Wikipedia ones: {wiki} "
                "(all: python -c 'from pyserini.search.faiss import FaissSearcher; "
                "FaissSearcher.list_prebuilt_indexes()')",
            )
        return dict(info)

    def load_encoder(self) -> Any:
        """The pyserini query encoder (loaded on first use, then kept).

        Raises:
            PrebuiltIndexUnavailableError: the encoder is neither cached nor downloadable.
        """
        if self._encoder is not None:
            return self._encoder
        from pyserini.encode import AnceQueryEncoder, AutoQueryEncoder, DkrrDprQueryEncoder, DprQueryEncoder

        device = torch_device(self.device, f"retriever.{self.name}")
        log.info(
            "pyserini_faiss: loading %s query encoder %s on %s",
            self.encoder_class,
            self.query_encoder,
            device,
        )
        try:
            if self.encoder_class == "auto":
                encoder = AutoQueryEncoder(
                    encoder_dir=self.query_encoder,
                    device=device,
                    pooling=self.pooling,
                    l2_norm=self.l2_norm,
                    prefix=self.query_prefix,
                )
            else:
                cls = {"dpr": DprQueryEncoder, "ance": AnceQueryEncoder, "dkrr": DkrrDprQueryEncoder}
                encoder = cls[self.encoder_class](encoder_dir=self.query_encoder, device=device)
        except (OSError, ValueError) as e:  # transformers: not cached and no network / bad id
            raise PrebuiltIndexUnavailableError(
                f"pyserini_faiss: query encoder {self.query_encoder!r} (for index {self.prebuilt_index!r}) "
                f"could not be loaded: {_first_line(e)}. It downloads from the Hugging Face Hub on first "
                "use, which needs network; or set retriever.<option>.query_encoder to a local folder"
            ) from e
        self._encoder = encoder
        return encoder

    def _download(self, info: dict[str, Any]) -> str:
        """Folder of the prebuilt index, downloaded and unpacked by pyserini if not yet cached."""
        from pyserini.util import check_downloaded, download_prebuilt_index, get_cache_home

        name = self.prebuilt_index
        size = info.get("size compressed (bytes)")
        urls = list(info.get("urls", []))
        target = Path(get_cache_home()) / "indexes"
        need = (
            f"{_gb(size)} download, about {_gb(size * UNPACK_FACTOR)} free disk" if size else "the download"
        )
        if not check_downloaded(name):
            if size:
                free = shutil.disk_usage(_existing_parent(target)).free
                if free < size * UNPACK_FACTOR:
                    raise PrebuiltIndexUnavailableError(
                        f"pyserini_faiss: prebuilt index {name!r} needs {need} in {target} while it "
                        f"unpacks, but only {_gb(free)} is free; free space or set PYSERINI_CACHE to a "
                        "larger disk"
                    )
            log.info("pyserini_faiss: downloading prebuilt index %s (%s) into %s", name, need, target)
        try:
            with _socket_timeout(self.download_timeout_s):
                return str(download_prebuilt_index(name, verbose=False))
        except (ValueError, OSError, AssertionError) as e:  # URLError, timeout, size/md5 mismatch
            raise PrebuiltIndexUnavailableError(
                f"pyserini_faiss: prebuilt index {name!r} could not be downloaded ({_first_line(e)}). "
                f"It needs network on first use ({need} in {target}; the index is then loaded whole "
                f"into memory) from {urls}; without network, download and unpack the tarball elsewhere "
                "and set retriever.<option>.prebuilt_index to its folder"
            ) from e

    def index(self, corpus: Corpus, cache_dir: str | None = None) -> None:
        """Load the query encoder, then download (first time) and open the prebuilt index.

        Args:
            corpus: The passages the index was built from: its passage ids must be the index's
                docids. Every docid is checked against the corpus; index passages missing from
                it are skipped at search time (with a warning), corpus passages missing from
                the index can never be retrieved (also warned about).
            cache_dir: Unused: the prebuilt index lives in pyserini's cache
                (``$PYSERINI_CACHE``), shared by all jobs.

        Raises:
            UserError: pyserini or Java 21 is missing (see
                :func:`~rr.retrieval.pyserini_bm25.ensure_java`).
            PrebuiltIndexUnavailableError: the encoder or the index cannot be obtained (no
                network, not enough disk).
            ConfigError: an unknown index name, or no docid of the index is a corpus id.
        """
        from rr.retrieval.pyserini_bm25 import JavaUnavailableError, ensure_java

        if len(corpus) == 0:
            raise ValueError(f"pyserini_faiss: corpus {corpus.name!r} is empty")
        try:
            ensure_java()  # pyserini.search.faiss imports the Lucene searcher
        except JavaUnavailableError as e:  # pyserini extra missing: the user's setup, not a bug
            raise UserError(f"pyserini_faiss: {e}") from e
        info = self._index_info()
        encoder = self.load_encoder()  # first: a few hundred MB, before a download of tens of GB
        index_dir = str(Path(self.prebuilt_index).expanduser()) if info is None else self._download(info)
        from pyserini.search.faiss import FaissSearcher

        log.info("pyserini_faiss: opening FAISS index %s", index_dir)
        searcher = FaissSearcher(index_dir, encoder)
        docids: list[str] = searcher.docids
        self.n_searchable = sum(1 for d in docids if d in corpus)
        self.n_outside = len(docids) - self.n_searchable
        if self.n_searchable == 0:
            raise ConfigError(
                "corpus",
                f"none of the {len(docids)} docids of index {self.prebuilt_index!r} (e.g. {docids[:3]}) is a "
                f"passage id of corpus {corpus.name!r} (e.g. {[p.id for p in corpus.passages[:3]]}); use the "
                "corpus the index was built from",
            )
        if self.n_outside:
            log.warning(
                "pyserini_faiss: %d of the %d passages of index %s are not in corpus %s; their hits are skipped",
                self.n_outside,
                len(docids),
                self.prebuilt_index,
                corpus.name,
            )
        if self.n_searchable < len(corpus):
            log.warning(
                "pyserini_faiss: %d passages of corpus %s are not in index %s and cannot be retrieved",
                len(corpus) - self.n_searchable,
                corpus.name,
                self.prebuilt_index,
            )
        self._searcher = searcher
        self._corpus = corpus
        self.index_dir = Path(index_dir)

    # -- search --------------------------------------------------------------------------

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Top-``k`` corpus passages per query by the index's inner product, best first.

        Args:
            queries: Query texts, encoded by the query encoder and searched with pyserini's
                ``batch_search`` in batches of ``batch_size``.
            k: Hits per query.

        Returns:
            One list per query (same order) of ``min(k, n_searchable)`` hits, ranks ``1..``,
            scores the raw inner products. Index passages that are not in the corpus are
            skipped: each query fetches ``min(n_outside, MAX_EXTRA_DEPTH)`` extra hits to make
            up for them, so a query gets fewer than ``k`` only when more index passages than
            that are missing from the corpus (a corpus that is not the index's).

        Raises:
            RuntimeError: :meth:`index` was not called.
        """
        if self._searcher is None or self._corpus is None:
            raise RuntimeError("pyserini_faiss: call index(corpus) before search()")
        if k <= 0:
            raise ValueError(f"pyserini_faiss: k must be positive, got {k}")
        if not queries:
            return []
        import torch

        corpus = self._corpus
        want = min(int(k), self.n_searchable)
        depth = min(self._searcher.num_docs, want + min(self.n_outside, MAX_EXTRA_DEPTH))
        out: list[list[Hit]] = []
        with torch.inference_mode():  # pyserini's encoders do not turn autograd off
            for start in range(0, len(queries), self.batch_size):
                batch = [str(q) for q in queries[start : start + self.batch_size]]
                qids = [str(i) for i in range(len(batch))]
                results = self._searcher.batch_search(batch, qids, k=depth, threads=self.threads)
                for qid in qids:
                    out.append(hits_from_results(results.get(qid, []), corpus, want))
        return out


def hits_from_results(results: list[Any], corpus: Corpus, k: int) -> list[Hit]:
    """pyserini ``DenseSearchResult``s (best first) as at most ``k`` :class:`Hit`s, ranks ``1..``.

    Docids not in ``corpus`` and repeated docids are skipped; scores become Python floats.
    """
    hits: list[Hit] = []
    seen: set[str] = set()
    for r in results:
        docid = str(r.docid)
        if docid in seen or docid not in corpus:
            continue
        seen.add(docid)
        hits.append(Hit(docid, len(hits) + 1, float(r.score)))
        if len(hits) == k:
            break
    return hits


def _is_local_index(value: str) -> bool:
    path = Path(value).expanduser()
    return path.is_dir() and (path / "index").is_file() and (path / "docid").is_file()


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}".rstrip(":. ")
