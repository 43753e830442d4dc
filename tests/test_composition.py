"""RGB context compositions (noise ratio, rejection, integration, counterfactual): exact outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from rr.context import RankedDoc
from rr.data.rgb import parse_rgb_row
from rr.perturbations.composition import (
    Counterfactual,
    NoiseRatio,
    answer_type,
    pools_for,
    replace_answer,
)
from rr.records import Example, Passage
from rr.runtime import Runtime
from rr.strategies.base import Cell, CellInput

from .test_rgb_data import FACT_ROW, INT_ROW, NOISE_ROWS


def rt(seed: int = 0) -> Runtime:
    return Runtime(None, Path("."), seed=seed)  # type: ignore[arg-type]  # no model needed


def rgb_input(row: dict, k: int = 5, order: str = "original") -> CellInput:
    return CellInput(parse_rgb_row(row, "t:1"), Cell("bm25", k, order))


def kinds(inp: CellInput) -> list[str]:
    return [d.passage.id.split("/")[1] for d in inp.docs]


def test_noise_ratio_meta_pools_exact() -> None:
    r = rt()
    (out,) = NoiseRatio(ratio=0.6).apply([rgb_input(NOISE_ROWS[0])], r)
    assert out.cell.doc_perturbation == "noise_ratio@0.6"
    assert sorted(kinds(out)) == ["neg", "neg", "neg", "pos", "pos"]  # ceil(5 * 0.6) = 3 negatives
    assert out.extra == {"n_positive_docs": 2, "n_negative_docs": 3}
    assert [d.rank for d in out.docs] == [1, 2, 3, 4, 5]
    ids = [d.passage.id for d in out.docs]
    # pinned: seeded draw + seeded shuffle; the same seed gives the same context
    assert ids == [
        d.passage.id for d in NoiseRatio(ratio=0.6).apply([rgb_input(NOISE_ROWS[0])], rt())[0].docs
    ]
    assert ids == PINNED_NOISE_06
    assert not r.counters
    other = NoiseRatio(ratio=0.6).apply([rgb_input(NOISE_ROWS[0])], rt(seed=1))[0]
    assert [d.passage.id for d in other.docs] == ["0/neg/3", "0/pos/1", "0/neg/2", "0/pos/0", "0/neg/4"]


PINNED_NOISE_06 = ["0/neg/1", "0/pos/1", "0/neg/4", "0/pos/0", "0/neg/3"]


def test_reversed_order_applies_on_top_of_the_shuffle() -> None:
    orig = NoiseRatio(ratio=0.6).apply([rgb_input(NOISE_ROWS[0])], rt())[0]
    rev = NoiseRatio(ratio=0.6).apply([rgb_input(NOISE_ROWS[0], order="reversed")], rt())[0]
    assert [d.passage.id for d in rev.docs] == [d.passage.id for d in orig.docs][::-1]


def test_negative_rejection_and_shortfalls() -> None:
    r = rt()
    (rej,) = NoiseRatio(ratio=1.0).apply([rgb_input(NOISE_ROWS[0])], r)
    assert kinds(rej) == ["neg"] * 5 and rej.cell.doc_perturbation == "noise_ratio@1"
    # row 1: 1 positive, 2 negatives. ratio 0.2 -> 1 neg + 4 pos asked; positives short, so RGB fills
    # with negatives (neg = 5 - 1 = 4) but only 2 exist: 3 documents, both shortfalls counted.
    (short,) = NoiseRatio(ratio=0.2).apply([rgb_input(NOISE_ROWS[1])], r)
    assert sorted(kinds(short)) == ["neg", "neg", "pos"]
    assert r.counters == {"noise_ratio:fewer_positives_than_ratio": 1, "noise_ratio:fewer_than_n_docs": 1}
    (rej1,) = NoiseRatio(ratio=1.0).apply([rgb_input(NOISE_ROWS[1])], r)
    assert kinds(rej1) == ["neg", "neg"] and r.counters["noise_ratio:fewer_negatives_than_ratio"] == 1


def test_pick_first_takes_pools_in_order() -> None:
    # ratio 0.4: 2 negatives and 3 positives asked; 2 positives exist, so 3 negatives fill in
    (out,) = NoiseRatio(ratio=0.4, pick="first").apply([rgb_input(NOISE_ROWS[0])], rt())
    assert sorted(d.passage.id for d in out.docs) == ["0/neg/0", "0/neg/1", "0/neg/2", "0/pos/0", "0/pos/1"]


def test_information_integration_spreads_groups() -> None:
    r = rt()
    (out,) = NoiseRatio(ratio=0.0).apply([rgb_input(INT_ROW)], r)
    ids = sorted(d.passage.id for d in out.docs)
    # one positive per group first (group 0: pos/0-1, group 1: pos/2), then round robin: all 3,
    # then negatives fill up to 5 -- only one exists.
    assert ids == ["7/neg/0", "7/pos/0", "7/pos/1", "7/pos/2"]
    assert out.extra == {"n_positive_docs": 3, "n_negative_docs": 1}
    assert r.counters == {"noise_ratio:fewer_than_n_docs": 1}


def _retrieved_input(ex: Example, texts: list[str], k: int | None = None) -> CellInput:
    docs = tuple(RankedDoc(Passage(f"d{i}", t, f"T{i}"), i + 1) for i, t in enumerate(texts))
    return CellInput(ex, Cell("bm25", k or len(texts), "original"), docs)


def test_retrieved_pools_split_by_answer_presence() -> None:
    ex = Example("q1", "Who wrote Hamlet?", ["William Shakespeare", "Shakespeare"])
    inp = _retrieved_input(
        ex, ["Hamlet is by Shakespeare.", "Macbeth is a play.", "SHAKESPEARE, W.", "Ophelia."]
    )
    pools = pools_for(inp)
    assert pools.source == "retrieved"
    assert [p.id for p in pools.positive] == ["d0", "d2"] and [p.id for p in pools.negative] == ["d1", "d3"]
    (out,) = NoiseRatio(ratio=0.5, n=4, pick="first").apply([inp], rt())
    assert sorted(d.passage.id for d in out.docs) == ["d0", "d1", "d2", "d3"]  # ceil(2) = 2 negatives
    (k0,) = NoiseRatio(ratio=0.5).apply([CellInput(ex, Cell("none", 0, "none"))], rt())
    assert k0.docs == () and k0.cell.doc_perturbation == "none"


def test_retrieved_groups_for_multi_part_questions() -> None:
    ex = Example("m", "Capitals of France and Italy?", ["Paris", "Rome"], [["Paris"], ["Rome"]])
    inp = _retrieved_input(ex, ["Paris is big.", "Paris again.", "Rome is old.", "Berlin.", "Madrid."])
    pools = pools_for(inp)
    assert [[p.id for p in g] for g in pools.groups] == [["d0", "d1"], ["d2"]]
    (out,) = NoiseRatio(ratio=0.6, n=5).apply([inp], rt())
    ids = sorted(d.passage.id for d in out.docs)
    assert "d2" in ids and ("d0" in ids or "d1" in ids)  # both groups represented
    assert out.extra == {"n_positive_docs": 2, "n_negative_docs": 2}  # 2 positives asked; 2 negatives exist


def test_answer_types_and_replacement() -> None:
    assert [answer_type(a) for a in ["1998", "May 18, 2023", "3,818.1 million", "yes", "Annie Ernaux"]] == [
        "year",
        "date",
        "number",
        "yesno",
        "text",
    ]
    assert (
        replace_answer("Born in 1998 (1998s), not 19989.", ["1998"], "2004")
        == "Born in 2004 (1998s), not 19989."
    )
    text = "Annie Ernaux won; ERNAUX said."
    assert (
        replace_answer(text, ["Ernaux", "Annie Ernaux"], "Louise Glück")
        == "Louise Glück won; Louise Glück said."
    )


def test_counterfactual_meta_pools() -> None:
    (out,) = Counterfactual(n=5).apply([rgb_input(FACT_ROW)], rt())
    assert sorted(d.passage.id for d in out.docs) == ["3/cf/0", "3/cf/1"]
    assert out.extra == {"fake_answer": "Apple", "n_counterfactual_docs": 2}
    assert out.cell.doc_perturbation == "counterfactual"
    (noisy,) = Counterfactual(n=5, ratio=0.2, correct_ratio=0.2).apply([rgb_input(FACT_ROW)], rt())
    # 1 negative, 1 correct (a positive not chosen as wrong -- none left here), 3 wrong asked: 2 exist
    assert sorted(d.passage.id for d in noisy.docs) == ["3/cf/0", "3/cf/1", "3/neg/0"]
    assert noisy.cell.doc_perturbation == "counterfactual@noise0.2@correct0.2"


def test_counterfactual_on_retrieved_docs_uses_same_type_fake() -> None:
    a = Example("a", "When did X happen?", ["1998"])
    b = Example("b", "When did Y happen?", ["2004"])
    c = Example("c", "Who did Z?", ["Marie Curie"])
    g = Example("g", "Two parts?", ["p", "q"], [["p"], ["q"]])
    inputs = [
        _retrieved_input(a, ["X happened in 1998.", "Unrelated."]),
        _retrieved_input(b, ["Y was in 2004.", "Other 2004 text."]),
        _retrieved_input(c, ["Nothing here."]),
        _retrieved_input(g, ["p and q."]),
        CellInput(a, Cell("none", 0, "none")),
    ]
    r = rt()
    out = Counterfactual(n=2).apply(inputs, r)
    assert [o.example.id for o in out] == ["a", "b", "a"]  # c has no answer doc, g has two groups
    assert out[0].extra["fake_answer"] == "2004" and out[1].extra["fake_answer"] == "1998"
    assert [d.passage.text for d in out[0].docs] == ["X happened in 2004."]
    assert sorted(d.passage.text for d in out[1].docs) == ["Other 1998 text.", "Y was in 1998."]
    assert out[2].cell.k == 0 and out[2].cell.doc_perturbation == "none"
    assert r.counters == {
        "counterfactual:dropped_no_answer_document": 1,
        "counterfactual:dropped_multi_group_example": 1,
    }


@pytest.mark.parametrize("bad", [{"ratio": 1.5}, {"n": 0}, {"pool": "x"}, {"pick": "x"}])
def test_noise_ratio_rejects_bad_settings(bad: dict) -> None:
    with pytest.raises(ValueError):
        NoiseRatio(**bad)


def test_a_document_serving_two_groups_is_used_once() -> None:
    ex = Example("m", "Capitals of France and Italy?", ["Paris", "Rome"], [["Paris"], ["Rome"]])
    inp = _retrieved_input(ex, ["Paris and Rome.", "Berlin.", "Madrid.", "Oslo."])
    (out,) = NoiseRatio(ratio=0.0, n=3, pick="first").apply([inp], rt())
    assert sorted(d.passage.id for d in out.docs) == ["d0", "d1", "d2"]
    assert out.extra == {"n_positive_docs": 1, "n_negative_docs": 2}
