"""RGB's own scorer (Chen et al. 2024) as a judge: ``judge=rgb``, the default of ``experiment=rgb2024``.

RGB publishes its evaluation code (https://github.com/chen700564/RGB, ``evalue.py`` at commit
d2293eec8c76467c1572b3ebedcaca4e9b4e82f4; ``checkanswer`` and ``predict``). This judge computes,
per response, what that code computes, in this order:

1. **Chinese files**: ``if 'zh' in dataset: prediction = prediction.replace(" ", "")`` -- every ASCII
   space is removed from the response before any test below. rr knows the language from
   ``Example.meta["language"]`` (:data:`rr.records.MetaKey.LANGUAGE`), which the RGB loader sets to
   ``zh`` when the data file's name contains ``zh`` (RGB's own test on its dataset name).
2. **Refusal**: the response contains ``信息不足`` or ``insufficient information`` (case-sensitive
   substring; "Insufficient information" is *not* a refusal) -> label ``[-1]``, and the answer is
   not looked for. This is the only refusal rule; rr's broader phrase list is
   ``judge=refusal_match``.
3. **Answer containment** (``checkanswer``): the response and every answer are lowercased, and
   nothing else: no punctuation, article or whitespace normalisation. Each top-level answer
   element is required (label 1 when present, 0 when not); an element that is a list is a group of
   alternatives, present when any alternative is a substring. So ``64%`` does *not* contain
   ``6.4%`` and ``Tampa Florida`` does not contain ``Tampa, Florida`` (rr's SQuAD-normalised
   ``judge=match`` says they do).
4. **Fact-error phrase**: the response contains ``事实性错误`` or ``factual errors`` (case-sensitive).

Columns: ``score`` = share of required answer parts present (0 for a refusal: RGB's label
``[-1]``); a response is RGB-correct (``0 not in label and 1 in label``) when ``score == 1``.
``refused`` and ``rgb_rejected`` = step 2; ``error_detected`` = step 4; ``rgb_corrected`` =
``0 not in label`` (RGB's ``evalue.py`` test for a corrected error: a refusal also passes it);
``em`` and ``f1`` as ``judge=match`` (SQuAD, for comparison only). With the LLM checks,
``rgb_rejected_llm`` / ``error_detected_llm`` as ``judge=refusal_match`` (RGB's ``reject_evalue.py``
and ``fact_evalue.py`` prompts and readings).
"""

from __future__ import annotations

from collections.abc import Sequence

from rr.answers import exact_match, token_f1
from rr.judges.base import JudgeItem
from rr.judges.refusal import RGB_ERROR_PHRASES, RGB_REJECTION_PHRASES, RefusalMatchJudge
from rr.records import Judgment
from rr.registry import component

#: ``Example.meta["language"]`` values on which RGB removes spaces from the response.
SPACELESS_LANGUAGES = ("zh",)


def rgb_response(prediction: str, language: str | None) -> str:
    """The response as RGB tests it: ASCII spaces removed on the Chinese datasets, else unchanged."""
    return prediction.replace(" ", "") if language in SPACELESS_LANGUAGES else prediction


def rgb_contains(response: str, alternatives: Sequence[str]) -> bool:
    """RGB's containment of one answer part: any alternative, lowercased, is a substring of the
    lowercased response (an empty alternative is a substring of everything, as in RGB's code)."""
    low = response.lower()
    return any(a.lower() in low for a in alternatives)


def rgb_labels(response: str, groups: Sequence[Sequence[str]]) -> list[int]:
    """RGB's label list of a response (already space-stripped where RGB strips):
    ``[-1]`` for a refusal, else one 0/1 per required answer part (``checkanswer``)."""
    if any(p in response for p in RGB_REJECTION_PHRASES):
        return [-1]
    return [int(rgb_contains(response, g)) for g in groups]


def rgb_correct(labels: Sequence[int]) -> bool:
    """RGB's correct response: ``0 not in label and 1 in label``."""
    return 0 not in labels and 1 in labels


def answer_parts(item: JudgeItem) -> list[list[str]]:
    """The required answer parts of an item: its answer groups, or its answers as one group."""
    return [list(g) for g in item.answer_groups] if item.answer_groups else [list(item.answers)]


@component("judge", "rgb")
class RGBJudge(RefusalMatchJudge):
    """RGB's scorer (``evalue.py``'s ``predict`` / ``checkanswer``): see the module docstring.

    Same arguments and LLM checks as :class:`~rr.judges.refusal.RefusalMatchJudge` (Rej*, ED*),
    whose string rules it replaces by RGB's.
    """

    default_name = "rgb"

    def _llm_text(self, item: JudgeItem) -> str:
        # RGB's reject_evalue.py / fact_evalue.py read the prediction evalue.py saved: space-stripped on zh.
        return rgb_response(item.prediction, item.language)

    def _string_judgment(self, item: JudgeItem) -> Judgment:
        response = rgb_response(item.prediction, item.language)
        parts = answer_parts(item)
        labels = rgb_labels(response, parts)
        rejected = labels == [-1]
        golds = [a for g in parts for a in g]
        return Judgment(
            score=0.0 if rejected or not labels else sum(labels) / len(labels),
            judge=self.name,
            refused=rejected,
            extra={
                "em": exact_match(item.prediction, golds),
                "f1": token_f1(item.prediction, golds),
                "rgb_rejected": rejected,
                "error_detected": any(p in response for p in RGB_ERROR_PHRASES),
                "rgb_corrected": 0 not in labels,
            },
        )
