"""Flips: the examples and cells each metric counts against a system, one row per failed comparison.

A metric over the score table is a mean over comparisons (NDR, RSR), terms (ROR) or paired
instances (SURE's rates, McNemar's discordant pairs). The functions here return the comparisons
that *fail*, with the example and cell they belong to, by calling the metrics' own
decompositions, so a flip is exactly what lowers the metric:

* ``ndr``: a ``(q, k > 0, o)`` with ``f(q, k, o) < f(q, 0)`` (:func:`~rr.metrics.robustness.ndr_comparisons`);
* ``rsr``: a ``(q, k_i, o)`` worse than some smaller k in the same order
  (:func:`~rr.metrics.robustness.rsr_comparisons`);
* ``ror``: a ``(q, k > 0)`` whose orders' scores differ, i.e. ROR's term ``1 - 2 sigma`` is
  below 1 (:func:`~rr.metrics.robustness.ror_terms`); every order of that cell is listed;
* ``doc``: a SURE instance (example, k > 0 cell) whose correctness changes when the documents
  are perturbed, ``C != 0`` (:func:`~rr.metrics.spurious.instance_pairs`: LR and WR instances);
* ``query``: a perturbed query's row whose correctness differs from its original query's row
  in the same cell (k = 0 included), the per-sample change the query-level analysis correlates
  (:func:`rr.metrics.query_level.module_deltas`), thresholded as SURE does;
* McNemar: the cells where one system is right and another wrong on the same example
  (:func:`discordant_cells`; the off-diagonal counts of :func:`rr.stats.mcnemar_exact`).

NDR, RSR and ROR are computed per retriever on one system's rows as
:func:`~rr.metrics.robustness.robustness_table` does (that retriever's k > 0 rows with the
system's k = 0 rows).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from rr.metrics.robustness import (
    NO_RETRIEVER,
    TIE_TOLERANCE,
    MetricUndefinedError,
    ndr_comparisons,
    ror_terms,
    rsr_comparisons,
)
from rr.metrics.spurious import instance_pairs
from rr.results import CELL_KEYS

#: Flip kinds, in the order the site lists them.
KINDS = ("ndr", "rsr", "ror", "query", "doc")
#: Columns of a flip row.
FLIP_COLUMNS = ("example_id", "retriever", "k", "order", "kind")
#: Columns that pair a perturbed query's row with its original's: everything that places the row
#: but ``query_perturbation`` (the judge too: two judges' verdicts are not a perturbation's effect).
QUERY_PAIR_KEYS = (
    "dataset",
    "generator",
    "strategy",
    "judge",
    *CELL_KEYS,
    "doc_perturbation",
    "seed",
    "example_id",
)


def robustness_flips(group: pd.DataFrame, retriever_col: str = "retriever") -> pd.DataFrame:
    """The failed NDR / RSR / ROR comparisons of one system's rows.

    Args:
        group: Score rows of one system and setting (k = 0 rows and k > 0 rows of any
            retrievers), a valid table for :func:`~rr.metrics.robustness.robustness_table`.
        retriever_col: Retriever column.

    Returns:
        Columns :data:`FLIP_COLUMNS` (``retriever`` from ``retriever_col``), one row per failed
        comparison (``kind`` ``ndr``, ``rsr`` or ``ror``; a ROR flip once per order of its cell).
        A metric undefined for the rows (no k = 0 rows for NDR, one k for RSR) has no flips.

    Raises:
        ValueError: The rows are not a valid table for the metrics (duplicates, incomplete grid).
    """
    parts: list[pd.DataFrame] = []
    g = group.reset_index(drop=True)
    k_int = pd.to_numeric(g["k"])
    closed = g.loc[k_int == 0]
    rag = g.loc[k_int > 0]
    for retriever, mine in rag.groupby(rag[retriever_col].astype(str), sort=True):
        if retriever == NO_RETRIEVER:
            continue
        sub = pd.concat([mine, closed])
        for kind, fn in (("ndr", ndr_comparisons), ("rsr", rsr_comparisons)):
            try:
                cmp = fn(sub)
            except MetricUndefinedError:
                continue
            failed = cmp.loc[~cmp["passes"], ["example_id", "k", "order"]]
            parts.append(failed.assign(retriever=retriever, kind=kind))
        try:
            terms = ror_terms(sub)
        except MetricUndefinedError:
            continue
        spread = terms.loc[terms["term"] < 1.0 - TIE_TOLERANCE, ["example_id", "k"]]
        if len(spread):
            cells = mine[["example_id", "k", "order"]].assign(k=lambda d: pd.to_numeric(d["k"]).astype(int))
            cells = cells.assign(order=cells["order"].astype(str))
            hit = cells.merge(spread, on=["example_id", "k"], how="inner")
            parts.append(hit.assign(retriever=retriever, kind="ror"))
    if not parts:
        return pd.DataFrame(columns=list(FLIP_COLUMNS))
    out = pd.concat(parts, ignore_index=True)
    return out.assign(k=out["k"].astype(int), order=out["order"].astype(str))[list(FLIP_COLUMNS)]


def doc_perturbation_flips(df: pd.DataFrame, threshold: float = 1.0) -> pd.DataFrame:
    """SURE instances whose correctness changes under a document perturbation (``C != 0``).

    Args:
        df: Score table with original (``doc_perturbation == "none"``) and perturbed rows of the
            same (example, k > 0 cell); see :func:`~rr.metrics.spurious.instance_pairs`.
        threshold: A row is correct when ``score >= threshold``.

    Returns:
        :func:`~rr.metrics.spurious.instance_pairs`' rows with ``C != 0`` (``C = 1``: right with
        the original documents, wrong with the perturbed ones, SURE's LR; ``-1``: WR). Empty
        when the table has no such pairs.

    Raises:
        ValueError: As :func:`~rr.metrics.spurious.instance_pairs` (duplicates, orphans).
    """
    try:
        pairs = instance_pairs(df, threshold=threshold, subsets=False)
    except MetricUndefinedError:
        return pd.DataFrame(
            columns=["example_id", *CELL_KEYS, "doc_perturbation", "y_original", "y_perturbed", "C"]
        )
    return pairs.loc[pairs["C"] != 0].reset_index(drop=True)


def query_perturbation_flips(df: pd.DataFrame, threshold: float = 1.0) -> pd.DataFrame:
    """Perturbed queries' rows whose correctness differs from their original query's in the same cell.

    Args:
        df: Score table with original (``query_perturbation == "none"``) and perturbed rows.
        threshold: A row is correct when ``score >= threshold``.

    Returns:
        One row per flipped (perturbed row, original row) pair: the pair keys
        (:data:`QUERY_PAIR_KEYS` present in ``df``), ``query_perturbation`` (the perturbed tag),
        ``y_original``, ``y_perturbed`` (0/1) and ``C = y_original - y_perturbed`` (1: the
        perturbation broke a right answer, -1: it fixed a wrong one). A perturbed row without
        an original is not paired.

    Raises:
        ValueError: Missing columns, or several original rows for one pair key.
    """
    need = ["example_id", "k", "query_perturbation", "score"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"score table is missing column(s) {missing}")
    keys = [c for c in QUERY_PAIR_KEYS if c in df.columns]
    y = (df["score"].astype(float) >= threshold).astype(int)
    t = df[[*keys, "query_perturbation"]].assign(_y=y)
    original = t.loc[t["query_perturbation"] == "none"]
    perturbed = t.loc[t["query_perturbation"] != "none"]
    if original.empty or perturbed.empty:
        return pd.DataFrame(columns=[*keys, "query_perturbation", "y_original", "y_perturbed", "C"])
    dup = original.duplicated(keys, keep=False)
    if dup.any():
        row = original.loc[dup].iloc[0]
        raise ValueError(
            "several original-query rows for ("
            + ", ".join(f"{k}={row[k]!r}" for k in keys)
            + "): load one job per (system, perturbation) or filter the table first"
        )
    pairs = perturbed.merge(original.drop(columns="query_perturbation"), on=keys, suffixes=("_p", "_o"))
    pairs = pairs.rename(columns={"_y_o": "y_original", "_y_p": "y_perturbed"})
    pairs["C"] = pairs["y_original"] - pairs["y_perturbed"]
    return pairs.loc[pairs["C"] != 0].reset_index(drop=True)


def discordant_cells(
    a: pd.DataFrame, b: pd.DataFrame, threshold: float = 1.0, cell: Sequence[str] = CELL_KEYS
) -> pd.DataFrame:
    """The (example, cell)s where exactly one of two systems is right: McNemar's discordant pairs.

    Args:
        a: System A's score rows (one per example and cell).
        b: System B's rows.
        threshold: A row is right when ``score >= threshold`` (McNemar needs 0/1 verdicts).
        cell: Columns placing a row in its grid.

    Returns:
        Columns ``example_id``, the ``cell`` columns, ``a_right`` (True: A right and B wrong,
        ``n10`` of :func:`rr.stats.mcnemar_exact` at that cell; False: ``n01``), over the
        examples and cells both systems have.
    """
    on = ["example_id", *cell]
    ya = a[on].assign(_a=a["score"].astype(float) >= threshold).drop_duplicates(on)
    yb = b[on].assign(_b=b["score"].astype(float) >= threshold).drop_duplicates(on)
    m = ya.merge(yb, on=on)
    m = m.loc[m["_a"] != m["_b"]]
    return m[on].assign(a_right=m["_a"].to_numpy()).reset_index(drop=True)
