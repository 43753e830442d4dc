"""A cell whose k documents do not fit the window is named as not filled (issue 52): a
``generator.context_window`` too small for the documents ran the cell with fewer of them under its
k label, said only as "rows truncated to fit the window 2". Now the console, ``summary.json`` and the
report name each such cell, and ``strict_window=true`` refuses the job. The simulated reader on the
synthetic task (the window fitting is rr's own, whatever the model)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from rr.generation.client import PromptTooLongError
from rr.pipeline import run_job
from rr.reporting.job import print_job_report

from .conftest import compose_config

#: At a window of 120 tokens the question and one synthetic passage fit, two do not.
TIGHT = [
    "generator=simulated",
    "dataset=synthetic",
    "corpus=synthetic",
    "dataset.n=2",
    "strategy=[vanilla]",
    "grid.k=[0,1,2]",
    "grid.orders=[original]",
    "retriever=[bm25]",
    "generator.context_window=120",
    "generator.max_new_tokens=4",
    "progress=false",
]


def test_a_cell_cut_to_the_window_is_named_in_console_summary_and_report(tmp_path: Path) -> None:
    from rr.reporting.report import build_report

    result = run_job(compose_config(TIGHT, tmp_path), tmp_path / "job")
    (cell,) = json.loads((tmp_path / "job" / "summary.json").read_text())["cells_cut_to_window"]
    assert (cell["k"], cell["retriever"], cell["rows"], cell["rows_cut"], cell["fewest"]) == (
        2,
        "bm25",
        2,
        2,
        1,
    )
    assert (result.scores.loc[result.scores["k"] == 2, "n_docs_used"] == 1).all()  # what it names
    out = io.StringIO()
    print_job_report(result, Console(file=out, width=400))
    assert (
        "cell not filled at k=2 (strategy vanilla, retriever bm25, order original): 2 of 2 rows"
        in out.getvalue()
    )
    build_report(tmp_path / "job", tmp_path / "report", n_resamples=20, only=["robustness"])
    assert "cell not filled at k=2" in (tmp_path / "report" / "README.md").read_text()


def test_a_job_that_fits_names_no_cell(tmp_path: Path) -> None:
    roomy = [o for o in TIGHT if not o.startswith("generator.context_window")]
    run_job(compose_config(roomy, tmp_path), tmp_path / "job")
    assert "cells_cut_to_window" not in json.loads((tmp_path / "job" / "summary.json").read_text())


def test_strict_window_refuses_a_cell_it_cannot_fill(tmp_path: Path) -> None:
    with pytest.raises(PromptTooLongError, match=r"3 documents|2 documents do not fit .* \(1 fit\)"):
        run_job(compose_config([*TIGHT, "strict_window=true"], tmp_path), tmp_path / "job")
    assert not (tmp_path / "job" / "scores.parquet").exists()
