"""The LLM judge: verdict parsing on messy outputs, prompts, dedup, retries, fallback, two-stage."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rr.config import instantiate
from rr.judges.base import JudgeItem
from rr.judges.llm import LLMJudge, TwoStageJudge, lexical_match
from rr.judges.verdicts import parse_group_verdicts, parse_yes_no
from rr.prompts import render
from rr.records import GenerationParams

from .conftest import compose_config
from .scripted import ScriptedGenerator, scripted_runtime

YES_NO = [
    ("[Start answer]\nYes\n[End answer]", True),
    ("[Start answer]\nNo\n[End answer]", False),
    ("[start Answer] yes [end answer]", True),
    ("[ Start answer ]\n**No**\n[ End answer ]", False),
    ("[Start answer]\nYes, the predicted answer entails the gold answer.", True),  # no end marker
    ("Yes", True),
    ("No.", False),
    ("The predicted answer is correct. Yes.", True),
    ("[Start answer]\n<Your answer. Choose from: Yes, No>\nNo\n[End answer]", False),  # echoed placeholder
    ("Yes\n[End answer]", True),
    ("[Start answer]\n[End answer]\n", None),
    ("I am not sure whether yes or no.", None),
    ("", None),
    ("The answer is Paris.", None),
    ("Nobody knows; yesterday it was different.", None),  # words, not verdicts
]


@pytest.mark.parametrize(("text", "verdict"), YES_NO)
def test_parse_yes_no(text: str, verdict: bool | None) -> None:
    assert parse_yes_no(text) is verdict


GROUPS = [
    ("[Start answer]\n Group 1: Yes\n Group 2: No\n[End answer]", 2, [True, False]),
    ("[Start answer]\nGroup 1: no\nGroup 2: YES\nGroup 3: Yes[End answer]", 3, [False, True, True]),
    ("**Group 1**: Yes\n**Group 2** - No", 2, [True, False]),
    ("[Start answer]\n Group 2: Yes\n[End answer]", 2, [None, True]),  # group 1 missing
    ("[Start answer]\n Group 1: Yes\n Group 5: No\n[End answer]", 2, [True, None]),  # 5 ignored
    ("[Start answer]\nYes\nNo\n[End answer]", 2, [True, False]),  # no labels, right count
    ("[Start answer]\nYes\n[End answer]", 2, [None, None]),  # no labels, wrong count
    ("[Start answer]\nYes\n[End answer]", 1, [True]),
    (
        "[Start answer]\n Group 1: <Your answer. Choose from: Yes, No>\n[End answer]\n"
        "[Start answer]\n Group 1: No\n[End answer]",
        1,
        [False],
    ),
    ("I cannot judge this.", 2, [None, None]),
]


@pytest.mark.parametrize(("text", "n", "verdicts"), GROUPS)
def test_parse_group_verdicts(text: str, n: int, verdicts: list[bool | None]) -> None:
    assert parse_group_verdicts(text, n) == verdicts


NQ = JudgeItem("Who wrote Hamlet?", "Shakespeare", ["William Shakespeare", "Shakespeare"])
NQ_WRONG = JudgeItem("Who wrote Hamlet?", "Marlowe", ["William Shakespeare", "Shakespeare"])
ASQA = JudgeItem("When was it built?", "In 1887, opened 1889", [], [["1887"], ["1889", "May 1889"], ["1900"]])


def judge_gen(rules: list[tuple[str, str]], default: str = "[Start answer]\nNo\n[End answer]"):
    return ScriptedGenerator(rules=rules, default=default, model_id="judge-model")


def test_prompts_are_the_appendix_c_templates() -> None:
    j = LLMJudge()
    assert j.prompt(NQ) == render(
        "answer_evaluation_nq_hotpot.j2",
        question="Who wrote Hamlet?",
        gold_answer=["William Shakespeare", "Shakespeare"],
        pred_answer="Shakespeare",
    )
    assert "Gold Answers:\n['William Shakespeare', 'Shakespeare']\n" in j.prompt(NQ)
    assert " Group 2: ['1889', 'May 1889']\n Group 3: ['1900']\n" in j.prompt(ASQA)


def test_scores_dedup_and_counts(tmp_path: Path) -> None:
    gen = judge_gen(
        [
            ("Predicted Answer:\nShakespeare\n", "[Start answer]\nYes\n[End answer]"),
            (
                "Predicted Answer:\nIn 1887",
                "[Start answer]\n Group 1: Yes\n Group 2: Yes\n Group 3: No\n[End answer]",
            ),
        ]
    )
    rt = scripted_runtime(ScriptedGenerator(model_id="under-test"), tmp_path)
    items = [NQ, NQ_WRONG, NQ, ASQA, NQ]
    out = LLMJudge(generator=gen).judge(items, rt)
    assert [o.score for o in out] == [1.0, 0.0, 1.0, pytest.approx(2 / 3), 1.0]
    assert all(o.judge == "llm" and o.extra["judge_fallback"] is False for o in out)
    assert out[0].extra["judge_model"] == "judge-model" and out[0].extra["judge_attempts"] == 1
    assert len(gen.sent) == 3  # three distinct (question, golds, prediction) triples
    assert rt.counters["judge:llm:items"] == 5 and rt.counters["judge:llm:unique"] == 3
    assert all(p.temperature == 0.0 for p in gen.sent_params)
    # all-groups scoring
    assert LLMJudge(generator=gen, asqa_score="all").judge([ASQA], rt)[0].score == 0.0
    # a second judge run is served from the cache
    LLMJudge(generator=gen).judge(items, rt)
    assert len(gen.sent) == 3


def test_retry_then_counted_string_match_fallback(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    class Flaky(ScriptedGenerator):
        def respond(self, prompt: str, params: GenerationParams) -> str:
            if "Marlowe" in prompt:  # never readable
                return "Hmm, hard to say."
            # readable only when sampled with seed 2
            return "[Start answer]\nYes\n[End answer]" if params.seed == 2 else "I think so"

    gen = Flaky(model_id="flaky")
    rt = scripted_runtime(ScriptedGenerator(model_id="under-test"), tmp_path)
    with caplog.at_level(logging.WARNING, logger="rr.judges.llm"):
        right, wrong = LLMJudge(generator=gen, max_retries=2).judge([NQ, NQ_WRONG], rt)
    assert right.score == 1.0 and right.extra["judge_attempts"] == 3 and not right.extra["judge_fallback"]
    # unreadable after 2 retries: string match decides (Marlowe matches no gold -> 0), flagged, with
    # the tries it took (3, not the 1 whose output is kept) and a line on the console
    assert wrong.score == 0.0 and wrong.extra["judge_fallback"] is True and wrong.extra["judge_attempts"] == 3
    assert wrong.extra["judge_output"] == "Hmm, hard to say."
    assert [r.getMessage() for r in caplog.records] == [
        "judge llm: 1 of 2 verdicts unreadable after 3 tries (max_retries=2), scored by string match "
        "instead (judge_fallback=true in the score table); e.g. prediction 'Marlowe' to 'Who wrote Hamlet?'"
    ]
    assert rt.counters["judge:llm:retries"] == 4 and rt.counters["judge:llm:fallback"] == 1
    assert [p.seed for p in gen.sent_params] == [None, None, 1, 1, 2, 2]
    # the fallback is string match, not a silent 0
    gen2 = Flaky(model_id="flaky2")
    fb = LLMJudge(generator=gen2, max_retries=0).judge(
        [JudgeItem("Who wrote Hamlet?", "Marlowe (not Shakespeare)", ["Shakespeare"])], rt
    )[0]
    assert fb.score == 1.0 and fb.extra["judge_fallback"] is True


def test_empty_prediction_is_zero_without_a_call(tmp_path: Path) -> None:
    gen = judge_gen([])
    rt = scripted_runtime(ScriptedGenerator(model_id="under-test"), tmp_path)
    out = LLMJudge(generator=gen).judge([JudgeItem("Q?", "  ", ["a"])], rt)
    assert out[0].score == 0.0 and gen.sent == [] and rt.counters["judge:llm:empty_prediction"] == 1


@pytest.mark.parametrize(
    ("pred", "golds", "match"),
    [
        ("Shakespeare", ["William Shakespeare"], True),  # prediction inside gold, whole words
        ("It was William Shakespeare.", ["Shakespeare"], True),  # gold inside prediction
        ("the Shakespeare", ["Shakespeare"], True),  # normalized exact
        ("Shakes", ["Shakespeare"], False),  # not whole words
        ("", ["Shakespeare"], False),
        ("Marlowe", ["Shakespeare"], False),
    ],
)
def test_lexical_match(pred: str, golds: list[str], match: bool) -> None:
    assert lexical_match(pred, golds) is match


def test_two_stage_calls_the_llm_only_without_lexical_match(tmp_path: Path) -> None:
    gen = judge_gen(
        [
            ("Predicted Answer:\nthe bard\n", "[Start answer]\nYes\n[End answer]"),
            # the LLM misses group 1, which matched lexically: it still counts as covered
            ("Predicted Answer:\n1887\n", "[Start answer]\nGroup 1: No\nGroup 2: No\n[End answer]"),
        ]
    )
    rt = scripted_runtime(ScriptedGenerator(model_id="under-test"), tmp_path)
    bard = JudgeItem("Who wrote Hamlet?", "the bard", ["Shakespeare"])
    partial = JudgeItem("When?", "1887", [], [["1887"], ["1889"]])
    out = TwoStageJudge(generator=gen).judge([NQ, bard, NQ_WRONG, partial], rt)
    assert [o.score for o in out] == [1.0, 1.0, 0.0, 0.5]
    assert [o.extra["judge_stage"] for o in out] == ["lexical", "llm", "llm", "llm"]
    assert len(gen.sent) == 3 and rt.counters["judge:two_stage:lexical"] == 1
    assert all(o.judge == "two_stage" for o in out)


def test_judge_generator_config_composes_and_overrides(tmp_path: Path) -> None:
    cfg = compose_config(["judge=llm"], tmp_path)
    assert cfg.judge.generator.model == "packaged:smollm2-135m-instruct"
    cfg = compose_config(
        [
            "judge=llm",
            "generator@judge.generator=hf",
            "judge.generator.model=meta-llama/Llama-3.3-70B-Instruct",
        ],
        tmp_path,
    )
    assert cfg.judge.generator.model == "meta-llama/Llama-3.3-70B-Instruct"
    assert cfg.generator.model == "packaged:smollm2-135m-instruct"  # the model under test is untouched
    # building the judge keeps its model a config node (nothing loaded or downloaded) ...
    judge = instantiate(cfg.judge)
    assert isinstance(judge, LLMJudge) and judge.generator["model"] == "meta-llama/Llama-3.3-70B-Instruct"
    assert not judge.generator["model_cache_dir"].startswith("${")  # interpolations resolved
    # ... which Runtime.llm_for turns into the judge model when the judge runs
    small = instantiate(compose_config(["judge=llm", "judge.generator.batch_size=2"], tmp_path).judge)
    rt = scripted_runtime(ScriptedGenerator(model_id="under-test"), tmp_path)
    llm = rt.llm_for(small.generator)
    assert llm.identity["model_id"] == "HuggingFaceTB/SmolLM2-135M-Instruct" and llm.generator.batch_size == 2
    with pytest.raises(Exception, match="max_retry"):
        compose_config(["judge=llm", "judge.max_retry=3"], tmp_path)


def test_rare_two_stage_judge_asks_its_second_stage_only_what_the_lexical_stage_left(tmp_path: Path) -> None:
    """RARE §6.1: a lexical match settles an item; a refusal scores 0 unasked; the rest go to the
    second-stage model with RARE's Appendix F prompt, whose 'true' scores 1."""
    from rr.judges.rare import RARETwoStageJudge, parse_true_false
    from rr.prompts import template_source

    from .scripted import ScriptedGenerator, scripted_runtime

    items = [
        JudgeItem("Revenue?", "$50 million", ["$50 million"]),  # lexical
        JudgeItem("Revenue?", "no such info", ["$50 million"]),  # refusal
        JudgeItem("Population?", "around 1 million", ["1,000,000"]),  # second stage: true
        JudgeItem("Maker?", "Ford", ["General Motors"]),  # second stage: false
        JudgeItem("Rate?", "high", ["25%"]),  # second stage: unreadable
    ]
    gen = ScriptedGenerator(
        rules=[
            ('"around 1 million", Ground Truth: "1,000,000", Output:', "true"),
            ('"Ford", Ground Truth: "General Motors", Output:', "False."),
        ],
        default="maybe",
    )
    rt = scripted_runtime(gen, tmp_path)
    out = RARETwoStageJudge().judge(items, rt)
    assert [j.score for j in out] == [1.0, 0.0, 1.0, 0.0, 0.0]
    assert [j.extra["judge_stage"] for j in out] == ["lexical", "lexical", "llm", "llm", "llm"]
    assert out[1].refused and len(gen.sent) == 3 and rt.counters["judge:rare_two_stage:unreadable"] == 1
    assert template_source("rare_judge.j2").startswith("You are a fair and strict judger, given prediction")
    assert any(
        p.endswith('\n\nPrediction: "around 1 million", Ground Truth: "1,000,000", Output:') for p in gen.sent
    )
    assert '6. Prediction: "Tesla", Ground Truth: "General Motors", Output: false\n' in gen.sent[0]
    assert [parse_true_false(t) for t in ("true", "'False'", "TRUE.", "no")] == [True, False, True, None]
