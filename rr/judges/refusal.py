"""Refusal and error-detection rules (RGB, RARE) as a judge: ``judge=refusal_match``.

Correctness and refusal are scored **separately and exclusively**: a response that refuses
scores 0 even when it contains a gold answer string ("I can not answer ... whether Paris is
the capital" must not count as a correct "Paris"). This is RGB's own rule -- its ``evalue.py``
labels any response containing "insufficient information" as ``-1`` before looking for the
answer, so it is never correct -- and RARE's (its judge prompt: "Return false if the prediction
is a refusal"). Without it a refusal that repeats the question's entities would raise accuracy,
and RARE's "correct or safely refused" would count some rows twice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rr.judges.base import JudgeItem
from rr.judges.match import MatchJudge
from rr.prompts import render
from rr.records import GenerationParams, Judgment, Request
from rr.registry import component
from rr.runtime import Runtime

#: RGB's rejection test (evalue.py): the response contains one of these (exact, case-sensitive).
RGB_REJECTION_PHRASES = ("insufficient information", "信息不足")
#: RGB's error-detection test (evalue.py): "There are factual errors in the provided documents."
RGB_ERROR_PHRASES = ("factual errors", "事实性错误")

#: Refusal rules (case-insensitive regular expressions over the response, curly apostrophes
#: folded): RGB's phrase and its common variants, RARE's "no such info", and stock refusals.
REFUSAL_PATTERNS: tuple[str, ...] = (
    r"insufficient information",
    r"\b(?:can ?not|can't|could not|couldn't|unable to) (?:answer|determine|find|provide an answer)\b",
    r"\bno such info(?:rmation)?\b",
    r"\b(?:not|no) enough information\b",
    r"\b(?:i|we) (?:do not|don't) know\b",
    r"\b(?:does|do|did) not (?:contain|provide|include|mention|specify) (?:the|an|any) "
    r"(?:answer|information|relevant information)\b",
    r"\bno (?:relevant )?information (?:about|on|regarding|is provided|is given)\b",
    r"\bnot (?:mentioned|specified|provided|stated) in the (?:provided |given |retrieved )?(?:documents?|contexts?)\b",
    r"信息不足",
    r"无法回答",
)
_REFUSAL_RE = re.compile("|".join(f"(?:{p})" for p in REFUSAL_PATTERNS), re.IGNORECASE)


def is_refusal(text: str) -> bool:
    """Whether ``text`` refuses to answer by the phrase rules in :data:`REFUSAL_PATTERNS`."""
    return bool(_REFUSAL_RE.search(text.replace("\u2019", "'")))


def rgb_rejected(text: str) -> bool:
    """RGB's exact-match rejection (Rej, Table 3): the response contains "insufficient information"."""
    return any(p in text for p in RGB_REJECTION_PHRASES)


def rgb_error_detected(text: str) -> bool:
    """RGB's exact-match error detection (ED, Table 7): the response contains "factual errors"."""
    return any(p in text for p in RGB_ERROR_PHRASES)


def parse_reject_verdict(text: str) -> bool:
    """RGB's reading of the rejection judge (reject_evalue.py): rejected iff "not addressed" occurs."""
    return "not addressed" in text


def parse_error_verdict(text: str) -> bool:
    """RGB's reading of the error-detection judge (fact_evalue.py): "has identified" or "Yes"."""
    return "has identified" in text or "Yes" in text


@component("judge", "refusal_match")
class RefusalMatchJudge:
    """String-match correctness plus refusal and error detection.

    ``score`` is :class:`~rr.judges.match.MatchJudge`'s (substring match; fraction of answer
    groups), forced to 0 when the response is a refusal (see the module docstring). ``refused``
    is :func:`is_refusal`. Extra columns: ``em``, ``f1`` (as ``match``), ``rgb_rejected`` (RGB's
    exact phrase rule, Rej), ``error_detected`` (RGB's "factual errors" rule, ED), and with the
    LLM checks ``rgb_rejected_llm`` (Rej*) and ``error_detected_llm`` (ED*): RGB's ChatGPT
    prompts (``rgb_reject_eval.j2``, ``rgb_fact_eval.j2``, verbatim from RGB's
    ``reject_evalue.py`` / ``fact_evalue.py``; the paper describes but does not print them) sent
    to ``generator`` (``None``: the model under test) in one batched, cached step each.

    The judge sees the strategy's ``prediction``: with ``strategy=rgb`` that is the whole
    response (as RGB scores it); with ``vanilla`` it is the extracted answer.

    Args:
        llm_rejection: Also ask the LLM whether the response rejects (Rej*).
        llm_error_detection: Also ask the LLM whether the response flags factual errors (ED*).
        generator: Generator config of the judging model (``None``: the model under test).
        max_new_tokens: Token budget of the judging model's verdict.
        name: Written to :attr:`Judgment.judge` (``None``: the class's :attr:`default_name`).
    """

    #: The judge's name when none is given (subclasses with other rules set their own).
    default_name = "refusal_match"

    def __init__(
        self,
        llm_rejection: bool = False,
        llm_error_detection: bool = False,
        generator: Any = None,
        max_new_tokens: int = 24,
        name: str | None = None,
    ) -> None:
        self.llm_rejection = llm_rejection
        self.llm_error_detection = llm_error_detection
        self.generator = generator
        self.max_new_tokens = max_new_tokens
        self.name = name or self.default_name
        self._match = MatchJudge(name=self.name)

    def judge(self, items: list[JudgeItem], rt: Runtime | None = None) -> list[Judgment]:
        """One judgment per item, same order; ``score`` in [0, 1], 0 for refusals."""
        out = [self._string_judgment(item) for item in items]
        if self.llm_rejection:
            verdicts = self._ask(items, rt, "rgb_reject_eval.j2", "rejection", parse_reject_verdict)
            for j, v in zip(out, verdicts, strict=True):
                j.extra["rgb_rejected_llm"] = v
        if self.llm_error_detection:
            verdicts = self._ask(items, rt, "rgb_fact_eval.j2", "error_detection", parse_error_verdict)
            for j, v in zip(out, verdicts, strict=True):
                j.extra["error_detected_llm"] = v
        return out

    def _string_judgment(self, item: JudgeItem) -> Judgment:
        """The string rules of one item (everything but the LLM checks)."""
        base = self._match.judge([item])[0]
        refused = is_refusal(item.prediction)
        extra = {
            **base.extra,
            "rgb_rejected": rgb_rejected(item.prediction),
            "error_detected": rgb_error_detected(item.prediction),
        }
        return Judgment(0.0 if refused else base.score, self.name, refused, extra)

    def _llm_text(self, item: JudgeItem) -> str:
        """The response the LLM checks read."""
        return item.prediction

    def _ask(
        self, items: Sequence[JudgeItem], rt: Runtime | None, template: str, step: str, parse: Any
    ) -> list[bool]:
        if rt is None:
            raise ValueError(f"judge {self.name!r}: the LLM checks need the job's Runtime (rt)")
        llm = rt.llm_for(self.generator)
        params = GenerationParams(max_new_tokens=self.max_new_tokens)
        requests = [
            Request.user(render(template, question=i.question, answer=self._llm_text(i)), params)
            for i in items
        ]
        gens = llm.generate(requests, step=f"{self.name}:{step}")
        rt.count(f"{self.name}:llm_{step}_checks", len(requests))
        return [bool(parse(g.text)) for g in gens]
