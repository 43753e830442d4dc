"""The robustness metrics with example-level bootstrap intervals, and which columns name a system.

Statistics over a score table that several readers share: ``rr report``'s sections
(:mod:`rr.reporting.robustness`, :mod:`rr.reporting.comparisons`), ``rr plan --pilot``
(:mod:`rr.analysis.power`) and the calibration benchmark. Reporting reads this module; this
module imports nothing from :mod:`rr.reporting` (``tests/test_layers.py``).

* :func:`system_by`: the grouping columns that keep systems and settings apart.
* :func:`per_example_robustness`: each example's share of NDR, RSR, ROR and accuracy.
* :func:`robustness_ci`: :func:`rr.metrics.robustness_table` with an interval on every metric.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from rr.metrics.registry import CI_HIGH, CI_LOW, shown_in
from rr.metrics.robustness import NO_RETRIEVER, TIE_TOLERANCE, closed_book_joined, robustness_table
from rr.results import CELL_KEYS, varying
from rr.stats import BootstrapMethod, StatResult, bootstrap_cluster_means, cluster_bootstrap

log = logging.getLogger(__name__)

#: Columns that name a *system* (what is compared).
SYSTEM_COLUMNS = ("generator", "strategy")
#: Columns that name a *setting* a system is evaluated in (kept apart, never pooled).
SETTING_COLUMNS = ("dataset", "judge", "query_perturbation", "doc_perturbation", "seed")

#: The metrics of :func:`robustness_ci`, in table order: those the ``robustness`` section shows.
METRICS = tuple(s.name for s in shown_in("robustness"))
#: Those that are means of per-example values (all but the geometric mean of NDR, RSR and ROR).
BASE_METRICS = tuple(s.name for s in shown_in("robustness") if len(s.rests_on) < 2)
#: Those of them that are means over the k > 0 cells (all but closed-book accuracy).
RAG_METRICS = tuple(s.name for s in shown_in("robustness") if len(s.rests_on) < 2 and not s.closed_book)
Derived = Mapping[str, Callable[[Mapping[str, np.ndarray]], np.ndarray]]


def _gmean3(m: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.cbrt(m["ndr"] * m["rsr"] * m["ror"])


def per_example_robustness(group: pd.DataFrame, retriever_col: str = "retriever") -> pd.DataFrame:
    """Each example's share of NDR, RSR, ROR, accuracy and closed-book accuracy in one group.

    For a valid table (one system; complete grid, as :func:`rr.metrics.robustness.ndr` etc.
    require) every example contributes the same number of comparisons to each metric, so the
    metric equals the mean of these per-example values (averaged over retrievers like
    :func:`robustness_table`). This decomposition only drives the bootstrap;
    :func:`robustness_ci` checks it reproduces :func:`robustness_table` before using it.

    Args:
        group: Score rows of one system and setting (k = 0 rows and k > 0 rows of any
            retrievers); assumed already validated by :func:`robustness_table`.
        retriever_col: Retriever column.

    Returns:
        One row per example, columns ``ndr``, ``rsr``, ``ror``, ``accuracy``,
        ``closed_book_accuracy`` (NaN where undefined).
    """
    ex, k, order, score = "example_id", "k", "order", "score"
    g = group.assign(**{k: group[k].astype(int), score: group[score].astype(float)})
    closed = g.loc[g[k] == 0].set_index(ex)[score]
    rag = g.loc[g[k] > 0]
    examples = pd.Index(pd.concat([g[ex]]).unique(), name=ex)
    per: list[pd.DataFrame] = []
    for _, mine in rag.groupby(retriever_col, sort=True):
        cols: dict[str, pd.Series] = {}
        if len(closed):
            ok = (
                mine[score] >= mine[ex].map(closed).astype(float) - TIE_TOLERANCE
            )  # a categorical id maps to one
            cols["ndr"] = ok.groupby(mine[ex]).mean()
        ks = sorted(mine[k].unique())
        if len(ks) >= 2:
            wide = mine.pivot(index=[ex, order], columns=k, values=score).reindex(columns=ks)
            arr = wide.to_numpy(dtype=float)
            best = np.maximum.accumulate(arr, axis=1)[:, :-1]
            row_mean = (arr[:, 1:] >= best - TIE_TOLERANCE).mean(axis=1)
            cols["rsr"] = pd.Series(row_mean, index=wide.index).groupby(level=ex).mean()
        sigma = mine.groupby([ex, k])[score].std(ddof=0)
        cols["ror"] = (1.0 - 2.0 * sigma).groupby(level=ex).mean()
        cols["accuracy"] = mine.groupby(ex)[score].mean()
        per.append(pd.DataFrame(cols).reindex(examples))
    out = (
        pd.concat(per).groupby(level=0).mean()
        if per
        else pd.DataFrame(index=examples, columns=list(RAG_METRICS), dtype=float)
    )
    out = out.reindex(index=examples, columns=list(RAG_METRICS))
    out["closed_book_accuracy"] = closed.reindex(examples) if len(closed) else math.nan
    return out.astype(float)


def _decomposes(values: pd.DataFrame, row: Mapping[str, float]) -> bool:
    """Whether the per-example values average to the table's metrics (the bootstrap's premise)."""
    return all(
        (math.isnan(row[m]) and values[m].isna().all())
        or math.isclose(float(values[m].mean()), float(row[m]), abs_tol=1e-9)
        for m in BASE_METRICS
    )


def checked_per_example(group: pd.DataFrame, retriever_col: str = "retriever") -> pd.DataFrame | None:
    """:func:`per_example_robustness` of one system's rows if it reproduces :func:`robustness_table`, else None.

    Raises:
        ValueError: The rows are not a valid table for the metrics (see :func:`robustness_table`).
    """
    row = robustness_table(group, by=(), retriever_col=retriever_col).iloc[0].to_dict()
    values = per_example_robustness(group, retriever_col)
    return values if _decomposes(values, row) else None


def robustness_ci(
    df: pd.DataFrame,
    by: Sequence[str] | None = None,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    derived: Derived | None = None,
    retriever_col: str = "retriever",
    method: BootstrapMethod = "BCa",
    small_sample: bool = True,
) -> pd.DataFrame:
    """:func:`rr.metrics.robustness_table` with an example-level bootstrap interval on every metric.

    Point estimates are exactly :func:`robustness_table`'s (averaged over retrievers). Intervals
    resample examples with replacement (``rr.stats.bootstrap_cluster_means`` on the per-example
    decomposition of :func:`per_example_robustness`, the same draw for all metrics, so the
    geometric mean gets a joint interval). If the decomposition does not reproduce the table
    (e.g. retrievers covering different examples), the group falls back to the generic
    ``rr.stats.cluster_bootstrap`` of :func:`robustness_table` itself.

    Args:
        df: Score table.
        by: Grouping columns (default :func:`system_by`).
        n_resamples: Bootstrap resamples.
        confidence: Interval level.
        seed: Seed (same seed, same intervals).
        derived: Extra name -> function of the metric means (see
            :func:`rr.stats.bootstrap_cluster_means`), e.g. the geometric mean of NDR and RSR.
        retriever_col: Retriever column.
        method: ``"BCa"`` (default), ``"percentile"`` or ``"basic"`` (``scipy.stats.bootstrap``).
            BCa because its 95% intervals hold the true value at their nominal rate on tables of
            100 to 500 examples drawn from the simulated reader (``docs/reproduction.md``,
            ``benchmarks/calibration.py``), where percentile intervals of NDR near 1 cover only
            89-93% below 500 examples (the per-example values are skewed against the bound).
        small_sample: The small-sample rules of :func:`rr.stats.bootstrap_cluster_means` (the
            level expanded for few examples; Wilson for 0/1 or constant values), without which
            rr's 95% intervals covered 77-91% at 12 and 87-95% at 24 examples
            (``benchmarks/calibration.py``, ``benchmarks/README.md``).

    Returns:
        The :func:`robustness_table` columns, each metric ``m`` followed by ``m_ci_low`` and
        ``m_ci_high``, then any ``derived`` columns with theirs.
    """
    by_cols = list(system_by(df) if by is None else by)
    df = closed_book_joined(df, by_cols)  # a counterfactual job's k = 0 rows are its NDR's baseline
    derived = {"robustness": _gmean3, **dict(derived or {})}
    point = robustness_table(df, by=by_cols, retriever_col=retriever_col)
    extra = [d for d in derived if d != "robustness"]
    rows = []
    groups = [((), df)] if not by_cols else df.groupby(by_cols, sort=True, dropna=False)
    for (key, group), (_, prow) in zip(groups, point.iterrows(), strict=True):
        key_t = key if isinstance(key, tuple) else (key,)
        assert all(str(a) == str(b) for a, b in zip(key_t, prow[by_cols], strict=True))
        row = prow.to_dict()
        values = per_example_robustness(group, retriever_col)
        ok = _decomposes(values, row)
        res: Mapping[str, StatResult]
        if group.loc[group["k"] > 0, retriever_col].astype(str).eq(NO_RETRIEVER).all():
            res = {}
        elif group["example_id"].nunique() < 2:  # an interval needs two examples: point only
            log.warning("group %s: one example, no confidence interval", key_t)
            res = {}
        elif ok:
            res = bootstrap_cluster_means(
                values,
                derived,
                n_resamples=n_resamples,
                confidence=confidence,
                seed=seed,
                method=method,
                small_sample=small_sample,
            )
        else:
            log.warning("group %s: per-example decomposition differs; using the generic bootstrap", key_t)

            def stat(d: pd.DataFrame) -> dict[str, float]:
                r = robustness_table(d, by=(), retriever_col=retriever_col).iloc[0]
                means = {m: np.array(float(r[m])) for m in BASE_METRICS}
                return {
                    **{m: float(r[m]) for m in BASE_METRICS},
                    **{n: float(f(means)) for n, f in derived.items()},
                }

            res = cluster_bootstrap(
                group,
                stat,
                n_resamples=n_resamples,
                confidence=confidence,
                seed=seed,
                method=method,
                small_sample=small_sample,
            )
        for m in [*METRICS, *extra]:
            r = res.get(m)
            if m in extra:
                row[m] = r.statistic if r else math.nan
            row[m + CI_LOW] = r.ci_low if r else math.nan
            row[m + CI_HIGH] = r.ci_high if r else math.nan
        rows.append(row)
    ordered = [*by_cols]
    for m in [*METRICS, *extra]:
        ordered += [m, m + CI_LOW, m + CI_HIGH]
    ordered += [c for c in point.columns if c not in ordered]
    return pd.DataFrame(rows)[ordered]


def system_by(df: pd.DataFrame) -> list[str]:
    """Grouping columns that keep systems and settings apart (pass as ``by`` to ``robustness_table``).

    ``dataset``, ``generator`` and ``strategy`` always (when present), plus each of ``judge``,
    ``query_perturbation``, ``doc_perturbation``, ``seed`` that varies, plus ``job_id`` when
    jobs of one group cannot be pooled: they score the same (example, retriever, k, order) cell,
    or together they do not form a valid table for the robustness metrics (different grids or
    samples; they differ in something the columns do not show). Jobs that split one system's
    cells or examples between them are pooled.
    """
    always = [c for c in ("dataset", *SYSTEM_COLUMNS) if c in df.columns]
    by = always + [c for c in varying(df, SETTING_COLUMNS) if c not in always]
    cell = [c for c in ("example_id", *CELL_KEYS) if c in df.columns]
    if "job_id" not in df.columns or df["job_id"].nunique() < 2:
        return by
    jobs = df.groupby(by, dropna=False)["job_id"].transform("nunique")
    shared = df[jobs > 1]
    if shared.empty:
        return by
    per_job = shared.drop_duplicates([*by, *cell, "job_id"])
    if per_job.duplicated([*by, *cell]).any():
        return [*by, "job_id"]
    if "score" in df.columns and "retriever" in df.columns:
        try:
            robustness_table(shared, by=by)
        except ValueError:
            return [*by, "job_id"]
    return by
