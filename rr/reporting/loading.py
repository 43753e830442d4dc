"""Reading jobs into a report: the pooled score table and what sections get besides it.

:func:`load_jobs` reads every job's ``scores.parquet``, ``summary.json`` and ``retrieval.csv`` under
the report's folders into the score table and a :class:`ReportContext` (its :class:`JobInfo` list).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rr.environment import environments_note as environment_note
from rr.jobfolder import (
    QRELS_FILE,
    RETRIEVAL_FILE,
    RUNS_DIR,
    JobSummary,
    is_started,
    read_config,
    read_summary,
)
from rr.results import find_score_files, identify_examples

log = logging.getLogger(__name__)


@dataclass
class JobInfo:
    """One job read into a report: its folder, ``summary.json`` (an empty :class:`~rr.jobfolder.JobSummary`,
    every field absent, when the folder holds none) and ``retrieval.csv``."""

    job_id: str
    path: Path
    rows: int
    summary: JobSummary
    retrieval: pd.DataFrame | None
    _config: Any = field(default=None, repr=False, compare=False)  # given: the job's config, not its folder's

    def config(self) -> Any:
        """The job's resolved config (``DictConfig``), parsed once per report; ``None`` when its
        folder holds none. Raises what :func:`rr.jobfolder.read_config` raises on a torn file."""
        if self._config is None:
            self._config = read_config(self.path) if is_started(self.path) else False
        return self._config or None


@dataclass
class ReportContext:
    """What sections get besides the score table.

    Attributes:
        jobs: The jobs read, in load order.
        retrieval: Every job's ``retrieval.csv`` stacked, with ``job_id`` and ``dataset``
            columns (answer recall per retriever, query perturbation and k; empty if none).
        n_resamples: Bootstrap resamples for intervals.
        confidence: Interval level.
        seed: Seed of every resampling.
        memo: Cache shared by sections (see :meth:`shared`).
        notes: What reading the jobs did that a reader must know (examples split by identity,
            identities derived for old tables), shown in the report's index.
    """

    jobs: list[JobInfo] = field(default_factory=list)
    retrieval: pd.DataFrame = field(default_factory=pd.DataFrame)
    n_resamples: int = 1000
    confidence: float = 0.95
    seed: int = 0
    memo: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def shared(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per report under ``key`` (e.g. the robustness table several sections plot)."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    def retrieval_metrics(self, ks: Sequence[int]) -> pd.DataFrame:
        """Per-query Recall/Precision@k of every job with ``runs/*.trec`` and ``qrels.trec`` (once per ``ks``)."""
        from rr.analysis.query_level import job_retrieval_metrics

        def compute() -> pd.DataFrame:
            frames = []
            for job in self.jobs:
                if (job.path / QRELS_FILE).exists() and any((job.path / RUNS_DIR).glob("*.trec")):
                    m = job_retrieval_metrics(job.path, ks=ks).drop(columns="job")
                    frames.append(m.assign(job_id=job.job_id))
            return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

        return self.shared(f"query_level_retrieval@{tuple(ks)}", compute)

    def robustness(self, rows: pd.DataFrame) -> tuple[pd.Series, pd.DataFrame] | None:
        """The robustness table's row of ``rows`` (:func:`rr.analysis.intervals.robustness_ci`: NDR, RSR, ROR,
        their geometric mean, intervals) and their per-example values, once per frame (the estimators of
        NDR, RSR and ROR of one setting share them); None where the metrics are not defined on them."""
        from rr.analysis.intervals import per_example_robustness, robustness_ci

        key = _robustness_key(rows)
        held = self.memo.get(key)
        if held is not None and held[0] is rows:  # the frame is held with its result, so its id is its own
            return held[1]  # type: ignore[no-any-return]
        try:
            t = robustness_ci(
                rows, by=[], n_resamples=self.n_resamples, confidence=self.confidence, seed=self.seed
            )
            result: tuple[pd.Series, pd.DataFrame] | None = (t.iloc[0], per_example_robustness(rows))
        except ValueError:
            result = None  # not a table the robustness metrics are defined on (one k, no closed book, ...)
        self.memo[key] = (rows, result)
        return result

    def held_robustness(self, rows: pd.DataFrame) -> pd.Series | None:
        """The robustness table's row of ``rows`` where :meth:`robustness` already computed it on this very
        frame; None where it did not, or the metrics are not defined on it."""
        held = self.memo.get(_robustness_key(rows))
        if held is None or held[0] is not rows or held[1] is None:
            return None
        return held[1][0]  # type: ignore[no-any-return]


def _robustness_key(rows: pd.DataFrame) -> str:
    return f"paper_beside.robustness@{id(rows)}"


def load_jobs(paths: str | Path | Sequence[str | Path]) -> tuple[pd.DataFrame, ReportContext]:
    """Read every job under ``paths``: the score table and a :class:`ReportContext`.

    Each job's ``scores.parquet`` is read; a job id met twice (the same job copied to two folders)
    is read once and the duplicate is logged. A job without a ``job_id`` column gets its folder
    name. The pooled table then gets its examples' identities (:func:`rr.results.identify_examples`:
    an id that names different questions in different jobs is split); what that did is in
    ``context.notes``.

    Returns:
        (the concatenated score table, the context with ``jobs`` and ``retrieval`` filled).
    """
    frames: list[pd.DataFrame] = []
    ctx = ReportContext()
    seen: dict[str, Path] = {}
    recall: list[pd.DataFrame] = []
    for f in find_score_files(paths):
        df = pd.read_parquet(f)
        job_dir = f.parent
        jid = str(df["job_id"].iloc[0]) if "job_id" in df.columns and len(df) else job_dir.name
        if "job_id" not in df.columns:
            df = df.assign(job_id=jid)
        if jid in seen:
            log.warning("job %s appears twice (%s and %s); reading it once", jid, seen[jid], job_dir)
            continue
        seen[jid] = job_dir
        summary = read_summary(job_dir) or JobSummary.from_dict({})
        retrieval = None
        if (job_dir / RETRIEVAL_FILE).exists():
            try:
                retrieval = pd.read_csv(job_dir / RETRIEVAL_FILE)
            except pd.errors.EmptyDataError:  # a closed-book-only job's: no retriever, no column
                retrieval = pd.DataFrame(columns=["retriever", "query_perturbation", "k", "answer_recall"])
            if "query_perturbation" not in retrieval.columns:
                retrieval["query_perturbation"] = "none"
            datasets = sorted(df["dataset"].astype(str).unique())
            retrieval = retrieval.assign(job_id=jid, dataset=",".join(datasets))
            recall.append(retrieval)
        ctx.jobs.append(JobInfo(jid, job_dir, len(df), summary, retrieval))
        frames.append(df)
    scores, ctx.notes = identify_examples(pd.concat(frames, ignore_index=True))
    if recall:
        ctx.retrieval = pd.concat(recall, ignore_index=True)
    return scores, ctx


def environments_note(ctx: ReportContext) -> str | None:
    """:func:`rr.environment.environments_note` over the report's jobs (``None``: one environment)."""
    return environment_note({job.job_id: job.summary.environment for job in ctx.jobs})
