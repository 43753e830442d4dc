"""The judge protocol and its input record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rr.records import Example, Judgment, MetaKey

if TYPE_CHECKING:
    from rr.runtime import Runtime


@dataclass(frozen=True)
class JudgeItem:
    """One prediction to judge.

    Attributes:
        question: The question as shown to the model (LLM judges use it; string judges ignore it).
        prediction: The extracted answer (not the raw output).
        answers: Gold answer strings; any one of them is correct (NQ-style).
        answer_groups: ASQA-style gold: a list of groups, each a list of alternatives; the score
            is the fraction of groups covered. ``None`` (or empty) for single-answer data.
        language: The example's language (``Example.meta["language"]``, e.g. ``zh``), for judges
            whose rule depends on it (RGB removes spaces on Chinese); ``None``: not known.
    """

    question: str
    prediction: str
    answers: list[str]
    answer_groups: list[list[str]] | None = None
    language: str | None = None

    @classmethod
    def of(cls, example: Example, prediction: str) -> JudgeItem:
        """``prediction`` as an answer to ``example``: its question, gold answers and language."""
        return cls(
            example.question,
            prediction,
            example.answers,
            example.answer_groups,
            example.meta.get(MetaKey.LANGUAGE),
        )


@runtime_checkable
class Judge(Protocol):
    """Scores a batch of predictions.

    ``judge`` returns exactly one :class:`~rr.records.Judgment` per item, in the same order,
    each with ``score`` in [0, 1] and ``judge`` set to the judge's ``name``. Model-based judges
    get their model with ``rt.llm_for(...)`` and count retries and fallbacks with ``rt.count``;
    string judges accept ``rt=None``.
    """

    name: str

    def judge(self, items: list[JudgeItem], rt: Runtime | None = None) -> list[Judgment]:
        """One judgment per item, same order."""
        ...
