"""RARE-Met (Zeng et al. 2025, §5, Tables 3-4, Appendix D): refusal-aware robustness.

Each RAG row (``k > 0``) gets a robustness judgment ``f`` in {0, 1} by Table 3, from three things:

* the **closed-book probe** g(q, ∅) of its example: whether the same system answers the original
  question correctly without documents (its ``k = 0`` row with ``query_perturbation = none``;
  correct = ``score == 1`` and not refused);
* the **document type** of the row, from its ``doc_perturbation`` tag (see :data:`DOC_TYPES`):
  ``ground_truth`` (d_gt), ``lexical_diff`` (back-translated: different wording, has the answer),
  ``lexical_similar`` (answer sentences deleted: same wording, no answer) or ``retrieval``
  (real retrieval results, ``doc_perturbation = none``);
* the row's ``score`` and ``refused`` (``judge=rare``, ``refusal_match`` or ``rgb``).

Table 3 (same for original and perturbed queries):

=====================  ====================  ====================
document type          g(q, ∅) = 1           g(q, ∅) = 0
=====================  ====================  ====================
ground truth           correct               correct
lexical-diff           correct               correct
lexical-similar        correct or refused    refused
real-world retrieval   correct or refused    correct or refused
=====================  ====================  ====================

Table 4's scores average ``f`` over a set of (query, document) variants of each example, then over
examples (the paper's per-query sums divided by the set sizes, averaged over the dataset):

* **overall**: every query variant q ∈ Q = {q} ∪ Q′ with every document d ∈ D = {d_gt} ∪ D′
  (ground truth, lexical-diff and lexical-similar; Appendix D's D excludes D_ret --
  ``include_retrieval=True`` adds it);
* **query**: the perturbed queries q′ ∈ Q′ with the ground-truth documents;
* **document**: the original query with the perturbed documents d′ ∈ D′;
* **retrieval**: the original query with real retrieval results (every retriever and k).

A system is the (``generator``, ``strategy``) pair by default; the closed-book probe comes from the
same system's ``k = 0`` rows. Tables from several jobs (one per document perturbation, as
``sweeps/rare2025.yaml`` runs them) can be concatenated: repeated closed-book rows of one example
are all required to be correct for g(q, ∅) = 1 (they are the same cached prompt).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from rr.metrics.registry import Estimate, EstimationContext, MetricSpec, mean_of, register_metric, shown_in
from rr.metrics.robustness import MetricUndefinedError
from rr.perturbations.base import PerturbationTag

GROUND_TRUTH = "ground_truth"
LEXICAL_DIFF = "lexical_diff"
LEXICAL_SIMILAR = "lexical_similar"
RETRIEVAL = "retrieval"

#: ``doc_perturbation`` tag name (:attr:`PerturbationTag.name <rr.perturbations.base.PerturbationTag.name>`,
#: without parameters) -> RARE document type.
DOC_TYPES: dict[str, str] = {
    "ground_truth": GROUND_TRUTH,
    "backtranslate": LEXICAL_DIFF,
    "delete_answer": LEXICAL_SIMILAR,
    "none": RETRIEVAL,
}
CORRECT = 1.0 - 1e-9
SYSTEM = ("generator", "strategy")


def doc_type(tag: str, doc_types: Mapping[str, str] | None = None) -> str | None:
    """The RARE document type of a ``doc_perturbation`` tag (``None`` when it has none)."""
    t = PerturbationTag.read(str(tag))
    return None if t is None else (doc_types or DOC_TYPES).get(t.name)


def robustness_flags(
    df: pd.DataFrame,
    doc_types: Mapping[str, str] | None = None,
    by: Sequence[str] = SYSTEM,
) -> pd.DataFrame:
    """The RAG rows (``k > 0``) with a known document type, plus ``rare_doc_type``,
    ``closed_book_correct`` (g(q, ∅)) and ``robust`` (f, Table 3) columns.

    Raises:
        ValueError: missing columns, or an example without its closed-book probe row.
        MetricUndefinedError: no RAG row has a known document type.
    """
    by = [c for c in by if c in df.columns]
    need = ["example_id", "k", "doc_perturbation", "score", "refused"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(
            f"RARE metrics: score table is missing column(s) {missing} (use judge=rare or refusal_match)"
        )
    qp = df["query_perturbation"] if "query_perturbation" in df.columns else pd.Series("none", index=df.index)
    ok = (df["score"].astype(float) >= CORRECT) & ~df["refused"].astype(bool)
    probe_rows = df[(df["k"] == 0) & (qp == "none")]
    probe: dict[tuple, bool] = {}
    for key, good in zip(
        zip(*[probe_rows[c] for c in [*by, "example_id"]], strict=True), ok[probe_rows.index], strict=True
    ):
        probe[key] = probe.get(key, True) and bool(good)
    rag = df[df["k"] > 0].copy()
    rag["rare_doc_type"] = [doc_type(t, doc_types) for t in rag["doc_perturbation"]]
    rag = rag[rag["rare_doc_type"].notna()]
    if rag.empty:
        raise MetricUndefinedError(
            f"RARE metrics: no k > 0 rows with a known document type (tags: {sorted(df['doc_perturbation'].unique())})"
        )
    keys = list(zip(*[rag[c] for c in [*by, "example_id"]], strict=True))
    lacking = [k for k in keys if k not in probe]
    if lacking:
        raise ValueError(
            f"RARE metrics: {len(set(lacking))} example(s) lack the closed-book probe (k=0, original query), "
            f"e.g. {lacking[0]!r}; run with grid.closed_book=true"
        )
    rag["closed_book_correct"] = [bool(probe[k]) for k in keys]
    right = ok[rag.index]
    refused = rag["refused"].astype(bool)
    t = rag["rare_doc_type"]
    cb = rag["closed_book_correct"]
    rag["robust"] = np.where(
        t.isin([GROUND_TRUTH, LEXICAL_DIFF]),
        right,
        np.where(t == LEXICAL_SIMILAR, np.where(cb, right | refused, refused), right | refused),
    ).astype(bool)
    return rag


def _mean_over_examples(rows: pd.DataFrame, what: str) -> float:
    if rows.empty:
        raise MetricUndefinedError(f"{what}: no rows in its (query, document) set")
    return float(rows.groupby("example_id")["robust"].mean().mean())


def _original(rows: pd.DataFrame) -> pd.Series:
    if "query_perturbation" not in rows.columns:
        return pd.Series(True, index=rows.index)
    return rows["query_perturbation"] == "none"


#: Table 4's scores, in its order.
SCORES = ("overall", "query", "document", "retrieval")


def score_rows(flags: pd.DataFrame, score: str, include_retrieval: bool = False) -> pd.DataFrame:
    """The rows of :func:`robustness_flags` output that one Table 4 score averages.

    Args:
        flags: :func:`robustness_flags` output.
        score: ``overall`` (every query variant with every document in D = {d_gt} ∪ D′, plus the
            retrieved contexts with ``include_retrieval``), ``query`` (perturbed queries with the
            ground-truth documents), ``document`` (the original query with perturbed documents) or
            ``retrieval`` (the original query with real retrieval results).
        include_retrieval: Count retrieved contexts in ``overall``.
    """
    t = flags["rare_doc_type"]
    if score == "overall":
        types = [GROUND_TRUTH, LEXICAL_DIFF, LEXICAL_SIMILAR] + ([RETRIEVAL] if include_retrieval else [])
        return flags[t.isin(types)]
    if score == "query":
        return flags[(t == GROUND_TRUTH) & ~_original(flags)]
    if score == "document":
        return flags[t.isin([LEXICAL_DIFF, LEXICAL_SIMILAR]) & _original(flags)]
    if score == "retrieval":
        return flags[(t == RETRIEVAL) & _original(flags)]
    raise ValueError(f"RARE score must be one of {SCORES}, got {score!r}")


def score_estimate(
    spec: MetricSpec, rows: pd.DataFrame, ctx: EstimationContext, job_rows: pd.DataFrame | None = None
) -> Estimate | None:
    """The estimator of RARE's Table 4 scores: the share of robust trials per example
    (:func:`score_rows` of the spec's score), averaged over examples."""
    try:
        trials = score_rows(robustness_flags(rows), spec.name.removeprefix("rare_"))
    except ValueError:  # incl. MetricUndefinedError
        return None
    if trials.empty:
        return None
    per = trials.groupby("example_id", as_index=False)["robust"].mean()
    return mean_of(per, per["robust"], ctx)


@register_metric(
    "rare_overall",
    printed_as=("rare2025: overall robustness (Table 5)",),
    section="rare_robustness",
    column="overall",
    estimator=score_estimate,
)
def overall_robustness(
    df: pd.DataFrame, doc_types: Mapping[str, str] | None = None, include_retrieval: bool = False
) -> float:
    """Overall robustness: every query variant with every document in D = {d_gt} ∪ D′."""
    f = robustness_flags(df, doc_types)
    return _mean_over_examples(score_rows(f, "overall", include_retrieval), "rare_overall")


@register_metric(
    "rare_query",
    printed_as=("rare2025: query robustness (Table 5)",),
    section="rare_robustness",
    column="query",
    estimator=score_estimate,
)
def query_robustness(df: pd.DataFrame, doc_types: Mapping[str, str] | None = None) -> float:
    """Query robustness: perturbed queries q′ ∈ Q′ with the ground-truth documents."""
    return _mean_over_examples(score_rows(robustness_flags(df, doc_types), "query"), "rare_query")


@register_metric(
    "rare_document",
    printed_as=("rare2025: document robustness (Table 5)",),
    section="rare_robustness",
    column="document",
    estimator=score_estimate,
)
def document_robustness(df: pd.DataFrame, doc_types: Mapping[str, str] | None = None) -> float:
    """Document robustness: the original query with perturbed documents d′ ∈ D′."""
    return _mean_over_examples(score_rows(robustness_flags(df, doc_types), "document"), "rare_document")


@register_metric(
    "rare_retrieval",
    printed_as=("rare2025: retrieval robustness (Table 5)",),
    section="rare_robustness",
    column="retrieval",
    estimator=score_estimate,
)
def retrieval_robustness(df: pd.DataFrame, doc_types: Mapping[str, str] | None = None) -> float:
    """Real-world retrieval robustness: the original query with every retrieved context."""
    return _mean_over_examples(score_rows(robustness_flags(df, doc_types), "retrieval"), "rare_retrieval")


def rare_table(
    df: pd.DataFrame, by: Sequence[str] = SYSTEM, doc_types: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """Table 5's columns per system: ``overall``, ``query``, ``document``, ``retrieval`` (NaN where
    the table has no rows for a score) and ``n_examples``."""
    by = [c for c in by if c in df.columns]
    rows = []
    for key, part in df.groupby(by, sort=True) if by else [((), df)]:
        row = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        for spec in shown_in("rare_robustness"):  # overall, query, document, retrieval
            assert spec.column is not None and spec.fn is not None
            try:
                row[spec.column] = spec.fn(part, doc_types)
            except MetricUndefinedError:
                row[spec.column] = float("nan")
        row["n_examples"] = int(part.loc[part["k"] > 0, "example_id"].nunique())
        rows.append(row)
    return pd.DataFrame(rows)
