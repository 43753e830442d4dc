"""Nothing asked for is silently not done (issue 36, part 3): a grid k the corpus cannot fill is
refused before the job starts, and cells whose retriever returned fewer documents than k are
recorded per cell and named by the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rr.errors import ConfigError
from rr.jobfolder import ShortCell
from rr.pipeline import run_job, unfillable_ks
from rr.reporting import build_report

from .conftest import compose_config

#: The simulated reader on a few synthetic questions, BM25 only (fast under load).
SIMULATED = [
    "generator=simulated",
    "dataset=synthetic",
    "corpus=synthetic",
    "dataset.n=4",
    "retriever=[bm25]",
]
SIM = [*SIMULATED, "grid.orders=[original]"]


def _corpus(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"p{i}", "text": f"Passage {i}."}) + "\n" for i in range(n)))
    return path


def test_a_k_larger_than_the_corpus_is_refused_before_the_job_starts(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "corpus.jsonl", 5)
    cfg = compose_config([*SIM, "corpus=jsonl", f"corpus.path={corpus}", "grid.k=[2,5,10,25]"], tmp_path)
    with pytest.raises(ConfigError) as err:
        run_job(cfg, tmp_path / "job")  # before: ran, its k=10 and k=25 rows holding 5 documents
    line = str(err.value)
    assert "\n" not in line and line.startswith("grid.k")
    assert "k=10, k=25" in line and "5 passages" in line and "grid.k=[2,5]" in line
    assert not (tmp_path / "job" / "scores.parquet").exists()
    assert not (tmp_path / "cache" / "runs").exists()  # nothing was retrieved, nor generated
    assert unfillable_ks([1, 5, 6], 5) == [6] and unfillable_ks([5], 5) == []


def test_cells_whose_retriever_returned_fewer_than_k_are_recorded_and_reported(tmp_path: Path) -> None:
    # the oracle retriever returns the gold passages only: one per synthetic question
    cfg = compose_config([*SIM, "retriever=[bm25,oracle]", "grid.k=[1,3]"], tmp_path)
    result = run_job(cfg, tmp_path / "runs" / "job")
    (short,) = result.summary.cells_short_of_k
    assert short == ShortCell(
        retriever="oracle", k=3, query_perturbation="none", queries=4, queries_short=4, fewest=1
    )
    rows = result.scores[(result.scores["retriever"] == "oracle") & (result.scores["k"] == 3)]
    assert set(rows["n_docs_given"]) == {1}
    build_report(tmp_path / "runs", tmp_path / "report", n_resamples=50)
    readme = (tmp_path / "report" / "README.md").read_text()
    assert "fewer documents than their k" in readme
    assert "oracle, k=3: 4 of 4 queries (fewest 1)" in readme
