"""One tiny real job of the RGB experiment: noise-ratio contexts, RGB's prompt, RGB's own scorer (judge=rgb).

The packaged SmolLM2 reads 4 prompts: 2 questions closed-book and with 5 documents. Prompt tokens
are the cost: batches of 2 keep the short closed-book prompts from being padded to the long ones.
"""

from __future__ import annotations

import json
from pathlib import Path

from rr.metrics.rgb import rgb_table
from rr.pipeline import run_job

from .conftest import compose_config


def test_rgb_noise_ratio_job(tmp_path: Path) -> None:
    cfg = compose_config(
        [
            "experiment=rgb2024",
            "dataset.n=2",
            "corpus.max_passages=600",
            "grid.k=[0,10]",
            "perturbation.doc.ratio=0.4",
            "generator.max_new_tokens=12",
            "generator.batch_size=2",
        ],
        tmp_path,
    )
    res = run_job(cfg, tmp_path / "job")
    df = res.scores
    assert len(df) == 2 * 2 and set(df["strategy"]) == {"rgb"} and set(df["judge"]) == {"rgb"}
    rag, closed = df[df["k"] > 0], df[df["k"] == 0]
    assert set(rag["doc_perturbation"]) == {"noise_ratio@0.4"} and set(closed["doc_perturbation"]) == {"none"}
    assert set(rag["doc_perturbation_params"]) == {'{"value": 0.4}'} and set(
        closed["doc_perturbation_params"]
    ) == {"{}"}
    assert set(df["query_perturbation_params"]) == {"{}"}
    assert (rag["n_docs_used"] <= 5).all() and (rag["n_docs_used"] > 0).all()
    assert (rag["n_positive_docs"] + rag["n_negative_docs"] >= rag["n_docs_used"]).all()
    for col in ("refused", "rgb_rejected", "error_detected", "rgb_corrected"):
        assert df[col].dtype == bool
    assert (df.loc[df["refused"], "score"] == 0).all()
    assert (df["refused"] == df["rgb_rejected"]).all()  # RGB's scorer: its exact phrase is the refusal rule
    # the prediction is the whole response (RGB scores it so)
    assert (df["prediction"] == df["raw_output"].str.strip()).all()
    summary = json.loads((res.output_dir / "summary.json").read_text())
    assert summary["requests"] == 4
    table = rgb_table(df)
    assert table["noise_ratio"].tolist() == [0.4] and table["n_rows"].tolist() == [2]


def test_rgb_counterfactual_job_reports_rgbs_rates_and_its_ndr(tmp_path: Path) -> None:
    """A counterfactual job (Table 7's setting) prints and records RGB's own rates, and its robustness
    table finds its closed-book rows (they carry doc_perturbation 'none', its k > 0 rows the tag)."""
    from rich.console import Console

    from rr.analysis.intervals import robustness_ci, system_by
    from rr.jobfolder import JobSummary
    from rr.metrics.rgb import correct
    from rr.metrics.robustness import metric_notes
    from rr.reporting.job import print_summary

    cfg = compose_config(
        [
            "experiment=rgb2024",
            "perturbation/doc=counterfactual",
            "perturbation.doc.ratio=0",
            "dataset.n=3",
            "corpus.max_passages=600",
            "grid.k=[0,10]",
            "generator.max_new_tokens=12",
            "generator.batch_size=2",
        ],
        tmp_path,
    )
    res = run_job(cfg, tmp_path / "job")
    df = res.scores
    rag, closed = df[df["k"] > 0], df[df["k"] == 0]
    assert len(rag) and set(rag["doc_perturbation"]) == {"counterfactual"}
    summary = json.loads((res.output_dir / "summary.json").read_text())
    (row,) = summary["rgb_rates"]
    assert row["doc_perturbation"] == "counterfactual" and row["n_rows"] == len(rag)
    assert row["accuracy"] == correct(rag["score"]).mean()
    assert row["closed_book_accuracy"] == correct(closed["score"]).mean()  # Table 7's Acc
    assert row["error_detection_rate"] == rag["error_detected"].mean()  # ED
    assert row["rejection_all_rate"] is None  # Rej is RGB's at noise ratio 1 only
    console = Console(record=True, width=200)
    print_summary(JobSummary.from_dict(summary), res.output_dir, console)
    text = console.export_text()
    assert "RGB's rates" in text and "Acc (k=0)" in text and " ED " in text
    table = robustness_ci(df, system_by(df), n_resamples=50).set_index("doc_perturbation")
    cf = table.loc["counterfactual"]
    assert cf["ndr"] == cf["ndr"] and "ndr" not in metric_notes(cf)  # NDR found its closed-book rows
    assert cf["n_examples"] == rag["example_id"].nunique()
    # an example the perturbation dropped from the k > 0 cells keeps its closed-book row apart
    assert set(table.index) <= {"counterfactual", "none"}
