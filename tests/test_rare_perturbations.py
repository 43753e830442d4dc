"""RARE document perturbations: ground truth, answer-sentence deletion (spaCy), back-translation."""

from __future__ import annotations

from pathlib import Path

import pytest

from rr.context import RankedDoc
from rr.perturbations.rare import BackTranslate, DeleteAnswer, GroundTruth, delete_answer_sentences
from rr.records import Example, Generation, Passage
from rr.runtime import Runtime
from rr.strategies.base import Cell, CellInput

EX = Example("q1", "Where was Marie Curie born?", ["Warsaw"])
GOLD = (
    "Marie Curie was a Polish physicist. She was born in Warsaw in 1867. "
    "Dr. Curie later moved to Paris, where she studied at the Sorbonne."
)


def inputs() -> list[CellInput]:
    docs = (
        RankedDoc(Passage("d0", "Paris is the capital of France.", "Paris"), 1),
        RankedDoc(Passage("d1", GOLD, "Marie Curie"), 2),
    )
    return [
        CellInput(EX, Cell("bm25", 2, "original"), docs),
        CellInput(EX, Cell("none", 0, "none")),
        CellInput(Example("q2", "Who?", ["Nobody"]), Cell("bm25", 2, "original"), docs),
    ]


def rt(llm=None) -> Runtime:  # noqa: ANN001
    return Runtime(llm, Path("."))  # type: ignore[arg-type]


def test_delete_answer_sentences_exact() -> None:
    text, n = delete_answer_sentences(GOLD, ["Warsaw"])
    assert n == 1
    assert text == (
        "Marie Curie was a Polish physicist. Dr. Curie later moved to Paris, where she studied at the Sorbonne."
    )
    assert delete_answer_sentences("No answer here.", ["Warsaw"]) == ("No answer here.", 0)


def test_ground_truth_takes_the_best_ranked_answer_document() -> None:
    r = rt()
    out = GroundTruth().apply(inputs(), r)
    assert [(o.example.id, o.cell.k, o.cell.doc_perturbation) for o in out] == [
        ("q1", 2, "ground_truth"),
        ("q1", 0, "none"),
    ]
    assert [d.passage.id for d in out[0].docs] == ["d1"]
    assert r.counters == {"ground_truth:dropped_no_answer_document": 1}


def test_delete_answer_with_similarity() -> None:
    r = rt()
    out = DeleteAnswer().apply(inputs(), r)
    (doc,) = out[0].docs
    assert doc.passage.id == "d1/del" and "Warsaw" not in doc.passage.text
    assert out[0].cell.doc_perturbation == "delete_answer"
    assert out[0].extra["sentences_deleted"] == 1
    assert 0.5 < out[0].extra["doc_similarity"] < 1.0  # real MiniLM: close, not identical
    assert r.counters == {"delete_answer:dropped_no_answer_document": 1}


class _Translator:
    """Stands in for an LLM: 'translates' by tagging, so the two batched steps are visible."""

    identity = {"model": "fake"}

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def generate(self, requests, step):  # noqa: ANN001
        self.calls.append((step, len(requests)))
        out = []
        for r in requests:
            text = r.messages[0][1].split("\n\n", 1)[1]
            out.append(
                Generation(f"[FR] {text}" if step.endswith("en_fr") else text.replace("[FR] ", ""), "k")
            )
        return out


def test_backtranslate_two_batched_steps() -> None:
    llm = _Translator()
    r = rt(llm)
    batch = inputs() + [CellInput(EX, Cell("bm25", 2, "reversed"), inputs()[0].docs)]
    out = BackTranslate(embedding_model=None).apply(batch, r)
    # one unique ground-truth passage across both q1 cells: each step sends it once
    assert llm.calls == [("backtranslate:en_fr", 1), ("backtranslate:fr_en", 1)]
    assert [o.cell.doc_perturbation for o in out] == ["backtranslate", "none", "backtranslate"]
    assert out[0].docs[0].passage.text == GOLD and out[0].docs[0].passage.id == "d1/bt"
    assert r.counters == {"backtranslate:dropped_no_answer_document": 1}


@pytest.mark.parametrize("n", [0, -1])
def test_ground_truth_needs_positive_n(n: int) -> None:
    with pytest.raises(ValueError):
        GroundTruth(n=n)
