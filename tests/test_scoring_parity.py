"""Each seed paper's answer-matching rule, as its released code (or text) decides it, against rr's
implementation of that rule, on the hand-made cases of ``metric_cases/scoring_parity.yaml`` (issue 35).

Transcriptions below re-state the released code of two rules, for this test only:

* ``bergen_match``: BERGEN's ``match_single`` (naver/bergen, ``modules/metrics.py`` at 13fbd28): the
  query-level study's "Match". ``normalize`` lowercases, drops ``string.punctuation``, replaces the
  whole words a/an/the by a space and collapses whitespace; a gold counts when its normalised form is
  a substring of the normalised prediction; ``match_score`` takes the max over golds.
* ``liu_best_subspan_em``: lost-in-the-middle's ``best_subspan_em`` (nelson-liu/lost-in-the-middle,
  ``src/lost_in_the_middle/metrics.py`` at 04cbd0d), which SURE §3.6 follows ("in line with Liu et al.
  (2024)"): the same normalisation, then normalised gold (lowercased again) in the normalised
  prediction, 1.0 at the first hit.

RGB's rule is checked against its transcription in ``tests/test_rgb_parity.py``; RARE released no
evaluation code, so its ``expected`` values follow its text (§6.1) as rr reads it.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Any

import pytest
import yaml

from rr.answers import substring_match
from rr.judges.base import JudgeItem
from rr.judges.llm import lexical_match
from rr.judges.refusal import RefusalMatchJudge
from rr.judges.rgb import RGBJudge

CASES: list[dict[str, Any]] = yaml.safe_load(
    (Path(__file__).parent / "metric_cases" / "scoring_parity.yaml").read_text(encoding="utf-8")
)
RULES = ("rgb", "query_level_match", "sure_y", "rare_lexical", "rr_refusal_match")


def _item(case: dict[str, Any]) -> JudgeItem:
    groups = case.get("groups")
    golds = case.get("golds") or [a for g in groups for a in g]
    return JudgeItem("q", case["prediction"], golds, groups, case.get("language"))


def rr_decision(rule: str, case: dict[str, Any]) -> bool:
    """rr's implementation of ``rule``: is the response counted correct?"""
    item = _item(case)
    if rule == "rgb":
        return RGBJudge().judge([item])[0].score == 1.0
    if rule in ("query_level_match", "sure_y"):
        return substring_match(item.prediction, item.answers) == 1.0
    if rule == "rare_lexical":
        return lexical_match(item.prediction, item.answers)
    if rule == "rr_refusal_match":
        return RefusalMatchJudge().judge([item])[0].score == 1.0
    raise AssertionError(rule)


def _squad_normalize(s: str) -> str:
    """The SQuAD normalisation both BERGEN and lost-in-the-middle define (lower, punctuation, articles,
    whitespace, in that order)."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def bergen_match(prediction: str, golds: list[str]) -> bool:
    """Transcription of BERGEN's ``match_score`` for one prediction (see the module docstring)."""
    return max(float(_squad_normalize(g) in _squad_normalize(prediction)) for g in golds) == 1.0


def liu_best_subspan_em(prediction: str, golds: list[str]) -> bool:
    """Transcription of lost-in-the-middle's ``best_subspan_em`` (see the module docstring)."""
    p = _squad_normalize(prediction)
    return any(_squad_normalize(g).lower() in p.lower() for g in golds)


OFFICIAL = {"query_level_match": bergen_match, "sure_y": liu_best_subspan_em}


def test_cases_cover_every_rule() -> None:
    for case in CASES:
        assert set(case["expected"]) == set(RULES), case["name"]
    for rule in RULES:
        assert any(c["expected"][rule] is not None for c in CASES), rule


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_official_code_gives_expected(case: dict[str, Any]) -> None:
    """`expected` is what the released code computes (for the rules that have code besides RGB's)."""
    for rule, official in OFFICIAL.items():
        if case["expected"][rule] is not None:
            assert official(case["prediction"], _item(case).answers) == case["expected"][rule], rule


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_rr_rule_gives_expected(case: dict[str, Any]) -> None:
    deviates = case.get("rr_deviates", {})
    for rule in RULES:
        want = case["expected"][rule]
        if want is None:
            continue
        got = rr_decision(rule, case)
        if rule in deviates:
            assert got != want, f"{rule}: documented deviation no longer holds"
        else:
            assert got == want, rule


def test_rare_judge_is_the_lexical_stage_with_refusals() -> None:
    """judge=rare (experiment=rare2025's default): RARE §6.1's exact-or-inclusive match, so a prediction
    inside the gold counts (it did not under judge=refusal_match); a refusal scores 0 and is flagged."""
    from rr.judges.rare import RAREJudge

    items = [
        JudgeItem("q", "Shakespeare", ["William Shakespeare"]),
        JudgeItem("q", "It was William Shakespeare.", ["William Shakespeare"]),
        JudgeItem("q", "no such info", ["William Shakespeare"]),
        JudgeItem("q", "Marlowe", ["William Shakespeare"]),
        JudgeItem("q", "Brad Pitt won", ["Brad Pitt", "CODA"], [["Brad Pitt"], ["CODA"]]),
    ]
    out = RAREJudge().judge(items)
    assert [j.score for j in out] == [1.0, 1.0, 0.0, 0.0, 0.5]
    assert [j.refused for j in out] == [False, False, True, False, False]
    assert {j.judge for j in out} == {"rare"}
    assert RefusalMatchJudge().judge(items[:1])[0].score == 0.0  # rr's rule: gold inside prediction only
