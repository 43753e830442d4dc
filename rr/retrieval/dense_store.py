"""Corpus embeddings on disk in fixed blocks, encoded in shards, searched from disk.

Paper-scale corpora do not fit the in-memory path of :class:`~rr.retrieval.dense.DenseRetriever`
(Cao et al. 2025 retrieve from ~20 M Wikipedia chunks: 20 M x 1024 float32 is ~82 GB). Here
the embeddings of a corpus live in one folder (an :class:`EmbeddingStore`)::

    <cache_dir>/dense/<corpus fingerprint>-<embedding key>.blocks/
        manifest.json          what was embedded: corpus, model id + revision, max length,
                               passage instruction, passage format, block size, dim
        block-000000.npy       passages [0, block_size), float32, L2-normalised
        block-000001.npy       passages [block_size, 2 * block_size)
        ...
        index-<hash>.faiss     an approximate index (IVF, HNSW, ... from a faiss factory string)
        index-<hash>.json      its spec, parameters and measured recall@k against exact search

Blocks are the unit of work and of resumption: each block is encoded in one call and written
atomically (:func:`rr.atomic.atomic_write`), so a killed encoder loses at most the block in
flight and a re-run starts at the first missing block. The block layout does not depend on how
the work was split: ``rr encode shards=64 shard=i`` encodes the contiguous run of blocks
:func:`shard_blocks` gives shard ``i``, and 1 process, 3 shards or 64 SLURM array tasks write the
same files byte for byte (each block is encoded by the same call on the same texts).

Search is exact by default: every block is memory-mapped in turn, searched with
``faiss.knn`` (inner product; ``faiss.knn_gpu`` when faiss sees a GPU) and merged into one
``faiss.ResultHeap`` per query batch, so memory stays at one block plus the ``nq x k`` heaps.
The scores are the ones one ``IndexFlatIP`` over all rows computes, and so is the top-k.
An approximate index (``index="IVF4096,Flat"``, ``"HNSW32"``, ``"IVF65536,PQ64"``; any
``faiss.index_factory`` string) is trained on a seeded sample, filled block by block, written
next to the blocks and read back memory-mapped where faiss supports it (IVF lists).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rr.atomic import atomic_write
from rr.errors import UserError
from rr.hashing import content_hash

log = logging.getLogger(__name__)

#: The k values of the approximate index's recall against exact search (stored and per job).
RECALL_K = (10, 100)

#: Name of the store's description file.
MANIFEST = "manifest.json"


def shard_blocks(n_blocks: int, shard: int, shards: int) -> range:
    """The contiguous blocks shard ``shard`` of ``shards`` encodes (balanced, in order).

    >>> [list(shard_blocks(7, i, 3)) for i in range(3)]
    [[0, 1], [2, 3], [4, 5, 6]]
    """
    if shards < 1 or not 0 <= shard < shards:
        raise ValueError(f"shard must be in [0, shards), got shard={shard}, shards={shards}")
    return range(n_blocks * shard // shards, n_blocks * (shard + 1) // shards)


@dataclass
class EncodeReport:
    """What one :meth:`EmbeddingStore.encode` call did: blocks asked for, encoded, already done
    (skipped), damaged and re-encoded (rebuilt, included in encoded), and passages encoded."""

    blocks: int
    encoded: int
    skipped: int
    rebuilt: int
    passages: int


class EmbeddingStore:
    """The embeddings of ``n`` passages as float32 blocks of ``block_size`` rows in ``root``.

    Args:
        root: The store's folder (created on first write).
        n: Number of passages (rows).
        block_size: Rows per block (the last block may be shorter).
        manifest: What the rows are embeddings of (JSON-serialisable); written to
            ``manifest.json``. A folder whose manifest differs is not this store: its blocks
            are not trusted (the folder name already hashes the same content, so this only
            happens when the folder was damaged).
    """

    def __init__(self, root: str | Path, n: int, block_size: int, manifest: dict[str, Any]) -> None:
        if n <= 0 or block_size <= 0:
            raise ValueError(f"store needs n > 0 and block_size > 0, got n={n}, block_size={block_size}")
        self.root = Path(root)
        self.n = int(n)
        self.block_size = int(block_size)
        self.manifest = {**manifest, "n": self.n, "block_size": self.block_size}
        #: Blocks found damaged (wrong shape or dtype, not loadable) and re-encoded.
        self.rebuilt = 0
        self._dim: int | None = None
        self._trusted = self._check_manifest()

    # ------------------------------------------------------------------ layout

    @property
    def n_blocks(self) -> int:
        return -(-self.n // self.block_size)

    def block_range(self, b: int) -> tuple[int, int]:
        """Rows ``[start, stop)`` of block ``b``."""
        return b * self.block_size, min(self.n, (b + 1) * self.block_size)

    def rows_in(self, blocks: Sequence[int] | range) -> int:
        """How many passages (rows) the blocks ``blocks`` hold."""
        return sum(stop - start for start, stop in map(self.block_range, blocks))

    def block_path(self, b: int) -> Path:
        return self.root / f"block-{b:06d}.npy"

    def _check_manifest(self) -> bool:
        path = self.root / MANIFEST
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return True  # a new store
        except (OSError, ValueError) as e:
            log.warning("dense store: %s does not load (%s); its blocks will be re-encoded", path, e)
            return False
        if {k: v for k, v in found.items() if k != "dim"} != self.manifest:
            log.warning("dense store: %s describes other embeddings; its blocks will be re-encoded", path)
            return False
        self._dim = found.get("dim")
        return True

    def _write_manifest(self, dim: int) -> None:
        self._dim = dim
        with atomic_write(self.root / MANIFEST) as f:
            json.dump({**self.manifest, "dim": dim}, f, indent=2, sort_keys=True)

    @property
    def dim(self) -> int:
        """Embedding dimension (read from the manifest or the first block)."""
        if self._dim is None:
            self._dim = int(self.open_block(0).shape[1])
        return self._dim

    # ------------------------------------------------------------------ blocks

    def open_block(self, b: int) -> np.ndarray:
        """Block ``b`` memory-mapped read-only (shape ``(rows, dim)``, float32)."""
        return np.load(self.block_path(b), mmap_mode="r", allow_pickle=False)

    def block_problem(self, b: int) -> str | None:
        """Why block ``b`` must be (re-)encoded, or ``None`` when it holds its rows.

        A good block is a loadable float32 ``(rows, dim)`` array whose first and last rows
        are unit vectors; only its header and those two rows are read.
        """
        path = self.block_path(b)
        if not path.exists():
            return "missing"
        if not self._trusted:
            return f"damaged: {MANIFEST} does not describe these embeddings"
        start, stop = self.block_range(b)
        try:
            emb = self.open_block(b)
            if emb.dtype != np.float32 or emb.ndim != 2 or emb.shape[0] != stop - start:
                return f"damaged: shape {emb.shape} and dtype {emb.dtype}, expected ({stop - start}, dim) float32"
            if self._dim is not None and emb.shape[1] != self._dim:
                return f"damaged: dim {emb.shape[1]}, the store's is {self._dim}"
            if not np.allclose(np.linalg.norm(emb[[0, -1]], axis=1), 1.0, atol=1e-3):
                return "damaged: rows that are not unit vectors"
        except Exception as e:  # derived data: anything that does not load is re-encoded
            return f"damaged: does not load ({type(e).__name__}: {e})"
        return None

    def missing(self, blocks: Sequence[int] | range | None = None) -> list[int]:
        """The blocks among ``blocks`` (default: all) that still need encoding."""
        return [b for b in (range(self.n_blocks) if blocks is None else blocks) if self.block_problem(b)]

    def encode(
        self,
        texts: Callable[[int, int], list[str]],
        embed: Callable[[list[str]], np.ndarray],
        blocks: Sequence[int] | range | None = None,
        progress: bool = False,
    ) -> EncodeReport:
        """Encode and write the blocks among ``blocks`` (default: all) that are missing or damaged.

        Args:
            texts: ``texts(start, stop)`` -> the passage texts of rows ``[start, stop)``.
            embed: texts -> L2-normalised float32 embeddings, one row per text.
            blocks: Which blocks (e.g. :func:`shard_blocks`); finished ones are skipped.
            progress: Show a progress bar over blocks.

        A damaged block is warned about (naming its file) and counted in :attr:`rebuilt`.
        """
        wanted = list(range(self.n_blocks) if blocks is None else blocks)
        todo = []
        rebuilt = 0
        for b in wanted:
            problem = self.block_problem(b)
            if problem is None:
                continue
            todo.append(b)
            if problem != "missing":
                rebuilt += 1
                log.warning("dense store: block %s is %s; re-encoding it", self.block_path(b), problem)
        self.rebuilt += rebuilt
        if todo:
            from tqdm.auto import tqdm

            self.root.mkdir(parents=True, exist_ok=True)
            for b in tqdm(todo, desc="encode blocks", unit="block", disable=not progress):
                start, stop = self.block_range(b)
                emb = np.ascontiguousarray(embed(texts(start, stop)), dtype=np.float32)
                if emb.shape[0] != stop - start:
                    raise RuntimeError(f"encoder returned {emb.shape[0]} rows for {stop - start} texts")
                if not self._trusted or self._dim is None:
                    self._write_manifest(int(emb.shape[1]))
                    self._trusted = True
                with atomic_write(self.block_path(b), mode="wb") as f:
                    np.save(f, emb)
        return EncodeReport(len(wanted), len(todo), len(wanted) - len(todo), rebuilt, self.rows_in(todo))

    # ------------------------------------------------------------------ search

    def search_exact(
        self, queries: np.ndarray, k: int, gpu: bool | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact inner-product top-``k`` over every block, memory-mapped one at a time.

        Args:
            queries: ``(nq, dim)`` float32.
            k: Results per query (at most ``n``).
            gpu: Use ``faiss.knn_gpu``; ``None`` = when faiss sees a GPU.

        Returns:
            ``(scores, rows)``, each ``(nq, k)``, best first; rows index the corpus.
        """
        faiss = import_faiss()

        q = np.ascontiguousarray(queries, dtype=np.float32)
        k = min(int(k), self.n)
        use_gpu = _use_gpu(gpu)
        resources = faiss.StandardGpuResources() if use_gpu else None
        heap = faiss.ResultHeap(q.shape[0], k, keep_max=True)
        for b in range(self.n_blocks):
            start, _ = self.block_range(b)
            xb = self.open_block(b)
            kb = min(k, xb.shape[0])
            if resources is not None:
                scores, rows = faiss.knn_gpu(
                    resources, q, np.ascontiguousarray(xb), kb, metric=faiss.METRIC_INNER_PRODUCT
                )
            else:
                scores, rows = faiss.knn(q, xb, kb, metric=faiss.METRIC_INNER_PRODUCT)
            heap.add_result(scores, rows + start)
            del xb  # unmap: resident memory stays at one block
        heap.finalize()
        return heap.D, heap.I

    # ------------------------------------------------------------------ approximate index

    def index_paths(self, spec: str, train_size: int, seed: int) -> tuple[Path, Path]:
        tag = content_hash({"spec": spec, "train_size": train_size, "seed": seed}, 10)
        return self.root / f"index-{tag}.faiss", self.root / f"index-{tag}.json"

    def sample_ids(self, size: int, seed: int) -> np.ndarray:
        """``size`` sorted row ids (all when ``size >= n``) drawn without replacement by a seeded RNG."""
        if size >= self.n:
            return np.arange(self.n)
        return np.sort(np.random.default_rng(seed).choice(self.n, size, replace=False))

    def read_rows(self, rows: np.ndarray) -> np.ndarray:
        """The embeddings of the sorted row ids ``rows``, read block by block."""
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        for b in range(self.n_blocks):
            start, stop = self.block_range(b)
            lo, hi = np.searchsorted(rows, [start, stop])
            if hi > lo:
                out[lo:hi] = self.open_block(b)[rows[lo:hi] - start]
        return out

    def sample_rows(self, size: int, seed: int) -> np.ndarray:
        """``size`` stored rows (all when ``size >= n``) drawn by a seeded RNG (index training)."""
        return self.read_rows(self.sample_ids(size, seed))

    def build_index(
        self,
        spec: str,
        train_size: int = 200_000,
        seed: int = 0,
        search_params: str | None = None,
        recall_queries: int = 1000,
        recall_k: Sequence[int] = RECALL_K,
    ) -> tuple[Any, dict[str, Any]]:
        """Load the approximate index ``spec``, or train, fill, measure and write it.

        Args:
            spec: A ``faiss.index_factory`` string (``"IVF4096,Flat"``, ``"HNSW32"``, ...).
            train_size: Rows sampled (seeded) to train it when it needs training.
            seed: RNG seed of the training and recall samples.
            search_params: ``faiss.ParameterSpace`` string applied when measuring and
                searching (``"nprobe=64"``, ``"efSearch=256"``).
            recall_queries: Stored rows used as queries to measure recall@k against exact
                search (passage-as-query, leave-self-out; the same rows for every spec).
            recall_k: The k values of the stored recall.

        Returns:
            ``(index, info)``; ``info`` holds the spec, sizes and ``recall@k`` by k.
        """
        faiss = import_faiss()

        index_path, info_path = self.index_paths(spec, train_size, seed)
        info: dict[str, Any]
        if index_path.exists() and info_path.exists():
            try:
                info = json.loads(info_path.read_text(encoding="utf-8"))
                index = _read_index(index_path)
                if index.ntotal == self.n:
                    _set_params(index, search_params)
                    if info.get("search_params") != search_params:  # recall depends on them
                        info["search_params"] = search_params
                        info["recall"] = self.measure_recall(index, recall_queries, recall_k, seed + 1)
                        with atomic_write(info_path) as f:
                            json.dump(info, f, indent=2, sort_keys=True)
                    return index, info
                problem = f"holds {index.ntotal} vectors, expected {self.n}"
            except Exception as e:  # derived data: rebuild
                problem = f"does not load ({type(e).__name__}: {e})"
            self.rebuilt += 1
            log.warning("dense store: index %s %s; rebuilding it", index_path, problem)
        index = faiss.index_factory(self.dim, spec, faiss.METRIC_INNER_PRODUCT)
        if not index.is_trained:
            log.info("dense store: training %s on %d sampled rows", spec, min(train_size, self.n))
            index.train(self.sample_rows(train_size, seed))
        for b in range(self.n_blocks):
            index.add(np.ascontiguousarray(self.open_block(b)))
        _set_params(index, search_params)
        info = {
            "spec": spec,
            "train_size": min(train_size, self.n),
            "seed": seed,
            "n": self.n,
        }
        info["search_params"] = search_params
        info["recall"] = self.measure_recall(index, recall_queries, recall_k, seed + 1)
        with atomic_write(index_path, mode=None) as tmp:
            faiss.write_index(index, str(tmp))
        with atomic_write(info_path) as f:
            json.dump(info, f, indent=2, sort_keys=True)
        log.info("dense store: %s built over %d rows; recall vs exact %s", spec, self.n, info["recall"])
        return index, info

    def measure_recall(self, index: Any, n_queries: int, ks: Sequence[int], seed: int) -> dict[str, float]:
        """Mean recall@k of ``index`` against exact search, with stored rows as queries.

        Leave-self-out: a stored row always finds itself first, which alone would be worth
        1/k of recall; so each query's own row is removed from both result lists before the
        top-k are compared (its neighbours are what is measured). This is a property of the
        index, and optimistic for graph indexes: stored rows sit on the graph, while a job's
        questions do not (on 23,457 random 48-d unit vectors HNSW32 at efSearch 16 read 0.91
        here and 0.62 on fresh queries). What a job gets is :meth:`measure_query_recall`.
        """
        ids = self.sample_ids(n_queries, seed)
        q = self.read_rows(ids)
        k_max = min(max(ks), self.n - 1)
        if k_max < 1:
            return {}
        _, exact = self.search_exact(q, k_max + 1)
        _, approx = index.search(q, k_max + 1)
        exact_wo = [
            [r for r in e.tolist() if r != own][:k_max] for e, own in zip(exact, ids.tolist(), strict=True)
        ]
        approx_wo = [
            [r for r in a.tolist() if r != own and r >= 0]
            for a, own in zip(approx, ids.tolist(), strict=True)
        ]
        return recall_against_exact(exact_wo, approx_wo, [min(k, k_max) for k in ks])

    def measure_query_recall(
        self,
        queries: np.ndarray,
        approx_rows: np.ndarray,
        ks: Sequence[int],
        sample: int,
        seed: int,
        gpu: bool | None = None,
    ) -> dict[str, Any]:
        """Recall@k of an approximate search against exact search on a seeded sample of a job's queries.

        Args:
            queries: ``(nq, dim)`` float32 query embeddings the job searched with.
            approx_rows: ``(nq, depth)`` rows the approximate index returned for them (``-1``: empty).
            ks: The k values to report (each capped at ``depth``).
            sample: Queries measured (all when ``sample >= nq``), drawn without replacement.
            seed: Seed of the sample.
            gpu: Exact search on the GPU (see :meth:`search_exact`).

        Returns:
            ``{"queries": measured, "of": nq, "seed": seed, "recall@k": mean recall, ...}``.
        """
        nq, depth = approx_rows.shape
        size = min(int(sample), nq)
        picked = np.sort(np.random.default_rng(seed).choice(nq, size, replace=False))
        _, exact = self.search_exact(queries[picked], depth, gpu=gpu)
        recall = recall_against_exact(
            [e.tolist() for e in exact],
            [[r for r in a.tolist() if r >= 0] for a in approx_rows[picked]],
            [min(int(k), depth) for k in ks],
        )
        return {"queries": size, "of": nq, "seed": seed, **recall}


def recall_against_exact(
    exact: Sequence[Sequence[int]], approx: Sequence[Sequence[int]], ks: Sequence[int]
) -> dict[str, float]:
    """Mean over queries of ``|exact[:k] & approx[:k]| / k``, per k (``recall@k`` keys, k ascending).

    Args:
        exact: Per query, the exact search's rows, best first (at least ``max(ks)`` of them).
        approx: Per query, the approximate search's rows, best first (may be shorter: a missing
            row is a miss).
        ks: Cut-offs.
    """
    out = {}
    for k in sorted(set(ks)):
        hits = [len(set(e[:k]) & set(a[:k])) for e, a in zip(exact, approx, strict=True)]
        out[f"recall@{k}"] = float(np.mean(hits) / k) if hits else float("nan")
    return out


class FaissMissingError(UserError, ImportError):
    """No faiss build is installed (it comes with rr's ``cpu`` or ``gpu`` extra)."""


def import_faiss() -> Any:
    """The ``faiss`` module, from ``faiss-cpu`` (extra ``cpu``) or ``faiss-gpu`` (extra ``gpu``).

    Raises:
        FaissMissingError: neither is installed (one line naming the two install commands).
    """
    try:
        import faiss
    except ImportError as e:
        raise FaissMissingError(
            "dense retrieval needs faiss, which comes with rr's 'cpu' or 'gpu' extra: "
            "pip install -c constraints.txt 'rr[cpu]' (faiss-cpu) or 'rr[gpu]' (faiss-gpu, CUDA 12); "
            f"import failed: {e}"
        ) from e
    return faiss


def faiss_gpus_available() -> bool:
    """Whether the installed faiss is a GPU build that sees at least one GPU."""
    faiss = import_faiss()

    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


def _use_gpu(gpu: bool | None) -> bool:
    available = faiss_gpus_available()
    if gpu and not available:
        raise RuntimeError("dense store: gpu=true but this faiss build sees no GPU (install faiss-gpu)")
    return available if gpu is None else bool(gpu)


def _read_index(path: Path) -> Any:
    """Read a faiss index, memory-mapping its inverted lists where faiss supports it."""
    faiss = import_faiss()

    try:
        return faiss.read_index(str(path), faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY)
    except RuntimeError:  # index types whose reader does not support mmap
        return faiss.read_index(str(path))


def _set_params(index: Any, params: str | None) -> None:
    if params:
        faiss = import_faiss()

        faiss.ParameterSpace().set_index_parameters(index, params)  # type: ignore[arg-type]  # the "k=v,..." form


def index_bytes(spec: str, dim: int, n: int) -> int | None:
    """Estimated memory (bytes) of the faiss index ``spec`` over ``n`` vectors of ``dim``.

    ``"flat"`` is the exact block search: the embeddings themselves (on disk; in memory one
    block at a time). IVF: codes + 8-byte ids per vector + the centroids; HNSW: the stored
    vectors + level-0 links (4 bytes per neighbour). ``None`` for index types not covered.
    """
    faiss = import_faiss()

    if spec == "flat":
        return n * dim * 4
    try:
        built = faiss.index_factory(dim, spec, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError:  # a spec faiss cannot build for inner product: the job would fail too
        return None
    index: Any = faiss.downcast_index(built)  # a view: `built` must stay alive while it is used
    try:
        ivf = faiss.extract_index_ivf(index)
    except RuntimeError:
        ivf = None
    if ivf is not None:
        return n * (int(ivf.code_size) + 8) + int(ivf.nlist) * dim * 4
    if hasattr(index, "hnsw"):
        storage: Any = faiss.downcast_index(index.storage)
        return n * (int(storage.code_size) + 4 * int(index.hnsw.nb_neighbors(0)))
    try:
        return n * int(index.sa_code_size())
    except RuntimeError:
        return None
