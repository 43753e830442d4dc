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
for its Table 3 is not stated). ``judge=refusal_match`` (the gold inside the prediction only) is rr's rule.

``judge=rare_two_stage`` (:class:`RARETwoStageJudge`) adds the second stage: the items the lexical
stage did not match (and that are not refusals) go to a second-stage model, Claude-3-Haiku in the
paper (``judge.second_stage``, any generator config), with RARE's Appendix F prompt
(``rare_judge.j2``: the paper's text, its examples' ``Prediction: "...", Ground Truth: "...",
Output:`` line for the item), and its ``true`` scores 1. (``judge=two_stage`` is the same two stages
with Cao et al.'s judge prompt and model.)
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from rr.judges.base import JudgeItem
from rr.judges.llm import lexical_match
from rr.judges.refusal import RefusalMatchJudge, is_refusal
from rr.prompts import render
from rr.records import GenerationParams, Judgment, Request
from rr.registry import component
from rr.runtime import Runtime


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


def parse_true_false(text: str) -> bool | None:
    """The verdict of RARE's judge prompt ("only answer 'true' or 'false'"): its first word, case and
    quotes aside; ``None`` when it is neither."""
    words = text.strip().strip("'\"\u2018\u2019`*").split()
    first = words[0].strip(".,:;'\"\u2018\u2019`*").lower() if words else ""
    return {"true": True, "false": False}.get(first)


@component("judge", "rare_two_stage", hydra_keys=("_recursive_",))
class RARETwoStageJudge(RAREJudge):
    """RARE's two-stage judge (§6.1): :class:`RAREJudge`'s lexical stage, then the second-stage model
    on what it did not match (module docstring).

    ``score`` is 1.0 where the lexical stage matched or the second stage answered ``true``; 0.0 for a
    refusal (never sent), an empty prediction (never sent), ``false`` or an unreadable verdict
    (counted ``judge:<name>:unreadable``). Columns besides :class:`RAREJudge`'s: ``judge_stage``
    (``lexical`` / ``llm``), ``judge_output`` (the second stage's text, ``""`` where not asked) and
    ``judge_model`` (its model's name, ``""`` where not asked).

    Args:
        second_stage: The second-stage model: any generator config node (the paper: Claude-3-Haiku);
            ``None``: the model under test.
        second_stage_template: Its prompt (``rare_judge.j2``: ``prediction``, ``ground_truth``).
        second_stage_max_new_tokens: Its output budget ("only answer 'true' or 'false'").
        **kwargs: :class:`RAREJudge`'s (the Rej* / ED* checks, their ``generator``, ``name``).
    """

    default_name = "rare_two_stage"

    def __init__(
        self,
        second_stage: Any = None,
        second_stage_template: str = "rare_judge.j2",
        second_stage_max_new_tokens: int = 8,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.second_stage = second_stage
        self.second_stage_template = second_stage_template
        self.second_stage_max_new_tokens = second_stage_max_new_tokens

    def prompt(self, item: JudgeItem) -> str:
        """The second stage's prompt of ``item``: its prediction and its gold answer (several joined by
        ``" / "``; RARE's answers are one string)."""
        golds = [a for g in item.answer_groups for a in g] if item.answer_groups else list(item.answers)
        return render(self.second_stage_template, prediction=item.prediction, ground_truth=" / ".join(golds))

    def judge(self, items: list[JudgeItem], rt: Runtime | None = None) -> list[Judgment]:
        """One judgment per item, same order; the second stage batched over the items it decides."""
        first = super().judge(items, rt)
        ask = [i for i, (it, j) in enumerate(zip(items, first, strict=True)) if j.score < 1 and not j.refused]
        ask = [i for i in ask if items[i].prediction.strip()]
        out = [
            replace(j, extra={**j.extra, "judge_stage": "lexical", "judge_output": "", "judge_model": ""})
            for j in first
        ]
        if not ask:
            return out
        if rt is None:
            raise ValueError(
                f"judge {self.name!r}: its second stage calls a model and needs the job's Runtime (rt)"
            )
        llm = rt.llm_for(self.second_stage)
        params = GenerationParams(max_new_tokens=self.second_stage_max_new_tokens)
        gens = llm.generate(
            [Request.user(self.prompt(items[i]), params) for i in ask], step=f"judge:{self.name}"
        )
        rt.count(f"judge:{self.name}:items", len(ask))
        for i, g in zip(ask, gens, strict=True):
            verdict = parse_true_false(g.text)
            if verdict is None:
                rt.count(f"judge:{self.name}:unreadable")
            extra = {
                **out[i].extra,
                "judge_stage": "llm",
                "judge_output": g.text,
                "judge_model": llm.generator.name,
            }
            out[i] = Judgment(1.0 if verdict else 0.0, self.name, False, extra)
        return out
