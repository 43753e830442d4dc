"""Tests for rr.judges (normalisation, string metrics, MatchJudge) and rr.prompts.answer."""

from __future__ import annotations

import pytest

from rr.answers import (
    exact_match,
    has_answer,
    has_answer_in,
    normalize_answer,
    substring_match,
    token_f1,
)
from rr.judges.base import Judge, JudgeItem
from rr.judges.match import MatchJudge
from rr.prompts.answer import extract_answer
from rr.registry import COMPONENTS

# --------------------------------------------------------------------------- normalize_answer


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("Denver Broncos", "denver broncos"),
        ("The Denver Broncos.", "denver broncos"),
        ("  A  quick,\tbrown   fox! ", "quick brown fox"),
        ("the theory of an apple", "theory of apple"),
        ("Tom and Jerry", "tom and jerry"),  # "an" inside "and" is not an article
        ("Saint-Denis", "saintdenis"),  # punctuation is deleted, not replaced by a space
        ("U.S. Army", "us army"),
        ("$1,000", "1000"),
        ("The", ""),
        ("Théâtre", "théâtre"),  # non-ASCII letters are kept (only string.punctuation is removed)
        ("“quoted”", "“quoted”"),  # curly quotes are not in string.punctuation (as in SQuAD)
    ],
)
def test_normalize_answer_matches_squad(raw: str, normalized: str) -> None:
    assert normalize_answer(raw) == normalized


# --------------------------------------------------------------------------- EM / F1


def test_exact_match() -> None:
    assert exact_match("the Denver Broncos!", ["Denver Broncos"]) == 1.0
    assert exact_match("Denver", ["Denver Broncos"]) == 0.0
    assert exact_match("Carolina Panthers", ["Denver Broncos", "carolina panthers"]) == 1.0  # max over golds
    assert exact_match("anything", []) == 0.0
    # a gold that normalises to "" never matches, not even an empty prediction
    assert exact_match("", ["", "The"]) == 0.0


def test_token_f1_hand_worked() -> None:
    # pred tokens [denver, broncos, won] vs [broncos]: overlap 1, P = 1/3, R = 1, F1 = 2*(1/3)/(4/3) = 0.5;
    # vs [carolina, panthers]: 0. max = 0.5
    assert token_f1("Denver Broncos won", ["Broncos", "Carolina Panthers"]) == pytest.approx(0.5)
    # bag overlap: [x, x, y] vs [x, y, y]: min counts x 1, y 1 -> 2; P = R = 2/3 -> F1 = 2/3
    assert token_f1("x x y", ["x y y"]) == pytest.approx(2 / 3)
    # articles and punctuation vanish before tokenising: [denver, broncos] vs [denver, broncos] -> 1
    assert token_f1("The Denver Broncos.", ["denver broncos"]) == pytest.approx(1.0)
    # [paris] vs [paris, france]: P = 1, R = 1/2 -> F1 = 2/3
    assert token_f1("Paris", ["Paris, France"]) == pytest.approx(2 / 3)
    assert token_f1("", ["Paris"]) == 0.0
    assert token_f1("Paris", []) == 0.0
    assert token_f1("the", ["a"]) == 0.0


# --------------------------------------------------------------------------- substring match


def test_substring_match() -> None:
    assert substring_match("It was Barack Obama.", ["Obama"]) == 1.0
    assert substring_match("It was Barack Obama.", ["Obama Barack"]) == 0.0
    assert substring_match("It was Barack Obama.", ["Bush", "barack obama"]) == 1.0
    assert substring_match("In 1998.", ["1998"]) == 1.0
    assert substring_match("In 1998.", ["1"]) == 1.0  # plain substring, as in Mallen et al. (2023)
    assert substring_match("Obama", ["Barack Obama"]) == 0.0  # the gold must be inside the prediction


def test_empty_golds_never_match() -> None:
    assert substring_match("anything", [""]) == 0.0
    assert substring_match("anything", ["The"]) == 0.0  # normalises to ""
    assert substring_match("anything", []) == 0.0
    assert has_answer("anything at all", ["", " a "]) is False


def test_golds_must_be_a_list() -> None:
    with pytest.raises(TypeError, match="list of strings"):
        substring_match("Paris", "Paris")


def test_has_answer_in_passage() -> None:
    passage = "Paris is the capital and most populous city of France."
    assert has_answer(passage, ["Lyon", "the capital"]) is True
    assert has_answer(passage, ["Lyon"]) is False


@pytest.mark.parametrize(
    ("texts", "golds", "expected"),
    [
        (["Paris is in", "France."], ["in France"], True),  # a gold spanning two documents
        (["the New", "York Times"], ["new york"], True),
        (["Saint-", "Denis"], ["saintdenis"], False),  # joined with a space: "saint denis"
        (["", "...", " ", "a Lyon"], ["lyon"], True),  # texts normalising to "" add nothing
        (["ends with the", "an apple"], ["with apple"], True),  # articles vanish at the edges
        (["ΟΔΟΣ", "σ"], ["οδος σ"], True),  # final sigma: lowercased per text as in the join
        ([], ["x"], False),
    ],
)
def test_has_answer_in_equals_the_joined_form(texts: list[str], golds: list[str], expected: bool) -> None:
    assert has_answer_in(texts, golds) is has_answer(" ".join(texts), golds) is expected


def test_has_answer_in_equals_the_joined_form_on_the_corpus() -> None:
    from rr.data.corpus import wiki_offline_passages

    texts = [p.text for p in wiki_offline_passages()[:300]]
    words = " ".join(texts).split()
    golds = [
        " ".join(words[i : i + n])
        for i, n in zip(range(0, len(words), 997), [1, 2, 3, 4] * 100, strict=False)
    ]
    for start in range(0, 300, 7):
        docs = texts[start : start + 10]
        for g in golds[:40]:
            assert has_answer_in(docs, [g]) == has_answer(" ".join(docs), [g])
    # golds straddling two documents
    for a, b in zip(texts[:50], texts[1:51], strict=True):
        gold = a.split()[-1] + " " + b.split()[0]
        assert has_answer_in([a, b], [gold]) == has_answer(a + " " + b, [gold])


# --------------------------------------------------------------------------- MatchJudge


def test_match_judge_single_answer() -> None:
    judge = MatchJudge()
    assert isinstance(judge, Judge)
    items = [
        JudgeItem("Capital of France?", "Paris, France", ["Paris"]),
        JudgeItem("Capital of France?", "Lyon", ["Paris"]),
        JudgeItem("Capital of France?", "paris", ["Paris", "City of Paris"]),
    ]
    out = judge.judge(items)
    assert [j.score for j in out] == [1.0, 0.0, 1.0]
    assert all(j.judge == "match" and j.refused is False for j in out)
    # "Paris, France" vs "Paris": EM 0, F1 = 2*(1/2*1)/(3/2) = 2/3
    assert out[0].extra == {"em": 0.0, "f1": pytest.approx(2 / 3)}
    assert out[2].extra == {"em": 1.0, "f1": 1.0}


def test_match_judge_group_coverage_fraction() -> None:
    groups = [["Paris"], ["Lyon", "Lyons"], ["Nice"]]
    item = JudgeItem("French cities?", "Paris and Lyons", answers=["Paris"], answer_groups=groups)
    (j,) = MatchJudge().judge([item])
    # Paris covers group 1, "Lyons" covers group 2 ("lyon" is also a substring), Nice uncovered -> 2/3
    assert j.score == pytest.approx(2 / 3)
    # EM over flattened alternatives: none equal "paris and lyons" -> 0;
    # F1: [paris, and, lyons] vs [paris] -> P 1/3, R 1 -> 0.5 (same for lyons) -> 0.5
    assert j.extra == {"em": 0.0, "f1": pytest.approx(0.5)}
    (none_covered,) = MatchJudge().judge([JudgeItem("q", "Marseille", [], groups)])
    assert none_covered.score == 0.0
    (all_covered,) = MatchJudge().judge([JudgeItem("q", "Nice, Lyon, Paris", [], groups)])
    assert all_covered.score == 1.0


def test_match_judge_empty_groups_fall_back_to_answers() -> None:
    (j,) = MatchJudge().judge([JudgeItem("q", "Paris", ["Paris"], answer_groups=[])])
    assert j.score == 1.0


def test_match_judge_name_and_registration() -> None:
    assert COMPONENTS["judge"]["match"] is MatchJudge
    (j,) = MatchJudge(name="match_v2").judge([JudgeItem("q", "Paris", ["Paris"])])
    assert j.judge == "match_v2"
    assert MatchJudge().judge([]) == []


# --------------------------------------------------------------------------- extract_answer


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Answer: Paris", ("Paris", True)),
        ("Answer: Paris.", ("Paris", True)),
        ("answer: 1998", ("1998", True)),
        ("ANSWER :  1998  ", ("1998", True)),
        ('**Answer:** "Hong Kong".', ("Hong Kong", True)),
        ("**Answer**: Hong Kong", ("Hong Kong", True)),
        ("Answer: **Paris.**", ("Paris", True)),
        ("Answer: \u201cParis\u201d", ("Paris", True)),
        # the LAST marker wins (e.g. a model echoing the prompt's example first)
        ("Answer: Paris.\n\nQuestion: What is the capital of Italy? Answer: Rome", ("Rome", True)),
        ("Question: What city is Kowloon a part of? Answer: Hong Kong.\nAnswer: Lisbon", ("Lisbon", True)),
        # cut at the first newline after the marker
        ("Answer: Paris\nExplanation: it is the capital.", ("Paris", True)),
        ("The final answer: U.S.", ("U.S", True)),  # exactly one trailing period removed
        # marker with its answer on the next line
        ("Answer:\n  Paris\n", ("Paris", True)),
        ("Answer:", ("", True)),
        # no marker: first non-empty line, stripped the same way, flagged as a fallback
        ("The capital is Paris.", ("The capital is Paris", False)),
        ("   \n  Paris is the answer\nmore", ("Paris is the answer", False)),
        ('"Paris"', ("Paris", False)),
        ("", ("", False)),
        ("  \n\t\n", ("", False)),
        ("Reanswer: no marker here", ("Reanswer: no marker here", False)),
        # RARE's format: the "answer:" part, never the "cot_answer:" reasoning (a truncated one: no answer)
        ("cot_answer: The context says $94.8 billion.\nanswer: $94.8 billion", ("$94.8 billion", True)),
        ("cot_answer: The question asks about Apple's revenue. According to", ("", False)),
        ("**cot_answer:** The question asks about\nmore reasoning", ("more reasoning", False)),
        ("Final_answer: Paris", ("Paris", True)),
    ],
)
def test_extract_answer(raw: str, expected: tuple[str, bool]) -> None:
    assert extract_answer(raw) == expected
