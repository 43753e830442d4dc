"""Nothing a crash, a full disk, a concurrent job or a damaged file leaves behind may poison a
later run (issue 14): atomic writes, the generation-cache reader, the TREC run reader and the
derived caches (runs, BM25 index, dense embeddings) that are rebuilt when corrupt."""

from __future__ import annotations

import errno
import io
import json
import logging
import multiprocessing
import re
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rr.atomic import atomic_dir, atomic_write, discard
from rr.data.base import Corpus, DataError
from rr.data.jsonl import JsonlCorpus, JsonlDataset
from rr.generation.base import Completion
from rr.generation.cache import GenerationCache
from rr.records import Hit, Passage
from rr.results import REQUIRED, write_scores
from rr.retrieval.qrels import read_qrels
from rr.retrieval.runs import RunCache, read_trec_run, write_trec_run

IDENT = {"model_id": "m", "revision": "r"}

# ---------------------------------------------------------------- atomic writes


def _payload(i: int) -> bytes:
    return (f"writer {i}\n" * 2000).encode()  # large enough that writes interleave


def _write_bytes_many(path: str, i: int, n: int) -> None:
    for _ in range(n):
        with atomic_write(path, mode="wb") as f:
            f.write(_payload(i))


def test_atomic_write_concurrent_threads_and_processes_leave_one_valid_file(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    errors: list[BaseException] = []

    def thread_writer(i: int) -> None:
        try:
            _write_bytes_many(str(target), i, 20)
        except BaseException as e:  # collected: a crash in any writer fails the test
            errors.append(e)

    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_bytes_many, args=(str(target), 100 + i, 20)) for i in range(3)]
    threads = [threading.Thread(target=thread_writer, args=(i,)) for i in range(4)]
    for p in procs:
        p.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        p.join(60)
    assert errors == [] and [p.exitcode for p in procs] == [0, 0, 0]
    data = target.read_bytes()
    assert data in {_payload(i) for i in [0, 1, 2, 3, 100, 101, 102]}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]  # no temporaries left


def _write_scores_many(folder: str, i: int) -> None:
    df = pd.DataFrame({c: [i] for c in REQUIRED})
    for _ in range(15):
        write_scores(df, folder)


def test_write_scores_three_way_race_never_crashes(tmp_path: Path) -> None:
    """Regression: all writers shared ``scores.parquet.tmp``; a loser's rename raised FileNotFoundError."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_scores_many, args=(str(tmp_path), i)) for i in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    assert pd.read_parquet(tmp_path / "scores.parquet")["k"].iloc[0] in {0, 1, 2}
    assert [p.name for p in tmp_path.iterdir()] == ["scores.parquet"]


@pytest.mark.parametrize("mode", ["w", "wb", None])
def test_disk_full_leaves_old_file_and_no_temporary(tmp_path: Path, mode: str | None) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old")
    with pytest.raises(OSError) as info, atomic_write(target, mode=mode) as f:
        if mode is None:
            Path(f).write_text("half")
        else:
            f.write("half" if mode == "w" else b"half")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert info.value.errno == errno.ENOSPC
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_atomic_write_modes_and_bad_mode(tmp_path: Path) -> None:
    with atomic_write(tmp_path / "a" / "t.txt") as f:  # the folder is created
        f.write("héllo")
    with atomic_write(tmp_path / "b.npy", mode="wb") as f:
        np.save(f, np.arange(3))
    with atomic_write(tmp_path / "c.parquet", mode=None) as tmp:
        pd.DataFrame({"x": [1, 2]}).to_parquet(tmp)
    assert (tmp_path / "a" / "t.txt").read_text(encoding="utf-8") == "héllo"
    assert np.load(tmp_path / "b.npy").tolist() == [0, 1, 2]
    assert pd.read_parquet(tmp_path / "c.parquet")["x"].tolist() == [1, 2]
    with pytest.raises(ValueError, match="mode"), atomic_write(tmp_path / "d", mode="a"):
        pass


def test_atomic_dir_first_wins_failure_cleans_up_and_discard(tmp_path: Path) -> None:
    target = tmp_path / "index"
    with atomic_dir(target) as tmp:
        tmp.mkdir()
        (tmp / "x").write_text("first")
    with atomic_dir(target) as tmp:  # a second builder of the same folder: keep the first
        tmp.mkdir()
        (tmp / "x").write_text("second")
    assert (target / "x").read_text() == "first"
    with pytest.raises(OSError), atomic_dir(tmp_path / "other") as tmp:
        tmp.mkdir()
        (tmp / "x").write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]
    discard(target)
    discard(target)  # already gone: fine
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- generation cache


def _entry(key: str, text: str, p: int = 3, c: int = 1) -> bytes:
    return json.dumps(
        {"key": key, "text": text, "prompt_tokens": p, "completion_tokens": c}, ensure_ascii=False
    ).encode()


def _shard_dir(tmp_path: Path) -> Path:
    return GenerationCache(tmp_path, IDENT, writer="probe").dir


def test_cache_torn_multibyte_character_at_end_is_skipped_and_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Regression: a shard cut inside a UTF-8 character raised UnicodeDecodeError in every later job."""
    d = _shard_dir(tmp_path)
    torn = _entry("k2", "naïve café 東京")
    cut = torn[: torn.index("東".encode()) + 1]  # one byte of a three-byte character
    (d / "a.jsonl").write_bytes(_entry("k1", "ok") + b"\n" + cut)
    with caplog.at_level(logging.WARNING):
        cache = GenerationCache(tmp_path, IDENT, writer="job")
    assert cache.get("k1") == Completion("ok", 3, 1) and cache.get("k2") is None
    assert cache.torn_lines == 1 and cache.skipped_by_shard == {d / "a.jsonl": 1}
    assert str(d / "a.jsonl") in caplog.text


def test_cache_random_bytes_shard_and_ill_typed_lines_are_skipped(tmp_path: Path) -> None:
    d = _shard_dir(tmp_path)
    rng = np.random.default_rng(0)
    junk = bytes(rng.integers(0, 256, 4096, dtype=np.uint8))
    (d / "junk.jsonl").write_bytes(junk)
    n_junk = sum(1 for line in junk.split(b"\n") if line.strip())
    bad = [
        b'{"key": "a", "text": 123, "prompt_tokens": 1, "completion_tokens": 1}',  # was a TypeError later
        b'{"key": 5, "text": "x", "prompt_tokens": 1, "completion_tokens": 1}',
        b'{"key": "b", "text": "x", "prompt_tokens": "1", "completion_tokens": 1}',
        b'{"key": "c", "text": "x", "prompt_tokens": true, "completion_tokens": 1}',
        b'{"key": "d", "text": "x", "prompt_tokens": -1, "completion_tokens": 1}',
        b'{"key": "e", "text": "\\ud800", "prompt_tokens": 1, "completion_tokens": 1}',  # lone surrogate
        b'{"key": "f", "text": "x"}',
        b'["key", "text"]',
        b"[" * 100_000,  # too deep for json
        b"",  # blank lines are not entries and not counted
    ]
    (d / "bad.jsonl").write_bytes(b"\n".join([*bad, _entry("good", "fine")]) + b"\n")
    cache = GenerationCache(tmp_path, IDENT, writer="job")
    assert len(cache) == 1 and cache.get("good") == Completion("fine", 3, 1)
    assert cache.skipped_by_shard == {d / "junk.jsonl": n_junk, d / "bad.jsonl": 9}
    assert cache.torn_lines == n_junk + 9


_texts = st.text(max_size=30)
_valid = st.builds(
    lambda k, t, p, c: ("valid", _entry(k, t, p, c), (k, Completion(t, p, c))),
    st.text(min_size=1, max_size=8),
    _texts,
    st.integers(0, 10**6),
    st.integers(0, 10**6),
)
_junk = st.binary(max_size=60).map(lambda b: ("junk", b.replace(b"\n", b" "), None))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(lines=st.lists(st.one_of(_valid, _junk), max_size=12), cut=st.integers(0, 200))
def test_cache_reader_property_any_bytes_load_and_every_skip_is_counted(
    tmp_path_factory: pytest.TempPathFactory, lines: list, cut: int
) -> None:
    """Any shard content loads; intact valid lines are entries, every other non-blank line is counted."""
    root = tmp_path_factory.mktemp("cache")
    d = _shard_dir(root)
    raw = [b for _, b, _ in lines]
    if raw:  # a killed writer: cut the last line somewhere inside it
        raw[-1] = raw[-1][: min(cut, len(raw[-1]))]
    (d / "s.jsonl").write_bytes(b"\n".join(raw))
    cache = GenerationCache(root, IDENT, writer="job")
    expected: dict[str, Completion] = {}
    intact_valid = 0
    for (kind, b, entry), written in zip(lines, raw, strict=True):
        if kind == "valid" and written == b:
            expected[entry[0]] = entry[1]
            intact_valid += 1
    for key, completion in expected.items():
        assert cache.get(key) == completion
    nonblank = sum(1 for b in raw if b.strip())
    # junk lines are never valid entries (no "key"/"text" fields) unless hypothesis builds one
    junk_valid = len(cache) - len(expected)
    assert cache.torn_lines == nonblank - intact_valid - junk_valid
    assert junk_valid >= 0


# ---------------------------------------------------------------- TREC runs


@given(data=st.binary(max_size=300))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
def test_trec_reader_property_any_bytes_give_runs_or_a_data_error(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    path = tmp_path_factory.mktemp("run") / "r.trec"
    path.write_bytes(data)
    try:
        runs = read_trec_run(path)
    except DataError as e:
        assert str(e).startswith(f"{path}:")  # names the file and the line
    else:
        assert all(isinstance(h, Hit) for hits in runs.values() for h in hits)


_ids = st.text(
    st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=6
).filter(lambda s: not any(c.isspace() for c in s))


@given(runs=st.dictionaries(_ids, st.lists(_ids, min_size=1, max_size=4, unique=True), max_size=4))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
def test_trec_write_read_round_trip(tmp_path_factory: pytest.TempPathFactory, runs: dict) -> None:
    hits = {q: [Hit(d, r, 1.0 / r) for r, d in enumerate(ds, 1)] for q, ds in runs.items()}
    path = tmp_path_factory.mktemp("run") / "r.trec"
    write_trec_run(path, hits, "tag")
    back = read_trec_run(path)
    assert {q: [(h.passage_id, h.rank) for h in hs] for q, hs in back.items()} == {
        q: [(h.passage_id, h.rank) for h in hs] for q, hs in hits.items()
    }


def test_trec_run_reader_orders_hits_by_rank_not_score_and_names_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "r.trec"  # tied scores, and a higher score at a lower rank
    path.write_text("q1 Q0 b 2 5.0 t\nq2 Q0 x 1 0.5 t\n\nq1 Q0 c 3 9.0 t\nq1 Q0 a 1 5.0 t\n")
    assert read_trec_run(path) == {
        "q1": [Hit("a", 1, 5.0), Hit("b", 2, 5.0), Hit("c", 3, 9.0)],
        "q2": [Hit("x", 1, 0.5)],
    }
    path.write_text("q1 Q0 a 1 5.0 t\nq1 Q0 b 2 5.0\n")
    with pytest.raises(
        DataError,
        match=rf"^{re.escape(str(path))}:2: expected 'qid Q0 docid rank score tag', got 'q1 Q0 b 2 5.0'$",
    ):
        read_trec_run(path)
    path.write_text("q1 Q0 a 1.0 5.0 t\n")
    with pytest.raises(
        DataError, match=rf"^{re.escape(str(path))}:1: rank '1.0' or score '5.0' is not a number$"
    ):
        read_trec_run(path)


def test_qrels_reader_takes_trec_and_beir_files_and_names_a_bad_line(tmp_path: Path) -> None:
    trec, beir = tmp_path / "q.trec", tmp_path / "q.tsv"
    trec.write_text("q1 0 d1 1\nq1 0 d2 0\n\nq2 Q0 d9 2.0\n")
    beir.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td9\t2\n")
    assert read_qrels(trec) == {"q1": {"d1": 1, "d2": 0}, "q2": {"d9": 2}}
    assert read_qrels(beir) == {"q1": {"d1": 1}, "q2": {"d9": 2}}
    trec.write_text("q1 0 d1 1\nq1 0 d2 0 extra\n")
    with pytest.raises(
        DataError, match=rf"^{re.escape(str(trec))}:2: expected 'qid 0 docid rel' or 'qid<TAB>docid<TAB>rel'"
    ):
        read_qrels(trec)
    trec.write_text("q1 0 d1 yes\n")
    with pytest.raises(DataError, match=rf"^{re.escape(str(trec))}:1: relevance 'yes' is not a number$"):
        read_qrels(trec)
    trec.write_bytes(b"q1 0 d1 1\nq\xff 0 d2 1\n")
    with pytest.raises(DataError, match=rf"^{re.escape(str(trec))}:2: not UTF-8"):
        read_qrels(trec)


@pytest.mark.parametrize("qid", ["q 1", "q\t1", "q\u00a01", ""])
def test_write_trec_run_refuses_ids_it_could_not_read_back(tmp_path: Path, qid: str) -> None:
    with pytest.raises(ValueError, match="whitespace"):
        write_trec_run(tmp_path / "r.trec", {qid: [Hit("d1", 1, 1.0)]}, "bm25")
    with pytest.raises(ValueError, match="passage id"):
        write_trec_run(tmp_path / "r.trec", {"q1": [Hit(qid or "a b", 1, 1.0)]}, "bm25")
    assert not (tmp_path / "r.trec").exists()


class CountingRetriever:
    """Ranks the corpus by the count of query characters in the passage id; counts searches."""

    name = "fake"

    def __init__(self) -> None:
        self.searches = 0
        self._ids: list[str] = []

    def fingerprint(self) -> dict:
        return {"retriever": "fake"}

    def index(self, corpus: Corpus, cache_dir: str | None = None) -> None:
        self._ids = [p.id for p in corpus.passages]

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        self.searches += 1
        return [
            [
                Hit(d, r, float(-r))
                for r, d in enumerate(sorted(self._ids, key=lambda d: (-d.count(q[0]), d))[:k], 1)
            ]
            for q in queries
        ]


CORPUS = Corpus([Passage(f"d{i}", f"text {i}") for i in range(6)], name="c")
QIDS, QUERIES = ["q1", "q2"], ["1", "2"]


def _retrieve(cache_dir: Path) -> tuple[RunCache, CountingRetriever, dict]:
    cache, retriever = RunCache(cache_dir), CountingRetriever()
    return cache, retriever, cache.retrieve(retriever, CORPUS, QIDS, QUERIES, 3)


def _damage(text: str) -> dict[str, bytes]:
    lines = text.splitlines()
    return {
        "cut mid-line": text[: len(text) - len(lines[-1]) // 2].encode(),
        "non-integer rank": text.replace(" 1 ", " one ", 1).encode(),
        "random bytes": bytes(np.random.default_rng(1).integers(0, 256, 500, dtype=np.uint8)),
        "docid not in corpus": text.replace("d", "x", 1).encode(),
        "torn utf-8": text.encode() + "é".encode()[:1],
        "empty": b"",
    }


class ApproximateCountingRetriever(CountingRetriever):
    """As CountingRetriever, searching "through an approximate index" whose info it reports."""

    def __init__(self) -> None:
        super().__init__()
        self.index_info: dict | None = None

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        self.index_info = {"spec": "HNSW8", "recall": {"recall@10": 0.9}, "job_queries": {"recall@3": 0.5}}
        return super().search(queries, k)


def test_cached_run_brings_back_the_approximate_index_info_of_the_search(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A job that reads its run from the cache reports the recall measured by the job that searched."""
    first = ApproximateCountingRetriever()
    RunCache(tmp_path).retrieve(first, CORPUS, QIDS, QUERIES, 3)
    (sidecar,) = (tmp_path / "runs").glob("*.trec.index.json")
    again, cache = ApproximateCountingRetriever(), RunCache(tmp_path)
    cache.retrieve(again, CORPUS, QIDS, QUERIES, 3)
    assert (cache.hits, again.searches) == (1, 0)
    assert again.index_info == first.index_info
    # an unreadable sidecar: warned, nothing reported, the run still served
    sidecar.write_text("{not json")
    third = ApproximateCountingRetriever()
    with caplog.at_level(logging.WARNING):
        RunCache(tmp_path).retrieve(third, CORPUS, QIDS, QUERIES, 3)
    assert third.index_info is None and str(sidecar) in caplog.text
    # exact retrievers write no sidecar
    RunCache(tmp_path / "exact").retrieve(CountingRetriever(), CORPUS, QIDS, QUERIES, 3)
    assert not list((tmp_path / "exact" / "runs").glob("*.index.json"))


@pytest.mark.parametrize(
    "damage",
    ["cut mid-line", "non-integer rank", "random bytes", "docid not in corpus", "torn utf-8", "empty"],
)
def test_corrupt_cached_run_is_warned_counted_and_recomputed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    _, _, fresh = _retrieve(tmp_path)
    (path,) = (tmp_path / "runs").iterdir()
    path.write_bytes(_damage(path.read_text())[damage])
    with caplog.at_level(logging.WARNING):
        cache, retriever, again = _retrieve(tmp_path)
    assert again == fresh and retriever.searches == 1
    assert (cache.rebuilt, cache.hits, cache.misses) == (1, 0, 1)
    assert str(path) in caplog.text and "corrupt" in caplog.text
    _, retriever, third = _retrieve(tmp_path)  # the rewritten run is read back
    assert third == fresh and retriever.searches == 0


@given(data=st.binary(max_size=200))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None, max_examples=50)
def test_run_cache_property_any_cached_bytes_give_the_right_run(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    root = tmp_path_factory.mktemp("rc")
    _, _, fresh = _retrieve(root)
    (path,) = (root / "runs").iterdir()
    path.write_bytes(data)
    cache, _, again = _retrieve(root)
    assert again == fresh
    assert cache.hits + cache.rebuilt == 1  # served only if valid, else counted and recomputed


# ---------------------------------------------------------------- ids with whitespace


@pytest.mark.parametrize("bad_id", ["q 1", "q\t1", " q1", "q1\u2003"])
def test_dataset_loader_rejects_ids_with_whitespace(tmp_path: Path, bad_id: str) -> None:
    path = tmp_path / "d.jsonl"
    rows = [
        {"id": "ok", "question": "q?", "answers": ["a"]},
        {"id": bad_id, "question": "q?", "answers": ["a"]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with pytest.raises(DataError, match=rf"{path}:2: id .* whitespace"):
        JsonlDataset(path=str(path)).load()


def test_corpus_loader_rejects_ids_with_whitespace(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(
        json.dumps({"id": "p1", "text": "x"}) + "\n" + json.dumps({"_id": "Paris France", "text": "y"})
    )
    with pytest.raises(DataError, match=rf"{path}:2: id 'Paris France' contains whitespace"):
        JsonlCorpus(path=str(path)).load()


# ---------------------------------------------------------------- cached indexes


def test_corrupt_bm25_index_is_rebuilt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from rr.retrieval.bm25 import BM25Retriever

    corpus = Corpus(
        [Passage(f"p{i}", t) for i, t in enumerate(["paris is in france", "rome is in italy"])], "c"
    )
    first = BM25Retriever(stemmer=None)
    first.index(corpus, str(tmp_path))
    expected = first.search(["rome"], 2)
    assert first.index_dir is not None and first.index_rebuilds == 0
    for f in first.index_dir.iterdir():  # every file of the index damaged
        f.write_bytes(b"\x00garbage")
    second = BM25Retriever(stemmer=None)
    with caplog.at_level(logging.WARNING):
        second.index(corpus, str(tmp_path))
    assert second.index_rebuilds == 1 and str(first.index_dir) in caplog.text
    assert second.search(["rome"], 2) == expected
    third = BM25Retriever(stemmer=None)
    third.index(corpus, str(tmp_path))  # the rebuilt index loads
    assert third.index_rebuilds == 0 and third.search(["rome"], 2) == expected
    assert [p.name for p in first.index_dir.parent.iterdir()] == [first.index_dir.name]


@pytest.mark.parametrize("damage", ["random bytes", "cut", "not unit rows"])
def test_corrupt_dense_embeddings_are_re_encoded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    from rr.retrieval.dense import DenseRetriever

    corpus = Corpus(
        [Passage(f"p{i}", t) for i, t in enumerate(["paris is in france", "rome is in italy"])], "c"
    )
    first = DenseRetriever(device="cpu")
    first.index(corpus, str(tmp_path))
    path = first.embeddings_path
    assert path is not None
    good = path.read_bytes()
    if damage == "random bytes":
        path.write_bytes(bytes(np.random.default_rng(2).integers(0, 256, len(good), dtype=np.uint8)))
    elif damage == "cut":
        path.write_bytes(good[: len(good) - 100])
    else:
        np.save(path, np.load(path) * 2)
    second = DenseRetriever(device="cpu")
    second._model = first._model  # the same weights, loaded once for the test
    with caplog.at_level(logging.WARNING):
        second.index(corpus, str(tmp_path))
    assert second.index_rebuilds == 1 and str(path) in caplog.text
    np.testing.assert_allclose(np.load(path), np.load(io.BytesIO(good)), atol=1e-5)  # re-encoded
    assert second.search(["rome"], 1)[0][0].passage_id == "p1"


# ---------------------------------------------------------------- a job over damaged caches


def test_job_over_damaged_caches_gives_the_same_table_and_reports_the_repairs(tmp_path: Path) -> None:
    from rr.pipeline import run_job

    from .conftest import compose_config

    cfg = compose_config(
        [
            "generator=simulated",  # the caches' repairs are checked, not a model's answers
            "dataset=synthetic",
            "corpus=synthetic",
            "dataset.n=2",
            "retriever=bm25",
            "grid.k=[1]",
            "grid.orders=[original]",
            "corpus.max_passages=300",
            "generator.max_new_tokens=4",
        ],
        tmp_path,
    )
    first = run_job(cfg, tmp_path / "job1")
    assert first.summary.model_calls > 0 and first.summary.cache_torn_lines == 0
    cache = Path(cfg.paths.cache_dir)
    (shard,) = (cache / "generations").glob("*/*.jsonl")
    with open(shard, "ab") as f:
        f.write(_entry("k", "東京")[:-5])  # a write cut inside a character
    (run,) = (cache / "runs").iterdir()
    run.write_bytes(run.read_bytes()[:-7])  # cut mid-line
    (index,) = (cache / "bm25").iterdir()
    for f in index.iterdir():
        f.write_bytes(b"\xff")
    second = run_job(cfg, tmp_path / "job2")
    summary = json.loads((tmp_path / "job2" / "summary.json").read_text())
    assert summary["model_calls"] == 0 and summary["cache_hits"] == first.summary.model_calls
    assert summary["cache_torn_lines"] == 1
    assert summary["retrieval_runs_rebuilt"] == 1 and summary["index_rebuilds"] == 1
    pd.testing.assert_frame_equal(first.scores, second.scores)
