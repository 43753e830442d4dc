"""Retrieval-robustness metrics of Cao et al. (2025), §3, eq. 1–3.

Notation: ``f(q, k, o)`` is the score (correctness in [0, 1]) of one system on example ``q``
with the top-``k`` retrieved documents in order ``o``; ``f(q, 0)`` is its closed-book score.

* **NDR** (no-degradation rate, eq. 1): mean over every ``(q, k > 0, o)`` of
  ``1[f(q, k, o) >= f(q, 0)]``.
* **RSR** (retrieval-size robustness, eq. 2): mean over ``(q, k_i, o)`` with ``i > 1`` (every k of
  the grid but the smallest k > 0) of ``1[f(q, k_i, o) >= f(q, k_j, o) for all j < i]``, i.e.
  against *all* smaller k in the same order, not just the previous one.
* **ROR** (retrieval-order robustness, eq. 3): mean over ``(q, k > 0)`` of
  ``1 - 2 * sigma_o f(q, k, o)`` with sigma the *population* standard deviation (ddof=0) over
  orders. For scores in [0, 1] the population sigma is at most 0.5, so ROR lies in [0, 1].

Each of :func:`ndr`, :func:`rsr`, :func:`ror` takes the score table of **one system and one
retriever** (plus, for NDR, its closed-book rows): exactly one row per ``(example_id, k, order)``
and a complete grid (every example has a score in every ``(k, order)`` cell with k > 0 that any
example has). :func:`robustness_table` splits a whole table by system and retriever and averages
over retrievers as the paper does.

Equal scores count as "not worse" (ties pass NDR and RSR); comparisons allow
:data:`TIE_TOLERANCE` so float noise in equal fractional scores is still a tie.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from rr.jobfolder import MetricRow
from rr.metrics.registry import (
    CI_HIGH,
    CI_LOW,
    Estimate,
    EstimationContext,
    MetricSpec,
    mean_of,
    register_metric,
)

EXAMPLE, K, ORDER, SCORE = "example_id", "k", "order", "score"
#: Columns every metric needs.
REQUIRED_COLUMNS: tuple[str, ...] = (EXAMPLE, K, ORDER, SCORE)
#: ``retriever`` value of closed-book rows.
NO_RETRIEVER = "none"
#: Slack for ``>=`` comparisons, so e.g. ``0.1 + 0.2`` vs ``0.3`` is a tie, not a degradation.
TIE_TOLERANCE = 1e-9


class MetricUndefinedError(ValueError):
    """The table is well-formed but the metric is undefined for it.

    Raised for: an empty table, no k > 0 rows, no k = 0 rows at all (NDR), fewer than two
    values of k > 0 (RSR). :func:`robustness_table` reports these as NaN; every other
    :class:`ValueError` is a malformed table and propagates.
    """


# ----------------------------------------------------------------------------- validation


def _coerce(df: pd.DataFrame, keep: Sequence[str] = ()) -> pd.DataFrame:
    """Copy of the required (+ ``keep``) columns with ``k`` as int, ``order`` as str, ``score`` as float.

    Raises:
        ValueError: A column is missing, ``k`` is not a non-negative integer, or a score is
            missing or outside [0, 1].
    """
    wanted = list(dict.fromkeys([*REQUIRED_COLUMNS, *keep]))
    missing = [c for c in wanted if c not in df.columns]
    if missing:
        raise ValueError(
            f"score table is missing column(s) {missing}; needed: {wanted} (present: {list(df.columns)})"
        )
    out = df.loc[:, wanted].copy()

    k = pd.to_numeric(out[K], errors="coerce")
    bad_k = k.isna() | (k < 0) | (k != np.floor(k))
    if bad_k.any():
        raise ValueError(
            f"column 'k' must hold non-negative integers (0 = closed-book); got {out.loc[bad_k, K].iloc[0]!r}"
        )
    out[K] = k.astype(int)
    out[ORDER] = out[ORDER].astype(str)

    score = pd.to_numeric(out[SCORE], errors="coerce").astype(float)
    bad = score.isna() | (score < 0.0) | (score > 1.0)
    if bad.any():
        row = out.loc[bad].iloc[0]
        raise ValueError(
            f"{int(bad.sum())} score(s) outside [0, 1] or missing, e.g. example {row[EXAMPLE]!r}, "
            f"k={row[K]}, order={row[ORDER]!r}: score={row[SCORE]!r}"
        )
    out[SCORE] = score
    return out


def _check_one_row_per_cell(t: pd.DataFrame) -> None:
    """Raise if any ``(example_id, k, order)`` has several rows, or an example several k=0 rows."""
    dup = t.duplicated([EXAMPLE, K, ORDER], keep=False)
    if dup.any():
        row = t.loc[dup].iloc[0]
        n = int(((t[EXAMPLE] == row[EXAMPLE]) & (t[K] == row[K]) & (t[ORDER] == row[ORDER])).sum())
        raise ValueError(
            f"duplicate rows: {n} rows for (example_id={row[EXAMPLE]!r}, k={row[K]}, order={row[ORDER]!r}); "
            "a metric needs exactly one score per cell, so filter the table to one system, one "
            "retriever and one perturbation setting first, or group it with robustness_table(by=...) "
            "naming every column that varies (dataset, perturbations, ...)"
        )
    closed = t.loc[t[K] == 0]
    dup0 = closed.duplicated(EXAMPLE, keep=False)
    if dup0.any():
        ex = closed.loc[dup0, EXAMPLE].iloc[0]
        orders = sorted(closed.loc[closed[EXAMPLE] == ex, ORDER])
        raise ValueError(
            f"duplicate rows: example {ex!r} has {len(orders)} closed-book (k=0) rows (orders {orders}); "
            "expected exactly one"
        )


def _check_complete_grid(rag: pd.DataFrame, examples: pd.Index) -> None:
    """Raise unless every example in ``examples`` has a row in every (k, order) cell of ``rag``.

    Assumes :func:`_check_one_row_per_cell` passed (so row counts equal cell counts).
    """
    cells = rag[[K, ORDER]].drop_duplicates().sort_values([K, ORDER])
    n_cells = len(cells)
    counts = rag.groupby(EXAMPLE, sort=False).size().reindex(examples, fill_value=0)
    short = counts[counts < n_cells]
    if short.empty:
        return
    ex = short.index[0]
    mine = rag.loc[rag[EXAMPLE] == ex]
    have = set(zip(mine[K], mine[ORDER], strict=True))
    lacking = [(k, o) for k, o in zip(cells[K], cells[ORDER], strict=True) if (k, o) not in have]
    k0, o0 = lacking[0]
    raise ValueError(
        f"incomplete grid: example {ex!r} lacks {len(lacking)} of the {n_cells} (k, order) cells other "
        f"examples have, e.g. (k={k0}, order={o0!r}); {len(short)} example(s) are incomplete. Every "
        "example needs a score in every cell (missing generations, or a mix of runs?)"
    )


def _prepare(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Validate one system's table; return its (k > 0 rows, k = 0 rows)."""
    t = _coerce(df)
    if t.empty:
        raise MetricUndefinedError("score table is empty")
    _check_one_row_per_cell(t)
    rag, closed = t.loc[t[K] > 0], t.loc[t[K] == 0]
    if rag.empty:
        raise MetricUndefinedError("score table has no k > 0 (retrieval) rows")
    return rag, closed


# ----------------------------------------------------------------------------- metrics


def ndr_comparisons(df: pd.DataFrame) -> pd.DataFrame:
    """The comparisons NDR counts (eq. 1): one row per ``(q, k > 0, o)`` with its outcome.

    Args:
        df: As for :func:`ndr`.

    Returns:
        The k > 0 rows (columns ``example_id``, ``k``, ``order``, ``score``) plus ``closed_book``
        (``f(q, 0)``) and ``passes`` (``f(q, k, o) >= f(q, 0)``, ties pass); :func:`ndr` is the
        mean of ``passes``.

    Raises:
        As :func:`ndr`.
    """
    rag, closed = _prepare(df)
    if closed.empty:
        raise MetricUndefinedError(
            "NDR needs the closed-book score f(q, 0) of every example, but the table has no k=0 rows"
        )
    examples = pd.Index(pd.concat([rag[EXAMPLE], closed[EXAMPLE]]).unique())
    lacking_cb = examples[~examples.isin(closed[EXAMPLE])]
    if len(lacking_cb):
        raise ValueError(
            f"example {lacking_cb[0]!r} lacks its closed-book (k=0) row ({len(lacking_cb)} example(s) do); "
            "NDR compares every k>0 cell with f(q, 0)"
        )
    _check_complete_grid(rag, examples)
    # as floats: a categorical example_id (rr report's table) maps to a categorical when the
    # closed-book scores of its examples all differ (two examples, 1 and 0)
    baseline = rag[EXAMPLE].map(closed.set_index(EXAMPLE)[SCORE]).astype(float)
    return rag.assign(closed_book=baseline, passes=rag[SCORE] >= baseline - TIE_TOLERANCE)


def interval_estimate(
    spec: MetricSpec, rows: pd.DataFrame, ctx: EstimationContext, job_rows: pd.DataFrame | None = None
) -> Estimate | None:
    """The estimator of NDR, RSR, ROR and their geometric mean: the robustness table's value and interval
    on ``rows`` (:meth:`EstimationContext.robustness`, computed once for the four)."""
    got = ctx.robustness(rows)
    if got is None:
        return None
    row, per = got
    if math.isnan(float(row[spec.name])):
        return None
    return Estimate(
        float(row[spec.name]), float(row[spec.name + CI_LOW]), float(row[spec.name + CI_HIGH]), len(per), per
    )


@register_metric(
    "ndr",
    printed_as=("cao2025: NDR (§3, Fig. 4)",),
    section="robustness",
    column="ndr",
    label="NDR",
    estimator=interval_estimate,
    rests_on=("ndr",),
)
def ndr(df: pd.DataFrame) -> float:
    """No-Degradation Rate (Cao et al. 2025, eq. 1).

    Args:
        df: Score table of one system and one retriever: columns ``example_id``, ``k`` (int,
            0 = closed-book), ``order`` (str), ``score`` (float in [0, 1]); exactly one k = 0 row
            per example and a complete grid of k > 0 cells. Other columns are ignored.

    Returns:
        Fraction in [0, 1] of ``(q, k > 0, o)`` with ``f(q, k, o) >= f(q, 0)`` (ties count as no
        degradation): the mean of :func:`ndr_comparisons`' ``passes``.

    Raises:
        MetricUndefinedError: No k > 0 rows, or no k = 0 rows at all.
        ValueError: Missing columns, scores outside [0, 1], duplicate cells, an example lacking
            its k = 0 row, or an incomplete grid.
    """
    return float(ndr_comparisons(df)["passes"].mean())


def rsr_comparisons(df: pd.DataFrame) -> pd.DataFrame:
    """The comparisons RSR counts (eq. 2): one row per ``(q, o, k_i)``, ``k_i`` any k > 0 but the smallest.

    Args:
        df: As for :func:`rsr`.

    Returns:
        Columns ``example_id``, ``order``, ``k`` (``k_i``), ``score`` (``f(q, k_i, o)``),
        ``best_smaller`` (``max_{j < i} f(q, k_j, o)``) and ``passes`` (``score >= best_smaller``,
        ties pass); :func:`rsr` is the mean of ``passes``.

    Raises:
        As :func:`rsr`.
    """
    rag, _ = _prepare(df)
    _check_complete_grid(rag, pd.Index(rag[EXAMPLE].unique()))
    ks = sorted(int(k) for k in rag[K].unique())
    if len(ks) < 2:
        raise MetricUndefinedError(f"RSR needs at least 2 values of k > 0; the table has k={ks}")
    all_orders = set(rag[ORDER].unique())  # unique() first: a set over a pyarrow string column is slow
    for k, orders in rag.groupby(K)[ORDER]:
        absent = all_orders - set(orders.unique())
        if absent:
            raise ValueError(
                f"RSR compares each order across k, but order(s) {sorted(absent)} are missing at k={k}; "
                "the (k, order) grid must be rectangular"
            )
    wide = rag.pivot(index=[EXAMPLE, ORDER], columns=K, values=SCORE).reindex(columns=ks)
    scores = wide.to_numpy(dtype=float)  # rows: (q, o); columns: k ascending
    best_smaller = np.maximum.accumulate(scores, axis=1)[:, :-1]  # max over k_j, j < i
    n_rows, n_cmp = scores.shape[0], len(ks) - 1
    return pd.DataFrame(
        {
            EXAMPLE: np.repeat(wide.index.get_level_values(EXAMPLE).to_numpy(), n_cmp),
            ORDER: np.repeat(wide.index.get_level_values(ORDER).to_numpy(), n_cmp),
            K: np.tile(np.asarray(ks[1:], dtype=int), n_rows),
            SCORE: scores[:, 1:].reshape(-1),
            "best_smaller": best_smaller.reshape(-1),
            "passes": (scores[:, 1:] >= best_smaller - TIE_TOLERANCE).reshape(-1),
        }
    )


@register_metric(
    "rsr",
    printed_as=("cao2025: RSR (§3, Fig. 4)",),
    section="robustness",
    column="rsr",
    label="RSR",
    estimator=interval_estimate,
    rests_on=("rsr",),
)
def rsr(df: pd.DataFrame) -> float:
    """Retrieval Size Robustness (Cao et al. 2025, eq. 2).

    For each example ``q``, order ``o`` and each ``k_i`` but the smallest k > 0 of the grid,
    checks ``f(q, k_i, o) >= f(q, k_j, o)`` for **all** smaller ``k_j`` (equivalently, against
    their maximum). k = 0 rows are ignored.

    Args:
        df: Score table of one system and one retriever (columns as for :func:`ndr`) whose
            k > 0 cells form a complete, rectangular grid: every order at every k.

    Returns:
        Fraction in [0, 1] over ``|Q| * (|K| - 1) * |O|`` comparisons (:func:`rsr_comparisons`).

    Raises:
        MetricUndefinedError: No k > 0 rows, or fewer than 2 values of k > 0.
        ValueError: Missing columns, scores outside [0, 1], duplicate cells, an incomplete grid,
            or an order that is missing at some k.
    """
    return float(rsr_comparisons(df)["passes"].mean())


def ror_terms(df: pd.DataFrame) -> pd.DataFrame:
    """The terms ROR averages (eq. 3): one row per ``(q, k > 0)``.

    Args:
        df: As for :func:`ror`.

    Returns:
        Columns ``example_id``, ``k``, ``sigma`` (population standard deviation of
        ``f(q, k, o)`` over the orders) and ``term`` (``1 - 2 * sigma``; below 1 exactly when
        the orders' scores differ); :func:`ror` is the mean of ``term``.

    Raises:
        As :func:`ror`.
    """
    rag, _ = _prepare(df)
    _check_complete_grid(rag, pd.Index(rag[EXAMPLE].unique()))
    sigma = rag.groupby([EXAMPLE, K], sort=False)[SCORE].std(ddof=0)
    return pd.DataFrame({"sigma": sigma, "term": 1.0 - 2.0 * sigma}).reset_index()


@register_metric(
    "ror",
    printed_as=("cao2025: ROR (§3, Fig. 4)",),
    section="robustness",
    column="ror",
    label="ROR",
    estimator=interval_estimate,
    rests_on=("ror",),
)
def ror(df: pd.DataFrame) -> float:
    """Retrieval Order Robustness (Cao et al. 2025, eq. 3).

    Args:
        df: Score table of one system and one retriever (columns as for :func:`ndr`) with a
            complete grid of k > 0 cells. k = 0 rows are ignored. A k with a single order
            contributes 1 (no spread).

    Returns:
        Mean over ``(q, k > 0)`` of ``1 - 2 * sigma``, sigma the population standard deviation
        (ddof=0) of ``f(q, k, o)`` over the orders; in [0, 1].

    Raises:
        MetricUndefinedError: No k > 0 rows.
        ValueError: Missing columns, scores outside [0, 1], duplicate cells, or an incomplete grid.
    """
    return float(ror_terms(df)["term"].mean())


# ----------------------------------------------------------------------------- table


#: Columns that tell systems, settings and jobs apart, in the order a hint names them.
SETTING_COLUMNS = (
    "dataset",
    "generator",
    "strategy",
    "judge",
    "query_perturbation",
    "doc_perturbation",
    "seed",
    "job_id",
)


def _check_by_separates_cells(
    df: pd.DataFrame, group: pd.DataFrame, by_cols: list[str], retriever_col: str, where: str
) -> None:
    """Raise a :class:`ValueError` naming the column to add to ``by`` if a cell of ``group`` repeats.

    ``group`` holds rows of ``df`` (same index); a cell is (example, k, order, retriever) for
    k > 0 and the example alone for k = 0. The columns of ``df`` among :data:`SETTING_COLUMNS`
    whose values differ between the repeated rows are the ones ``by`` lacks (``job_id`` when
    the same system ran twice, e.g. two jobs with different grids in one folder).
    """
    rag = group.loc[group[K] > 0]
    dup = rag.duplicated([EXAMPLE, K, ORDER, retriever_col], keep=False)
    closed = group.loc[group[K] == 0]
    dup0 = closed.duplicated(EXAMPLE, keep=False)
    if not dup.any() and not dup0.any():
        return
    first = rag.loc[dup].iloc[0] if dup.any() else closed.loc[dup0].iloc[0]
    same = (group[EXAMPLE] == first[EXAMPLE]) & (group[K] == first[K])
    if first[K] > 0:
        same &= (group[ORDER] == first[ORDER]) & (group[retriever_col] == first[retriever_col])
    rows = df.loc[group.index[same.to_numpy()]]
    varying = [
        c
        for c in SETTING_COLUMNS
        if c in rows.columns and c not in by_cols and rows[c].astype(str).nunique() > 1
    ]
    cell = f"example_id={first[EXAMPLE]!r}, k={first[K]}" + (
        f", order={first[ORDER]!r}, {retriever_col}={first[retriever_col]!r}" if first[K] > 0 else ""
    )
    if not varying:
        return  # the metrics' own check explains it (rows that repeat within one job)
    raise ValueError(
        f"{where}: duplicate rows: {int(same.sum())} rows for ({cell}) differ in {varying}, which by= "
        f"does not name; add {varying[0]!r} to by (e.g. by={[*by_cols, varying[0]]!r}) or filter the table "
        f"to one {varying[0]} first"
    )


#: Score-table columns that describe the documents given. A closed-book (k = 0) row is given none, so
#: its value (``none``) does not set it apart from the k > 0 rows whose baseline it is.
DOCUMENT_COLUMNS = ("doc_perturbation", "doc_perturbation_params")
JOB = "job_id"


def closed_book_joined(df: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """``df`` with its closed-book rows in the document setting of the k > 0 rows they are the baseline of.

    Grouped by ``by``, a counterfactual job's k > 0 rows (``doc_perturbation`` ``counterfactual``) and
    its k = 0 rows (``none``: no documents, so no perturbation of them) fall apart, and NDR finds no
    closed-book rows. Here each k = 0 row whose document columns in ``by`` (:data:`DOCUMENT_COLUMNS`)
    are ``none`` takes the values the k > 0 rows of its example have in the same job (``job_id``, where
    the table has it) and the same other ``by`` columns: one copy per distinct value (a job has one
    document perturbation). The other k = 0 rows (an example the perturbation dropped from the k > 0
    cells, a closed-book-only job, a k = 0 row that already names a setting) are kept as they are.
    Unchanged when ``by`` holds no document column.
    """
    doc = [c for c in by if c in DOCUMENT_COLUMNS]
    if not doc or any(
        c not in df.columns for c in [K, EXAMPLE, *by]
    ):  # the caller's check says what is missing
        return df
    keys = [*dict.fromkeys([c for c in by if c not in doc] + [c for c in (JOB, EXAMPLE) if c in df.columns])]
    k = pd.to_numeric(df[K], errors="coerce")
    unset = (df[doc].astype(str) == "none").all(axis=1)
    closed, rag = df[(k == 0) & unset].reset_index(drop=True), df[k > 0]
    settings = rag[[*keys, *doc]].drop_duplicates()
    if closed.empty or settings.empty or (settings[doc].astype(str) == "none").all(axis=None):
        return df
    joined = closed.drop(columns=doc).merge(settings, on=keys, how="inner")
    has = closed[keys].apply(tuple, axis=1).isin(set(settings[keys].apply(tuple, axis=1)))
    kept = df[
        ~(k > 0) & ~((k == 0) & unset)
    ]  # k = 0 rows that name a setting; an unreadable k (the caller says so)
    return pd.concat([rag, joined[df.columns], closed[~has.to_numpy()], kept], ignore_index=True)


def _or_nan(metric: Callable[[pd.DataFrame], float], df: pd.DataFrame, where: str) -> float:
    try:
        return metric(df)
    except MetricUndefinedError:
        return math.nan
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from err


def _geometric_mean(*values: float) -> float:
    if any(math.isnan(v) for v in values):
        return math.nan
    return float(np.prod(values) ** (1.0 / len(values)))


def robustness(df: pd.DataFrame) -> float:
    """The geometric mean of NDR, RSR and ROR (Cao et al. 2025's overall robustness)."""
    return _geometric_mean(ndr(df), rsr(df), ror(df))


register_metric(
    "robustness",
    printed_as=("cao2025: retrieval robustness (§5.1, the three metrics together)",),
    section="robustness",
    column="robustness",
    estimator=interval_estimate,
    rests_on=("ndr", "rsr", "ror"),
)(robustness)


def _mean_score_estimate(
    spec: MetricSpec, rows: pd.DataFrame, ctx: EstimationContext, job_rows: pd.DataFrame | None = None
) -> Estimate | None:
    """The mean score of the ``k > 0`` rows (``k = 0`` for closed-book accuracy), with its interval."""
    k = rows[K].astype(int)
    part = rows[(k == 0) if spec.closed_book else (k > 0)]
    return None if part.empty else mean_of(part, part[SCORE], ctx)


@register_metric(
    "accuracy",
    section="robustness",
    column="accuracy",
    estimator=_mean_score_estimate,
)
def accuracy(df: pd.DataFrame) -> float:
    """Cao's task performance: the mean score of the k > 0 rows (the robustness table's ``accuracy``)."""
    rag = df.loc[df[K].astype(int) > 0, SCORE]
    if rag.empty:
        raise MetricUndefinedError("accuracy: no rows with k > 0")
    return float(rag.astype(float).mean())


@register_metric(
    "closed_book_accuracy",
    section="robustness",
    column="closed_book_accuracy",
    label="accuracy k=0",
    closed_book=True,
    estimator=_mean_score_estimate,
)
def closed_book_accuracy(df: pd.DataFrame) -> float:
    """The mean score of the closed-book (k = 0) rows (the robustness table's ``closed_book_accuracy``)."""
    closed = df.loc[df[K].astype(int) == 0, SCORE]
    if closed.empty:
        raise MetricUndefinedError("closed_book_accuracy: no rows with k = 0")
    return float(closed.astype(float).mean())


def _gain_rows(df: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series]:
    """The ``k > 0`` rows whose example has closed-book rows, and each one's ``max(f(q, k, o), f(q, 0)) -
    f(q, k, o)``."""
    k = df[K].astype(int)
    closed = df[k == 0].groupby(EXAMPLE)[SCORE].mean()
    rag = df[k > 0]
    base = rag[EXAMPLE].map(closed)
    rag, base = rag[base.notna()], base[base.notna()].astype(float)
    score = rag[SCORE].astype(float)
    return rag, np.maximum(score, base) - score


def _gain_estimate(
    spec: MetricSpec, rows: pd.DataFrame, ctx: EstimationContext, job_rows: pd.DataFrame | None = None
) -> Estimate | None:
    rag, gain = _gain_rows(rows)
    return None if rag.empty else mean_of(rag, gain, ctx)


@register_metric(
    "perfect_ndr_gain",
    higher_is_better=False,
    estimator=_gain_estimate,
    rests_on=("ndr",),  # 0 by construction where closed-book accuracy is 0
)
def perfect_ndr_gain(df: pd.DataFrame) -> float:
    """Cao Fig. 5's gap between perfect NDR and actual performance: the mean over k > 0 rows of
    ``max(f(q, k, o), f(q, 0)) - f(q, k, o)`` (:func:`rr.analysis.cao.perfect_ndr_curve`'s rule)."""
    rag, gain = _gain_rows(df)
    if rag.empty:
        raise MetricUndefinedError("perfect_ndr_gain: no k > 0 rows with a closed-book row")
    return float(gain.mean())


def robustness_table(
    df: pd.DataFrame,
    by: Sequence[str] | str = ("generator", "strategy"),
    retriever_col: str = "retriever",
    per_retriever: bool = False,
) -> pd.DataFrame:
    """NDR, RSR, ROR and overall robustness per system, averaged over retrievers (Cao et al. 2025).

    For every group of ``by`` and every retriever other than ``"none"`` among its k > 0 rows, the
    metrics are computed on (that retriever's k > 0 rows) ∪ (the group's k = 0 rows), then
    averaged over retrievers ("for any robustness metric we get the results for both retrievers
    and take the average"). ``by`` must hold every column that distinguishes systems and settings
    in ``df`` (e.g. add ``"dataset"`` or ``"doc_perturbation"`` when the table mixes them);
    otherwise cells are duplicated and a :class:`ValueError` says so.

    Args:
        df: Score table (docs/design.md): ``example_id``, ``k``, ``order``, ``score``, ``retriever_col``
            and the ``by`` columns.
        by: Grouping column(s); ``()`` treats the whole table as one group.
        retriever_col: Column naming the retriever (``"none"`` on closed-book rows).
        per_retriever: Return one row per (``by``..., retriever) instead of averaging.

    Returns:
        One row per group (sorted by ``by``) with columns: the ``by`` columns; ``retriever_col``
        (only when ``per_retriever``); ``ndr``, ``rsr``, ``ror`` (each in [0, 1]; NaN where
        undefined: NDR without k = 0 rows in the group, RSR with fewer than two k);
        ``robustness`` (geometric mean of the three, as Cao et al.'s Fig. 1 "overall
        robustness"; of the averaged values when averaging); ``accuracy`` (mean score of k > 0
        rows, averaged over retrievers); ``closed_book_accuracy`` (mean score of the group's
        k = 0 rows, NaN if none); ``n_examples`` (distinct ``example_id`` in the group, or in the
        retriever's rows ∪ k = 0 rows when ``per_retriever``); ``retrievers`` (comma-joined sorted
        names; only when averaging). A group with only k = 0 rows gets one row with NaN
        metrics (retriever ``"none"`` when ``per_retriever``).

    Raises:
        ValueError: Missing columns, invalid k or scores, k > 0 rows whose retriever is
            ``"none"``, or any malformed group (duplicates, incomplete grid, an example lacking
            its k = 0 row); the message names the group and retriever.
    """
    by_cols = [by] if isinstance(by, str) else list(by)
    # tables concatenated by rr.results.load may repeat index labels; a counterfactual job's k = 0 rows
    # are the baseline of its k > 0 rows (closed_book_joined)
    df = closed_book_joined(df.reset_index(drop=True), by_cols)
    t = _coerce(df, keep=[*by_cols, retriever_col])
    t[retriever_col] = t[retriever_col].astype(str)
    groups = [((), t)] if not by_cols else t.groupby(by_cols, sort=True, dropna=False)

    rows: list[dict] = []
    for key, group in groups:
        key_tuple = key if isinstance(key, tuple) else (key,)
        labels = dict(zip(by_cols, key_tuple, strict=True))
        where = ", ".join(f"{c}={v!r}" for c, v in labels.items()) or "table"
        _check_by_separates_cells(df, group, by_cols, retriever_col, where)
        closed, rag = group.loc[group[K] == 0], group.loc[group[K] > 0]
        cb_acc = float(closed[SCORE].mean()) if len(closed) else math.nan
        if (rag[retriever_col] == NO_RETRIEVER).any():
            raise ValueError(
                f"{where}: {int((rag[retriever_col] == NO_RETRIEVER).sum())} row(s) with k > 0 have "
                f"{retriever_col}={NO_RETRIEVER!r}; only closed-book (k=0) rows may lack a retriever"
            )
        retrievers = sorted(rag[retriever_col].unique())
        per: list[dict] = []
        for r in retrievers:
            mine = rag.loc[rag[retriever_col] == r]
            sub = pd.concat([mine, closed])
            at = f"{where}, {retriever_col}={r!r}"
            values = {name: _or_nan(fn, sub, at) for name, fn in (("ndr", ndr), ("rsr", rsr), ("ror", ror))}
            per.append(
                {
                    **labels,
                    retriever_col: r,
                    **values,
                    "robustness": _geometric_mean(*values.values()),
                    "accuracy": float(mine[SCORE].mean()),
                    "closed_book_accuracy": cb_acc,
                    "n_examples": int(sub[EXAMPLE].nunique()),
                    "n_orders": int(mine[ORDER].nunique()),
                }
            )
        if not per:  # closed-book-only group
            per.append(
                {
                    **labels,
                    retriever_col: NO_RETRIEVER,
                    **dict.fromkeys(("ndr", "rsr", "ror", "robustness", "accuracy"), math.nan),
                    "closed_book_accuracy": cb_acc,
                    "n_examples": int(group[EXAMPLE].nunique()),
                    "n_orders": 0,
                }
            )
        if per_retriever:
            rows.extend(per)
            continue
        avg = {m: float(np.mean([p[m] for p in per])) for m in ("ndr", "rsr", "ror", "accuracy")}
        rows.append(
            {
                **labels,
                "ndr": avg["ndr"],
                "rsr": avg["rsr"],
                "ror": avg["ror"],
                "robustness": _geometric_mean(avg["ndr"], avg["rsr"], avg["ror"]),
                "accuracy": avg["accuracy"],
                "closed_book_accuracy": cb_acc,
                "n_examples": int(group[EXAMPLE].nunique()),
                "n_orders": max(p["n_orders"] for p in per),
                "retrievers": ",".join(retrievers),
            }
        )

    metric_cols = [
        "ndr",
        "rsr",
        "ror",
        "robustness",
        "accuracy",
        "closed_book_accuracy",
        "n_examples",
        "n_orders",
    ]
    columns = (
        [*by_cols, retriever_col, *metric_cols] if per_retriever else [*by_cols, *metric_cols, "retrievers"]
    )
    return pd.DataFrame(rows, columns=columns)


#: What :func:`metric_notes` says of a metric that is undefined or degenerate.
NOTE_NDR_NO_CLOSED_BOOK = "NDR undefined: no closed-book (k = 0) rows to compare with"
NOTE_NDR_TRIVIAL = (
    "NDR degenerate: closed-book accuracy is 0, so every k > 0 cell passes (1 by construction, not a result)"
)
NOTE_RSR_ONE_K = (
    "RSR undefined: one k > 0 (RSR compares each k with the smaller ones; give grid.k two or more)"
)
NOTE_ROR_ONE_ORDER = "ROR degenerate: one document order, so no cell has a spread over orders (1 by construction, not a result)"
NOTE_ALL_ZERO = (
    "RSR and ROR degenerate: every k > 0 cell scores 0, so nothing can change with k or order "
    "(1 by construction, not a result)"
)
NOTE_ROBUSTNESS = "robustness not shown: it combines NDR, RSR and ROR"


def metric_notes(row: dict | pd.Series | MetricRow) -> dict[str, str]:
    """The metrics of one :func:`robustness_table` row that are undefined or degenerate, each with
    the one-line reason to show in place of its value (empty for a closed-book-only row, whose
    robustness metrics do not apply at all).

    * ``ndr``: undefined without k = 0 rows; degenerate when closed-book accuracy is 0 (every score
      is >= 0, so NDR is 1 whatever the system does).
    * ``rsr``: undefined with one k > 0 (NaN in the table); degenerate, with ``ror``, when every k > 0
      cell scores 0 (``accuracy`` 0: nothing can change with k or order).
    * ``ror``: degenerate with one document order (the row's ``n_orders``, where it has one).
    * ``robustness``: not shown when NDR, RSR or ROR is not (it is their geometric mean).

    The report's robustness tables and the paper claims (:mod:`rr.reporting.paper_claims`) both read this
    function, so a metric the table blanks is never the ground of a claim's verdict.
    """

    def value(name: str) -> float:
        v = row.value(name) if isinstance(row, MetricRow) else row.get(name)
        return float(v) if isinstance(v, int | float | np.integer | np.floating) else math.nan

    notes: dict[str, str] = {}
    if math.isnan(value("accuracy")):  # no k > 0 rows: nothing to say per metric
        return notes
    if math.isnan(value("ndr")):
        notes["ndr"] = NOTE_NDR_NO_CLOSED_BOOK
    elif value("closed_book_accuracy") == 0:
        notes["ndr"] = NOTE_NDR_TRIVIAL
    if math.isnan(value("rsr")):
        notes["rsr"] = NOTE_RSR_ONE_K
    elif value("accuracy") == 0:
        notes["rsr"] = NOTE_ALL_ZERO
    if value("n_orders") == 1:
        notes["ror"] = NOTE_ROR_ONE_ORDER
    elif value("accuracy") == 0 and not math.isnan(value("ror")):
        notes["ror"] = NOTE_ALL_ZERO
    if notes:
        notes["robustness"] = NOTE_ROBUSTNESS
    return notes
