"""OwnKnow (Cao et al. 2025, §4.2): answer closed-book first, then answer with the documents and that draft.

Step 1 is the closed-book answer of every question, made with exactly the request of the
``closed_book`` strategy (same template, same decoding parameters), so a job or cache that
already holds the closed-book answers makes no new model call for it. Step 2 renders
``ownknow.j2`` with the retrieved documents and the draft as ``non_rag_output``. Both steps are
whole-batch steps.
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
from rr.strategies.simple import closed_book_outputs

#: What of the closed-book output is inserted as ``non_rag_output``.
DRAFT_FIELDS = ("prediction", "raw_output")


@component("strategy", "ownknow")
class OwnKnow(PromptStrategy):
    """Two steps: closed-book draft (``non_rag_qa.j2``), then ``ownknow.j2`` with documents + draft.

    k = 0 cells are answered closed-book, exactly as ``vanilla`` does, so f(q, 0) is the same
    baseline for every strategy. The score table gets an ``ownknow_draft`` column (the draft
    shown to the model; ``""`` on k = 0 rows).

    Args:
        template: Step-2 template (``ownknow.j2``, Appendix C).
        closed_book_template: Step-1 and k = 0 template; keep it equal to the ``closed_book``
            strategy's so the drafts are the closed-book generations themselves (shared cache).
        draft: ``"prediction"`` (the extracted closed-book answer, default: the template reads
            ``Previous Answer: {{ non_rag_output }}.`` like its example ``Previous Answer:
            previous answer.``) or ``"raw_output"`` (the model's full closed-book output).
        name, doc_format: see :class:`PromptStrategy`.
    """

    def __init__(
        self, template: str = "ownknow.j2", name: str = "ownknow", draft: str = "prediction", **kwargs: Any
    ) -> None:
        if draft not in DRAFT_FIELDS:
            raise ValueError(f"strategy.ownknow.draft must be one of {DRAFT_FIELDS}, got {draft!r}")
        super().__init__(template=template, name=name, **kwargs)
        self.draft = draft

    def run(self, inputs: Sequence[CellInput], rt: Runtime) -> list[StrategyOutput]:
        """One output per input, same order; two batched model steps (plus cache hits)."""
        llm = rt.llm
        # Step 1: one closed-book request per distinct question (k = 0 cells included).
        questions = list(dict.fromkeys(x.example.question for x in inputs))
        firsts = {x.example.question: x for x in reversed(inputs)}
        closed = dict(
            zip(
                questions,
                closed_book_outputs([firsts[q] for q in questions], llm, self.closed_book_template),
                strict=True,
            )
        )
        drafts = {}
        for q, o in closed.items():
            drafts[q] = o.prediction if self.draft == "prediction" else o.raw_output.strip()
        return split_closed_book(
            inputs,
            lambda k0: [replace(closed[x.example.question], extra={"ownknow_draft": ""}) for x in k0],
            lambda rag: self.answer(rag, closed, drafts, rt),
        )

    def answer(
        self,
        inputs: Sequence[CellInput],
        closed: dict[str, StrategyOutput],
        drafts: dict[str, str],
        rt: Runtime,
    ) -> list[StrategyOutput]:
        """Step 2: every k > 0 input with its documents and draft (one batched step).

        Args:
            inputs: The k > 0 inputs.
            closed: Question -> its closed-book output (step 1).
            drafts: Question -> the draft shown as ``non_rag_output``.
            rt: The job's runtime.
        """
        llm = rt.llm
        empty = sum(1 for x in inputs if not drafts[x.example.question])
        if empty:
            rt.count(f"{self.name}:empty_draft", empty)
        built = [
            fitted_request(
                llm,
                self.template,
                x.docs,
                self.doc_format,
                question=x.example.question,
                non_rag_output=drafts[x.example.question],
            )
            for x in inputs
        ]
        gens = llm.generate([r for r, _ in built], step=f"{self.name}:answer")
        out: list[StrategyOutput] = []
        for x, (_, kept), g in zip(inputs, built, gens, strict=True):
            out.append(
                answered(
                    g,
                    kept,
                    {"ownknow_draft": drafts[x.example.question]},
                    over_window=g.over_window or closed[x.example.question].over_window,
                )
            )
        return out
