"""String-match judge (config option ``judge=match``)."""

from __future__ import annotations

from rr.answers import exact_match, substring_match, token_f1
from rr.judges.base import JudgeItem
from rr.records import Judgment
from rr.registry import component
from rr.runtime import Runtime


@component("judge", "match")
class MatchJudge:
    """Scores predictions by normalised substring match against the gold answers.

    * Single-answer items (``answer_groups`` is ``None`` or empty): ``score`` is
      :func:`~rr.answers.substring_match` against ``answers`` (1.0 or 0.0).
    * ASQA-style items: ``score`` is the fraction of ``answer_groups`` covered, a group being
      covered when any of its alternatives is a substring match. A group with no (non-empty)
      alternatives is never covered but still counts in the denominator.

    ``extra`` holds ``em`` and ``f1`` (SQuAD exact match and token F1, maximised over ``answers``,
    or over the flattened alternatives of ``answer_groups``). ``refused`` is always ``False``:
    this judge does not detect refusals.

    Args:
        name: Written to :attr:`Judgment.judge`.
    """

    def __init__(self, name: str = "match") -> None:
        self.name = name

    def judge(self, items: list[JudgeItem], rt: Runtime | None = None) -> list[Judgment]:
        """One judgment per item, same order; ``score`` in [0, 1]."""
        return [self._judge_one(item) for item in items]

    def _judge_one(self, item: JudgeItem) -> Judgment:
        if item.answer_groups:
            covered = [substring_match(item.prediction, group) for group in item.answer_groups]
            score = sum(covered) / len(covered)
            golds = [alt for group in item.answer_groups for alt in group]
        else:
            golds = list(item.answers)
            score = substring_match(item.prediction, golds)
        return Judgment(
            score=float(score),
            judge=self.name,
            refused=False,
            extra={"em": exact_match(item.prediction, golds), "f1": token_f1(item.prediction, golds)},
        )
