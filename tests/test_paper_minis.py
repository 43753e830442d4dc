"""Each paper's mini experiment end to end on two questions, then its ``rr report`` sections on the
real jobs: the RGB noise-ratio sweep, the RARE document-type sweep and the query-level experiment
(Cao's three strategies and SURE's sweep points are reported in ``test_cao2025_demo.py`` and
``test_sure_end_to_end.py``). RGB and RARE run the simulated reader on the synthetic task (the
sections need the jobs, not a model's answers; RARE's translator is still the small real model);
the query-level experiment keeps the small real model: its typo variants are not synthetic
questions, which the simulated reader cannot read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from omegaconf import OmegaConf, open_dict

from rr.cost import compose_jobs
from rr.pipeline import JobResult, run_job
from rr.reporting import build_report

from .conftest import compose_config

_ABSENT = object()


def run_sweep(
    overrides: list[str], root: Path, where_present: dict[str, Any] | None = None
) -> list[JobResult]:
    """Run every job ``rr -m overrides`` would run (in process), each in its own folder under ``root``
    (one generation cache for all). ``where_present``: settings made only in the jobs whose config
    has the key (an option's own setting, which a command-line override cannot give one sweep job)."""
    results = []
    for i, (_, cfg) in enumerate(compose_jobs(overrides, multirun=True)):
        with open_dict(cfg):
            cfg.paths.output_root = str(root / "outputs")
            cfg.paths.cache_dir = str(root / "cache")
            cfg.progress = False
            for key, value in (where_present or {}).items():
                if OmegaConf.select(cfg, key, default=_ABSENT) is not _ABSENT:
                    OmegaConf.update(cfg, key, value, merge=False)
        results.append(run_job(cfg, root / "jobs" / f"job{i}"))
    return results


def rendered(root: Path, out: Path, sections: list[str]) -> dict[str, pd.DataFrame]:
    """Build the report on ``root``'s jobs; every section in ``sections`` must render (none skipped)."""
    report = build_report(root, out, n_resamples=50, strict=True, only=sections)
    assert {o.section.name: o.skipped for o in report.outcomes} == dict.fromkeys(sections)
    return {p.stem: pd.read_csv(p) for p in (out / "tables").glob("*.csv")}


@pytest.mark.slow  # 2 jobs x 2 questions x (closed book + 1 cell)
def test_rgb_mini_sweep_reported(tmp_path: Path) -> None:
    # the simulated reader on the synthetic task (its RGB pools): the sweep and its report sections
    # are checked here; RGB with the real model: tests/test_rgb_end_to_end.py
    tables = [
        r.scores
        for r in run_sweep(
            [
                "sweep=rgb2024",
                "generator=simulated",
                "dataset=synthetic",
                "corpus=synthetic",
                "perturbation.doc.ratio=0.0,1.0",
                "dataset.n=2",
                "corpus.max_passages=300",
                "grid.k=[0,10]",
                "generator.max_new_tokens=8",
            ],
            tmp_path,
        )
    ]
    assert [sorted(set(t["doc_perturbation"])) for t in tables] == [
        ["noise_ratio@0", "none"],
        ["noise_ratio@1", "none"],
    ]
    # the synthetic pools hold positives: at ratio 0 every document holds the answer, at ratio 1.0 none does
    zero, one = (t[t["k"] > 0] for t in tables)
    assert (zero["n_positive_docs"] > 0).all() and (one["n_positive_docs"] == 0).all()
    out = rendered(tmp_path / "jobs", tmp_path / "report", ["accuracy_vs_noise_ratio", "rgb_rejection"])
    by_ratio = out["rgb_accuracy_by_noise_ratio"]
    assert {"noise 0", "noise 1"} <= set(by_ratio.columns)
    assert by_ratio["noise 0"].iloc[0] == pytest.approx(zero["score"].mean())
    assert out["rgb_rejection"]["n_rows"].tolist() == [2]


@pytest.mark.slow  # 4 document types x 2 questions on the simulated reader; 2 documents backtranslated by the small model
def test_rare_mini_sweep_reported(tmp_path: Path) -> None:
    # The simulated reader on the synthetic task answers: the sweep's jobs and the report section are
    # checked here, not a model's answers (RARE's generator prompt: tests/test_refusal.py; the reader
    # reads the vanilla rag_qa.j2 prompt). The backtranslate job's translator is the real small model
    # (perturbation.doc.generator; nothing else runs EN -> FR -> EN with a model), 32 tokens a step
    # instead of 512: the small model loops until the budget.
    translator = compose_config([]).generator  # the default generator: hf, the packaged SmolLM2
    results = run_sweep(
        [
            "sweep=rare2025",
            "generator=simulated",
            "dataset=synthetic",
            "corpus=synthetic",
            "strategy.vanilla.template=rag_qa.j2",
            "dataset.n=2",
            "corpus.max_passages=300",
            "generator.max_new_tokens=8",
        ],
        tmp_path,
        # the backtranslate job's own settings
        where_present={"perturbation.doc.generator": translator, "perturbation.doc.max_new_tokens": 32},
    )
    tables = [r.scores for r in results]
    kinds = {p for t in tables for p in t.loc[t["k"] > 0, "doc_perturbation"]}
    assert {"none", "ground_truth", "delete_answer", "backtranslate"} <= {
        k.split("@")[0].split(":")[0] for k in kinds
    }
    # the translations came from the model: two steps of one document per question, none empty
    (bt,) = (r for r in results if "backtranslate" in set(r.scores["doc_perturbation"]))
    rows = bt.scores[bt.scores["k"] > 0]
    assert len(rows) == 2 and all(ids[0].endswith("/bt") for ids in rows["doc_ids"])
    counters = bt.summary.counters
    assert "backtranslate:empty_translation" not in counters, counters
    # planted values where the reader's documents can be read again; none where a perturbation rewrote them
    planted = {
        r.scores.loc[r.scores["k"] > 0, "doc_perturbation"].iloc[0]: r.summary.planted is not None
        for r in results
    }
    assert planted == {"none": True, "ground_truth": True, "delete_answer": False, "backtranslate": False}
    out = rendered(tmp_path / "jobs", tmp_path / "report", ["rare_robustness"])
    table = out["rare_robustness"]
    assert table["n_examples"].iloc[0] == 2 and len(table) == 1
    for col in ("overall", "document", "retrieval"):
        assert 0.0 <= table[col].iloc[0] <= 1.0


@pytest.mark.slow  # 2 questions x (original + 2 typo variants) x (closed book + bm25 + oracle) at k in {1, 5}
def test_query_level_mini_reported(tmp_path: Path) -> None:
    (job,) = run_sweep(
        [
            "experiment=query_level2025_mini",
            "retriever=[bm25,oracle]",  # the experiment's dense retriever would embed the corpus sample
            "dataset.n=2",
            "corpus.max_passages=300",
            "generator.max_new_tokens=4",  # decoding is most of the time; the sections need rows, not good answers
            # documents still cut (at 25 words, not 100): the k = 5 prompts were most of the tokens read
            "strategy.vanilla.max_doc_words=25",
        ],
        tmp_path,
    )
    df = job.scores
    assert set(df["query_perturbation"]) == {"none", "typo@0.25#1", "typo@0.25#2"}
    # BERGEN's Match reads the whole generation (scoring.text: whole), not the extracted answer
    assert (df["prediction"] == df["raw_output"].str.strip()).all()
    sections = ["query_level_retrieval", "query_level_match", "query_level_correlations"]
    out = rendered(tmp_path / "jobs", tmp_path / "report", sections)
    assert out, "the query-level sections wrote no tables"
