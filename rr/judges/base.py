"""The judge protocol and its input record."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from rr.records import Judgment


@dataclass(frozen=True)
class JudgeItem:
    """One prediction to judge.

    Attributes:
        question: The question as shown to the model (LLM judges use it; string judges ignore it).
        prediction: The extracted answer (not the raw output).
        answers: Gold answer strings; any one of them is correct (NQ-style).
        answer_groups: ASQA-style gold: a list of groups, each a list of alternatives; the score
            is the fraction of groups covered. ``None`` (or empty) for single-answer data.
    """

    question: str
    prediction: str
    answers: list[str]
    answer_groups: list[list[str]] | None = None


@runtime_checkable
class Judge(Protocol):
    """Scores a batch of predictions.

    ``judge`` returns exactly one :class:`~rr.records.Judgment` per item, in the same order,
    each with ``score`` in [0, 1] and ``judge`` set to the judge's ``name``.
    """

    name: str

    def judge(self, items: list[JudgeItem]) -> list[Judgment]:
        """One judgment per item, same order."""
        ...
