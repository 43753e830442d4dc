"""A tiny job with all three strategies of Cao et al. (vanilla, OwnKnow, S2A) on the real small model."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rr.pipeline import run_job
from rr.reporting import build_report

from .conftest import compose_config

SMALL = [
    "dataset.n=1",
    "corpus.max_passages=300",
    "retriever=bm25",
    "grid.k=[1,2]",
    "grid.orders=[original]",
    "generator.max_new_tokens=8",
    "generator.batch_size=16",
    "strategy=[closed_book,vanilla,ownknow,s2a]",
]


@pytest.mark.slow  # ~10 prompts of up to ~1,000 tokens on the real model
def test_three_strategies_in_one_job(tmp_path: Path) -> None:
    cfg = compose_config(SMALL, tmp_path)
    res = run_job(cfg, tmp_path / "job")
    df, summary = res.scores, res.summary
    # closed_book: 1 example x k=0; 3 strategies x 1 example x (k=0 + 2 k x 1 order)
    assert len(df) == 1 + 3 * 3
    assert sorted(df["strategy"].unique()) == ["closed_book", "ownknow", "s2a", "vanilla"]
    steps = {s.step: s for s in summary.generation_steps}
    # the closed-book answer is made once (closed_book strategy) and reused by the other three,
    # OwnKnow's step 1 included: zero model calls
    closed = [s for s in summary.generation_steps if s.step == "closed_book"]
    assert [s.model_calls for s in closed] == [1, 0, 0, 0]
    assert {"ownknow:answer", "s2a:select", "s2a:answer"} <= set(steps)
    s2a = df[(df["strategy"] == "s2a") & (df["k"] > 0)]
    assert s2a["s2a_parse"].isin(["ok", "none", "out_of_range", "unparsable"]).all()
    assert (s2a["n_docs_used"] == s2a["s2a_selection"].map(len)).all()
    parsed = {k: v for k, v in summary.counters.items() if k.startswith("s2a:parse:")}
    assert sum(parsed.values()) == len(s2a) == 2
    assert summary.counters.get("s2a:fallback:unparsable", 0) == int(
        s2a["s2a_fallback"].sum()
    ) - summary.counters.get("s2a:fallback:out_of_range", 0)
    own = df[(df["strategy"] == "ownknow") & (df["k"] > 0)]
    cb = df[(df["strategy"] == "vanilla") & (df["k"] == 0)].set_index("example_id")["prediction"]
    assert (own["ownknow_draft"] == own["example_id"].map(cb)).all()
    # the report's table: NDR/RSR/ROR side by side for the three strategies
    metrics = {m.system["strategy"] for m in summary.metrics}
    assert {"vanilla", "ownknow", "s2a"} <= metrics
    saved = json.loads((res.output_dir / "summary.json").read_text())
    assert saved["counters"] == summary.counters
    # the demo's report sections render on this job, one row per strategy
    sections = ["robustness", "accuracy_vs_k"]
    report = build_report(res.output_dir, tmp_path / "report", n_resamples=50, strict=True, only=sections)
    assert {o.section.name: o.skipped for o in report.outcomes} == dict.fromkeys(sections)
    table = pd.read_csv(tmp_path / "report" / "tables" / "robustness.csv")
    assert {"vanilla", "ownknow", "s2a"} <= set(table["strategy"])
