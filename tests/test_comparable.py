"""Comparisons that are valid (issue 30): paired tests only between systems measured on the same
examples and the same cells, the other pairs listed with the reason; a metric that is undefined or
degenerate (RSR with one k, NDR when closed-book accuracy is 0) shown as such, not as a number."""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import pandas as pd
from rich.console import Console

from rr.analysis.intervals import robustness_ci
from rr.jobfolder import JobSummary
from rr.metrics.robustness import (
    NOTE_ALL_ZERO,
    NOTE_NDR_TRIVIAL,
    NOTE_ROR_ONE_ORDER,
    NOTE_RSR_ONE_K,
    metric_notes,
    robustness_table,
)
from rr.reporting.comparisons import not_comparable_pairs, paired_comparisons
from rr.reporting.robustness import without_degenerate


def _table(
    job: str,
    strategy: str,
    ks: list[int],
    examples: int = 6,
    closed: float | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """A score table of one system: k = 0 and each k in ``ks`` x two orders, 0/1 scores."""
    rng = np.random.default_rng(seed)
    rows = []
    for e in range(examples):
        score0 = float(rng.random() < 0.5) if closed is None else closed
        rows.append((f"q{e}", 0, "none", "none", score0))
        for k in ks:
            for order in ("original", "reversed"):
                rows.append((f"q{e}", k, order, "bm25", float(rng.random() < 0.6)))
    df = pd.DataFrame(rows, columns=["example_id", "k", "order", "retriever", "score"])
    return df.assign(job_id=job, generator="m", strategy=strategy, dataset="mini")


def test_jobs_with_other_cells_or_examples_are_listed_not_tested() -> None:
    # the case: two jobs of one system, k in {1, 3} against k in {1}
    df = pd.concat([_table("j1", "vanilla", [1, 3]), _table("j2", "vanilla", [1], seed=1)])
    assert paired_comparisons(df).empty  # before: accuracy tested over k {1, 3} vs k {1}
    (row,) = not_comparable_pairs(df).to_dict("records")
    assert row["differs_in"] == "job_id" and row["metric"] == "all"
    assert row["reason"] == "different cells: k ∈ {0, 1, 3} vs {0, 1}"
    fewer = pd.concat([_table("j1", "vanilla", [1, 3]), _table("j2", "vanilla", [1, 3], examples=4, seed=1)])
    assert paired_comparisons(fewer).empty
    (row,) = not_comparable_pairs(fewer).to_dict("records")
    assert row["reason"] == "different examples (6 vs 4, 4 shared)"
    same = pd.concat([_table("j1", "vanilla", [1, 3]), _table("j1", "ownknow", [1, 3], seed=1)])
    assert set(paired_comparisons(same)["metric"]) == {"accuracy", "ndr", "rsr", "ror"}
    assert not_comparable_pairs(same).empty


def test_a_degenerate_metric_is_not_compared_and_says_why() -> None:
    df = pd.concat([_table("j1", "vanilla", [1, 3], closed=0.0), _table("j1", "ownknow", [1, 3], seed=1)])
    tested = paired_comparisons(df)
    assert set(tested["metric"]) == {"accuracy", "rsr", "ror"}  # NDR of vanilla is 1 by construction
    (row,) = not_comparable_pairs(df).to_dict("records")
    assert row["metric"] == "ndr" and row["reason"] == f"vanilla: {NOTE_NDR_TRIVIAL}"


def test_undefined_and_degenerate_metrics_are_blank_with_a_note_in_the_report() -> None:
    df = pd.concat([_table("j1", "vanilla", [1, 3], closed=0.0), _table("j1", "ownknow", [1], seed=1)])
    table = robustness_ci(df, ["generator", "strategy"], n_resamples=200)
    raw = table.set_index("strategy")
    assert raw.loc["vanilla", "ndr"] == 1.0 and math.isnan(raw.loc["ownknow", "rsr"])
    shown = without_degenerate(table).set_index("strategy")
    for m in ("ndr", "ndr_ci_low", "ndr_ci_high", "robustness"):
        assert math.isnan(shown.loc["vanilla", m])
    assert NOTE_NDR_TRIVIAL in shown.loc["vanilla", "notes"]
    assert NOTE_RSR_ONE_K in shown.loc["ownknow", "notes"] and not math.isnan(shown.loc["ownknow", "ndr"])
    assert shown.loc["vanilla", "accuracy"] == raw.loc["vanilla", "accuracy"]  # the rest as it was
    # a closed-book-only row: the robustness metrics do not apply, nothing to note
    assert metric_notes({"accuracy": math.nan, "ndr": math.nan, "rsr": math.nan}) == {}


def _console_summary(**fields: Any) -> JobSummary:
    """A job summary with the counts the console prints, ``fields`` on top (typed, as print_summary reads it)."""
    counts = ("requests", "unique_requests", "model_calls", "cache_hits")
    zeros = ("answer_extraction_fallbacks", "rows_truncated_to_fit_window")
    return JobSummary.from_dict(
        {
            "job_id": "j1",
            "examples": 6,
            **dict.fromkeys(counts, 1),
            **dict.fromkeys(zeros, 0),
            "wall_s": 1.0,
            **fields,
        }
    )


def test_the_console_shows_a_dash_and_the_note_not_one() -> None:
    from rr.reporting.job import print_summary

    df = _table("j1", "vanilla", [1, 3], closed=0.0)
    metrics = robustness_table(df, by=["generator", "strategy"], per_retriever=True).to_dict("records")
    summary = _console_summary(metrics=metrics, rows=len(df))
    out = io.StringIO()
    print_summary(summary, "folder", Console(file=out, width=200))
    text = out.getvalue()
    row = next(ln for ln in text.splitlines() if "vanilla" in ln and "bm25" in ln)
    assert "1.000" not in row and "—" in row
    assert f"— {NOTE_NDR_TRIVIAL} (vanilla / bm25)" in text
    assert "string match" not in text  # no judge fell back


def test_the_console_names_a_judge_string_match_fallback() -> None:
    """An LLM judge's unreadable verdicts, scored by string match, get a line of their own in the
    job's console summary (and again when a finished job is shown back)."""
    from rr.reporting.job import print_summary

    counters = {"judge:llm:items": 12, "judge:llm:fallback": 3, "judge:llm:retries": 6}
    summary = _console_summary(metrics=[], rows=12, counters=counters)
    for already_done in (False, True):
        out = io.StringIO()
        print_summary(summary, "folder", Console(file=out, width=300), already_done=already_done)
        assert (
            "judge llm: 3 distinct verdicts unreadable after its retries, scored by string match instead "
            "(judge_fallback=true in scores.parquet)"
        ) in out.getvalue()


def test_ror_with_one_order_and_robustness_from_all_zero_accuracy_are_degenerate() -> None:
    """Issue 42: ROR with one document order is 1 with no spread to measure, and a system whose every k > 0
    cell scores 0 gets RSR = ROR = 1 (and, closed-book 0, NDR = 1): robustness 1 from nothing."""
    one = _table("j1", "vanilla", [1, 3])
    one = one[one["order"] != "reversed"]
    (row,) = robustness_table(one, by=["strategy"]).to_dict("records")
    assert row["n_orders"] == 1 and row["ror"] == 1.0
    assert metric_notes(row)["ror"] == NOTE_ROR_ONE_ORDER and "rsr" not in metric_notes(row)
    zero = _table("j1", "vanilla", [1, 3], closed=0.0).assign(score=0.0)
    (row,) = robustness_table(zero, by=["strategy"]).to_dict("records")
    assert (row["ndr"], row["rsr"], row["ror"], row["robustness"]) == (1.0, 1.0, 1.0, 1.0)
    notes = metric_notes(row)
    assert notes["ndr"] == NOTE_NDR_TRIVIAL and notes["rsr"] == notes["ror"] == NOTE_ALL_ZERO
    shown = without_degenerate(robustness_ci(zero, ["strategy"], n_resamples=100))
    assert shown[["ndr", "rsr", "ror", "robustness"]].isna().all(axis=None)
    # two orders and some correct answers: nothing to note on ROR
    assert "ror" not in metric_notes(
        robustness_table(_table("j1", "vanilla", [1, 3]), by=["strategy"]).iloc[0]
    )


def test_the_results_hint_is_one_line_that_pastes() -> None:
    """Issue 43: ``rr.results.load('…')`` was wrapped at a space of the path, so it could not be pasted."""
    import ast

    from rr.reporting.job import print_summary

    folder = "/tmp/my results/runs/cao2025_mini/2cf0aa69361f"
    out = io.StringIO()
    print_summary(_console_summary(metrics=[], rows=1), folder, Console(file=out, width=60))
    line = next(ln for ln in out.getvalue().splitlines() if ln.startswith("results:"))
    call = line.split("(rr.results.load(", 1)[1].removesuffix("))")
    assert ast.literal_eval(call) == folder


def test_ror_of_one_order_is_not_compared_and_says_why() -> None:
    both = pd.concat([_table("j1", "vanilla", [1, 3]), _table("j1", "ownknow", [1, 3], seed=1)])
    one = both[both["order"] != "reversed"]
    assert set(paired_comparisons(one)["metric"]) == {"accuracy", "ndr", "rsr"}  # before: ROR 1 vs 1 "tested"
    (row,) = not_comparable_pairs(one).to_dict("records")
    assert (
        row["metric"] == "ror"
        and row["reason"] == f"ownknow: {NOTE_ROR_ONE_ORDER}; vanilla: {NOTE_ROR_ONE_ORDER}"
    )
