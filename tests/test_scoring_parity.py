"""Each seed paper's answer-matching rule, as its released code (or text) decides it, against rr's
implementation of that rule (issues 35 and 42).

The released code of the two scorers with code besides RGB's is copied below verbatim (``import regex``
included: both strip articles with the third-party ``regex`` module, whose ``\\b`` differs from
``re``'s on combining marks, connector punctuation and non-decimal digits), each block naming its
repository, path and commit:

* BERGEN (naver/bergen, ``modules/metrics.py``): ``normalize``, ``match_single``, ``match_score``; the
  query-level study's "Match". BERGEN's ``eval.py`` hands ``match_score`` the whole generation
  (``sample['response']``).
* lost-in-the-middle (nelson-liu/lost-in-the-middle): ``normalize_answer`` and ``best_subspan_em``
  (``src/lost_in_the_middle/metrics.py``) and ``get_metrics_for_example``
  (``scripts/evaluate_qa_responses.py``), which scores the response's first line; SURE §3.6 follows it.
* RGB (chen700564/RGB, ``evalue.py``): ``checkanswer`` verbatim, and the lines of ``predict`` that
  label a generated response; correct = ``0 not in label and 1 in label``. Its rates are checked in
  ``tests/test_rgb_parity.py``.

Three sets of cases: the hand-made cases of ``metric_cases/scoring_parity.yaml`` (each paper's decision
on one response, the four Unicode classes included); raw model outputs (``RAW_OUTPUTS``), scored by
rr the way each paper's experiment config has it score (``scoring.text`` and its judge) and by the
paper's code on the text that code reads; and a cross product of adversarial predictions and golds
for the normalisation alone. RARE released no evaluation code, so its ``expected`` values follow its
text (§6.1) as rr reads it.
"""

from __future__ import annotations

import string
from functools import cache
from pathlib import Path
from typing import Any, List  # noqa: UP035 (lost-in-the-middle's annotations, copied as they are)

import pytest
import regex
import yaml

from rr import answers as rr_answers
from rr.answers import substring_match
from rr.config import job_settings
from rr.judges.base import JudgeItem
from rr.judges.llm import lexical_match
from rr.judges.refusal import RefusalMatchJudge
from rr.judges.rgb import RGBJudge
from rr.prompts.answer import extract_answer, scored_text

from .conftest import compose_config

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


# fmt: off
# --- naver/bergen, modules/metrics.py, commit 13fbd28d9cffc2d1a2c8b79ac5959d3f6d51d0b3 (verbatim) ---
def normalize(s: str) -> str:
    def remove_articles(text):
        return regex.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def match_single(prediction: str, ground_truth: str):
    return float(normalize(ground_truth) in normalize(prediction))


def match_score(predictions, references):
    assert isinstance(references[0], list), f"during metrics computation: Labels are type {type(references[0])}, but are expected to be a list of strings (even if only one label). Metrics computation may run but produce false results."
    match_samples = [max([match_single(prediction, gt) for gt in ground_truths]) for ground_truths, prediction in zip(references, predictions)]  # noqa: B905
    return match_samples


# --- end of BERGEN's code ---
# fmt: on


# fmt: off
# --- nelson-liu/lost-in-the-middle, src/lost_in_the_middle/metrics.py, commit
# --- 04cbd0df78d3260600fd04e524a29bd1404ef86b (verbatim) ---
def normalize_answer(s: str) -> str:
    """Normalization from the SQuAD evaluation script.

    See https://worksheets.codalab.org/rest/bundles/0x6b567e1cf2e041ec80d7098f031c5c9e/contents/blob/
    """

    def remove_articles(text):
        return regex.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def best_subspan_em(prediction: str, ground_truths: List[str]) -> float:  # noqa: UP006
    normalized_prediction = normalize_answer(prediction)

    for ground_truth in ground_truths:
        normalized_ground_truth = normalize_answer(ground_truth)
        if normalized_ground_truth.lower() in normalized_prediction.lower():
            return 1.0
    return 0.0


# --- same repository and commit, scripts/evaluate_qa_responses.py (verbatim) ---
METRICS = [
    (best_subspan_em, "best_subspan_em"),
]


def get_metrics_for_example(example):
    gold_answers = example["answers"]
    model_answer = example["model_answer"]

    # NOTE: we take everything up to the first newline, since otherwise models could hack
    # the metric by simply copying te input context (as the gold answer is guaranteed
    # to occur in the input context).
    model_answer = model_answer.split("\n")[0].strip()

    example_metrics = {}
    for (metric, metric_name) in METRICS:  # noqa: UP034
        example_metrics[metric_name] = metric(prediction=model_answer, ground_truths=gold_answers)
    return (example_metrics, example)


# --- end of lost-in-the-middle's code ---
# fmt: on


# fmt: off
# --- chen700564/RGB, evalue.py, commit d2293eec8c76467c1572b3ebedcaca4e9b4e82f4 (verbatim) ---
def checkanswer(prediction, ground_truth):
    prediction = prediction.lower()
    if type(ground_truth) is not list:
        ground_truth = [ground_truth]
    labels = []
    for instance in ground_truth:
        flag = True
        if type(instance)  == list:  # noqa: E721
            flag = False 
            instance = [i.lower() for i in instance]
            for i in instance:
                if i in prediction:
                    flag = True
                    break
        else:
            instance = instance.lower()
            if instance not in prediction:
                flag = False
        labels.append(int(flag))
    return labels


# --- end of RGB's code ---
# fmt: on


# fmt: off
def rgb_predict_labels(prediction: str, ground_truth: Any, dataset: str = "en") -> list[int]:
    """The lines of RGB's ``evalue.py`` ``predict`` (same commit) after ``model.generate``, verbatim in
    the body: ``zh`` files lose their spaces, a refusal phrase labels ``[-1]``, else ``checkanswer``."""
    if 'zh' in dataset:
        prediction = prediction.replace(" ","")

    if '信息不足' in prediction or 'insufficient information' in prediction:
        labels = [-1]
    else:
        labels = checkanswer(prediction, ground_truth)
    return labels
# fmt: on


def bergen_match(prediction: str, golds: list[str]) -> bool:
    """BERGEN's Match of one whole generation (``eval.py`` passes ``sample['response']``)."""
    return match_score([prediction], [golds])[0] == 1.0


def liu_best_subspan_em(prediction: str, golds: list[str]) -> bool:
    """lost-in-the-middle's score of one response, cut to its first line as its script does."""
    metrics, _ = get_metrics_for_example({"answers": golds, "model_answer": prediction})
    return metrics["best_subspan_em"] == 1.0


def rgb_correct(prediction: str, ground_truth: Any, dataset: str = "en") -> bool:
    """RGB's correct response: ``0 not in label and 1 in label`` (``evalue.py``'s rate loop)."""
    label = rgb_predict_labels(prediction, ground_truth, dataset)
    return 0 not in label and 1 in label


def official_decision(rule: str, case: dict[str, Any]) -> bool:
    """The released code's decision on a case's response (``rule`` one of :data:`OFFICIAL`)."""
    if rule == "rgb":
        truth = case.get("groups") or case["golds"]
        return rgb_correct(case["prediction"], truth, case.get("language") or "en")
    return OFFICIAL[rule](case["prediction"], _item(case).answers)


OFFICIAL: dict[str, Any] = {
    "rgb": rgb_correct,
    "query_level_match": bergen_match,
    "sure_y": liu_best_subspan_em,
}


def test_cases_cover_every_rule() -> None:
    for case in CASES:
        assert set(case["expected"]) == set(RULES), case["name"]
    for rule in RULES:
        assert any(c["expected"][rule] is not None for c in CASES), rule


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_official_code_gives_expected(case: dict[str, Any]) -> None:
    """`expected` is what the released code computes (for the rules that have code)."""
    for rule in OFFICIAL:
        if case["expected"][rule] is not None:
            assert official_decision(rule, case) == case["expected"][rule], rule


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


# --- The four Unicode classes: `regex`'s word boundaries, not `re`'s ---------------------------------

UNICODE_CASES = (
    "nfd_accent_after_an_article",
    "nfd_accent_before_an_article",
    "fullwidth_low_line",
    "superscript_digits",
)


def _normalize_with_re(s: str) -> str:
    """BERGEN's ``normalize`` with ``re`` in place of ``regex`` (what rr did before issue 42)."""
    import re

    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())


@pytest.mark.parametrize("name", UNICODE_CASES)
def test_unicode_cases_tell_the_engines_apart(name: str) -> None:
    """Each case's decision under ``re``'s word boundaries is the other one, so the cases catch a
    normalisation that strips articles with ``re``; rr's normalisation is BERGEN's on both strings."""
    (case,) = [c for c in CASES if c["name"] == name]
    prediction, golds = case["prediction"], _item(case).answers
    with_re = any(_normalize_with_re(g) in _normalize_with_re(prediction) for g in golds)
    assert with_re != bergen_match(prediction, golds)
    for s in (prediction, *golds):
        assert rr_answers.normalize_answer(s) == normalize(s) == normalize_answer(s)


# --- Adversarial predictions x golds: the normalisation alone ----------------------------------------

ADVERSARIAL_PREDICTIONS = (
    "Paris",
    "paris.",
    "The answer is: PARIS!",
    "It's Saint-Denis, not Paris",
    "an apple a day",
    "A",
    "the the the",
    "Theater of the Absurd",
    "Growth was 64% last year.",
    "$6.4 billion (6.4%)",
    "Tampa Florida",
    "Cafe\u0301 de Flore",  # NFD
    "Café de Flore",  # NFC
    "the\u0301 vert",  # NFD thé
    "x² + b² = c²",
    "snake＿case the＿end",
    "ｔｈｅ Ｂｅａｔｌｅｓ",  # full-width letters
    "  \tWhite\u00a0space\u2003everywhere \n",
    "İstanbul",
    "ΣΊΣΥΦΟΣ",
)
ADVERSARIAL_GOLDS = (
    "Paris",
    "Saint-Denis",
    "the Beatles",
    "6.4%",
    "Tampa, Florida",
    "Café",
    "the\u0301",
    "a² + b² = c²",
    "the＿end",
    "istanbul",
    "σίσυφος",
    "an apple",
)


@pytest.mark.parametrize("gold", ADVERSARIAL_GOLDS)
def test_normalisation_equals_the_official_code_on_adversarial_pairs(gold: str) -> None:
    """rr's Match on every (prediction, gold) pair of the cross product (240 pairs) is BERGEN's
    ``match_score`` and lost-in-the-middle's ``best_subspan_em`` (none of these golds is empty)."""
    for prediction in ADVERSARIAL_PREDICTIONS:
        official = match_score([prediction], [[gold]])[0]
        assert best_subspan_em(prediction, [gold]) == official, (prediction, gold)
        assert substring_match(prediction, [gold]) == official, (prediction, gold)
        assert rr_answers.normalize_answer(prediction) == normalize(prediction), prediction


# --- The text each paper reads: raw outputs, scored as each paper's experiment config has rr score them -

#: Each paper's experiment and which official function decides a raw output; "cao2025" (rr's own rule:
#: the extracted answer) has no released code: its column is hand-worked from extract_answer's rules.
PAPERS = {
    "query_level": ("query_level2025", bergen_match),
    "sure": ("sure2025", liu_best_subspan_em),
    "rgb": ("rgb2024", rgb_correct),
    "extracted": ("cao2025", None),
}

#: (raw output, golds, {paper: correct?}): the value is the official code's decision on the raw output.
RAW_OUTPUTS: list[tuple[str, list[str], dict[str, bool]]] = [
    ("I think the answer is\nParis", ["Paris"], {"query_level": True, "sure": False, "rgb": True, "extracted": False}),
    ("Answer: Paris\nParis is the capital of France.", ["Paris"], {"query_level": True, "sure": True, "rgb": True, "extracted": True}),
    ("\nParis", ["Paris"], {"query_level": True, "sure": False, "rgb": True, "extracted": True}),
    ("Answer:\nParis", ["Paris"], {"query_level": True, "sure": False, "rgb": True, "extracted": True}),
    ("Paris? No. Answer: London", ["Paris"], {"query_level": True, "sure": True, "rgb": True, "extracted": False}),
    ("The question asks for France's capital.\nAnswer: Paris.", ["Paris"], {"query_level": True, "sure": False, "rgb": True, "extracted": True}),
    ("**Answer:** the Beatles", ["The Beatles"], {"query_level": True, "sure": True, "rgb": True, "extracted": True}),
    ("  Paris  \r\nbecause it is.", ["Paris"], {"query_level": True, "sure": True, "rgb": True, "extracted": True}),
    ("London.\nNo wait, Paris.", ["Paris"], {"query_level": True, "sure": False, "rgb": True, "extracted": False}),
    ("Paris, though the documents have insufficient information.", ["Paris"], {"query_level": True, "sure": True, "rgb": False, "extracted": True}),
    ("I can not answer the question because of the insufficient information in documents.", ["Paris"], {"query_level": False, "sure": False, "rgb": False, "extracted": False}),
    ("Growth was 64%.\nAnswer: 64%", ["6.4%"], {"query_level": True, "sure": True, "rgb": False, "extracted": True}),
    ("", ["Paris"], {"query_level": False, "sure": False, "rgb": False, "extracted": False}),
]  # fmt: skip


@cache
def experiment_scored_text(experiment: str) -> str:
    """``scoring.text`` of the experiment's composed config (the same composition a job uses)."""
    return job_settings(compose_config([f"experiment={experiment}"])).scored_text


def rr_paper_decision(paper: str, raw: str, golds: list[str]) -> bool:
    """rr's decision on a raw output, as the paper's experiment runs it: the strategy's answer
    (``strategy=rgb``: the whole stripped response; the others: :func:`extract_answer`), the text
    ``scoring.text`` takes from it, then the experiment's judge (``rgb`` or ``match``)."""
    experiment, _ = PAPERS[paper]
    answer = raw.strip() if paper == "rgb" else extract_answer(raw)[0]
    text = scored_text(raw, answer, experiment_scored_text(experiment))
    if paper == "rgb":
        return RGBJudge().judge([JudgeItem("q", text, golds)])[0].score == 1.0
    return substring_match(text, golds) == 1.0


def test_each_experiment_names_the_text_its_paper_scores() -> None:
    assert {p: experiment_scored_text(e) for p, (e, _) in PAPERS.items()} == {
        "query_level": "whole",  # BERGEN's eval.py: match_score over sample['response']
        "sure": "first_line",  # lost-in-the-middle's get_metrics_for_example
        "rgb": "whole",  # RGB's predict: checkanswer(prediction) on the whole response
        "extracted": "extracted",  # rr's own rule (Cao et al. released no code)
    }


@pytest.mark.parametrize("raw, golds, expected", RAW_OUTPUTS, ids=[repr(r[0][:30]) for r in RAW_OUTPUTS])
def test_raw_outputs_are_scored_on_the_text_each_paper_reads(
    raw: str, golds: list[str], expected: dict[str, bool]
) -> None:
    for paper, (_, official) in PAPERS.items():
        if official is not None:
            assert official(raw, golds) == expected[paper], f"{paper}: the official code"
        assert rr_paper_decision(paper, raw, golds) == expected[paper], f"{paper}: rr"


def test_the_extracted_rule_differs_from_bergens_on_the_issues_example() -> None:
    """The issue's example: 1 under BERGEN's whole-generation rule, 0 under rr's extracted answer and
    under lost-in-the-middle's first line; scoring.text names which."""
    raw = "I think the answer is\nParis"
    assert match_score([raw], [["Paris"]]) == [1.0]
    assert get_metrics_for_example({"answers": ["Paris"], "model_answer": raw})[0] == {"best_subspan_em": 0.0}
    answer, found = extract_answer(raw)
    assert (answer, found) == ("I think the answer is", False)
    assert [
        substring_match(scored_text(raw, answer, t), ["Paris"]) for t in ("whole", "first_line", "extracted")
    ] == [
        1.0,
        0.0,
        0.0,
    ]


def test_scored_text_rejects_an_unknown_rule() -> None:
    with pytest.raises(ValueError, match="scoring.text"):
        scored_text("x", "x", "last_line")


@pytest.mark.parametrize(
    "text, prediction, score",
    [
        ("extracted", "I think the answer is", 0.0),
        ("whole", RAW_OUTPUTS[0][0], 1.0),
        ("first_line", "I think the answer is", 0.0),
    ],
)
def test_the_score_stage_judges_the_text_scoring_text_names(
    tmp_path: Path, text: str, prediction: str, score: float
) -> None:
    """``run_strategy`` (the pipeline's generate-and-judge step) judges, and writes as ``prediction``,
    the text ``scoring.text`` takes from the model's output; ``raw_output`` stays the whole output."""
    from types import SimpleNamespace

    from rr.judges.match import MatchJudge
    from rr.perturbations.none import NoDocPerturbation
    from rr.pipeline import Stopwatch, run_strategy
    from rr.records import Example
    from rr.strategies.base import Cell, CellInput
    from rr.strategies.simple import ClosedBook

    from .scripted import ScriptedGenerator, scripted_runtime

    gen = ScriptedGenerator(default=RAW_OUTPUTS[0][0])
    rt = scripted_runtime(gen, tmp_path)
    parts = SimpleNamespace(
        doc_perturbation=NoDocPerturbation(),
        judge=MatchJudge(),
        dataset=SimpleNamespace(name="d"),
        generator=SimpleNamespace(name="g"),
    )
    plan = SimpleNamespace(job_id="j", seed=0, settings=SimpleNamespace(scored_text=text))
    inputs = [CellInput(Example("q1", "What is the capital of France?", ["Paris"]), Cell("none", 0, "none"))]
    (row,) = run_strategy(ClosedBook(), inputs, parts, plan, rt, Stopwatch())  # type: ignore[arg-type]
    assert (row["prediction"], row["score"], row["raw_output"]) == (prediction, score, RAW_OUTPUTS[0][0])


def test_the_job_id_changes_only_where_the_scored_text_does() -> None:
    """``scoring`` is left out of the job id where the judge scores each strategy's own answer (the one
    text scored before the key existed): ``experiment=rgb2024`` (``whole``, ``strategy=rgb``) keeps its
    id; ``whole`` over a strategy that extracts is another job."""
    from rr.config import job_id
    from rr.errors import ConfigError

    def ids(*overrides: str) -> tuple[str, str]:
        return tuple(  # type: ignore[return-value]
            job_id(compose_config(["experiment=rgb2024", *overrides, f"scoring.text={t}"]))
            for t in ("whole", "extracted")
        )

    whole, extracted = ids()
    assert whole == extracted
    whole, extracted = ids("strategy=[rgb,vanilla]")
    assert whole != extracted
    with pytest.raises(ConfigError, match="scoring.text"):
        job_settings(compose_config(["scoring.text=last_line"]))
