"""Paper-scale dense retrieval: encoding throughput (harness vs bare), and the block store's
write time, exact search time and memory, and approximate indexes at growing corpus sizes,
with a projection to Cao et al. 2025's ~20 M x 1024 (bge-large-en-v1.5) corpus.

1. **Encoding, harness vs bare** (real text: the first ``--encode-passages`` passages of the
   packaged Wikipedia corpus, the packaged all-MiniLM-L6-v2 on CPU, the same batch size):
   (a) ``SentenceTransformer.encode(texts, batch_size, normalize_embeddings=True)`` directly,
   (b) ``DenseRetriever.encode_corpus`` into a fresh ``EmbeddingStore`` of ``--encode-block``
   rows per block (every shard), alternating a, b, a, b; passages/s, ratio harness / bare
   (best of the repeats), max |difference| between the two embeddings.
2. **Index-only points** (no model): unit vectors of ``--dim`` (1024, bge-large's) written as
   an ``EmbeddingStore`` of ``--block-size`` rows at each ``--sizes`` n. Each phase runs in its
   own subprocess, so each peak RSS is that phase's own: store write, exact block search of
   ``--queries`` queries at ``--k`` (cold: the blocks' pages dropped from the page cache with
   ``posix_fadvise(DONTNEED)`` first; warm: again, from the page cache), an approximate index
   (``IVF<4 sqrt n>,Flat`` at ``--nprobe``, ``HNSW32`` up to ``--hnsw-max-n``) through
   ``EmbeddingStore.build_index``: build time, latency, recall@10/@100 vs exact: rr's stored
   figure (stored rows as queries, leave-self-out), and what a job reports on its own queries
   (``EmbeddingStore.measure_query_recall`` on the fresh queries of the exact search: all of
   them, and rr's default seeded sample of ``--job-sample``).
   ``random``: i.i.d. unit vectors, the worst case for ANN recall (no structure to exploit).
   ``mixture``: a Gaussian mixture (``--mixture-centres`` unit centres, noise of norm
   ``--mixture-spread`` x a centre's) at ``--mixture-n``, clustered like embeddings but well
   separated: the easy case. ``real``: MiniLM embeddings (384-d) of ``--real-passages`` of the
   packaged corpus (part 1's, then the rest), with the mini questions as queries.
3. **Exact sharded search == one ``faiss.IndexFlatIP``** at every point up to
   ``--flat-check-max`` rows (identical top-k rows counted).
4. **Growth exponents** of warm search time and store write time vs n (log-log least squares
   over the random points) and a projection to ``--project-n`` rows: disk, exact search time
   per 1000 queries, encoding time on 1 GPU and on 8 x 8 GPUs at ``--gpu-passages-per-s``
   (an assumption, not measured here).

    python benchmarks/retrieval_scale.py [--sizes 10000 100000 1000000] [--json out.json]
    python benchmarks/retrieval_scale.py --quick     # seconds: every part at toy sizes (64-d, 2,000 rows)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

QUERY_STREAM = 10**12  # RNG stream of the queries (blocks use their first row)

#: What ``--quick`` prints (tests/test_benchmarks.py checks each regex matches a line).
QUICK_FIGURES = [
    r"^random n=[\d,]+ dim=\d+: write [\d.]+ s; exact search [\d.]+/[\d.]+ s; flat identical \d+/\d+; IVF",
    r"^mixture n=[\d,]+ dim=\d+: write",
    r"^real n=[\d,]+ dim=\d+: write",
    r"total \d+ s$",
]
#: ``--quick``: every part (encoding, random / mixture / real points, flat check, IVF and HNSW)
#: at toy sizes.
QUICK = {
    "encode_passages": 32,
    "encode_block": [16],
    "batch_size": 16,
    "repeats": 1,
    "real_passages": 48,
    "sizes": [2000],
    "dim": 64,
    "block_size": 1000,
    "queries": 20,
    "k": 10,
    "nprobe": [4],
    "ef_search": [16],
    "train_max": 2000,
    "hnsw_max_n": 2000,
    "job_sample": 10,
    "mixture_n": 1000,
    "mixture_centres": 10,
}


# --------------------------------------------------------------------------- memory


def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def rss_mib() -> float:
    kib = _status_kib("VmRSS")
    return (kib or 0) / 1024


def reset_peak() -> bool:
    """Reset this process's peak RSS (VmHWM) so that the next phase's peak is its own (Linux)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_mib() -> float:
    kib = _status_kib("VmHWM")
    if kib is None:  # not Linux: whole-process peak
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024


# --------------------------------------------------------------------------- data


def unit(x: np.ndarray) -> np.ndarray:
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def make_rows(task: dict[str, Any], stream: int, m: int) -> np.ndarray:
    """``m`` rows of ``task``'s data set; ``stream`` seeds them (a block's first row, or the queries')."""
    kind, dim, seed = task["kind"], task["dim"], task["seed"]
    if kind == "random":
        rng = np.random.default_rng([seed, stream])
        return unit(rng.standard_normal((m, dim), dtype=np.float32))
    if kind == "mixture":
        centres = unit(
            np.random.default_rng([seed, 0, 1]).standard_normal((task["centres"], dim), np.float32)
        )
        rng = np.random.default_rng([seed, stream])
        x = centres[rng.integers(0, len(centres), m)]
        x += (task["spread"] / math.sqrt(dim)) * rng.standard_normal((m, dim), dtype=np.float32)
        return unit(x)
    raise ValueError(kind)


def queries(task: dict[str, Any]) -> np.ndarray:
    if task["kind"] == "real":
        return np.load(task["qsrc"])[: task["nq"]]
    return make_rows(task, QUERY_STREAM, task["nq"])


def open_store(task: dict[str, Any]):
    from rr.retrieval.dense_store import EmbeddingStore

    manifest = {k: task[k] for k in ("kind", "dim", "seed", "centres", "spread", "src")}
    return EmbeddingStore(task["root"], task["n"], task["block_size"], manifest)


# --------------------------------------------------------------------------- worker phases


def phase_write(task: dict[str, Any]) -> dict[str, Any]:
    store = open_store(task)
    gen = [0.0]
    src = np.load(task["src"], mmap_mode="r") if task["kind"] == "real" else None

    def embed(rows: range) -> np.ndarray:
        t = time.perf_counter()
        if src is not None:
            x = np.array(src[rows.start : rows.stop], dtype=np.float32)
        else:
            x = make_rows(task, rows.start, rows.stop - rows.start)
        gen[0] += time.perf_counter() - t
        return x

    reset_peak()
    t = time.perf_counter()
    report = store.encode(lambda a, b: range(a, b), embed)  # type: ignore[arg-type,return-value]
    total = time.perf_counter() - t
    assert report.encoded == store.n_blocks
    size = sum(store.block_path(b).stat().st_size for b in range(store.n_blocks))
    return {
        "total_s": total,
        "generate_s": gen[0],
        "write_s": total - gen[0],
        "bytes": size,
        "peak_mib": peak_mib(),
    }


def drop_cache(store) -> None:
    for b in range(store.n_blocks):
        fd = os.open(store.block_path(b), os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def phase_search(task: dict[str, Any]) -> dict[str, Any]:
    store = open_store(task)
    q = queries(task)
    k = task["k"]
    drop_cache(store)
    base = rss_mib()
    reset_peak()
    t = time.perf_counter()
    scores, rows = store.search_exact(q, k, gpu=False)
    cold = time.perf_counter() - t
    peak_cold = peak_mib()
    t = time.perf_counter()
    scores2, rows2 = store.search_exact(q, k, gpu=False)
    warm = time.perf_counter() - t
    np.save(Path(task["root"]) / "exact_rows.npy", rows)
    np.save(Path(task["root"]) / "exact_scores.npy", scores)
    block = min(store.block_size, store.n) * store.dim * 4
    return {
        "cold_s": cold,
        "warm_s": warm,
        "repeat_identical": bool(np.array_equal(rows, rows2) and np.array_equal(scores, scores2)),
        "rss_before_mib": base,
        "peak_cold_mib": peak_cold,
        "peak_mib": peak_mib(),
        "block_mib": block / 2**20,
        "heaps_mib": q.shape[0] * k * (4 + 8) * 2 / 2**20,  # the ResultHeap + one block's (D, I)
        "blocks": store.n_blocks,
    }


def phase_flat(task: dict[str, Any]) -> dict[str, Any]:
    import faiss

    store = open_store(task)
    q = queries(task)
    t = time.perf_counter()
    flat = faiss.IndexFlatIP(store.dim)
    for b in range(store.n_blocks):
        flat.add(np.ascontiguousarray(store.open_block(b)))
    load = time.perf_counter() - t
    t = time.perf_counter()
    scores, rows = flat.search(q, task["k"])
    search = time.perf_counter() - t
    exact_rows = np.load(Path(task["root"]) / "exact_rows.npy")
    exact_scores = np.load(Path(task["root"]) / "exact_scores.npy")
    same_rows = (rows == exact_rows).all(axis=1)
    same_set = [set(a.tolist()) == set(b.tolist()) for a, b in zip(rows, exact_rows, strict=True)]
    return {
        "queries": len(q),
        "identical_rows": int(same_rows.sum()),
        "identical_sets": int(sum(same_set)),
        "max_score_diff": float(np.abs(scores - exact_scores).max()),
        "load_s": load,
        "search_s": search,
    }


def phase_ann(task: dict[str, Any]) -> dict[str, Any]:
    store = open_store(task)
    q = queries(task)
    k = task["k"]
    spent = [0.0]
    measure = store.measure_recall

    def timed_measure(*a: Any, **kw: Any) -> dict[str, float]:
        t = time.perf_counter()
        out = measure(*a, **kw)
        spent[0] += time.perf_counter() - t
        return out

    store.measure_recall = timed_measure  # type: ignore[method-assign]  # to take it out of the build time
    out: dict[str, Any] = {"spec": task["spec"], "train_size": task["train_size"], "params": []}
    index = None
    for i, params in enumerate(task["params"]):
        del index
        base = rss_mib()
        reset_peak()
        spent[0] = 0.0
        t = time.perf_counter()
        index, info = store.build_index(
            task["spec"],
            task["train_size"],
            search_params=params,
            recall_queries=task["nq"],
            recall_k=(10, k),
        )
        total = time.perf_counter() - t
        if i == 0:
            out["build_s"] = total - spent[0]
            out["build_peak_mib"] = peak_mib()
            out["build_rss_before_mib"] = base
            path, _ = store.index_paths(task["spec"], task["train_size"], 0)
            out["index_mib"] = path.stat().st_size / 2**20
        t = time.perf_counter()
        _, rows = index.search(q, k)
        latency = time.perf_counter() - t
        t = time.perf_counter()
        sampled = store.measure_query_recall(q, rows, (10, k), task["job_sample"], 0)
        sample_s = time.perf_counter() - t
        out["params"].append(
            {
                "params": params,
                "load_s": None if i == 0 else total - spent[0],
                "rr_recall": info["recall"],
                "rr_recall_s": spent[0],
                "search_s": latency,
                "job_queries": store.measure_query_recall(q, rows, (10, k), len(q), 0),
                "job_sample": sampled,
                "job_sample_s": sample_s,
            }
        )
    return out


PHASES = {"write": phase_write, "search": phase_search, "flat": phase_flat, "ann": phase_ann}


def run_phase(op: str, task: dict[str, Any]) -> dict[str, Any]:
    """Run one phase in a fresh interpreter (its peak RSS is its own) and return its result."""
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps({**task, "op": op})],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise RuntimeError(f"phase {op} of {task['kind']} n={task['n']} failed ({proc.returncode})")
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    res = json.loads(line[len("RESULT ") :])
    res["wall_s"] = time.perf_counter() - t
    return res


# --------------------------------------------------------------------------- part 1: encoding


def padded_tokens(texts: list[str], tokens: list[int], block: int, batch_size: int) -> int:
    """Tokens the model runs over (padding included) when ``texts`` are encoded in calls of
    ``block`` texts: ``SentenceTransformer.encode`` sorts each call's texts by character length
    and pads each batch to its longest."""
    total = 0
    for a in range(0, len(texts), block):
        order = np.argsort([-len(t) for t in texts[a : a + block]])
        lens = np.asarray(tokens[a : a + block])[order]
        total += sum(
            int(lens[i : i + batch_size].max()) * len(lens[i : i + batch_size])
            for i in range(0, len(lens), batch_size)
        )
    return total


def bench_encode(args: argparse.Namespace, tmp: Path) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    import torch

    from rr.data.base import Corpus
    from rr.data.corpus import WikiOfflineCorpus
    from rr.data.mini import MiniDataset
    from rr.retrieval.dense import DenseRetriever

    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    full = WikiOfflineCorpus().load()
    corpus = Corpus(
        full.passages[: args.encode_passages], name=f"wiki{args.encode_passages}", source="benchmarks"
    )
    base = DenseRetriever(device="cpu", batch_size=args.batch_size)
    t = time.perf_counter()
    model = base.load_model()
    load_s = time.perf_counter() - t
    sides = {}
    for block in args.encode_block:
        r = DenseRetriever(device="cpu", batch_size=args.batch_size, block_size=block)
        r._model = model  # the same weights
        sides[block] = r
    texts = base.passage_texts(corpus)
    n = len(texts)
    tokens = [min(len(ids), model.max_seq_length) for ids in model.tokenizer(texts)["input_ids"]]
    model.encode(texts[: args.batch_size], batch_size=args.batch_size)  # warm-up
    print(
        f"encoding: {n} passages ({np.mean(tokens):.0f} tokens on average after truncation to "
        f"{model.max_seq_length}), batch {args.batch_size}, harness blocks of {args.encode_block}, "
        f"{args.encode_shards} shard(s), torch {torch.__version__}, {torch.get_num_threads()} threads",
        flush=True,
    )
    bare_s: list[float] = []
    harness_s: dict[int, list[float]] = {b: [] for b in sides}
    max_diff: dict[int, float] = {}
    bare = None
    for rep in range(args.repeats):
        t = time.perf_counter()
        bare = model.encode(
            texts,
            batch_size=args.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        bare_s.append(time.perf_counter() - t)
        line = f"  repeat {rep}: bare {bare_s[-1]:.1f} s"
        for block, r in sides.items():
            cache = tmp / f"encode-{block}-{rep}"
            t = time.perf_counter()
            for shard in range(args.encode_shards):
                r.encode_corpus(corpus, str(cache), shard, args.encode_shards, progress=False)
            harness_s[block].append(time.perf_counter() - t)
            store = r.store(corpus, str(cache))
            harness = np.concatenate([np.load(store.block_path(b)) for b in range(store.n_blocks)])
            max_diff[block] = max(max_diff.get(block, 0.0), float(np.abs(np.asarray(bare) - harness).max()))
            shutil.rmtree(cache, ignore_errors=True)
            line += f", harness (blocks of {block}) {harness_s[block][-1]:.1f} s"
        print(line, flush=True)
    assert bare is not None
    real = np.ascontiguousarray(bare, dtype=np.float32)
    rest_s = None
    n_real = len(full) if args.real_passages <= 0 else min(args.real_passages, len(full))
    if n_real > n:  # the rest of the corpus for the "real" point (its recall figures)
        rest = base.passage_texts(full, n, n_real)
        print(f"  encoding passages {n}..{n_real} for the real-embedding point", flush=True)
        t = time.perf_counter()
        real = np.concatenate([real, base.encode(rest)])
        rest_s = time.perf_counter() - t
    src = tmp / "minilm_passages.npy"
    np.save(src, real)
    questions = [e.question for e in MiniDataset(n=None, seed=0, answerable_only=False).load()]
    qsrc = tmp / "minilm_questions.npy"
    np.save(qsrc, base.encode(questions))
    bare_pad = padded_tokens(texts, tokens, n, args.batch_size)
    res = {
        "passages": n,
        "mean_tokens": float(np.mean(tokens)),
        "tokens": int(sum(tokens)),
        "max_seq_length": model.max_seq_length,
        "batch_size": args.batch_size,
        "shards": args.encode_shards,
        "model_load_s": load_s,
        "bare_s": bare_s,
        "bare_pps": n / min(bare_s),
        "bare_padded_tokens": bare_pad,
        "harness": [
            {
                "block_size": block,
                "s": harness_s[block],
                "pps": n / min(harness_s[block]),
                "ratio_best": min(harness_s[block]) / min(bare_s),
                "ratio_per_repeat": [h / b for h, b in zip(harness_s[block], bare_s, strict=True)],
                "max_abs_diff": max_diff[block],
                "padded_tokens": padded_tokens(texts, tokens, block, args.batch_size),
            }
            for block in sides
        ],
        "dim": int(np.asarray(bare).shape[1]),
        "real_passages": len(real),
        "rest_encode_s": rest_s,
        "rest_pps": None if rest_s is None else (len(real) - n) / rest_s,
        "questions": len(questions),
    }
    res["harness_pps"] = res["harness"][0]["pps"]
    return res, src, qsrc


# --------------------------------------------------------------------------- part 2-3: points


def nlist_for(n: int) -> int:
    return max(1, round(4 * math.sqrt(n)))


def bench_point(
    args: argparse.Namespace, tmp: Path, kind: str, n: int, dim: int, **extra: Any
) -> dict[str, Any]:
    task = {
        "kind": kind,
        "n": n,
        "dim": dim,
        "block_size": args.block_size,
        "root": str(tmp / f"{kind}-{n}"),
        "seed": args.seed,
        "centres": extra.get("centres"),
        "spread": extra.get("spread"),
        "src": extra.get("src"),
        "qsrc": extra.get("qsrc"),
        "nq": args.queries,
        "k": args.k,
        "job_sample": args.job_sample,
    }
    need = n * dim * 4
    free_disk = shutil.disk_usage(tmp).free
    avail = _avail_ram()
    if free_disk < 2.3 * need:  # blocks + an IVF,Flat index of the same size
        return {
            "kind": kind,
            "n": n,
            "skipped": f"disk: {free_disk / 1e9:.1f} GB free, ~{2.3 * need / 1e9:.1f} needed",
        }
    if avail is not None and avail < 1.6 * need + 2**30:
        return {
            "kind": kind,
            "n": n,
            "skipped": f"RAM: {avail / 2**30:.1f} GiB available, IVF,Flat needs ~{need / 2**30:.1f}",
        }
    out: dict[str, Any] = {
        "kind": kind,
        "n": n,
        "dim": dim,
        **{k: v for k, v in extra.items() if k not in ("src", "qsrc")},
    }
    print(f"{kind} n={n:,} dim={dim}: write", end="", flush=True)
    out["write"] = run_phase("write", task)
    print(f" {out['write']['total_s']:.1f} s; exact search", end="", flush=True)
    out["search"] = run_phase("search", task)
    out["queries"] = min(args.queries, len(np.load(extra["qsrc"]))) if kind == "real" else args.queries
    print(f" {out['search']['cold_s']:.1f}/{out['search']['warm_s']:.1f} s", end="", flush=True)
    if n <= args.flat_check_max:
        out["flat"] = run_phase("flat", task)
        print(
            f"; flat identical {out['flat']['identical_rows']}/{out['flat']['queries']}", end="", flush=True
        )
    out["ann"] = []
    if n <= args.ann_max_n:
        nlist = nlist_for(n)
        specs = [
            (
                f"IVF{nlist},Flat",
                min(n, args.train_per_list * nlist, args.train_max),
                [f"nprobe={p}" for p in args.nprobe],
            )
        ]
        if n <= args.hnsw_max_n:
            specs.append(("HNSW32", min(n, 200_000), [f"efSearch={e}" for e in args.ef_search]))
        for spec, train, params in specs:
            print(f"; {spec}", end="", flush=True)
            res = run_phase("ann", {**task, "spec": spec, "train_size": train, "params": params})
            out["ann"].append(res)
            print(f" {res['build_s']:.1f} s", end="", flush=True)
    print(flush=True)
    if not args.keep:
        shutil.rmtree(task["root"], ignore_errors=True)
    return out


def _avail_ram() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


# --------------------------------------------------------------------------- part 4: fit, projection


def fit_exponent(ns: list[int], ts: list[float]) -> float | None:
    if len(ns) < 2:
        return None
    slope, _ = np.polyfit(np.log(ns), np.log(ts), 1)
    return float(slope)


def project(
    args: argparse.Namespace, points: list[dict[str, Any]], encode: dict[str, Any] | None
) -> dict[str, Any]:
    rnd = [p for p in points if p["kind"] == "random" and "skipped" not in p]
    ns = [p["n"] for p in rnd]
    out: dict[str, Any] = {
        "n": args.project_n,
        "dim": args.dim,
        "search_exponent_warm": fit_exponent(ns, [p["search"]["warm_s"] for p in rnd]),
        "search_exponent_cold": fit_exponent(ns, [p["search"]["cold_s"] for p in rnd]),
        "write_exponent": fit_exponent(ns, [p["write"]["write_s"] for p in rnd]),
        "disk_gb": args.project_n * args.dim * 4 / 1e9,
        "gpu_passages_per_s": args.gpu_passages_per_s,
        "encode_1gpu_h": args.project_n / args.gpu_passages_per_s / 3600,
        "encode_64gpu_min": args.project_n / args.gpu_passages_per_s / 64 / 60,
    }
    if rnd:
        big = max(rnd, key=lambda p: p["n"])
        scale = args.project_n / big["n"]
        per_1000 = 1000 / args.queries
        out["from_n"] = big["n"]
        out["search_warm_linear_s"] = big["search"]["warm_s"] * scale * per_1000
        out["search_cold_linear_s"] = big["search"]["cold_s"] * scale * per_1000
        if out["search_exponent_warm"] is not None:
            out["search_warm_fit_s"] = (
                big["search"]["warm_s"] * scale ** out["search_exponent_warm"] * per_1000
            )
        io = big["search"]["cold_s"] - big["search"]["warm_s"]
        out["io_s_cold_minus_warm"] = io
        out["io_gb_per_s"] = big["write"]["bytes"] / io / 1e9 if io > 0 else None
        out["write_linear_s"] = big["write"]["write_s"] * scale
        out["gflops_warm"] = 2 * big["n"] * args.dim * args.queries / big["search"]["warm_s"] / 1e9
    if encode:
        out["encode_cpu_minilm_days"] = args.project_n / encode["harness_pps"] / 86400
    return out


# --------------------------------------------------------------------------- report


def table(head: list[str], rows: list[list[Any]]) -> None:
    print("| " + " | ".join(head) + " |")
    print("|" + " --- |" * len(head))
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")


def report(res: dict[str, Any]) -> None:
    print()
    print(res["machine"])
    enc = res.get("encode")
    if enc:
        print(
            f"\n1. encoding {enc['passages']} passages ({enc['mean_tokens']:.0f} tokens avg), batch "
            f"{enc['batch_size']}, {len(enc['bare_s'])} alternating repeats"
        )
        rows = [
            [
                "bare SentenceTransformer.encode (one call)",
                " / ".join(f"{s:.1f}" for s in enc["bare_s"]),
                f"{enc['bare_pps']:.1f}",
                "1",
                f"{enc['bare_padded_tokens'] / enc['tokens']:.3f}",
                "",
            ]
        ]
        for h in enc["harness"]:
            rows.append(
                [
                    f"DenseRetriever.encode_corpus, blocks of {h['block_size']}",
                    " / ".join(f"{s:.1f}" for s in h["s"]),
                    f"{h['pps']:.1f}",
                    f"**{h['ratio_best']:.3f}** ("
                    + ", ".join(f"{r:.3f}" for r in h["ratio_per_repeat"])
                    + ")",
                    f"{h['padded_tokens'] / enc['tokens']:.3f}",
                    f"{h['max_abs_diff']:.1e}",
                ]
            )
        table(
            [
                "side",
                "s per repeat",
                "passages/s (best)",
                "time / bare (best; per repeat)",
                "padded / real tokens",
                "max abs diff vs bare",
            ],
            rows,
        )
        if enc.get("rest_pps"):
            print(
                f"the rest of the corpus for the real point ({enc['real_passages'] - enc['passages']:,} passages, "
                f"DenseRetriever.encode in one call): {enc['rest_encode_s']:.0f} s, {enc['rest_pps']:.1f} passages/s"
            )
    print(
        f"\n2-3. store and exact search ({res['args']['queries']} queries, k={res['args']['k']}, blocks of {res['args']['block_size']:,} rows)"
    )
    rows = []
    for p in res["points"]:
        if "skipped" in p:
            rows.append([p["kind"], f"{p['n']:,}", "skipped: " + p["skipped"]] + [""] * 8)
            continue
        w, s, f = p["write"], p["search"], p.get("flat")
        rows.append(
            [
                p["kind"],
                f"{p['n']:,}",
                p["dim"],
                f"{w['bytes'] / 1e9:.3f}",
                f"{w['write_s']:.2f} (+{w['generate_s']:.1f} gen)",
                f"{s['cold_s']:.2f} / {s['warm_s']:.2f}",
                f"{s['peak_mib'] - s['rss_before_mib']:.0f} (peak {s['peak_mib']:.0f})",
                f"{s['block_mib']:.0f} + {s['heaps_mib']:.1f}",
                s["blocks"],
                "-"
                if f is None
                else f"{f['identical_rows']}/{f['queries']} (sets {f['identical_sets']}, max dscore {f['max_score_diff']:.1e})",
                p["queries"],
            ]
        )
    table(
        [
            "data",
            "n",
            "dim",
            "GB",
            "write s",
            "exact search s cold / warm",
            "search RSS growth MiB",
            "block + heaps MiB",
            "blocks",
            "== IndexFlatIP rows",
            "queries",
        ],
        rows,
    )
    print(
        "\napproximate indexes (recall vs exact; stored = rows as queries, job = rr's measure on the exact "
        "search's fresh queries: all, and its seeded sample)"
    )
    rows = []
    for p in res["points"]:
        for a in p.get("ann", []):
            for i, q in enumerate(a["params"]):
                jq, js = q["job_queries"], q["job_sample"]
                kkey = max((key for key in jq if key.startswith("recall@")), key=lambda key: int(key[7:]))
                rr10 = q["rr_recall"].get("recall@10")
                rrk = q["rr_recall"].get(
                    f"recall@{res['args']['k']}",
                    q["rr_recall"].get(f"recall@{min(p['n'], res['args']['k'])}"),
                )
                rows.append(
                    [
                        p["kind"],
                        f"{p['n']:,}",
                        a["spec"],
                        f"{a['train_size']:,}",
                        f"{a['build_s']:.1f}" if i == 0 else f"(load {q['load_s']:.2f})",
                        f"{a['index_mib']:.0f}",
                        f"{a['build_peak_mib'] - a['build_rss_before_mib']:.0f}" if i == 0 else "",
                        q["params"],
                        f"{q['search_s'] * 1000 / p['queries']:.2f}",
                        f"{rr10:.3f} / {rrk:.3f}",
                        f"{jq['recall@10']:.3f} / {jq[kkey]:.3f}",
                        f"{js['recall@10']:.3f} / {js[kkey]:.3f} ({js['queries']}, {q['job_sample_s']:.2f} s)",
                    ]
                )
    table(
        [
            "data",
            "n",
            "index",
            "train rows",
            "build s",
            "MiB",
            "build RSS growth MiB",
            "params",
            "ms/query",
            "recall@10/@k stored",
            "recall@10/@k job (all)",
            "recall@10/@k job (sample, s)",
        ],
        rows,
    )
    pr = res["projection"]

    def fmt(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f}"

    print(
        f"\n4. growth exponents over the random points (log-log least squares): exact search warm "
        f"{fmt(pr['search_exponent_warm'])}, cold {fmt(pr['search_exponent_cold'])}; store write {fmt(pr['write_exponent'])}"
    )
    if "from_n" in pr:
        print(
            f"projection to {pr['n']:,} x {pr['dim']} from n={pr['from_n']:,}: disk {pr['disk_gb']:.1f} GB; "
            f"exact search per 1000 queries {pr['search_warm_linear_s'] / 60:.1f} min warm (linear per row; "
            f"{pr.get('search_warm_fit_s', float('nan')) / 60:.1f} min with the fitted exponent), "
            f"{pr['search_cold_linear_s'] / 60:.1f} min cold (blocks read from disk: cold - warm = "
            f"{pr['io_s_cold_minus_warm']:.1f} s at n={pr['from_n']:,}, {fmt(pr['io_gb_per_s'])} GB/s); "
            f"{pr['gflops_warm']:.0f} GFLOP/s warm here; store write {pr['write_linear_s'] / 60:.1f} min"
        )
    print(
        f"encoding at an ASSUMED {pr['gpu_passages_per_s']:.0f} passages/s per GPU (not measured here): "
        f"{pr['encode_1gpu_h']:.1f} h on 1 GPU, {pr['encode_64gpu_min']:.1f} min on 8 nodes x 8 GPUs"
        + (
            f"; CPU MiniLM at the measured rate: {pr['encode_cpu_minilm_days']:.1f} days"
            if "encode_cpu_minilm_days" in pr
            else ""
        )
    )


# --------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="every part at toy sizes (seconds)")
    ap.add_argument("--encode-passages", type=int, default=2000)
    ap.add_argument("--encode-block", type=int, nargs="+", default=[500, 2000], help="harness block sizes")
    ap.add_argument(
        "--encode-shards", type=int, default=1, help="encode_corpus called once per shard, in turn"
    )
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--torch-threads", type=int, default=0, help="0: torch's default")
    ap.add_argument("--skip-encode", action="store_true")
    ap.add_argument(
        "--real-passages",
        type=int,
        default=0,
        help="passages embedded for the real point (0: the whole corpus)",
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--block-size", type=int, default=100_000, help="rows per block (rr's default)")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--nprobe", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--ef-search", type=int, nargs="+", default=[128, 512])
    ap.add_argument(
        "--train-per-list", type=int, default=40, help="IVF training rows per list (faiss wants >= 39)"
    )
    ap.add_argument("--train-max", type=int, default=64_000, help="at most this many IVF training rows")
    ap.add_argument("--hnsw-max-n", type=int, default=20_000)
    ap.add_argument("--job-sample", type=int, default=200, help="queries of rr's job-query recall sample")
    ap.add_argument("--ann-max-n", type=int, default=1_000_000)
    ap.add_argument("--flat-check-max", type=int, default=100_000)
    ap.add_argument("--mixture-n", type=int, default=100_000, help="0: no mixture point")
    ap.add_argument("--mixture-centres", type=int, default=500)
    ap.add_argument("--mixture-spread", type=float, default=1.0)
    ap.add_argument("--project-n", type=int, default=20_000_000)
    ap.add_argument(
        "--gpu-passages-per-s", type=float, default=1000.0, help="ASSUMED bge-large fp16 rate per GPU"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--tmp-dir", default=None, help="where the stores are written (default: the system temp dir)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the stores")
    ap.add_argument("--json", default=None, help="write every measurement here")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        vars(args).update(QUICK)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # shared cores: see llamacpp.py's section

    if args.worker:
        task = json.loads(args.worker)
        print("RESULT " + json.dumps(PHASES[task["op"]](task)), flush=True)
        return

    import faiss

    start = time.perf_counter()
    load0 = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="rr-retrieval-scale-", dir=args.tmp_dir))
    usage = shutil.disk_usage(tmp)
    print(
        f"stores in {tmp} ({usage.free / 1e9:.0f} GB free), {(_avail_ram() or 0) / 2**30:.1f} GiB RAM available, "
        f"load average {load0[0]:.2f}",
        flush=True,
    )
    res: dict[str, Any] = {"args": vars(args), "points": []}
    try:
        src = qsrc = None
        if not args.skip_encode:
            res["encode"], src, qsrc = bench_encode(args, tmp)
        for n in args.sizes:
            res["points"].append(bench_point(args, tmp, "random", n, args.dim))
        if args.mixture_n:
            res["points"].append(
                bench_point(
                    args,
                    tmp,
                    "mixture",
                    args.mixture_n,
                    args.dim,
                    centres=args.mixture_centres,
                    spread=args.mixture_spread,
                )
            )
        if src is not None:
            enc = res["encode"]
            res["points"].append(
                bench_point(args, tmp, "real", enc["real_passages"], enc["dim"], src=str(src), qsrc=str(qsrc))
            )
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    res["projection"] = project(args, res["points"], res.get("encode"))
    load1 = os.getloadavg()
    res["machine"] = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, faiss {faiss.__version__} "
        f"({faiss.omp_get_max_threads()} threads), OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}, "
        f"load average {load0[0]:.2f} at start, {load1[0]:.2f} at end; total {time.perf_counter() - start:.0f} s"
    )
    report(res)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
