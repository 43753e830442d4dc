"""Paper-scale dense retrieval on a small scale: embeddings in blocks, encoded in shards and
resumed after a kill, searched exactly from memory-mapped blocks or through an approximate
faiss index. Real encoder (the packaged all-MiniLM-L6-v2) and the packaged Wikipedia corpus
(first sentences, or a small sample), with blocks of a few passages so that every path runs in
seconds; the jobs here run the simulated reader on the synthetic task (what is checked is the
store's, the launcher's and the index report's plumbing, not a model's answers)."""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from pathlib import Path

import numpy as np
import pytest

from rr.data.base import Corpus
from rr.data.corpus import WikiOfflineCorpus
from rr.errors import ConfigError
from rr.records import Passage
from rr.retrieval.dense import DenseRetriever
from rr.retrieval.dense_store import EmbeddingStore, shard_blocks

from .test_resume import rr_cli

faiss = pytest.importorskip("faiss")

BLOCK = 4


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    """The first 24 passages of the packaged Wikipedia corpus, each cut to its first sentence
    (title and sentence: 14 to 55 tokens, so blocks and the whole corpus still pad differently,
    at a third of the full passages' encoding cost): 6 blocks of 4."""
    passages = WikiOfflineCorpus().load().passages[:24]
    first = [dataclasses.replace(p, text=re.split(r"(?<=[.!?])\s", p.text, maxsplit=1)[0]) for p in passages]
    return Corpus(first, name="wiki24-first-sentences", source="tests")


@pytest.fixture(scope="module")
def model():
    return DenseRetriever(device="cpu").load_model()


def retriever(model, **kwargs) -> DenseRetriever:
    r = DenseRetriever(device="cpu", block_size=BLOCK, **kwargs)
    r._model = model  # one copy of the weights for the module
    return r


def block_bytes(store: EmbeddingStore) -> list[bytes]:
    return [store.block_path(b).read_bytes() for b in range(store.n_blocks)]


def unit_rows(n: int, dim: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_shard_blocks_partition_the_blocks_in_order() -> None:
    for n_blocks in (1, 5, 7, 64):
        for shards in (1, 2, 3, 8):
            parts = [list(shard_blocks(n_blocks, i, shards)) for i in range(shards)]
            assert sum(parts, []) == list(range(n_blocks))
            assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert [list(shard_blocks(7, i, 3)) for i in range(3)] == [[0, 1], [2, 3], [4, 5, 6]]
    with pytest.raises(ValueError, match="shard must be in"):
        shard_blocks(4, 3, 3)


def test_three_shards_and_a_killed_shard_give_one_process_bytes(corpus, model, tmp_path: Path) -> None:
    assert len(corpus) == 24
    one = retriever(model)
    report = one.encode_corpus(corpus, str(tmp_path / "one"), progress=False)
    assert (report.blocks, report.encoded, report.skipped, report.passages) == (6, 6, 0, 24)
    expected = block_bytes(one.store(corpus, str(tmp_path / "one")))

    # three shards, each in its own retriever (as three SLURM tasks would be)
    for shard in range(3):
        r = retriever(model)
        assert r.encode_corpus(corpus, str(tmp_path / "three"), shard, 3, progress=False).encoded == 2
    three = retriever(model).store(corpus, str(tmp_path / "three"))
    assert block_bytes(three) == expected

    # a shard killed after its first block resumes at its second and rewrites nothing else
    killed = retriever(model)
    real_encode, calls = killed.encode, []

    def dying_encode(texts, show_progress=False):
        if calls:
            raise KeyboardInterrupt("killed")
        calls.append(len(texts))
        return real_encode(texts)

    killed.encode = dying_encode  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        killed.encode_corpus(corpus, str(tmp_path / "killed"), 1, 3, progress=False)
    store = killed.store(corpus, str(tmp_path / "killed"))
    assert [store.block_path(b).exists() for b in range(6)] == [False, False, True, False, False, False]
    assert not list(store.root.glob(".*tmp*"))  # the block in flight left no temporary behind
    first_mtime = store.block_path(2).stat().st_mtime_ns
    resumed = retriever(model).encode_corpus(corpus, str(tmp_path / "killed"), 1, 3, progress=False)
    assert (resumed.encoded, resumed.skipped) == (1, 1)
    assert store.block_path(2).stat().st_mtime_ns == first_mtime
    for shard in (0, 2):
        retriever(model).encode_corpus(corpus, str(tmp_path / "killed"), shard, 3, progress=False)
    assert block_bytes(store) == expected
    # a finished shard is skipped
    assert retriever(model).encode_corpus(corpus, str(tmp_path / "killed"), 0, 3, progress=False).encoded == 0

    # against one encode call over the whole corpus (other batches, other padding): float noise only
    whole = one.encode(one.passage_texts(corpus))
    blocks = np.concatenate([np.load(store.block_path(b)) for b in range(6)])
    assert np.abs(blocks - whole).max() < 1e-5


def test_store_search_ranks_as_the_in_memory_index(corpus, model, tmp_path: Path) -> None:
    queries = ["Who painted the Mona Lisa?", "largest planet of the solar system", "theory of relativity"]
    in_memory = DenseRetriever(device="cpu")  # 24 passages < one default block: the in-memory path
    in_memory._model = model
    in_memory.index(corpus, str(tmp_path))
    assert in_memory.embeddings_path is not None and in_memory.embeddings_path.suffix == ".npy"
    on_disk = retriever(model)
    on_disk.index(corpus, str(tmp_path))  # 6 blocks: encoded here, searched from disk
    assert on_disk.embeddings_path is not None and on_disk.embeddings_path.name.endswith(".blocks")
    assert on_disk.fingerprint() == in_memory.fingerprint()  # the same ranking, the same run cache
    for a, b in zip(in_memory.search(queries, 20), on_disk.search(queries, 20), strict=True):
        assert [h.passage_id for h in a] == [h.passage_id for h in b]
        np.testing.assert_allclose([h.score for h in a], [h.score for h in b], atol=1e-5)
    assert len(on_disk.search(queries, 500)[0]) == len(corpus)  # k beyond the corpus: every passage


@pytest.mark.parametrize("block_size", [1, 7, 100, 1000])
def test_exact_block_search_equals_one_flat_index(tmp_path: Path, block_size: int) -> None:
    x, q = unit_rows(1000, 32, 0), unit_rows(25, 32, 1)
    store = EmbeddingStore(tmp_path, len(x), block_size, {"test": "flat"})
    store.encode(lambda a, b: list(range(a, b)), lambda rows: x[rows[0] : rows[-1] + 1])
    flat = faiss.IndexFlatIP(32)
    flat.add(x)
    for k in (1, 10, 50):
        want_scores, want_rows = flat.search(q, k)
        scores, rows = store.search_exact(q, k)
        np.testing.assert_array_equal(rows, want_rows)
        np.testing.assert_allclose(scores, want_scores, rtol=0, atol=1e-6)


def test_approximate_index_stores_its_recall_and_is_rebuilt_when_damaged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # clustered data, as embeddings are: 20 centres, points near them
    rng = np.random.default_rng(3)
    centres = unit_rows(20, 16, 4)
    x = centres[rng.integers(0, 20, 2000)] + 0.15 * rng.standard_normal((2000, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    store = EmbeddingStore(tmp_path, len(x), 256, {"test": "ivf"})
    store.encode(lambda a, b: list(range(a, b)), lambda rows: x[rows[0] : rows[-1] + 1])
    index, info = store.build_index(
        "IVF16,Flat", train_size=1000, search_params="nprobe=16", recall_queries=100
    )
    assert info["spec"] == "IVF16,Flat" and info["train_size"] == 1000 and index.ntotal == 2000
    assert info["recall"]["recall@10"] == pytest.approx(1.0)  # nprobe = nlist: every list searched
    index_path, info_path = store.index_paths("IVF16,Flat", 1000, 0)
    assert json.loads(info_path.read_text())["recall"] == info["recall"]
    # fewer lists probed: recall is re-measured for those parameters, and lower
    _, fewer = store.build_index("IVF16,Flat", train_size=1000, search_params="nprobe=1", recall_queries=100)
    assert fewer["recall"]["recall@10"] < 1.0 and fewer["search_params"] == "nprobe=1"
    # a damaged index file is rebuilt, counted and named
    index_path.write_bytes(b"not a faiss index")
    with caplog.at_level(logging.WARNING):
        again, _ = store.build_index(
            "IVF16,Flat", train_size=1000, search_params="nprobe=1", recall_queries=100
        )
    assert again.ntotal == 2000 and store.rebuilt == 1 and str(index_path) in caplog.text


def test_retriever_with_an_approximate_index(corpus, model, tmp_path: Path) -> None:
    exact = retriever(model)
    exact.index(corpus, str(tmp_path))
    hnsw = retriever(model, index="HNSW8")
    hnsw.index(corpus, str(tmp_path))
    assert hnsw.index_info is not None and 0.0 < hnsw.index_info["recall"]["recall@10"] <= 1.0
    assert hnsw.fingerprint()["index"]["spec"] == "HNSW8" and "index" not in exact.fingerprint()
    queries = ["Who painted the Mona Lisa?", "largest planet of the solar system"]
    assert [r[0].passage_id for r in hnsw.search(queries, 5)] == [
        r[0].passage_id for r in exact.search(queries, 5)
    ]
    with pytest.raises(ConfigError, match="index"):
        DenseRetriever(index=" ")


def test_damaged_block_is_named_counted_and_re_encoded(
    corpus, model, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = retriever(model)
    first.encode_corpus(corpus, str(tmp_path), progress=False)
    store = first.store(corpus, str(tmp_path))
    good = block_bytes(store)
    store.block_path(3).write_bytes(good[3][:-40])  # cut
    np.save(store.block_path(4), np.load(store.block_path(4)) * 3)  # not unit rows
    second = retriever(model)
    with caplog.at_level(logging.WARNING):
        second.index(corpus, str(tmp_path))
    assert second.index_rebuilds == 2
    assert str(store.block_path(3)) in caplog.text and str(store.block_path(4)) in caplog.text
    assert block_bytes(store) == good


def test_run_encode_from_the_job_config(tmp_path: Path, model, monkeypatch: pytest.MonkeyPatch) -> None:
    from rr.commands.encode import run_encode, shard_device

    monkeypatch.setattr(DenseRetriever, "load_model", lambda self: model)
    # a 40-passage sample of the packaged corpus (no gold pages kept: no questions are asked here)
    sample = ["corpus.max_passages=40", "corpus.keep_fanoutqa_evidence=false"]
    base = ["retriever=[bm25,dense]", *sample, "retriever.dense.block_size=8"]  # 5 blocks of 8
    cfg = _encode_cfg(base + ["shards=2", "shard=1"], tmp_path)
    summary = run_encode(cfg, tmp_path / "out")
    (entry,) = summary["retrievers"]["dense"]  # bm25 has no embeddings: not encoded
    assert summary["passages"] == 40
    assert (entry["shard"], entry["encoded"], entry["passages_encoded"], entry["store_complete"]) == (
        1,
        3,
        24,
        False,
    )
    assert json.loads((tmp_path / "out" / "encode.json").read_text()) == summary
    everything = run_encode(_encode_cfg(base, tmp_path))  # shard=null: every shard here
    assert [e["encoded"] for e in everything["retrievers"]["dense"]] == [2] and everything["retrievers"][
        "dense"
    ][0]["store_complete"]
    # a job over the same corpus and retriever finds every block and encodes none
    job_retriever = DenseRetriever(device="cpu", block_size=8)
    job_corpus = WikiOfflineCorpus(max_passages=40, keep_fanoutqa_evidence=False, seed=0).load()
    job_retriever.index(job_corpus, cfg.paths.cache_dir)
    assert job_retriever.embeddings_path == Path(entry["store"])
    with pytest.raises(ConfigError, match="shard: must be in"):
        run_encode(_encode_cfg(base + ["shards=2", "shard=2"], tmp_path))
    with pytest.raises(ConfigError, match="no dense retriever"):
        run_encode(_encode_cfg(["retriever=[bm25]"], tmp_path))
    assert (shard_device(5, 4), shard_device(5, 0)) == ("cuda:1", None)


def _encode_cfg(overrides: list[str], tmp_path: Path):
    from omegaconf import open_dict

    from rr.config import compose

    cfg = compose(overrides, config_name="encode")
    with open_dict(cfg):
        cfg.paths.cache_dir = str(tmp_path / "cache")
        cfg.progress = False
    return cfg


def test_encode_command_multirun_then_job_searches_the_blocks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The real ``rr encode -m`` on submitit's local executor (the SLURM launcher's code path,
    both shards at once, each in its own process), then a job (in this process) that finds every
    block. The simulated reader on the synthetic task: the job's answers do not matter here."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    from rr.config import compose
    from rr.pipeline import run_job

    common = [
        "generator=simulated",
        "dataset=synthetic",
        "dataset.n=2",
        "corpus=synthetic",
        "corpus.max_passages=40",
        "retriever=[dense]",
        "retriever.dense.block_size=8",
        f"paths.output_root={tmp_path}",
        "progress=false",
    ]
    run = rr_cli(
        ["encode", "-m", "hydra/launcher=submitit_local", "shards=2", "shard=0,1", *common], tmp_path
    )
    assert run.returncode == 0, run.stderr[-3000:]
    sweep = tmp_path / "encode" / "synthetic" / "multirun"
    assert any((sweep / ".submitit").rglob("*_log.out"))
    reports = {p.parent.name: json.loads(p.read_text()) for p in sweep.glob("shard-*/encode.json")}
    assert sorted(reports) == ["shard-0-of-2", "shard-1-of-2"]
    encoded = {name: r["retrievers"]["dense"][0]["encoded"] for name, r in reports.items()}
    assert encoded == {"shard-0-of-2": 2, "shard-1-of-2": 3}  # 40 passages: blocks 0-1 and 2-4
    (store,) = {r["retrievers"]["dense"][0]["store"] for r in reports.values()}
    blocks = sorted(Path(store).glob("block-*.npy"))
    assert [p.name for p in blocks] == [f"block-{b:06d}.npy" for b in range(5)]
    written = [p.stat().st_mtime_ns for p in blocks]
    cfg = compose([*common, "grid.k=[1]", "grid.orders=[original]", "grid.closed_book=false"])
    with caplog.at_level(logging.INFO, logger="rr"):
        result = run_job(cfg, tmp_path / "job")
    # the job found every block: it encoded and rewrote none of them
    assert "dense: encod" not in caplog.text  # neither "dense: encoded N of M blocks" nor in-memory encoding
    assert [p.stat().st_mtime_ns for p in blocks] == written
    assert set(result.scores["retriever"]) == {"dense"} and len(result.scores) == 2


def test_job_with_an_approximate_index_reports_its_recall(
    tmp_path: Path, capfd: pytest.CaptureFixture
) -> None:
    """The simulated reader on the synthetic task (the index report is checked, not a model's
    answers); 120 passages, more than 100 so that the stored recall@100 is measured. The job runs
    with ``progress=false`` (compose_config), so encoding the blocks draws no bar either."""
    from rr.pipeline import run_job

    from .conftest import compose_config

    cfg = compose_config(
        [
            "generator=simulated",
            "dataset=synthetic",
            "corpus=synthetic",
            "retriever=[dense]",
            "retriever.dense.index=HNSW16",
            "corpus.max_passages=120",
            "dataset.n=2",
            "grid.k=[1]",
            "grid.orders=[original]",
            "grid.closed_book=false",
        ],
        tmp_path,
    )
    result = run_job(cfg, tmp_path / "job")
    assert "encode blocks" not in capfd.readouterr().err
    info = json.loads((tmp_path / "job" / "summary.json").read_text())["approximate_indexes"]["dense"]
    assert info["spec"] == "HNSW16" and info["n"] == 120
    assert set(info["recall"]) == {"recall@10", "recall@100"}
    assert 0.5 < info["recall"]["recall@10"] <= 1.0
    assert info["recall_caveat"].startswith("recall: stored passages as queries (leave-self-out)")
    # recall on the job's own queries: 2 questions searched at depth 1, both measured
    jq = info["job_queries"]
    assert {k: jq[k] for k in ("queries", "of", "seed", "warn_below")} == {
        "queries": 2,
        "of": 2,
        "seed": 0,
        "warn_below": 0.9,
    }
    assert set(jq) >= {"recall@1"} and 0.0 <= jq["recall@1"] <= 1.0
    assert jq["below_threshold"] == (jq["recall@1"] < 0.9)
    assert set(result.scores["retriever"]) == {"dense"}
    from rr.reporting.job import approximate_index_lines

    (line,) = approximate_index_lines({"dense": result.summary.approximate_indexes["dense"]})
    assert line.startswith(
        "approximate index dense (HNSW16, default search): recall vs exact on 2 of the job's 2"
    )
    assert "stored, passages as queries (optimistic for graph indexes): recall@10" in line


def test_recall_against_exact_hand_worked() -> None:
    from rr.retrieval.dense_store import recall_against_exact

    exact, approx = [[1, 2, 3], [4, 5, 6]], [[1, 3, 9], [7]]
    # recall@1: q1 finds 1 (1/1), q2 misses 4 (0/1); recall@3: q1 has {1, 3} of {1, 2, 3}, q2 none
    assert recall_against_exact(exact, approx, [3, 1]) == {"recall@1": 0.5, "recall@3": pytest.approx(2 / 6)}


def _hnsw_store(tmp_path: Path) -> tuple[EmbeddingStore, np.ndarray]:
    """3,000 random 48-d unit vectors in blocks, and 300 fresh queries from the same distribution."""
    x, q = unit_rows(3000, 48, 1), unit_rows(300, 48, 2)
    store = EmbeddingStore(tmp_path, len(x), 1000, {"test": "hnsw"})
    store.encode(lambda a, b: list(range(a, b)), lambda rows: x[rows[0] : rows[-1] + 1])
    return store, q


def test_hnsw_recall_on_fresh_queries_is_below_its_stored_recall(tmp_path: Path) -> None:
    """Pinned (faiss 1.15): HNSW16 with efSearch=16 reads 0.947 recall@10 with its own passages as
    queries, but finds only 0.721 of exact search's top-10 for fresh queries - the job-query figure
    is what an experiment gets. The sample is seeded: 100 of the 300 queries, the same each time."""
    store, q = _hnsw_store(tmp_path)
    index, info = store.build_index("HNSW16", search_params="efSearch=16", recall_queries=300)
    assert info["recall"] == {
        "recall@10": pytest.approx(0.9466666666666667),
        "recall@100": pytest.approx(0.6360666666666667),
    }
    _, rows = index.search(q, 100)
    measured = store.measure_query_recall(q, rows, (10, 100), sample=100, seed=0)
    assert measured == {
        "queries": 100,
        "of": 300,
        "seed": 0,
        "recall@10": pytest.approx(0.721),
        "recall@100": pytest.approx(0.536),
    }
    # depth below a k caps it; a sample larger than the queries measures them all
    _, shallow = index.search(q[:7], 5)
    assert set(store.measure_query_recall(q[:7], shallow, (10, 100), 200, 0)) == {
        "queries",
        "of",
        "seed",
        "recall@5",
    }


def test_retriever_warns_when_recall_on_its_queries_is_low(tmp_path: Path, caplog) -> None:
    """DenseRetriever's own measurement (without a model: the store and index set directly)."""
    store, q = _hnsw_store(tmp_path)
    r = DenseRetriever(
        index="HNSW16", search_params="efSearch=16", query_recall_sample=100, recall_warn_below=0.8
    )
    r._store = store
    r._index, r.index_info = store.build_index("HNSW16", search_params="efSearch=16", recall_queries=300)
    _, rows = r._index.search(q, 100)
    with caplog.at_level(logging.WARNING, logger="rr.retrieval.dense"):
        r._measure_query_recall(q, rows)
    jq = r.index_info["job_queries"]
    assert jq["below_threshold"] is True and jq["warn_below"] == 0.8
    assert jq["recall@10"] == pytest.approx(0.721)
    assert (
        "finds only recall@10 0.721, recall@100 0.536 of exact search's top-k on 100 of this job's queries"
        in caplog.text
    )
    with pytest.raises(ConfigError, match="recall_warn_below"):
        DenseRetriever(recall_warn_below=1.5)


@pytest.mark.gpu
def test_exact_block_search_on_gpu_equals_cpu(tmp_path: Path) -> None:
    """The same code path with ``faiss.knn_gpu`` (needs faiss-gpu and a CUDA GPU)."""
    if not hasattr(faiss, "StandardGpuResources") or faiss.get_num_gpus() == 0:
        pytest.skip("this faiss build sees no GPU (install faiss-gpu on a CUDA machine)")
    x, q = unit_rows(5000, 64, 5), unit_rows(40, 64, 6)
    store = EmbeddingStore(tmp_path, len(x), 700, {"test": "gpu"})
    store.encode(lambda a, b: list(range(a, b)), lambda rows: x[rows[0] : rows[-1] + 1])
    cpu_scores, cpu_rows = store.search_exact(q, 20, gpu=False)
    gpu_scores, gpu_rows = store.search_exact(q, 20, gpu=True)
    np.testing.assert_array_equal(gpu_rows, cpu_rows)
    np.testing.assert_allclose(gpu_scores, cpu_scores, atol=1e-5)


@pytest.mark.gpu
def test_faiss_gpu_index_searches_as_the_cpu_index() -> None:
    """faiss-gpu (the ``gpu`` extra): an exact and an IVF index moved to the GPU find what they
    find on the CPU."""
    if not hasattr(faiss, "StandardGpuResources") or faiss.get_num_gpus() == 0:
        pytest.skip("this faiss build sees no GPU (pip install 'rr[gpu]' on a CUDA machine)")
    x, q = unit_rows(5000, 64, 7), unit_rows(40, 64, 8)
    res = faiss.StandardGpuResources()
    flat = faiss.IndexFlatIP(64)
    flat.add(x)
    ivf = faiss.index_factory(64, "IVF32,Flat", faiss.METRIC_INNER_PRODUCT)
    ivf.train(x)
    ivf.add(x)
    ivf.nprobe = 32  # every list: exact, so GPU and CPU must agree
    for cpu_index in (flat, ivf):
        gpu_index = faiss.index_cpu_to_gpu(res, 0, cpu_index)
        cpu_scores, cpu_rows = cpu_index.search(q, 10)
        gpu_scores, gpu_rows = gpu_index.search(q, 10)
        np.testing.assert_array_equal(gpu_rows, cpu_rows)
        np.testing.assert_allclose(gpu_scores, cpu_scores, atol=1e-5)


def test_missing_faiss_is_one_line_naming_both_extras(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from rr.commands.errors import user_message
    from rr.retrieval.dense_store import FaissMissingError, import_faiss

    monkeypatch.setitem(sys.modules, "faiss", None)  # as if neither faiss-cpu nor faiss-gpu were installed
    with pytest.raises(FaissMissingError) as e:
        import_faiss()
    msg = user_message(e.value)
    assert msg is not None and "\n" not in msg
    assert "pip install -c constraints.txt 'rr[cpu]' (faiss-cpu) or 'rr[gpu]' (faiss-gpu, CUDA 12)" in msg


def test_gpu_search_asked_for_without_a_gpu_is_a_clear_error(tmp_path: Path) -> None:
    if hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0:
        pytest.skip("a GPU is present")
    x = unit_rows(10, 8, 7)
    store = EmbeddingStore(tmp_path, len(x), 4, {"test": "no gpu"})
    store.encode(lambda a, b: list(range(a, b)), lambda rows: x[rows[0] : rows[-1] + 1])
    with pytest.raises(RuntimeError, match="faiss-gpu"):
        store.search_exact(x[:2], 3, gpu=True)
    with pytest.raises(ConfigError, match="gpu_search"):  # before any encoding
        DenseRetriever(gpu_search=True).index(Corpus([Passage("p", "text")], "c"), str(tmp_path))


def test_recall_leaves_the_query_row_out(tmp_path: Path) -> None:
    """Stored rows as queries: finding only itself is recall 0, not 1/k; an exact index is 1."""
    x = unit_rows(300, 8, 8)
    store = EmbeddingStore(tmp_path, len(x), 64, {"test": "recall"})
    store.encode(lambda a, b: list(range(a, b)), lambda rows: x[rows[0] : rows[-1] + 1])
    flat = faiss.IndexFlatIP(8)
    flat.add(x)
    assert store.measure_recall(flat, 50, (1, 10), seed=0) == {"recall@1": 1.0, "recall@10": 1.0}

    class OnlyItself:  # finds the query's own row and nothing else
        def search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
            own = np.array([int(np.argmax(x @ v)) for v in q])
            rows = np.full((len(q), k), -1)
            rows[:, 0] = own
            return np.zeros((len(q), k), dtype=np.float32), rows

    assert store.measure_recall(OnlyItself(), 50, (1, 10), seed=0) == {"recall@1": 0.0, "recall@10": 0.0}
