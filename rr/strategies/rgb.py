"""RGB's prompt (Chen et al. 2024, Fig. 3) as a strategy (``strategy=rgb``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rr.context import RankedDoc
from rr.prompts import render
from rr.records import Request
from rr.registry import component
from rr.runtime import Runtime
from rr.strategies.base import CellInput, PromptStrategy, StrategyOutput, fit_request, format_doc


@component("strategy", "rgb", drop=("closed_book_template",))  # k = 0 uses the user template too
class RGBPrompt(PromptStrategy):
    """RGB's system instruction (``rgb_system.j2``, Fig. 3 verbatim) and user input instruction
    (``rgb_user.j2``: ``Document:\\n{DOCS} \\n\\nQuestion:\\n{QUERY}``, documents joined by newlines).

    The system instruction goes in the chat's system message. RGB scores the *whole* response
    (its ``checkanswer`` looks for the answer anywhere in it, and refusal / error-detection
    phrases too), and its prompt asks for no ``Answer:`` marker, so ``prediction`` is the whole
    stripped response and ``marker_found`` is ``True`` (no extraction fallback happened).
    Closed-book cells (k = 0) follow RGB's code for ``passage_num = 0``: the user instruction
    with empty documents and no system message. Documents are dropped lowest-rank first when the
    prompt would not fit the model's window.

    Args:
        system_template: Template of the system message.
        template: Template of the user message (``sources``, ``question``).
        name, doc_format: see :class:`PromptStrategy` (RGB's passages are bare text).
    """

    def __init__(
        self,
        system_template: str = "rgb_system.j2",
        template: str = "rgb_user.j2",
        name: str = "rgb",
        **kwargs: Any,
    ) -> None:
        super().__init__(template=template, name=name, **kwargs)
        self.system_template = system_template

    def request(self, inp: CellInput, rt: Runtime) -> tuple[Request, list[RankedDoc]]:
        """The fitted request of one input and the documents it kept."""
        llm = rt.llm
        params = llm.generator.default_params()
        system = render(self.system_template)

        def make(sources: list[str]) -> Request:
            user = render(self.template, sources=sources, question=inp.example.question)
            if inp.cell.k == 0:
                return Request.user(user, params)
            return Request(messages=(("system", system), ("user", user)), params=params)

        if inp.cell.k == 0:
            return make([]), []
        key = ("rgb", self.system_template, self.template, inp.example.question)
        return fit_request(llm, inp.docs, [format_doc(d, self.doc_format) for d in inp.docs], make, key)

    def run(self, inputs: Sequence[CellInput], rt: Runtime) -> list[StrategyOutput]:
        built = [self.request(i, rt) for i in inputs]
        gens = rt.llm.generate([r for r, _ in built], step=f"{self.name}:answer")
        return [
            StrategyOutput(
                g.text, g.text.strip(), True, tuple(kept), over_window=g.over_window, prompt=g.prompt
            )
            for (_, kept), g in zip(built, gens, strict=True)
        ]
