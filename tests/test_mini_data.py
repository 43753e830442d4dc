"""The bundled default data: the FanOutQA-derived ``mini`` dataset and the packaged Wikipedia corpus."""

from __future__ import annotations

import pytest

from rr.data.base import Corpus, DataError
from rr.data.corpus import WikiOfflineCorpus
from rr.data.mini import MiniDataset, answer_parts, fanoutqa_evidence_titles
from rr.pipeline import answer_recall
from rr.records import Example, Hit, Passage


def test_single_hop_all() -> None:
    examples = MiniDataset(n=None).load()
    assert len(examples) == 497
    assert len({e.id for e in examples}) == 497
    first = examples[0]
    assert (first.id, first.question, first.answers) == (
        "5452b8a8f7c7d609",
        "Find the largest continent",
        ["Asia"],
    )
    assert first.meta["gold_titles"] == ["Continent"] and first.answer_groups is None


def test_single_hop_gold_pages_are_in_the_corpus() -> None:
    corpus = WikiOfflineCorpus().load()
    titles = {p.title for p in corpus.passages}
    assert len(corpus) == 10033
    assert all(t in titles for e in MiniDataset(n=None).load() for t in e.meta["gold_titles"])


def test_multi_hop_has_answer_groups() -> None:
    examples = MiniDataset(variant="multi_hop", n=None).load()
    assert len(examples) == 310
    batting = next(e for e in examples if e.id == "7dcbbbdc7f1120cd")
    assert batting.answer_groups == [["Right"], ["Left"], ["Left"], ["Right"], ["Left"]]
    assert batting.answers == ["Right", "Left"]
    assert "Pat Burrell" in batting.meta["gold_titles"]


def test_sampling_is_seeded() -> None:
    a = [e.id for e in MiniDataset(n=10, seed=0).load()]
    assert a == [e.id for e in MiniDataset(n=10, seed=0).load()]
    assert a != [e.id for e in MiniDataset(n=10, seed=1).load()]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, (["yes"], None)),
        (8611.0, (["8611"], None)),
        (" Asia ", (["Asia"], None)),
        (["a", "b", "a"], (["a", "b"], [["a"], ["b"], ["a"]])),
        ({"x": 1, "y": 2}, (["1", "2"], [["1"], ["2"]])),
    ],
)
def test_answer_parts(value, expected) -> None:
    assert answer_parts(value) == expected


def test_bad_variant() -> None:
    with pytest.raises(ValueError, match="dataset.variant must be"):
        MiniDataset(variant="two_hop")


def test_corpus_sample_keeps_gold_pages_and_is_seeded() -> None:
    a = WikiOfflineCorpus(max_passages=1000, seed=0).load()
    b = WikiOfflineCorpus(max_passages=1000, seed=0).load()
    c = WikiOfflineCorpus(max_passages=1000, seed=1).load()
    assert len(a) == 1000 and a.fingerprint() == b.fingerprint() != c.fingerprint()
    kept = {p.title for p in a.passages}
    single_hop_gold = {t for e in MiniDataset(n=None).load() for t in e.meta["gold_titles"]}
    assert single_hop_gold <= kept <= {p.title for p in WikiOfflineCorpus().load().passages}
    assert single_hop_gold <= fanoutqa_evidence_titles()


def test_duplicate_passage_ids_are_an_error() -> None:
    with pytest.raises(DataError, match="duplicate passage id 'p1' at position 1"):
        Corpus([Passage("p1", "a"), Passage("p1", "b")], name="x")


def test_answer_recall_by_k() -> None:
    corpus = Corpus(
        [Passage("a", "Paris is in France."), Passage("b", "Rome."), Passage("c", "Berlin.")], "t"
    )
    examples = [Example("q1", "?", ["Berlin"]), Example("q2", "?", ["Rome", "Roma"])]
    runs = {
        "q1": [Hit("a", 1, 3.0), Hit("c", 2, 2.0), Hit("b", 3, 1.0)],
        "q2": [Hit("b", 1, 3.0), Hit("a", 2, 2.0), Hit("c", 3, 1.0)],
    }
    # k=1: only q2's top document holds its answer; k=2 and k=3: both.
    assert answer_recall(examples, runs, corpus, [1, 2, 3]) == {1: 0.5, 2: 1.0, 3: 1.0}
