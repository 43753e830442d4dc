"""LLM judges: Cao et al. (2025) §4.1 (``judge=llm``) and RARE's two-stage judge (``judge=two_stage``).

``judge=llm`` asks a judge model, with the verbatim prompts of Cao et al. Appendix C, whether a
prediction answers the question given the gold answers:

* single-answer items (NQ, HotpotQA): ``answer_evaluation_nq_hotpot.j2``; ``gold_answer`` is
  the list of gold strings (rendered as a Python list, ``['a', 'b']``: the paper's template
  prints the variable as is); score 1.0 for ``Yes``, 0.0 for ``No``;
* ASQA-style items (``answer_groups``): ``answer_evaluation_asqa.j2`` with one ``Group i:``
  line per group (each group a Python list of alternatives); the score is the fraction of
  groups judged covered (``asqa_score="fraction"``, the default; Cao et al. do not say how
  group verdicts become one score, and the fraction matches ASQA's string-match metric and
  ``judge=match``), or 1.0 only if every group is covered (``asqa_score="all"``).

The judge model is any generator config (``judge.generator``); the paper used
Llama-3.3-70B-Instruct through vLLM. The default is the packaged small model (offline, CPU;
plumbing, not a good judge). Requests go through :meth:`Runtime.llm_for`, i.e. the job's one
generation cache: identical (question, gold answers, prediction) triples are judged once per
judge model, here and across jobs. ``summary.json`` ``counters`` report
``judge:<name>:items`` (judgments asked) and ``judge:<name>:unique`` (distinct triples).

Unreadable verdicts (:mod:`rr.judges.verdicts`) are asked again up to ``max_retries`` times with
sampling (``retry_temperature``, seed = attempt number, so each retry is cached and
reproducible); counted as ``judge:<name>:retries``. What is still unreadable falls back to
string match (:func:`~rr.answers.substring_match`, per group for ASQA), is counted as
``judge:<name>:fallback`` and is marked in the row's ``judge_fallback`` column: never a silent 0.
Empty predictions are scored 0 without a call (``judge:<name>:empty_prediction``).

Each fallback is also one warning on the console (how many, after how many tries, an example),
and a line of the job's console summary.

Extra score-table columns: ``judge_output`` (the judge's raw output used: the most readable of
its tries), ``judge_attempts`` (the tries made: 1 + retries used), ``judge_fallback``, ``judge_model``, and ``em`` / ``f1`` as ``judge=match``
writes them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from rr.answers import exact_match, normalize_answer, substring_match, token_f1
from rr.generation.client import LLM
from rr.judges.base import JudgeItem
from rr.judges.verdicts import parse_group_verdicts, parse_yes_no
from rr.prompts import render
from rr.records import GenerationParams, Judgment, Request
from rr.registry import component
from rr.runtime import Runtime

ASQA_SCORES = ("fraction", "all")

log = logging.getLogger(__name__)


def _golds(item: JudgeItem) -> list[str]:
    if item.answer_groups:
        return [alt for group in item.answer_groups for alt in group]
    return list(item.answers)


def _dedup_key(item: JudgeItem) -> tuple:
    groups = tuple(tuple(g) for g in item.answer_groups) if item.answer_groups else None
    return (item.question, tuple(item.answers), groups, item.prediction)


@component("judge", "llm", hydra_keys=("_recursive_",))
class LLMJudge:
    """Cao et al.'s LLM judge (§4.1, Appendix C prompts); see the module docstring.

    Args:
        generator: The judge model: any generator config node (``judge.generator``), or
            ``None`` for the model under test.
        template: Prompt for single-answer items (``answer_evaluation_nq_hotpot.j2``).
        groups_template: Prompt for ASQA-style items (``answer_evaluation_asqa.j2``).
        asqa_score: ``"fraction"`` of groups covered (default) or ``"all"`` groups covered.
        max_new_tokens: Judge output budget (ASQA items get at least ``12 * groups + 16``).
        max_retries: Re-asks of an unreadable verdict before the string-match fallback.
        retry_temperature: Sampling temperature of the retries (seed = attempt number).
        name: Written to the score table's ``judge`` column.

    The option YAMLs set Hydra's ``_recursive_: false`` (admitted by ``hydra_keys``): it keeps
    ``generator`` a config node, instantiated by :meth:`Runtime.llm_for` only when the judge
    first runs (building a judge never loads or downloads its model).
    """

    def __init__(
        self,
        generator: Any = None,
        template: str = "answer_evaluation_nq_hotpot.j2",
        groups_template: str = "answer_evaluation_asqa.j2",
        asqa_score: str = "fraction",
        max_new_tokens: int = 64,
        max_retries: int = 2,
        retry_temperature: float = 0.7,
        name: str = "llm",
    ) -> None:
        if asqa_score not in ASQA_SCORES:
            raise ValueError(f"judge.asqa_score must be one of {ASQA_SCORES}, got {asqa_score!r}")
        if max_retries < 0:
            raise ValueError(f"judge.max_retries must be >= 0, got {max_retries}")
        self.generator = generator
        self.template = template
        self.groups_template = groups_template
        self.asqa_score = asqa_score
        self.max_new_tokens = max_new_tokens
        self.max_retries = max_retries
        self.retry_temperature = retry_temperature
        self.name = name

    # ------------------------------------------------------------------ prompts and parsing

    def prompt(self, item: JudgeItem) -> str:
        """The judge prompt for ``item`` (verbatim Appendix C template)."""
        if item.answer_groups:
            return render(
                self.groups_template,
                question=item.question,
                short_answer=[list(g) for g in item.answer_groups],
                pred_answer=item.prediction,
            )
        return render(
            self.template, question=item.question, gold_answer=list(item.answers), pred_answer=item.prediction
        )

    def _params(self, item: JudgeItem, attempt: int) -> GenerationParams:
        n = self.max_new_tokens
        if item.answer_groups:
            n = max(n, 12 * len(item.answer_groups) + 16)
        if attempt == 0:
            return GenerationParams(max_new_tokens=n)
        return GenerationParams(max_new_tokens=n, temperature=self.retry_temperature, seed=attempt)

    @staticmethod
    def verdicts(item: JudgeItem, text: str) -> list[bool | None]:
        """One verdict per answer group (one entry for single-answer items)."""
        if item.answer_groups:
            return parse_group_verdicts(text, len(item.answer_groups))
        return [parse_yes_no(text)]

    def _score(self, covered: Sequence[bool]) -> float:
        if self.asqa_score == "all":
            return float(all(covered))
        return sum(covered) / len(covered)

    # ------------------------------------------------------------------ judging

    def judge(self, items: list[JudgeItem], rt: Runtime | None = None) -> list[Judgment]:
        """One judgment per item, same order; model calls batched over the distinct items."""
        if not items:
            return []
        if rt is None:
            raise ValueError(f"judge {self.name!r} calls a model and needs the job's Runtime (rt)")
        llm = rt.llm_for(self.generator)
        unique: dict[tuple, JudgeItem] = {}
        for it in items:
            unique.setdefault(_dedup_key(it), it)
        rt.count(f"judge:{self.name}:items", len(items))
        rt.count(f"judge:{self.name}:unique", len(unique))
        results = self._judge_unique(list(unique.values()), llm, rt)
        by_key = dict(zip(unique, results, strict=True))
        return [by_key[_dedup_key(it)] for it in items]

    def _judge_unique(self, items: list[JudgeItem], llm: LLM, rt: Runtime) -> list[Judgment]:
        n = len(items)
        texts: list[str] = [""] * n
        verdicts: list[list[bool | None]] = [[None] for _ in range(n)]
        attempts = [0] * n  # the tries made for each item
        empty = [not it.prediction.strip() for it in items]
        if any(empty):
            rt.count(f"judge:{self.name}:empty_prediction", sum(empty))
        pending = [i for i in range(n) if not empty[i]]
        for attempt in range(self.max_retries + 1):
            if not pending:
                break
            if attempt:
                rt.count(f"judge:{self.name}:retries", len(pending))
            requests = [Request.user(self.prompt(items[i]), self._params(items[i], attempt)) for i in pending]
            step = f"judge:{self.name}" if attempt == 0 else f"judge:{self.name}:retry{attempt}"
            gens = llm.generate(requests, step=step)
            still = []
            for i, g in zip(pending, gens, strict=True):
                v = self.verdicts(items[i], g.text)
                attempts[i] = attempt + 1
                if attempt == 0 or sum(x is not None for x in v) > sum(x is not None for x in verdicts[i]):
                    texts[i], verdicts[i] = g.text, v
                if any(x is None for x in verdicts[i]):
                    still.append(i)
            pending = still
        if pending:
            rt.count(f"judge:{self.name}:fallback", len(pending))
            first = items[pending[0]]
            log.warning(
                "judge %s: %d of %d verdicts unreadable after %d tries (max_retries=%d), scored by string "
                "match instead (judge_fallback=true in the score table); e.g. prediction %r to %r",
                self.name,
                len(pending),
                n,
                self.max_retries + 1,
                self.max_retries,
                first.prediction[:80],
                first.question[:80],
            )
        out = []
        for i, it in enumerate(items):
            golds = _golds(it)
            fallback = i in pending
            if empty[i]:
                covered = [False] * (len(it.answer_groups) if it.answer_groups else 1)
            else:
                groups = it.answer_groups or [list(it.answers)]
                covered = [
                    bool(v) if v is not None else bool(substring_match(it.prediction, g))
                    for v, g in zip(verdicts[i], groups, strict=True)
                ]
            out.append(
                Judgment(
                    score=self._score(covered),
                    judge=self.name,
                    refused=False,
                    extra={
                        "judge_output": texts[i],
                        "judge_attempts": attempts[i],
                        "judge_fallback": fallback,
                        "judge_model": llm.generator.name,
                        "em": exact_match(it.prediction, golds),
                        "f1": token_f1(it.prediction, golds),
                    },
                )
            )
        return out


def lexical_match(prediction: str, golds: Sequence[str]) -> bool:
    """RARE's first stage (§6.1): normalized exact or inclusive match.

    Both strings are normalized (:func:`~rr.answers.normalize_answer`); a match is an
    exact match, a gold contained in the prediction, or the prediction contained in a gold as a
    whole-word sequence ("Shakespeare" in "William Shakespeare"). Empty strings never match.
    """
    p = normalize_answer(prediction)
    if not p:
        return False
    for gold in golds:
        g = normalize_answer(gold)
        if g and (g in p or f" {p} " in f" {g} "):
            return True
    return False


@component("judge", "two_stage")
class TwoStageJudge(LLMJudge):
    """Lexical match first, the LLM judge only where it finds none (RARE, Zeng et al. 2025, §6.1).

    An item whose prediction lexically matches (:func:`lexical_match`) every gold group (or any
    gold answer, for single-answer items) scores 1.0 without a call; the rest go to the LLM judge
    (:class:`LLMJudge`, same arguments). For ASQA-style items sent to the LLM, a group that
    matched lexically counts as covered whatever the LLM says. ``judge:<name>:lexical`` counts the
    items settled lexically (the calls saved, before deduplication) and the row's
    ``judge_stage`` column says which stage decided (``lexical`` or ``llm``).
    """

    def __init__(self, name: str = "two_stage", **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)

    def judge(self, items: list[JudgeItem], rt: Runtime | None = None) -> list[Judgment]:
        """One judgment per item, same order."""
        lexical = [
            [lexical_match(it.prediction, g) for g in (it.answer_groups or [list(it.answers)])]
            for it in items
        ]
        settled = [all(m) for m in lexical]
        rest = [i for i, s in enumerate(settled) if not s]
        if rt is not None:
            rt.count(f"judge:{self.name}:lexical", sum(settled))
        llm_out = super().judge([items[i] for i in rest], rt) if rest else []
        out: list[Judgment | None] = [None] * len(items)
        for i, jd in zip(rest, llm_out, strict=True):
            score = jd.score
            if items[i].answer_groups and any(lexical[i]):
                # Recompute with the lexical matches forced to covered.
                v = self.verdicts(items[i], jd.extra["judge_output"])
                groups = items[i].answer_groups or []
                covered = [
                    lex or (bool(x) if x is not None else bool(substring_match(items[i].prediction, g)))
                    for lex, x, g in zip(lexical[i], v, groups, strict=True)
                ]
                score = self._score(covered)
            out[i] = Judgment(score, jd.judge, jd.refused, {**jd.extra, "judge_stage": "llm"})
        for i, it in enumerate(items):
            if settled[i]:
                golds = _golds(it)
                out[i] = Judgment(
                    1.0,
                    self.name,
                    False,
                    {
                        "judge_output": "",
                        "judge_attempts": 0,
                        "judge_fallback": False,
                        "judge_model": "",
                        "em": exact_match(it.prediction, golds),
                        "f1": token_f1(it.prediction, golds),
                        "judge_stage": "lexical",
                    },
                )
        return [o for o in out if o is not None]
