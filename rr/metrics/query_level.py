"""The query-level study's metrics (arXiv 2507.06956) as registered specs: Recall@5 per query kind
(Table 4) and the Pearson r of per-sample changes (Tables 2, 5, 6). Both need more than the score
table (the job's runs and qrels), so they have no function here; :mod:`rr.analysis.query_level`
computes them and the sections ``query_level_retrieval`` / ``query_level_correlations`` show them."""

from __future__ import annotations

from rr.metrics.registry import MetricSpec, describe_metric

describe_metric(
    MetricSpec(
        name="ql_recall@5",
        measures="Recall@5 of the retriever per query kind, the variants of a kind pooled "
        "(rr.analysis.query_level.retrieval_metrics: ir_measures / pytrec_eval over the job's runs and qrels)",
        printed_as=("query_level2025: Recall@5 (Table 4)",),
        section="query_level_retrieval",
        column="Recall@5",
        estimate="query_level_recall",
    )
)
describe_metric(
    MetricSpec(
        name="ql_pearson_r",
        measures="Pearson r of a module's per-sample change (Recall@5, closed-book, oracle) with the RAG "
        "change under one query kind (rr.analysis.query_level.module_deltas + correlations)",
        higher_is_better=None,
        printed_as=("query_level2025: Pearson r (Tables 2, 5, 6)",),
        section="query_level_correlations",
        column="r",
        estimate="query_level_pearson",
    )
)
