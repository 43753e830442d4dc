"""pyserini's Lucene BM25 against bm25s's Lucene-scoring BM25 (needs the pyserini extra and Java 21).

Skipped cleanly where pyserini is not installed or no Java >= 21 runtime is found. The JVM is
started by the first test that needs it, not at collection, so deselecting the marker
(``-m "not pyserini"``) costs nothing.
"""

from __future__ import annotations

import os

import pytest

from rr.data.base import Corpus
from rr.records import Passage
from rr.retrieval.bm25 import BM25Retriever
from tests.test_retrievers import IDS, PASSAGES

pytestmark = pytest.mark.pyserini

pytest.importorskip("pyserini")
pytest.importorskip("jnius_config")

# Queries whose words, like every other word of the corpus except "bee"/"bees", keep distinct
# stems under Lucene's Porter stemmer, so the unstemmed bm25s index has the same statistics.
QUERIES = [
    "largest river",
    "highest mountain in the world",
    "programming language readability",
    "largest planet solar system",
    "great wall china",
    "honey nectar",
    "tower paris",
]


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    """Start pyserini's JVM (skip without Java 21); checks the OpenAI-key workaround leaves no trace."""
    from rr.retrieval.pyserini_bm25 import MIN_JAVA, java_major_version, pyserini_available

    had_key = "OPENAI_API_KEY" in os.environ
    if not pyserini_available():
        pytest.skip("pyserini cannot start: no Java >= 21 runtime (install the pyserini extra)")
    assert ("OPENAI_API_KEY" in os.environ) == had_key
    assert (java_major_version(os.environ["JAVA_HOME"]) or 0) >= MIN_JAVA


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus([Passage(pid, text, title) for pid, title, text in PASSAGES], name="toy", source="tests")


@pytest.fixture(scope="module")
def lucene_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lucene-cache"))


@pytest.fixture(scope="module")
def pyserini_retriever(java, corpus, lucene_cache):
    from rr.retrieval.pyserini_bm25 import PyseriniBM25Retriever

    r = PyseriniBM25Retriever(k1=0.9, b=0.4)
    r.index(corpus, lucene_cache)
    return r


def test_scores_agree_with_bm25s(pyserini_retriever, corpus):
    bm25 = BM25Retriever(k1=0.9, b=0.4, method="lucene", stemmer=None, stopwords="en")
    bm25.index(corpus)
    ours = bm25.search(QUERIES, len(IDS))
    theirs = pyserini_retriever.search(QUERIES, len(IDS))
    for query, a, b in zip(QUERIES, ours, theirs, strict=True):
        matched_a = [(h.passage_id, h.score) for h in a if h.score > 0]
        matched_b = [(h.passage_id, h.score) for h in b if h.score > 0]
        assert [d for d, _ in matched_a] == [d for d, _ in matched_b], query
        for (_, sa), (_, sb) in zip(matched_a, matched_b, strict=True):
            assert sb == pytest.approx(sa, abs=1e-4), query  # Anserini rounds to 4 decimals


def test_hits_are_padded_to_k(pyserini_retriever):
    (hits,) = pyserini_retriever.search(["honey nectar"], 50)
    assert [h.rank for h in hits] == list(range(1, len(IDS) + 1))
    assert hits[0].passage_id == "bee" and hits[0].score > 0
    assert [h.passage_id for h in hits[1:]] == [i for i in IDS if i != "bee"]
    assert all(h.score == 0.0 for h in hits[1:])
    (top,) = pyserini_retriever.search(["largest river"], 1)
    assert [h.passage_id for h in top] == ["amazon"]


def test_index_is_cached_and_reused(pyserini_retriever, corpus, lucene_cache, monkeypatch):
    import rr.retrieval.pyserini_bm25 as module

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the cached Lucene index should have been reused")

    monkeypatch.setattr(module, "build_lucene_index", no_rebuild)
    again = module.PyseriniBM25Retriever(k1=0.9, b=0.4)
    again.index(corpus, lucene_cache)
    assert again.index_dir == pyserini_retriever.index_dir
    assert again.search(QUERIES, 3) == pyserini_retriever.search(QUERIES, 3)


def test_corrupt_cached_index_is_rebuilt(java, corpus, tmp_path, caplog):
    import logging

    from rr.retrieval.pyserini_bm25 import PyseriniBM25Retriever

    first = PyseriniBM25Retriever(k1=0.9, b=0.4)
    first.index(corpus, str(tmp_path))
    expected = first.search(QUERIES, 3)
    assert first.index_dir is not None
    for f in first.index_dir.iterdir():  # every file of the index damaged, segments_* kept by name
        if f.is_file():
            f.write_bytes(b"\x00garbage")
    second = PyseriniBM25Retriever(k1=0.9, b=0.4)
    with caplog.at_level(logging.WARNING):
        second.index(corpus, str(tmp_path))
    assert second.index_rebuilds == 1 and str(first.index_dir) in caplog.text
    assert second.search(QUERIES, 3) == expected
