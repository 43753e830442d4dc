"""The query-level study's metrics (arXiv 2507.06956) as registered specs: Recall@5 per query kind
(Table 4) and the Pearson r of per-sample changes (Tables 2, 5, 6), with what they are computed from over
the score table (:func:`perturbation_kind`, :func:`module_deltas`). Both need more than the score table
(the job's runs and qrels), so they have no function over it: their estimators read the retriever's
per-query metrics from the report's jobs (:meth:`EstimationContext.retrieval_metrics`), and
:mod:`rr.analysis.query_level` computes them for the sections ``query_level_retrieval`` /
``query_level_correlations``."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from rr.metrics.registry import Estimate, EstimationContext, MetricSpec, describe_metric, mean_of
from rr.perturbations.base import PerturbationTag

ORIGINAL = "none"


def perturbation_kind(tag: str) -> str:
    """A tag without its variant number: ``typo@0.25#3`` -> ``typo@0.25``; ``none`` stays.

    A string that is not a :class:`~rr.perturbations.base.PerturbationTag` (a query-file tag of
    a table written before tags were checked) is its own kind.
    """
    t = PerturbationTag.read(tag)
    return tag if t is None else replace(t, variant=None).format()


#: The oracle retriever's name (the gold passages as the retrieved ones).
ORACLE = "oracle"


def _paired_delta(values: pd.Series, name: str) -> pd.DataFrame:
    """Per (example_id, query_perturbation != none): value minus the example's original value."""
    df = values.rename(name).reset_index()
    orig = df[df["query_perturbation"] == ORIGINAL].set_index("example_id")[name]
    pert = df[df["query_perturbation"] != ORIGINAL]
    missing = sorted(set(pert["example_id"]) - set(orig.index))
    if missing:
        raise ValueError(
            f"{name}: perturbed rows without an original (query_perturbation=none) row: {missing[:5]}"
        )
    return pert.assign(**{name: pert[name].to_numpy() - orig.loc[pert["example_id"]].to_numpy()})


def module_deltas(
    scores: pd.DataFrame,
    retrieval: pd.DataFrame,
    retriever: str,
    k: int = 5,
    order: str = "original",
    oracle: str = ORACLE,
    recall: str | None = None,
) -> pd.DataFrame:
    """§5.4: per perturbed sample, the change from its original in each module's score.

    Args:
        scores: Score table of one generator (and one strategy) with closed-book rows (k = 0),
            the oracle retriever's rows and ``retriever``'s rows at cut-off ``k``.
        retrieval: :func:`retrieval_metrics` output with ``retriever``'s rows.
        retriever: The RAG retriever (e.g. ``bge_base``).
        k: Cut-off of the RAG and oracle cells and of Recall (the paper: 5).
        order: Document order of the RAG and oracle cells.
        oracle: Name of the oracle retriever.
        recall: Recall column (default ``recall@<k>``).

    Returns:
        One row per (example_id, query_perturbation != none) with ``kind``, ``d_ret``
        (Recall@k), ``d_cb`` (closed-book Match), ``d_or`` (oracle Match), ``d_rag`` (RAG Match).

    Raises:
        ValueError: a setting has several rows per sample (filter to one generator/strategy
            first), or a perturbed sample lacks its original.
    """
    recall = recall or f"recall@{k}"
    key = ["example_id", "query_perturbation"]

    def one(df: pd.DataFrame, what: str) -> pd.Series:
        if df.empty:
            raise ValueError(f"module_deltas: no rows for {what}")
        if df.duplicated(key).any():
            raise ValueError(
                f"module_deltas: several rows per sample for {what}; filter to one generator/strategy"
            )
        return df.set_index(key)["score"]

    cb = one(scores[scores["k"] == 0], "closed-book (k = 0)")
    rag_rows = scores[(scores["k"] == k) & (scores["order"] == order)]
    orc = one(rag_rows[rag_rows["retriever"] == oracle], f"oracle retriever {oracle!r} at k={k}")
    rag = one(rag_rows[rag_rows["retriever"] == retriever], f"retriever {retriever!r} at k={k}")
    ret_rows = retrieval[retrieval["retriever"] == retriever]
    if ret_rows.empty:
        raise ValueError(f"module_deltas: no retrieval metrics for retriever {retriever!r}")
    ret = ret_rows.set_index(key)[recall].rename("score")
    parts = [
        _paired_delta(s, n).set_index(key)[n]
        for s, n in ((ret, "d_ret"), (cb, "d_cb"), (orc, "d_or"), (rag, "d_rag"))
    ]
    out = pd.concat(parts, axis=1, join="inner").reset_index()
    out.insert(2, "kind", out["query_perturbation"].map(perturbation_kind))
    return out.sort_values(key, kind="stable").reset_index(drop=True)


PAIRS = {"RET": "d_ret", "CB": "d_cb", "OR": "d_or"}


PAIRS = {"RET": "d_ret", "CB": "d_cb", "OR": "d_or"}
#: The values' ``module`` -> the query-level correlation's pair (:data:`PAIRS`).
MODULES = {"retriever-RAG": "RET", "closed-book": "CB", "oracle": "OR"}


def _kind_rows(rows: pd.DataFrame, kind: str) -> pd.Series:
    """Whether each row's ``query_perturbation`` is of ``kind`` (``typo@0.1``; ``none``: the originals)."""
    kinds = {t: perturbation_kind(str(t)) for t in rows["query_perturbation"].unique()}
    return rows["query_perturbation"].isin([t for t, kd in kinds.items() if kd == kind])


def recall_estimate(
    spec: MetricSpec,
    rows: pd.DataFrame,
    ctx: EstimationContext,
    job_rows: pd.DataFrame | None = None,
    query_kind: str = "none",
) -> Estimate | None:
    """Table 4: the retriever's Recall@5 over the queries of one kind (its variants pooled), from the
    matched jobs' runs and qrels (:meth:`EstimationContext.retrieval_metrics`, ir_measures)."""
    rag = rows[rows["k"].astype(int) > 0]
    metrics = ctx.retrieval_metrics([5])
    if metrics.empty or rag.empty:
        return None
    m = metrics[
        metrics["job_id"].isin(set(rag["job_id"].astype(str)))
        & metrics["retriever"].isin(set(rag["retriever"].astype(str)))
    ]
    m = m[m["query_perturbation"].astype(str).map(perturbation_kind) == query_kind]
    m = m.drop_duplicates(["retriever", "example_id", "query_perturbation"])
    if m.empty:
        return None
    return mean_of(m, m["recall@5"], ctx)


def pearson_estimate(
    spec: MetricSpec,
    rows: pd.DataFrame,
    ctx: EstimationContext,
    job_rows: pd.DataFrame | None = None,
    module: str = "",
    query_kind: str = "",
) -> Estimate | None:
    """Tables 2, 5, 6: Pearson r of the module's per-sample change with the RAG change under one query
    kind (:func:`module_deltas`), at k = 5 of the matched retriever, with Fisher's interval
    (``scipy.stats.pearsonr(...).confidence_interval``)."""
    from scipy.stats import pearsonr

    retrievers = sorted(set(rows.loc[rows["k"].astype(int) > 0, "retriever"].astype(str)) - {ORACLE})
    if len(retrievers) != 1 or module not in MODULES:
        return None
    job_rows = rows if job_rows is None else job_rows
    jobs = set(job_rows.loc[_kind_rows(job_rows, query_kind), "job_id"].astype(str))
    part = job_rows[job_rows["job_id"].astype(str).isin(jobs)]
    metrics = ctx.retrieval_metrics([5])
    if part.empty or metrics.empty:
        return None
    ret = metrics[metrics["job_id"].isin(jobs)].drop_duplicates(
        ["retriever", "example_id", "query_perturbation"]
    )
    try:
        deltas = module_deltas(part, ret, retrievers[0], k=5, oracle=ORACLE)
    except ValueError:
        return None
    d = deltas[deltas["kind"] == query_kind]
    x, y = d[PAIRS[MODULES[module]]].to_numpy(float), d["d_rag"].to_numpy(float)
    if len(d) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    res = pearsonr(x, y)
    ci = res.confidence_interval(confidence_level=ctx.confidence)
    return Estimate(float(res.statistic), float(ci.low), float(ci.high), int(d["example_id"].nunique()))


describe_metric(
    MetricSpec(
        name="ql_recall@5",
        measures="Recall@5 of the retriever per query kind, the variants of a kind pooled "
        "(rr.analysis.query_level.retrieval_metrics: ir_measures / pytrec_eval over the job's runs and qrels)",
        printed_as=("query_level2025: Recall@5 (Table 4)",),
        section="query_level_retrieval",
        column="Recall@5",
        estimator=recall_estimate,
    )
)
describe_metric(
    MetricSpec(
        name="ql_pearson_r",
        measures="Pearson r of a module's per-sample change (Recall@5, closed-book, oracle) with the RAG "
        "change under one query kind (module_deltas + rr.analysis.query_level.correlations)",
        higher_is_better=None,
        printed_as=("query_level2025: Pearson r (Tables 2, 5, 6)",),
        section="query_level_correlations",
        column="r",
        estimator=pearson_estimate,
    )
)
