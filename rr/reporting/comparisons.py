"""Paired comparisons of systems on the same examples, corrected for multiple comparisons.

Two systems are compared when they share a dataset and differ in exactly one of the grouping
columns (:func:`rr.reporting.core.system_by`: generator, strategy, or a setting such as the
doc perturbation). For each metric (accuracy over k > 0 cells, NDR, RSR, ROR) each example gets
one value per system (its share of the metric, :func:`~rr.reporting.robustness.per_example_robustness`),
and a paired permutation test (:func:`rr.stats.paired_permutation_test`) tests the mean
difference over the examples both systems have. Examples, not cells, are the units: cells of
one example are not independent. p-values are adjusted over the whole table with Holm
(family-wise) and Benjamini-Hochberg (false discovery rate).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pandas as pd

from rr.reporting.core import (
    Item,
    ReportContext,
    ReportTable,
    SectionSkipped,
    section,
    system_by,
    system_label,
)
from rr.reporting.robustness import checked_per_example
from rr.stats import adjust_pvalues, paired_permutation_test

COMPARED = ("accuracy", "ndr", "rsr", "ror")


def paired_comparisons(
    df: pd.DataFrame,
    by: list[str] | None = None,
    *,
    metrics: tuple[str, ...] = COMPARED,
    n_resamples: int = 9999,
    seed: int = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Every pair of systems that differ in one grouping column, tested per metric.

    Args:
        df: Score table.
        by: Grouping columns naming systems (default :func:`system_by`).
        metrics: Per-example metrics compared (columns of ``per_example_robustness``).
        n_resamples: Permutations per test.
        seed: Seed of every test.
        confidence: Level of the interval of the mean difference.

    Returns:
        One row per (pair, metric): ``differs_in``, ``system_a``, ``system_b`` (labels), the
        shared values, ``metric``, ``a``, ``b`` (the systems' means over the shared examples),
        ``difference`` (a − b) with ``difference_ci_low``/``_ci_high``, ``p_value``,
        ``p_holm``, ``p_bh``, ``n_examples``. Metrics undefined for either system are left out.
    """
    by = list(system_by(df) if by is None else by)
    per: dict[tuple, pd.DataFrame] = {}
    for key, g in df.groupby(by, sort=True, dropna=False):
        key_t = key if isinstance(key, tuple) else (key,)
        if not (pd.to_numeric(g["k"]) > 0).any():
            continue
        values = checked_per_example(g)
        if values is not None:
            per[key_t] = values
    rows = []
    for ka, kb in itertools.combinations(sorted(per, key=lambda t: tuple(map(str, t))), 2):
        diff = [c for c, a, b in zip(by, ka, kb, strict=True) if str(a) != str(b)]
        if len(diff) != 1 or diff[0] == "dataset":
            continue
        va, vb = per[ka], per[kb]
        shared = va.index.intersection(vb.index)
        if len(shared) < 2:
            continue
        la, lb = dict(zip(by, ka, strict=True)), dict(zip(by, kb, strict=True))
        for m in metrics:
            a, b = va.loc[shared, m], vb.loc[shared, m]
            if a.isna().any() or b.isna().any():
                continue
            res = paired_permutation_test(
                a.to_numpy(), b.to_numpy(), n_resamples=n_resamples, seed=seed, confidence=confidence
            )
            rows.append(
                {
                    "differs_in": diff[0],
                    "system_a": system_label(la, diff),
                    "system_b": system_label(lb, diff),
                    **{c: la[c] for c in by if c not in diff},
                    "metric": m,
                    "a": float(a.mean()),
                    "b": float(b.mean()),
                    "difference": res.statistic,
                    "difference_ci_low": res.ci_low,
                    "difference_ci_high": res.ci_high,
                    "p_value": res.p_value,
                    "n_examples": res.n,
                }
            )
    cols = ["differs_in", "system_a", "system_b", *by, "metric", "a", "b", "difference"]
    cols += ["difference_ci_low", "difference_ci_high", "p_value", "n_examples"]
    out = pd.DataFrame(rows).reindex(columns=cols).fillna({c: "" for c in by})
    if len(out):
        out["p_holm"] = adjust_pvalues(out["p_value"].to_numpy(), "holm").p_adjusted
        out["p_bh"] = adjust_pvalues(out["p_value"].to_numpy(), "fdr_bh").p_adjusted
    return out


@section(
    "paired_comparisons",
    title="Paired comparisons of systems (permutation tests, Holm / BH)",
    requires=("example_id", "k", "order", "score", "retriever", "generator", "strategy"),
    order=70,
)
def paired_comparisons_section(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """Pairwise tests of accuracy, NDR, RSR, ROR between systems differing in one factor."""
    table = paired_comparisons(
        df, n_resamples=max(ctx.n_resamples, 999), seed=ctx.seed, confidence=ctx.confidence
    )
    if table.empty:
        raise SectionSkipped("fewer than two comparable systems (same dataset, differing in one factor)")
    yield ReportTable(
        "paired_comparisons",
        "Paired comparisons of systems on the same examples",
        table,
        caption=(
            "Pairs of systems differing in one factor; per-example values of each metric compared by "
            "a paired permutation test of the mean difference (examples as units); difference "
            f"interval: {ctx.confidence:.0%} bootstrap over examples; p_holm / p_bh: Holm and "
            "Benjamini-Hochberg adjusted over the whole table."
        ),
    )
