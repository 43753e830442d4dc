"""The bundled default data: the FanOutQA-derived ``mini`` dataset and the packaged Wikipedia corpus."""

from __future__ import annotations

import pytest

from rr.answers import has_answer_in
from rr.data.base import Corpus, DataError
from rr.data.corpus import WikiOfflineCorpus
from rr.data.fanoutqa import fanoutqa_evidence_titles
from rr.data.mini import MiniDataset, answer_parts, answerable, usable_gold
from rr.pipeline import answer_recall
from rr.records import Example, Hit, Passage


def test_single_hop_all() -> None:
    ds = MiniDataset(n=None, answerable_only=False)
    examples = ds.load()
    assert len(examples) == 497
    assert len({e.id for e in examples}) == 497
    first = examples[0]
    assert (first.id, first.question, first.answers) == (
        "5452b8a8f7c7d609",
        "Find the largest continent",
        ["Asia"],
    )
    assert first.meta["gold_titles"] == ["Continent"] and first.answer_groups is None
    assert ds.filter_counts == {"questions": 497, "answerable": 497, "sampled": 497}


def _evidence() -> dict[str, str]:
    return {p.title: p.text for p in WikiOfflineCorpus().load().passages}


def test_single_hop_default_keeps_only_answerable() -> None:
    ds = MiniDataset(n=None)
    examples = ds.load()
    # 86 of 497 have the answer in the gold passage; 8 of those are yes/no or < 3 characters
    assert ds.filter_counts == {"questions": 497, "answer_in_evidence": 86, "answerable": 78, "sampled": 78}
    evidence = _evidence()
    for e in examples:
        (title,) = e.meta["gold_titles"]
        assert has_answer_in([evidence[title]], e.answers), e.id
        assert all(usable_gold(a) for a in e.answers), e.answers
    kept = {e.id for e in examples}
    assert "5452b8a8f7c7d609" in kept  # "Find the largest continent": Asia is in "Continent"'s lead
    assert "8f328da12f4c2b17" not in kept  # Macau's population 680000: not in the lead paragraph
    assert "17483ee255163336" not in kept  # a "no" gold is never kept (it matches any "not")
    dropped = {e.id for e in MiniDataset(n=None, answerable_only=False).load()} - {e.id for e in examples}
    assert len(dropped) == 497 - 78


def test_multi_hop_answerable_means_every_part_in_some_evidence_passage() -> None:
    ds = MiniDataset(variant="multi_hop", n=None)
    examples = ds.load()
    assert ds.filter_counts == {"questions": 310, "answer_in_evidence": 12, "answerable": 9, "sampled": 9}
    evidence = _evidence()
    for e in examples:
        texts = [evidence[t] for t in e.meta["gold_titles"] if t in evidence]
        for part in e.answer_groups or [e.answers]:
            assert any(has_answer_in([t], [a]) for t in texts for a in part if usable_gold(a)), (e.id, part)


@pytest.mark.parametrize(
    ("answers", "groups", "expected"),
    [
        (["Paris"], None, True),
        (["paris."], None, True),  # judge normalisation: case and punctuation
        (["Lyon"], None, False),  # not in the passage
        (["no"], None, False),  # yes/no golds are never usable ("no" is in "not")
        (["4"], None, False),  # shorter than 3 normalised characters
        (["4", "Paris"], None, True),  # one usable alternative suffices
        (["Paris", "Bern"], [["Paris"], ["Bern"]], True),  # each part in some passage
        (["Paris", "Lyon"], [["Paris"], ["Lyon"]], False),  # every part must be found
    ],
)
def test_answerable_hand_cases(answers, groups, expected) -> None:
    evidence = {"France": "Paris is the capital of France; it is not 4 hours away.", "Swiss": "Bern."}
    ex = Example("q", "?", answers, groups, meta={"gold_titles": ["France", "Swiss", "Missing page"]})
    assert answerable(ex, evidence) is expected


def test_usable_gold() -> None:
    assert [usable_gold(a) for a in ["Yes", "NO.", "+1", "The 4", "Asia", "100"]] == [
        False,
        False,
        False,
        False,
        True,
        True,
    ]


def test_single_hop_gold_pages_are_in_the_corpus() -> None:
    corpus = WikiOfflineCorpus().load()
    titles = {p.title for p in corpus.passages}
    assert len(corpus) == 10033
    assert all(
        t in titles for e in MiniDataset(n=None, answerable_only=False).load() for t in e.meta["gold_titles"]
    )


def test_multi_hop_has_answer_groups() -> None:
    examples = MiniDataset(variant="multi_hop", n=None, answerable_only=False).load()
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
    single_hop_gold = {
        t for e in MiniDataset(n=None, answerable_only=False).load() for t in e.meta["gold_titles"]
    }
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
