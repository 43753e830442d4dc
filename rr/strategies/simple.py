"""Single-step strategies of Cao et al. (2025): ``vanilla`` RAG and ``closed_book`` (no retrieval)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rr.generation.client import LLM
from rr.prompts import render
from rr.records import Request
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


def closed_book_outputs(
    inputs: Sequence[CellInput], llm: LLM, template: str = "non_rag_qa.j2"
) -> list[StrategyOutput]:
    """Answer every input's question without documents (one batched step)."""
    params = llm.generator.default_params()
    requests = [Request.user(render(template, question=i.example.question), params) for i in inputs]
    return [answered(g) for g in llm.generate(requests, step="closed_book")]


@component("strategy", "vanilla")
class Vanilla(PromptStrategy):
    """All retrieved documents in the prompt (``rag_qa.j2``); k = 0 cells use ``non_rag_qa.j2``.

    Args:
        max_doc_words: Cut each document's text to this many words (``None`` = whole; the
            query-level paper follows BERGEN: 100).
        template, name, doc_format, closed_book_template: see :class:`PromptStrategy`.
    """

    def __init__(
        self,
        template: str = "rag_qa.j2",
        name: str = "vanilla",
        max_doc_words: int | None = None,
        **kwargs: Any,
    ) -> None:
        if max_doc_words is not None and max_doc_words < 1:
            raise ValueError(f"strategy.vanilla.max_doc_words must be >= 1 or null, got {max_doc_words}")
        super().__init__(template=template, name=name, **kwargs)
        self.max_doc_words = max_doc_words

    def run(self, inputs: Sequence[CellInput], rt: Runtime) -> list[StrategyOutput]:
        return split_closed_book(
            inputs,
            lambda closed: closed_book_outputs(closed, rt.llm, self.closed_book_template),
            lambda rag: self.answer(rag, rt.llm),
        )

    def answer(self, inputs: Sequence[CellInput], llm: LLM) -> list[StrategyOutput]:
        """Answer k > 0 inputs over their documents (one batched step)."""
        built = [
            fitted_request(
                llm,
                self.template,
                x.docs,
                self.doc_format,
                max_doc_words=self.max_doc_words,
                question=x.example.question,
            )
            for x in inputs
        ]
        gens = llm.generate([r for r, _ in built], step=f"{self.name}:answer")
        return [answered(g, kept) for (_, kept), g in zip(built, gens, strict=True)]


@component("strategy", "closed_book")
class ClosedBook:
    """No retrieval: every cell is answered with ``non_rag_qa.j2`` (only k = 0 cells are made for it)."""

    uses_retrieval = False

    def __init__(self, template: str = "non_rag_qa.j2", name: str = "closed_book") -> None:
        self.template = template
        self.name = name

    def run(self, inputs: Sequence[CellInput], rt: Runtime) -> list[StrategyOutput]:
        return closed_book_outputs(inputs, rt.llm, self.template)
