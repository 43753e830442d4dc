"""RGB parity: on shared RGB-format predictions, every RGB rate rr reports equals what RGB's own
scripts compute (issue 35, part 1).

``RGBReference`` below re-states, step by step, the scoring of RGB's released scripts
(https://github.com/chen700564/RGB at commit d2293eec8c76467c1572b3ebedcaca4e9b4e82f4; ``evalue.py``'s
``predict``, ``checkanswer`` and its ``__main__`` rate loop; ``reject_evalue.py``'s and
``fact_evalue.py``'s rate loops). It is a transcription of their logic written for this test (each
step cites the script and what it does), not rr code: it shares nothing with :mod:`rr.judges.rgb`
or :mod:`rr.metrics.rgb`. ``CASES`` are hand-made predictions covering every rule the issue lists,
in English and Chinese: ``64%`` vs ``6.4%``, ``Tampa Florida`` vs ``Tampa, Florida``, spaces in
Chinese responses, an answer plus "I cannot determine", a lowercase-only match, the refusal
sentence with the answer, a capitalised "Insufficient information", the fact-error phrase with a
refusal, an empty error-correction denominator, a multi-part answer with one part missing, and a
row whose generation failed (RGB skips it; rr: ``over_window``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rr.answers import RGB_REFUSAL
from rr.data.rgb import parse_rgb_row, read_rgb
from rr.judges.base import JudgeItem
from rr.judges.refusal import RefusalMatchJudge
from rr.judges.rgb import RGBJudge
from rr.metrics.rgb import counterfactual_table, rgb_table
from rr.records import Generation, MetaKey
from rr.runtime import Runtime

NOT_ADDRESSED = "No, the question is not addressed by the documents."
ADDRESSED = "Yes, the question is addressed by the documents."
IDENTIFIED = "Yes, the model has identified the factual errors."
MISSED = "NO, the model fail to identify the factual errors."


class RGBReference:
    """A transcription of RGB's scoring (chen700564/RGB@d2293ee), for this test only."""

    @staticmethod
    def checkanswer(prediction: str, ground_truth: Any) -> list[int]:
        """``evalue.py`` ``checkanswer``: lowercase the prediction; a non-list answer becomes a one-element
        list; per element: a list element is a group (flag set when any lowercased alternative is a
        substring), a string element must be a (lowercased) substring; one 0/1 label per element."""
        prediction = prediction.lower()
        elements = ground_truth if isinstance(ground_truth, list) else [ground_truth]
        labels = []
        for element in elements:
            if isinstance(element, list):
                flag = any(alt.lower() in prediction for alt in element)
            else:
                flag = element.lower() in prediction
            labels.append(int(flag))
        return labels

    @classmethod
    def predict(cls, prediction: str, ground_truth: Any, dataset: str) -> tuple[list[int], str, int]:
        """``evalue.py`` ``predict`` after generation: on a dataset whose name contains ``zh`` every " "
        is removed; "信息不足" or "insufficient information" in the prediction -> labels ``[-1]``, else
        ``checkanswer``; factlabel 1 when "事实性错误" or "factual errors" occurs. Returns
        (labels, the prediction as saved, factlabel)."""
        if "zh" in dataset:
            prediction = prediction.replace(" ", "")
        if "信息不足" in prediction or "insufficient information" in prediction:
            labels = [-1]
        else:
            labels = cls.checkanswer(prediction, ground_truth)
        factlabel = int("事实性错误" in prediction or "factual errors" in prediction)
        return labels, prediction, factlabel

    @staticmethod
    def evalue_scores(results: list[dict], noise_rate: float, dataset: str) -> dict[str, float]:
        """``evalue.py`` ``__main__``: ``tt`` counts a result when ``noise_rate == 1`` and its first label
        is -1, or else when ``0 not in label and 1 in label``; ``all_rate = tt / len(results)``. For
        ``_fact`` datasets: ``fact_tt`` = results with factlabel 1, ``correct_tt`` = those of them with
        ``0 not in label``; ``fact_check_rate = fact_tt / len``, ``correct_rate = correct_tt / fact_tt``
        or 0 when ``fact_tt`` is 0."""
        tt = 0
        for r in results:
            if noise_rate == 1 and r["label"][0] == -1:  # noqa: SIM114 (kept as evalue.py branches)
                tt += 1
            elif 0 not in r["label"] and 1 in r["label"]:
                tt += 1
        scores = {"all_rate": tt / len(results)}
        if "_fact" in dataset:
            fact = [r for r in results if r["factlabel"] == 1]
            corrected = [r for r in fact if 0 not in r["label"]]
            scores["fact_check_rate"] = len(fact) / len(results)
            scores["correct_rate"] = len(corrected) / len(fact) if fact else 0
        return scores

    @staticmethod
    def reject_evalue_scores(results: list[dict]) -> dict[str, float]:
        """``reject_evalue.py``: ``rejecttt`` counts evaluations containing "not addressed";
        ``tt`` counts ``0 not in label and 1 in label``; both over ``len(results)``."""
        reject = sum("not addressed" in r["evaluation"] for r in results)
        tt = sum(0 not in r["label"] and 1 in r["label"] for r in results)
        return {"reject_rate": reject / len(results), "all_rate": tt / len(results)}

    @staticmethod
    def fact_evalue_scores(results: list[dict]) -> dict[str, float]:
        """``fact_evalue.py``: ``rejecttt`` counts evaluations containing "has identified" or "Yes"; of
        those, ``correct_tt`` counts ``0 not in label and 1 in label``; ``tt`` counts that over all.
        ``reject_rate = rejecttt / len``, ``all_rate = tt / len``, ``correct_rate = correct_tt /
        rejecttt`` or 0 when ``rejecttt`` is 0."""
        flagged = [r for r in results if "has identified" in r["evaluation"] or "Yes" in r["evaluation"]]
        ok = [r for r in flagged if 0 not in r["label"] and 1 in r["label"]]
        tt = sum(0 not in r["label"] and 1 in r["label"] for r in results)
        return {
            "reject_rate": len(flagged) / len(results),
            "all_rate": tt / len(results),
            "correct_rate": len(ok) / len(flagged) if flagged else 0,
        }


@dataclass(frozen=True)
class Case:
    """One prediction of one RGB run (dataset file, noise rate), as RGB's result files hold it."""

    id: str
    dataset: str  # RGB's --dataset: en, zh, en_int, en_fact, zh_fact
    noise_rate: float
    answer: Any  # RGB's `answer` field, raw
    prediction: str
    evaluation: str = ""  # the ChatGPT check's reply (reject_evalue.py / fact_evalue.py), if any
    failed: bool = False  # the generation raised: RGB skips the row (rr: over_window, empty prediction)
    note: str = field(default="", compare=False)


CASES = [
    Case("e1", "en", 0.4, [["6.4%"]], "Growth was 64% last year.", note="64% must not contain 6.4%"),
    Case("e2", "en", 0.4, [["Tampa, Florida"]], "It is held in Tampa Florida.", note="punctuation kept"),
    Case("e3", "en", 0.4, [["Jan 2", "January 2"]], "The launch was on JANUARY 2, 2022.", note="lowercase"),
    Case("e4", "en", 0.4, [["Paris"]], "Paris. However, I cannot determine the date.", note="not a refusal"),
    Case("e5", "en", 0.4, [["Paris"]], RGB_REFUSAL + " Maybe Paris?", note="refusal wins over the answer"),
    Case("e6", "en", 0.4, [["Paris"]], "", failed=True, note="generation failed: skipped"),
    Case(
        "e7", "en", 0.4, [["Annie Ernaux"]], "Insufficient information. Annie Ernaux", note="case-sensitive"
    ),
    Case("r1", "en", 1.0, [["Jeymes Samuel"]], RGB_REFUSAL, NOT_ADDRESSED),
    Case("r2", "en", 1.0, [["1998"]], "The answer is 1998.", ADDRESSED, note="correct counts in Rej"),
    Case("r3", "en", 1.0, [["Vision Pro"]], "I don't know.", NOT_ADDRESSED, note="only the LLM sees it"),
    Case("r4", "en", 1.0, [["x"]], "", NOT_ADDRESSED, failed=True),
    Case("i1", "en_int", 0.2, [["Brad Pitt"], ["CODA", "Coda"]], "Best picture 2022: CODA.", note="1 of 2"),
    Case("i2", "en_int", 0.2, [["Brad Pitt"], ["CODA"]], "Brad Pitt; the film was CODA."),
    Case("z1", "zh", 0.2, [["北京"]], "答案 是 北 京", note="spaces removed"),
    Case("z2", "zh", 0.2, [["ChatGPT"]], "是 Chat GPT", note="spaces removed, then lowercase"),
    Case("z3", "zh", 0.2, [["大阪直美"]], "文档 信息 不足 ，无法回答", note="refusal only without spaces"),
    Case(
        "f1",
        "en_fact",
        0.0,
        "2008",
        "There are factual errors in the provided documents. It was 2008.",
        IDENTIFIED,
    ),
    Case(
        "f2",
        "en_fact",
        0.0,
        "2008",
        "There are factual errors in the provided documents. " + RGB_REFUSAL,
        IDENTIFIED,
        note="phrase + refusal: evalue.py corrected, fact_evalue.py not",
    ),
    Case("f3", "en_fact", 0.0, "2008", "The answer is 2012.", MISSED),
    Case("f4", "en_fact", 0.0, "2008", "There are Factual Errors; it was 2008.", IDENTIFIED, note="ED* only"),
    Case(
        "g1",
        "zh_fact",
        0.0,
        "大阪直美",
        "2014年澳网女单冠军是大阪直美。",
        MISSED,
        note="empty CR denominator",
    ),
]


def rgb_results(cases: list[Case]) -> dict[tuple[str, float], list[dict]]:
    """RGB's result files: per (dataset, noise rate), the non-failed rows with their labels."""
    files: dict[tuple[str, float], list[dict]] = {}
    for c in cases:
        files.setdefault((c.dataset, c.noise_rate), [])
        if c.failed:
            continue  # evalue.py: `except Exception as e: print("Error:", e); continue`
        labels, prediction, factlabel = RGBReference.predict(c.prediction, c.answer, c.dataset)
        files[(c.dataset, c.noise_rate)].append(
            {
                "id": c.id,
                "label": labels,
                "prediction": prediction,
                "factlabel": factlabel,
                "evaluation": c.evaluation,
            }
        )
    return files


class _ScriptedChecker:
    """The LLM behind Rej* / ED*: answers each check prompt with the case's scripted evaluation, keyed by
    the response text the prompt carries (so it also checks that the judge sends RGB's saved text)."""

    identity = {"model": "scripted"}

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = replies

    def generate(self, requests, step):  # noqa: ANN001
        return [
            Generation(self.replies[r.messages[0][1].rsplit("Answer: ", 1)[1][: -len("\n    ")]], "k")
            for r in requests
        ]


def rr_score_table(cases: list[Case], judge_cls: type = RGBJudge) -> pd.DataFrame:
    """rr's score table for the cases: RGB rows loaded by rr's loader, judged by ``judge_cls``."""
    items, rows = [], []
    for c in cases:
        language = "zh" if "zh" in c.dataset else "en"
        raw = {"id": c.id, "query": f"question {c.id}", "answer": c.answer, "positive": [], "negative": []}
        ex = parse_rgb_row(raw, f"{c.dataset}.json:1", "noise", language=language)
        items.append(
            JudgeItem(ex.question, c.prediction, ex.answers, ex.answer_groups, ex.meta[MetaKey.LANGUAGE])
        )
        rows.append(
            {
                "example_id": c.id,
                "dataset": c.dataset,
                "generator": "g",
                "strategy": "rgb",
                "k": 20,
                "doc_perturbation": f"noise_ratio@{c.noise_rate:g}",
                "over_window": c.failed,
            }
        )
    saved = {RGBReference.predict(c.prediction, c.answer, c.dataset)[1]: c.evaluation for c in cases}
    saved.update({c.prediction: c.evaluation for c in cases})
    rt = Runtime(_ScriptedChecker(saved), Path("."))  # type: ignore[arg-type]
    judgments = judge_cls(llm_rejection=True, llm_error_detection=True).judge(items, rt)
    for row, j in zip(rows, judgments, strict=True):
        row.update(score=j.score, refused=j.refused, judge=j.judge, **j.extra)
    return pd.DataFrame(rows)


def rr_rates(table: pd.DataFrame) -> dict[tuple[str, float], dict[str, float]]:
    t = rgb_table(table, by=["dataset", "generator", "strategy"])
    return {(r["dataset"], r["noise_ratio"]): r for r in t.to_dict(orient="records")}


def _same(rr_value: float, rgb_value: float) -> bool:
    return rr_value == pytest.approx(rgb_value, abs=1e-12)


def test_every_rgb_rate_equals_rgb_scripts() -> None:
    ours = rr_rates(rr_score_table(CASES))
    files = rgb_results(CASES)
    checked = 0
    for (dataset, noise), results in files.items():
        mine = ours[(dataset, noise)]
        ref = RGBReference.evalue_scores(results, noise, dataset)
        assert mine["n_rows"] == len(results), (dataset, noise)  # RGB's `nums`: skipped rows left out
        if noise == 1:
            assert _same(mine["rejection_all_rate"], ref["all_rate"]), (dataset, "Rej")
            rej = RGBReference.reject_evalue_scores(results)
            assert _same(mine["rejection_rate_llm"], rej["reject_rate"]), (dataset, "Rej*")
            assert _same(mine["accuracy"], rej["all_rate"]), (dataset, "reject_evalue all_rate")
            checked += 3
        else:
            assert _same(mine["accuracy"], ref["all_rate"]), (dataset, noise, "accuracy")
            checked += 1
        if "_fact" in dataset:
            assert _same(mine["error_detection_rate"], ref["fact_check_rate"]), (dataset, "ED")
            fact = RGBReference.fact_evalue_scores(results)
            assert _same(mine["error_detection_rate_llm"], fact["reject_rate"]), (dataset, "ED*")
            for name, rgb_value in (
                ("error_correction_rate_evalue", ref["correct_rate"]),
                ("error_correction_rate_llm", fact["correct_rate"]),
            ):
                if math.isnan(mine[name]):  # rr: undefined; RGB's code prints 0 for an empty denominator
                    assert rgb_value == 0, (dataset, name)
                else:
                    assert _same(mine[name], rgb_value), (dataset, name)
            checked += 4
    assert checked == 16


def test_hand_worked_values_of_the_shared_cases() -> None:
    """The reference's numbers on the cases, worked by hand (so the reference itself is pinned)."""
    files = rgb_results(CASES)
    # en 0.4: e1 0 (64% vs 6.4%), e2 0 (comma), e3 1, e4 1, e5 refusal, e7 1 (capital I); e6 skipped -> 3/6
    assert RGBReference.evalue_scores(files[("en", 0.4)], 0.4, "en")["all_rate"] == 3 / 6
    # en 1.0: r1 refusal, r2 correct, r3 wrong; r4 skipped -> Rej 2/3; Rej* r1, r3 -> 2/3; all_rate 1/3
    assert RGBReference.evalue_scores(files[("en", 1.0)], 1.0, "en")["all_rate"] == 2 / 3
    assert RGBReference.reject_evalue_scores(files[("en", 1.0)]) == {"reject_rate": 2 / 3, "all_rate": 1 / 3}
    # en_int: i1 [0, 1] wrong, i2 [1, 1] -> 1/2; zh: z1, z2 correct, z3 refusal -> 2/3
    assert RGBReference.evalue_scores(files[("en_int", 0.2)], 0.2, "en_int")["all_rate"] == 1 / 2
    assert RGBReference.evalue_scores(files[("zh", 0.2)], 0.2, "zh")["all_rate"] == 2 / 3
    # en_fact: phrase f1, f2 (ED 2/4), both `0 not in label` -> evalue CR 2/2; LLM f1, f2, f4 (ED* 3/4),
    # correct f1, f4 -> Table 7 CR 2/3
    fact = RGBReference.evalue_scores(files[("en_fact", 0.0)], 0.0, "en_fact")
    assert (fact["fact_check_rate"], fact["correct_rate"]) == (2 / 4, 1.0)
    llm = RGBReference.fact_evalue_scores(files[("en_fact", 0.0)])
    assert (llm["reject_rate"], llm["correct_rate"]) == (3 / 4, 2 / 3)
    # zh_fact: nothing detected -> RGB prints correct_rate 0 (rr: NaN)
    assert RGBReference.evalue_scores(files[("zh_fact", 0.0)], 0.0, "zh_fact")["correct_rate"] == 0
    ours = rr_rates(rr_score_table(CASES))
    assert math.isnan(ours[("zh_fact", 0.0)]["error_correction_rate_evalue"])
    assert ours[("en", 0.4)]["n_skipped"] == 1 and ours[("en", 1.0)]["n_skipped"] == 1


def test_rr_rules_differ_from_rgbs_on_these_cases() -> None:
    """rr's own rules (judge=refusal_match: SQuAD normalisation, broader refusals, no space removal)
    give other numbers on the same predictions: the RGB experiment must not use them by default."""
    theirs = rr_score_table(CASES, RefusalMatchJudge)
    ours = rr_score_table(CASES)

    def correct_ids(t: pd.DataFrame, dataset: str) -> set[str]:
        return set(t.loc[(t["dataset"] == dataset) & (t["score"] == 1.0), "example_id"])

    # RGB: e3 (lowercase), e4 (answer + "I cannot determine"), e7 ("Insufficient" is not RGB's phrase).
    # rr: e1 (64% ~ 6.4%) and e2 (comma dropped) match after normalisation, e4 and e7 are refusals.
    assert correct_ids(ours, "en") == {"e3", "e4", "e7", "r2"}
    assert correct_ids(theirs, "en") == {"e1", "e2", "e3", "r2"}
    # zh without space removal: z1, z2 miss; z3 is a refusal for rr's list ("无法回答")
    assert correct_ids(ours, "zh") == {"z1", "z2"} and correct_ids(theirs, "zh") == set()
    # f2 (fact phrase + refusal): corrected by evalue.py's rule, but not RGB-correct
    assert ours.set_index("example_id").loc["f2", ["rgb_corrected", "score"]].tolist() == [True, 0.0]


def test_counterfactual_table_names_both_crs() -> None:
    table = rr_score_table([c for c in CASES if c.dataset == "en_fact"])
    (row,) = counterfactual_table(table).to_dict(orient="records")
    assert (row["ed"], row["ed_llm"], row["cr_evalue"], row["cr_llm"]) == (0.5, 0.75, 1.0, 2 / 3)
    assert row["cr"] == 0.5  # rr's: phrase rows f1 (correct), f2 (a refusal, not correct)


def test_chinese_files_are_scored_without_spaces(tmp_path: Path) -> None:
    """RGB's loader marks a file whose name contains `zh` as Chinese (`if 'zh' in dataset`)."""
    row = '{"id": 1, "query": "q", "answer": ["北京"], "positive": [], "negative": []}\n'
    for name, language in (("zh_int.json", "zh"), ("en.json", "en")):
        (tmp_path / name).write_text(row, encoding="utf-8")
        (ex,) = read_rgb(tmp_path / name)
        assert ex.meta[MetaKey.LANGUAGE] == language
        (j,) = RGBJudge().judge([JudgeItem("q", "北 京", ex.answers, None, ex.meta[MetaKey.LANGUAGE])])
        assert j.score == (1.0 if language == "zh" else 0.0)
