"""S2A (Cao et al. 2025, §4.2, after Weston & Sukhbaatar 2023): select contexts, then answer with them.

Step 1 renders ``s2a.j2`` over the (window-fitted) k documents of every input and reads the
selection with :func:`rr.strategies.selection.parse_selection`. Step 2 renders ``rag_qa.j2``
over the selected documents only, in their current prompt order. Both steps are whole-batch
steps.

What happens to each parse status (:mod:`rr.strategies.selection`):

* ``ok``: the selected documents (numbers outside ``1..n`` and repeats are dropped and counted).
* ``none`` (the model wrote ``None``, which the prompt offers: "If there is no retrieved
  context, reply with 'Selected Conetxts: None'"): a valid choice of no document, so step 2 is
  ``rag_qa.j2`` with an empty context list. The paper's step 2 "only uses the identified
  documents", and here none were identified.
* ``out_of_range`` / ``unparsable``: no usable answer to step 1. ``fallback="all"`` (default)
  keeps all k documents, i.e. the row degrades to vanilla prompting: a failed selection step
  then removes no information, and the S2A-vs-vanilla comparison measures the selection rather
  than the parser. ``fallback="none"`` treats it like ``None``. Each fallback is counted
  (``<name>:fallback:<status>`` in ``summary.json`` ``counters``) and marked per row.

Per-row score-table columns: ``s2a_selection`` (1-based positions in the step-1 prompt of the
documents used in step 2), ``s2a_parse`` (the status; ``closed_book`` on k = 0 rows),
``s2a_fallback`` (whether the fallback was used), ``s2a_output`` (the raw step-1 output) and
``n_docs_shown`` (documents in the step-1 prompt after window fitting; ``n_docs_used`` counts
the selected ones, so only ``n_docs_shown < k`` is truncation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rr.registry import component
from rr.runtime import Runtime
from rr.strategies.base import (
    CellInput,
    PromptStrategy,
    StrategyOutput,
    answered,
    fitted_request,
    split_closed_book,
)
from rr.strategies.selection import NONE, OK, parse_selection
from rr.strategies.simple import closed_book_outputs

FALLBACKS = ("all", "none")


@component("strategy", "s2a")
class S2A(PromptStrategy):
    """Two steps: select contexts (``s2a.j2``), then answer over the selection (``rag_qa.j2``).

    k = 0 cells are answered closed-book (``non_rag_qa.j2``), exactly as ``vanilla`` does.

    Args:
        select_template: Step-1 template (``s2a.j2``, Appendix C).
        template: Step-2 template (``rag_qa.j2``).
        closed_book_template: Template for k = 0 cells.
        fallback: Documents used when no valid selection could be read: ``"all"`` (every
            document of step 1) or ``"none"`` (no document). See the module docstring.
        name, doc_format: see :class:`PromptStrategy`.
    """

    def __init__(
        self,
        select_template: str = "s2a.j2",
        template: str = "rag_qa.j2",
        fallback: str = "all",
        name: str = "s2a",
        **kwargs: Any,
    ) -> None:
        if fallback not in FALLBACKS:
            raise ValueError(f"strategy.s2a.fallback must be one of {FALLBACKS}, got {fallback!r}")
        super().__init__(template=template, name=name, **kwargs)
        self.select_template = select_template
        self.fallback = fallback

    def run(self, inputs: Sequence[CellInput], rt: Runtime) -> list[StrategyOutput]:
        """One output per input, same order; two batched model steps for k > 0 cells."""
        return split_closed_book(
            inputs, lambda closed: self.closed_book(closed, rt), lambda rag: self.answer(rag, rt)
        )

    def closed_book(self, inputs: Sequence[CellInput], rt: Runtime) -> list[StrategyOutput]:
        """Answer k = 0 inputs without documents (``closed_book_template``, one batched step)."""
        return [
            replace(
                o,
                extra={
                    "s2a_selection": [],
                    "s2a_parse": "closed_book",
                    "s2a_fallback": False,
                    "s2a_output": "",
                    "n_docs_shown": 0,
                },
            )
            for o in closed_book_outputs(inputs, rt.llm, self.closed_book_template)
        ]

    def answer(self, inputs: Sequence[CellInput], rt: Runtime) -> list[StrategyOutput]:
        """Answer k > 0 inputs: select, then answer over the selection (two batched steps)."""
        llm = rt.llm
        # Step 1: selection over the documents that fit the window.
        select = [
            fitted_request(
                llm,
                self.select_template,
                x.docs,
                self.doc_format,
                question=x.example.question,
            )
            for x in inputs
        ]
        sel_gens = llm.generate([r for r, _ in select], step=f"{self.name}:select")
        chosen: list[list[int]] = []
        statuses: list[str] = []
        fell_back: list[bool] = []
        for (_, shown), g in zip(select, sel_gens, strict=True):
            sel = parse_selection(g.text, len(shown))
            rt.count(f"{self.name}:parse:{sel.status}")
            if sel.dropped_out_of_range:
                rt.count(f"{self.name}:dropped_out_of_range_numbers", sel.dropped_out_of_range)
            if sel.dropped_duplicates:
                rt.count(f"{self.name}:dropped_duplicate_numbers", sel.dropped_duplicates)
            if sel.status in (OK, NONE):
                positions = list(sel.indices)
                fell_back.append(False)
            else:
                rt.count(f"{self.name}:fallback:{sel.status}")
                positions = list(range(1, len(shown) + 1)) if self.fallback == "all" else []
                fell_back.append(True)
            chosen.append(positions)
            statuses.append(sel.status)
        # Step 2: answer over the selected documents, in their prompt order.
        answer = [
            fitted_request(
                llm,
                self.template,
                [shown[p - 1] for p in positions],
                self.doc_format,
                question=x.example.question,
            )
            for x, (_, shown), positions in zip(inputs, select, chosen, strict=True)
        ]
        gens = llm.generate([r for r, _ in answer], step=f"{self.name}:answer")
        out = []
        for n, ((_, kept), g) in enumerate(zip(answer, gens, strict=True)):
            shown_ids = [d.passage.id for d in select[n][1]]
            used = [shown_ids.index(d.passage.id) + 1 for d in kept]
            out.append(
                answered(
                    g,
                    kept,
                    {
                        "s2a_selection": used,
                        "s2a_parse": statuses[n],
                        "s2a_fallback": fell_back[n],
                        "s2a_output": sel_gens[n].text,
                        "n_docs_shown": len(shown_ids),
                    },
                    over_window=g.over_window or sel_gens[n].over_window,
                )
            )
        return out
