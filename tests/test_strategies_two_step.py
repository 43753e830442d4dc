"""OwnKnow and S2A: what each step sends, what comes back, and the shared closed-book cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from rr.context import RankedDoc
from rr.prompts import render
from rr.records import Example, Passage
from rr.strategies.base import Cell, CellInput
from rr.strategies.ownknow import OwnKnow
from rr.strategies.s2a import S2A
from rr.strategies.simple import ClosedBook

from .scripted import ScriptedGenerator, scripted_runtime

DOCS = tuple(RankedDoc(Passage(f"p{i}", f"text {i}", f"T{i}"), i) for i in range(1, 5))
EX = Example("q1", "Who wrote Hamlet?", ["Shakespeare"])
EX2 = Example("q2", "Capital of France?", ["Paris"])


def cell_input(ex: Example, k: int, docs: tuple[RankedDoc, ...] = (), order: str = "original") -> CellInput:
    if k == 0:
        return CellInput(ex, Cell("none", 0, "none"), ())
    return CellInput(ex, Cell("bm25", k, order), docs[:k])


def test_ownknow_inserts_the_closed_book_answer(tmp_path: Path) -> None:
    gen = ScriptedGenerator(
        rules=[("Previous Answer: Marlowe.", "Previous Answer: Marlowe. Answer: Shakespeare")],
        default="Answer: Marlowe.",
    )
    rt = scripted_runtime(gen, tmp_path)
    inputs = [cell_input(EX, 0), cell_input(EX, 2, DOCS), cell_input(EX, 3, DOCS, "reversed")]
    outs = OwnKnow().run(inputs, rt)
    # k = 0: the closed-book answer itself; k > 0: the second step's answer.
    assert [o.prediction for o in outs] == ["Marlowe", "Shakespeare", "Shakespeare"]
    assert outs[0].docs_used == () and outs[1].docs_used == DOCS[:2]
    assert [o.extra["ownknow_draft"] for o in outs] == ["", "Marlowe", "Marlowe"]
    # One closed-book call for the one question, then one per k > 0 input.
    closed_prompt = render("non_rag_qa.j2", question=EX.question)
    assert gen.sent.count(closed_prompt) == 1
    expected = render(
        "ownknow.j2", sources=["T1\ntext 1", "T2\ntext 2"], question=EX.question, non_rag_output="Marlowe"
    )
    assert expected in gen.sent
    steps = [s["step"] for s in rt.llm.stats.steps]
    assert steps == ["closed_book", "ownknow:answer"]


def test_ownknow_rejects_unknown_draft_field() -> None:
    with pytest.raises(ValueError, match="draft"):
        OwnKnow(draft="answer")


def test_ownknow_step1_reuses_closed_book_generations(tmp_path: Path) -> None:
    """closed_book first, then ownknow: its step 1 is served from the cache (zero model calls).

    The same holds in a real job on the real model: tests/test_cao2025_demo.py.
    """
    gen = ScriptedGenerator(default="Answer: Marlowe")
    rt = scripted_runtime(gen, tmp_path)
    ClosedBook().run([cell_input(EX, 0), cell_input(EX2, 0)], rt)
    assert rt.llm.stats.model_calls == 2
    OwnKnow().run([cell_input(ex, 1, DOCS) for ex in (EX, EX2)], rt)
    step1, step2 = rt.llm.stats.steps[-2:]
    assert step1["step"] == "closed_book"
    assert (step1["requests"], step1["cache_hits"], step1["model_calls"]) == (2, 2, 0)
    assert step2["step"] == "ownknow:answer" and step2["model_calls"] == 2


S2A_RULES = [
    ("Capital of France?", "Selected Conetxts: Context 2, Context 9."),  # 9 is out of range
    ("Who wrote Hamlet?", "I cannot tell."),
]


def s2a_gen() -> ScriptedGenerator:
    # Step-2 prompts end with "Retrieved contexts:..." too; route by the template's first words.
    gen = ScriptedGenerator(default="Answer: Paris")
    base = gen.respond

    def respond(prompt: str, params) -> str:
        if prompt.startswith("Identify the retrieved context"):
            for pattern, text in S2A_RULES:
                if pattern in prompt:
                    return text
            return "Selected Contexts: None"
        return base(prompt, params)

    gen.respond = respond  # type: ignore[method-assign]
    return gen


def test_s2a_answers_over_the_selected_documents_in_prompt_order(tmp_path: Path) -> None:
    gen = s2a_gen()
    rt = scripted_runtime(gen, tmp_path)
    docs = (DOCS[2], DOCS[0], DOCS[1])  # shuffled order: T3, T1, T2
    inputs = [
        CellInput(EX2, Cell("bm25", 3, "shuffled"), docs),
        CellInput(EX, Cell("bm25", 3, "shuffled"), docs),
        cell_input(EX2, 0),
    ]
    outs = S2A().run(inputs, rt)
    ok, fallback, closed = outs
    # Context 2 of the prompt (T1); 9 dropped.
    assert ok.extra["s2a_selection"] == [2] and ok.extra["s2a_parse"] == "ok"
    assert [d.passage.id for d in ok.docs_used] == ["p1"] and ok.extra["n_docs_shown"] == 3
    assert render("rag_qa.j2", sources=["T1\ntext 1"], question=EX2.question) in gen.sent
    # Unreadable selection: all documents, counted, marked.
    assert fallback.extra["s2a_parse"] == "unparsable" and fallback.extra["s2a_fallback"] is True
    assert fallback.extra["s2a_selection"] == [1, 2, 3] and fallback.docs_used == docs
    assert fallback.extra["s2a_output"] == "I cannot tell."
    assert closed.extra["s2a_parse"] == "closed_book" and closed.docs_used == ()
    assert rt.counters["s2a:fallback:unparsable"] == 1
    assert rt.counters["s2a:parse:ok"] == 1
    assert rt.counters["s2a:dropped_out_of_range_numbers"] == 1
    assert [s["step"] for s in rt.llm.stats.steps] == ["closed_book", "s2a:select", "s2a:answer"]


def test_s2a_explicit_none_and_fallback_none(tmp_path: Path) -> None:
    gen = s2a_gen()
    rt = scripted_runtime(gen, tmp_path)
    other = Example("q3", "Tallest mountain?", ["Everest"])
    inputs = [cell_input(other, 2, DOCS), cell_input(EX, 2, DOCS)]
    none_out, fb = S2A(fallback="none").run(inputs, rt)
    assert none_out.extra["s2a_parse"] == "none" and none_out.extra["s2a_fallback"] is False
    assert none_out.docs_used == () and none_out.extra["s2a_selection"] == []
    assert render("rag_qa.j2", sources=[], question=other.question) in gen.sent
    assert fb.extra["s2a_fallback"] is True and fb.docs_used == ()
    assert rt.counters["s2a:parse:none"] == 1 and rt.counters["s2a:fallback:unparsable"] == 1


def test_s2a_rejects_unknown_fallback() -> None:
    with pytest.raises(ValueError, match="fallback"):
        S2A(fallback="some")
