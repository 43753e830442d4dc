"""SURE end to end on the mini data: the originals job and a format_json job, paired by
rr.metrics.spurious.robustness_rates over the two score tables."""

from __future__ import annotations

import json
from pathlib import Path

from rr.metrics.spurious import robustness_rates
from rr.pipeline import run_job
from rr.reporting import build_report
from rr.results import load

from .conftest import compose_config

# bm25 instead of the experiment's dense retriever: embedding the corpus sample would dominate
MINI = [
    "experiment=sure2025_mini",
    "dataset.n=3",
    "corpus.max_passages=300",
    "retriever=[bm25]",
    "generator.max_new_tokens=6",
]


def test_sure_mini_sweep_points(tmp_path: Path) -> None:
    jobs = {}
    for pert in ("none", "format_json"):
        cfg = compose_config([*MINI, f"perturbation/doc={pert}"], tmp_path)
        jobs[pert] = run_job(cfg, tmp_path / pert)
    orig, fmt = jobs["none"].scores, jobs["format_json"].scores
    assert set(orig["doc_perturbation"]) == {"none"}
    assert set(fmt["doc_perturbation"]) == {"format:json"}
    assert set(fmt["strategy"]) == {"sure_qa"} and sorted(set(fmt["k"])) == [0, 1]
    # lost-in-the-middle's script scores the first line (scoring.text: first_line)
    assert (fmt["prediction"] == fmt["raw_output"].str.split("\n").str[0].str.strip()).all()
    # the perturbed prompt shows the Fig. 9 JSON rendering of the same passage
    first = fmt[fmt["k"] == 1].iloc[0]
    paired = orig[(orig["k"] == 1) & (orig["example_id"] == first["example_id"])].iloc[0]
    assert list(first["doc_ids"]) == list(paired["doc_ids"])
    counters = json.loads((tmp_path / "format_json" / "summary.json").read_text())["counters"]
    kept = counters["format:json:inputs_kept"]
    dropped = sum(v for k, v in counters.items() if ":dropped_" in k)
    assert kept + dropped == 3 and len(fmt[fmt["k"] == 1]) == kept
    # the closed-book answers are shared through the generation cache: no new model calls
    assert jobs["format_json"].summary.cache_hits >= 3
    table = robustness_rates(load([tmp_path / "none", tmp_path / "format_json"]))
    total = table.loc["format:json", "Total"]
    assert total["n"] == kept
    assert total["LR"] + total["RR"] + total["WR"] == 1.0
    assert sum(table.loc["format:json", (s, "n")] for s in ("K-G", "K-N", "U-G", "U-N")) == kept
    # rr report's SURE section renders on the two real jobs
    only = ["sure_robustness_rates"]
    report = build_report(tmp_path, tmp_path / "report", n_resamples=50, strict=True, only=only)
    assert {o.section.name: o.skipped for o in report.outcomes} == dict.fromkeys(only)
    assert list((tmp_path / "report" / "tables").glob("*.csv"))
