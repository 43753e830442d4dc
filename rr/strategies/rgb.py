"""RGB's prompt (Chen et al. 2024, Fig. 3) as a strategy (``strategy=rgb``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rr.context import RankedDoc
from rr.prompts import render
from rr.records import MetaKey, Request
from rr.registry import component
from rr.runtime import Runtime
from rr.strategies.base import CellInput, PromptStrategy, StrategyOutput, fit_request, format_doc

#: The score-table column that names the instruction's language (a setting key of RGB's values).
INSTRUCTION = "instruction"


@component("strategy", "rgb", drop=("closed_book_template",))  # k = 0 uses the user template too
class RGBPrompt(PromptStrategy):
    """RGB's system instruction (``rgb_system.j2``, Fig. 3 verbatim) and user input instruction
    (``rgb_user.j2``: ``Document:\\n{DOCS} \\n\\nQuestion:\\n{QUERY}``, documents joined by newlines).

    RGB's ``evalue.py`` reads its instruction by the dataset's language
    (``instruction.yaml[args.dataset[:2]]``): a Chinese example (``Example.meta["language"] == "zh"``,
    which the RGB loader sets for ``zh*.json``) gets the Chinese pair, ``rgb_system_zh.j2`` /
    ``rgb_user_zh.j2`` (``instruction.yaml['zh']`` verbatim: ``文档：\\n{DOCS} \\n\\n问题：\\n{QUERY}``).
    The score table's ``instruction`` column says which (``en`` / ``zh``).

    The system instruction goes in the chat's system message. RGB scores the *whole* response
    (its ``checkanswer`` looks for the answer anywhere in it, and refusal / error-detection
    phrases too), and its prompt asks for no ``Answer:`` marker, so ``prediction`` is the whole
    stripped response and ``marker_found`` is ``True`` (no extraction fallback happened).
    Closed-book cells (k = 0) follow RGB's code for ``passage_num = 0``: the user instruction
    with empty documents and no system message. Documents are dropped lowest-rank first when the
    prompt would not fit the model's window.

    Args:
        system_template: Template of the system message (English).
        template: Template of the user message (``sources``, ``question``; English).
        zh_system_template, zh_template: The same for Chinese examples.
        name, doc_format: see :class:`PromptStrategy` (RGB's passages are bare text).
    """

    def __init__(
        self,
        system_template: str = "rgb_system.j2",
        template: str = "rgb_user.j2",
        zh_system_template: str = "rgb_system_zh.j2",
        zh_template: str = "rgb_user_zh.j2",
        name: str = "rgb",
        **kwargs: Any,
    ) -> None:
        super().__init__(template=template, name=name, **kwargs)
        self.system_template = system_template
        self.templates = {"en": (system_template, template), "zh": (zh_system_template, zh_template)}

    @staticmethod
    def instruction_of(language: str | None) -> str:
        """The instruction a question in ``language`` gets (the key of RGB's ``instruction.yaml``):
        ``zh`` for Chinese, else ``en``."""
        return "zh" if language == "zh" else "en"

    def language(self, inp: CellInput) -> str:
        """The instruction of one input: :meth:`instruction_of` its example's language."""
        return self.instruction_of(inp.example.meta.get(MetaKey.LANGUAGE))

    def planned_columns(self, language: str | None) -> dict[str, str]:
        """The score-table columns of this strategy's rows for a dataset in ``language`` (what
        :func:`rr.pipeline.planned_cells` writes without loading data)."""
        return {INSTRUCTION: self.instruction_of(language)}

    def request(self, inp: CellInput, rt: Runtime) -> tuple[Request, list[RankedDoc]]:
        """The fitted request of one input and the documents it kept."""
        llm = rt.llm
        params = llm.generator.default_params()
        system_template, template = self.templates[self.language(inp)]
        system = render(system_template)

        def make(sources: list[str]) -> Request:
            user = render(template, sources=sources, question=inp.example.question)
            if inp.cell.k == 0:
                return Request.user(user, params)
            return Request(messages=(("system", system), ("user", user)), params=params)

        if inp.cell.k == 0:
            return make([]), []
        key = ("rgb", system_template, template, inp.example.question)
        return fit_request(llm, inp.docs, [format_doc(d, self.doc_format) for d in inp.docs], make, key)

    def run(self, inputs: Sequence[CellInput], rt: Runtime) -> list[StrategyOutput]:
        built = [self.request(i, rt) for i in inputs]
        gens = rt.llm.generate([r for r, _ in built], step=f"{self.name}:answer")
        return [
            StrategyOutput(
                g.text,
                g.text.strip(),
                True,
                tuple(kept),
                extra={INSTRUCTION: self.language(i)},
                over_window=g.over_window,
                prompt=g.prompt,
            )
            for i, (_, kept), g in zip(inputs, built, gens, strict=True)
        ]
