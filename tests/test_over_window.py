"""A prompt that cannot fit the context window is never sent (issue 14, bug 4).

Real job with the packaged SmolLM2 and ``generator.context_window=512``: a 3 KB question does
not fit even without documents. Its rows are flagged ``over_window``, get an empty prediction,
are counted in ``summary.json``, and no prompt holding it reaches the model, in every strategy
and step (closed-book, vanilla, OwnKnow's draft and answer, S2A's selection and answer); with
``strict_window=true`` the job fails before calling the model on it. ``rr plan`` counts no
tokens for such prompts and reports them.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from rr.cost import cost_job
from rr.generation.client import PromptTooLongError
from rr.generation.hf import HFGenerator
from rr.pipeline import run_job
from tests.conftest import compose_config

#: A marker that only the long question contains.
LONG_MARK = "zanzibar-long-question"
LONG_QUESTION = (f"{LONG_MARK} " + "Please read this background sentence very carefully. " * 56)[:3000] + (
    " Who wrote Hamlet?"
)


def _overrides(tmp_path: Path, with_long: bool = True) -> list[str]:
    data = tmp_path / ("questions.jsonl" if with_long else "short.jsonl")
    rows = [{"id": "short", "question": "Who wrote Hamlet?", "answers": ["Shakespeare"]}]
    if with_long:
        rows.append({"id": "long", "question": LONG_QUESTION, "answers": ["Shakespeare"]})
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [
        "dataset=jsonl",
        f"dataset.path={data}",
        "retriever=bm25",
        "corpus.max_passages=300",
        "grid.k=[1]",
        "grid.orders=[original]",
        "strategy=[vanilla,ownknow,s2a]",
        "generator.context_window=512",
        "generator.max_new_tokens=8",
    ]


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every prompt the HF backend is asked to generate for."""
    prompts: list[str] = []
    real = HFGenerator.generate

    def spy(self, batch, params, progress=None):  # noqa: ANN001, ANN202
        prompts.extend(batch)
        return real(self, batch, params, progress=progress)

    monkeypatch.setattr(HFGenerator, "generate", spy)
    return prompts


def test_prompt_longer_than_the_window_is_not_sent_and_the_row_is_flagged(
    tmp_path: Path, sent: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    cfg = compose_config(_overrides(tmp_path), tmp_path)
    assert len(LONG_QUESTION) > 3000
    with caplog.at_level(logging.WARNING, logger="rr.pipeline"):
        result = run_job(cfg, tmp_path / "job")
    scores, summary = result.scores, result.summary

    assert sent, "the short question's prompts reach the model"
    assert not [p for p in sent if LONG_MARK in p], "a prompt longer than the window was sent"
    long = scores[scores["example_id"] == "long"]
    short = scores[scores["example_id"] == "short"]
    # 3 strategies x (k = 0 and k = 1) rows per question
    assert len(long) == 6 and len(short) == 6
    assert long["over_window"].all() and not short["over_window"].any()
    assert (long["prediction"] == "").all() and (long["raw_output"] == "").all()
    assert (long["score"] == 0).all()
    assert summary.rows_over_window == 6
    # distinct prompts not sent, per step: the closed-book prompt (asked by each of the three
    # strategies), vanilla's answer, OwnKnow's answer, S2A's selection and answer
    assert summary.prompts_over_window == 7
    assert summary.answer_extraction_fallbacks == int((~short["marker_found"]).sum())
    # every model call was for the short question: one per distinct sent prompt
    assert summary.model_calls == len(set(sent))
    warnings = [r.getMessage() for r in caplog.records if "context window" in r.getMessage()]
    assert len(warnings) == 1 and "'long'" in warnings[0], warnings
    written = json.loads((tmp_path / "job" / "summary.json").read_text())
    assert written["rows_over_window"] == 6

    # a re-run sends nothing: the short question's prompts are cached, the long one's never sent
    sent.clear()
    again = run_job(cfg, tmp_path / "job2")
    assert sent == [] and again.summary.model_calls == 0
    assert again.summary.rows_over_window == 6

    # rr plan: the long question's prompts are reported as over the window, with no tokens
    # (same prompt tokens as a plan of the short question alone)
    plan = cost_job(compose_config(_overrides(tmp_path), tmp_path / "fresh"))
    short_only = cost_job(compose_config(_overrides(tmp_path, with_long=False), tmp_path / "fresh2"))
    assert sum(s.over_window for s in plan.steps) == 7
    assert sum(s.over_window for s in short_only.steps) == 0
    assert sum(s.to_generate for s in plan.steps) == sum(s.to_generate for s in short_only.steps)
    assert sum(s.prompt_tokens for s in plan.steps) == sum(s.prompt_tokens for s in short_only.steps) > 0


def test_strict_window_fails_the_job_before_sending_the_prompt(tmp_path: Path, sent: list[str]) -> None:
    cfg = compose_config([*_overrides(tmp_path), "strict_window=true"], tmp_path)
    with pytest.raises(PromptTooLongError, match=r"exceeds the context window of 512 tokens"):
        run_job(cfg, tmp_path / "job")
    assert not [p for p in sent if LONG_MARK in p]
    assert not (tmp_path / "job" / "scores.parquet").exists()
