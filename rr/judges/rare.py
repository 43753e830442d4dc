"""RARE's first-stage string judge (Zeng et al. 2025, §6.1) with refusals: ``judge=rare``, the default of
``experiment=rare2025``.

RARE released no evaluation code; its text (§6.1): "both prediction and reference strings are
normalized, after which exact and inclusive string matches are implemented. If no lexical match is
detected, the second stage employs Claude-3-Haiku", whose prompt (Appendix F) returns false for "a
refusal or [a prediction that] does not provide an answer". This judge is that first stage --
:func:`rr.judges.llm.lexical_match`: SQuAD normalisation, then an exact match, the gold inside the
prediction, or the prediction inside the gold as whole words ("Shakespeare" for "William
Shakespeare") -- with a refusal scoring 0 and flagged ``refused`` (rr's phrase rules,
:func:`rr.judges.refusal.is_refusal`, which include RARE's "no such info"; how RARE detects a refusal
for its Table 3 is not stated). The second (LLM) stage is ``judge=two_stage``. ``judge=refusal_match``
(the gold inside the prediction only) is rr's rule.
"""

from __future__ import annotations

from rr.judges.base import JudgeItem
from rr.judges.llm import lexical_match
from rr.judges.refusal import RefusalMatchJudge, is_refusal
from rr.records import Judgment
from rr.registry import component


@component("judge", "rare")
class RAREJudge(RefusalMatchJudge):
    """RARE's lexical stage plus refusals (module docstring); same arguments and extra columns as
    :class:`~rr.judges.refusal.RefusalMatchJudge`.

    ``score``: 1.0 when the prediction lexically matches a gold answer (single-answer items), or the
    fraction of answer groups it matches; 0.0 for a refusal.
    """

    default_name = "rare"

    def _string_judgment(self, item: JudgeItem) -> Judgment:
        base = super()._string_judgment(item)  # refusal and RGB's phrase columns, em, f1
        if item.answer_groups:
            score = sum(lexical_match(item.prediction, g) for g in item.answer_groups) / len(
                item.answer_groups
            )
        else:
            score = float(lexical_match(item.prediction, item.answers))
        refused = is_refusal(item.prediction)
        return Judgment(0.0 if refused else score, self.name, refused, base.extra)
