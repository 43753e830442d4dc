"""How long the report's ``paper_beside`` section takes on a large score table (issue 42).

A synthetic run laid out on exactly the grid ``experiment=cao2025`` composes (3 strategies x (closed
book + bm25, bge_large x k 5-100 x 3 orders)), for two of the paper's models on its three datasets,
600 examples each: 6 jobs, ~4x10^5 score rows. Random scores; the robustness metrics and their intervals
are computed for the matched Cao values. Prints the seconds of matching every shipped value (compare_values),
of the nearest values per job, and of the whole section (claims included).

    .venv/bin/python benchmarks/paper_beside_speed.py [examples per job]
    .venv/bin/python benchmarks/paper_beside_speed.py --quick      # 4 examples per job, 50 resamples
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rr.jobfolder import JobSummary, ModelRecord
from rr.papers import paper_values
from rr.reporting.loading import JobInfo, ReportContext
from rr.reporting.paper_beside import _job_papers, paper_beside
from rr.reporting.paper_match import (
    MEASURED,
    RunIndex,
    compare_values,
    job_model_ids,
    nearest_values,
    setting_keys,
)


def synthetic(n_examples: int, n_resamples: int = 1000) -> tuple[pd.DataFrame, ReportContext]:
    rng = np.random.default_rng(0)
    cells = [("none", 0, "none")] + [
        (r, k, o)
        for r in ("bm25", "bge_large")
        for k in (5, 10, 25, 50, 75, 100)
        for o in ("original", "reversed", "shuffled")
    ]
    frames, jobs = [], []
    for m, model in enumerate(["meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.2-1B-Instruct"]):
        for dataset in ("nq_open", "hotpot_qa", "asqa"):
            job = f"job{m}{dataset}"
            grid = pd.DataFrame(
                [(s, r, k, o) for s in ("vanilla", "ownknow", "s2a") for r, k, o in cells],
                columns=["strategy", "retriever", "k", "order"],
            )
            ex = pd.DataFrame({"example_id": [f"{dataset}-{i}" for i in range(n_examples)]})
            rows = ex.merge(grid, how="cross")
            rows["score"] = (rng.random(len(rows)) < 0.6).astype(float)
            frames.append(
                rows.assign(
                    job_id=job,
                    dataset=dataset,
                    doc_perturbation="none",
                    query_perturbation="none",
                    generator=model.split("/")[1],
                    n_docs_given=rows["k"],
                )
            )
            summary = JobSummary(name="cao2025", model=ModelRecord(model_id=model), public_model=model)
            jobs.append(JobInfo(job, Path(job), len(rows), summary, None))
    return pd.concat(frames, ignore_index=True), ReportContext(jobs=jobs, n_resamples=n_resamples)


#: The lines a ``--quick`` run prints (tests/test_benchmarks.py).
QUICK_FIGURES = [r"[0-9,]+ score rows", r"whole section \(claims too\): [0-9.]+ s wall, [0-9.]+ s CPU"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("examples", nargs="?", type=int, default=600, help="examples per job (default 600)")
    parser.add_argument("--quick", action="store_true", help="4 examples per job, 50 resamples (seconds)")
    a = parser.parse_args()
    n = 4 if a.quick else a.examples
    resamples = 50 if a.quick else 1000
    scores, ctx = synthetic(n, resamples)
    values = paper_values()
    print(f"{len(scores):,} score rows, {scores['job_id'].nunique()} jobs, {len(values)} paper values")
    marks = [(time.perf_counter(), time.process_time())]

    def mark() -> None:
        marks.append((time.perf_counter(), time.process_time()))

    index = RunIndex(scores, job_model_ids(ctx), setting_keys(values))
    mark()
    got = compare_values(scores, ctx, values, index)
    mark()
    nearest_values(index, values, _job_papers(ctx, set(values["paper"])))
    mark()
    list(
        paper_beside(scores, ReportContext(jobs=ctx.jobs, n_resamples=resamples))
    )  # the section, claims included
    mark()
    matched = int(got["verdict"].isin(MEASURED).sum())
    names = [
        "index",
        f"compare_values ({matched} values matched)",
        "nearest_values",
        "whole section (claims too)",
    ]
    for name, (w0, c0), (w1, c1) in zip(names, marks[:-1], marks[1:], strict=True):
        print(f"{name}: {w1 - w0:.2f} s wall, {c1 - c0:.2f} s CPU")


if __name__ == "__main__":
    main()
