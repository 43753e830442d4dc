"""The analyses of Cao et al. (2025), §5 and Appendix A, as pure functions over score tables.

Each function takes a score table (``rr.results.load``) and returns a tidy DataFrame a report
can plot; none draws anything.

=============================  ==============================================  ===============
function                       what                                            paper
=============================  ==============================================  ===============
:func:`performance_by_k`       mean score per k (k = 0: closed-book)            Fig. 13–19
:func:`answer_recall_by_k`     gold-answer recall of the top-k (retrieval.csv)  Fig. 3
:func:`perfect_ndr_curve`      actual vs. perfect-NDR score per k               Fig. 5
:func:`perfect_rsr_curve`      actual vs. perfect-RSR score per k               Fig. 6
:func:`perfect_ror_curve`      each order vs. perfect ROR per k                 Fig. 8
:func:`robustness_vs_performance`  robustness (geo. mean) vs. accuracy          Fig. 1, 4, 9
:func:`robustness_by_order`    geo. mean of NDR and RSR per order               Fig. 7
:func:`robustness_by_dataset`  the metrics per dataset                          Fig. 10–12
=============================  ==============================================  ===============

Averaging. A curve value is the plain mean over the rows of that k (examples × retrievers ×
orders [× datasets when ``dataset`` is not in ``by``]); on the complete grids a job produces,
that equals the paper's "averaged across datasets, retrievers, and document orders" (equal
weight per dataset when datasets have the same number of examples, as the paper's 500 each).

Oracles (§5.2–5.4), per example ``q``, retriever ``r`` and order ``o``:

* perfect NDR: ``max(f(q, k, o), f(q, 0))`` (at least as good as closed-book);
* perfect RSR: ``max_{k' <= k} f(q, k', o)`` over the grid's k > 0 only ("only answers produced
  by RAG (i.e., k > 0) are considered");
* perfect ROR: ``max_o f(q, k, o)`` (the best order per example and k).

Rows are identified by :data:`UNIT` columns (those present); a table with two rows for the same
(``by``, unit, retriever, k, order) is an error, never silently averaged: add the column that
distinguishes them to ``by``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rr.jobfolder import RETRIEVAL_FILE, SCORES_FILE
from rr.metrics.robustness import robustness_table
from rr.results import CELL_KEYS

#: Columns that, with ``example_id``, identify one question of one setting (when present).
UNIT = ("dataset", "query_perturbation", "doc_perturbation", "example_id")
BY = ("generator", "strategy")


def _cols(by: Sequence[str] | str) -> list[str]:
    return [by] if isinstance(by, str) else list(by)


def _unit(df: pd.DataFrame, by: list[str]) -> list[str]:
    return [c for c in UNIT if c in df.columns and c not in by]


def _check(df: pd.DataFrame, by: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """Validated copy (k int, score float) and the unit columns; duplicates are an error."""
    need = [*by, "example_id", *CELL_KEYS, "score"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"score table lacks column(s) {missing} (has {list(df.columns)})")
    t = df.copy()
    t["k"] = pd.to_numeric(t["k"]).astype(int)
    t["score"] = pd.to_numeric(t["score"]).astype(float)
    unit = _unit(t, by)
    key = [*by, *unit, *CELL_KEYS]
    dup = t.duplicated(key, keep=False)
    if dup.any():
        raise ValueError(
            f"{int(dup.sum())} rows share a cell {key}, e.g. {t.loc[dup, key].iloc[0].to_dict()}; "
            "group by the column that distinguishes them (by=[...])"
        )
    return t, unit


def performance_by_k(
    df: pd.DataFrame, by: Sequence[str] | str = BY, include_closed_book: bool = True
) -> pd.DataFrame:
    """Mean score per k (Fig. 13; add ``dataset`` / ``retriever`` / ``order`` to ``by`` for Fig. 14–19).

    Args:
        df: Score table.
        by: Columns kept apart (everything else is averaged over).
        include_closed_book: Add the k = 0 point (closed-book rows); with ``retriever`` or
            ``order`` in ``by`` the k = 0 point is repeated for each of their values.

    Returns:
        Columns ``[*by, k, score, n]`` (``n`` rows averaged), sorted by ``by`` and k.
    """
    by_cols = _cols(by)
    t, _ = _check(df, by_cols)
    split = [c for c in by_cols if c in ("retriever", "order")]
    rag = t[t["k"] > 0]
    parts = [rag]
    if include_closed_book and (t["k"] == 0).any():
        closed = t[t["k"] == 0]
        if split:
            keep = [c for c in by_cols if c not in split]
            combos = rag[[*keep, *split]].drop_duplicates()
            closed = (
                closed.drop(columns=split).merge(combos, on=keep, how="inner")
                if keep
                else closed.drop(columns=split).merge(combos, how="cross")
            )
        parts.append(closed)
    t = pd.concat(parts, ignore_index=True)
    out = t.groupby([*by_cols, "k"], sort=True)["score"].agg(score="mean", n="size").reset_index()
    return out


def answer_recall_by_k(paths: Iterable[str | Path] | str | Path) -> pd.DataFrame:
    """Gold-answer recall of the concatenated top-k documents (Fig. 3), from jobs' ``retrieval.csv``.

    Args:
        paths: Job folders, sweep folders (searched recursively) or ``retrieval.csv`` files.

    Returns:
        Columns ``[dataset, retriever, query_perturbation, k, answer_recall]``: the dataset is
        read from the ``dataset`` column of the job's ``scores.parquet`` (``unknown`` without one). Jobs of several models share their retrieval, so identical
        (dataset, retriever, perturbation, k) rows are merged (mean; they are equal).

    Raises:
        FileNotFoundError: No ``retrieval.csv`` found.
    """
    items = [paths] if isinstance(paths, (str, Path)) else list(paths)
    files: list[Path] = []
    for item in items:
        p = Path(item)
        files.extend(sorted(p.rglob(RETRIEVAL_FILE)) if p.is_dir() else [p])
    files = [f for f in dict.fromkeys(files) if f.is_file()]
    if not files:
        raise FileNotFoundError(f"no retrieval.csv under {paths!r}")
    frames = []
    for f in files:
        t = pd.read_csv(f)
        if t.empty:
            continue
        dataset = "unknown"
        scores_file = f.parent / SCORES_FILE
        if scores_file.exists():
            names = pd.read_parquet(scores_file, columns=["dataset"])["dataset"].unique()
            dataset = ",".join(sorted(str(n) for n in names)) or "unknown"
        frames.append(t.assign(dataset=dataset))
    if not frames:
        return pd.DataFrame(columns=["dataset", "retriever", "query_perturbation", "k", "answer_recall"])
    t = pd.concat(frames, ignore_index=True)
    if "query_perturbation" not in t.columns:
        t["query_perturbation"] = "none"
    return (
        t.groupby(["dataset", "retriever", "query_perturbation", "k"], sort=True)["answer_recall"]
        .mean()
        .reset_index()
    )


def _curve(t: pd.DataFrame, by: list[str], value: str, setup: str) -> pd.DataFrame:
    out = t.groupby([*by, "k"], sort=True)[value].agg(score="mean", n="size").reset_index()
    out.insert(len(by) + 1, "setup", setup)
    return out


def perfect_ndr_curve(df: pd.DataFrame, by: Sequence[str] | str = BY) -> pd.DataFrame:
    """Actual vs. perfect-NDR task performance per k (Fig. 5).

    Perfect NDR replaces every f(q, k, o) by ``max(f(q, k, o), f(q, 0))``. The k = 0 point
    (closed-book score) is the same for both setups.

    Returns:
        Long format ``[*by, k, setup, score, n]`` with ``setup`` in ``actual`` / ``perfect_ndr``.

    Raises:
        ValueError: Missing columns, duplicate cells, or an example without its k = 0 row.
    """
    by_cols = _cols(by)
    t, unit = _check(df, by_cols)
    closed = t[t["k"] == 0][[*by_cols, *unit, "score"]].rename(columns={"score": "closed"})
    rag = t[t["k"] > 0].merge(closed, on=[*by_cols, *unit], how="left")
    if rag["closed"].isna().any():
        row = rag.loc[rag["closed"].isna()].iloc[0]
        raise ValueError(
            f"example {row['example_id']!r} has no closed-book (k=0) row; perfect NDR compares with f(q, 0)"
        )
    rag["perfect"] = np.maximum(rag["score"], rag["closed"])
    cb = t[t["k"] == 0]
    return pd.concat(
        [
            _curve(cb, by_cols, "score", "actual"),
            _curve(cb, by_cols, "score", "perfect_ndr"),
            _curve(rag, by_cols, "score", "actual"),
            _curve(rag, by_cols, "perfect", "perfect_ndr"),
        ],
        ignore_index=True,
    ).sort_values([*by_cols, "setup", "k"], ignore_index=True)


def perfect_rsr_curve(df: pd.DataFrame, by: Sequence[str] | str = BY) -> pd.DataFrame:
    """Actual vs. perfect-RSR task performance per k > 0 (Fig. 6).

    Perfect RSR replaces f(q, k, o) by the best score among the current and all smaller k > 0 of
    the grid, same example, retriever and order. k = 0 rows are ignored.

    Returns:
        Long format ``[*by, k, setup, score, n]`` with ``setup`` in ``actual`` / ``perfect_rsr``.
    """
    by_cols = _cols(by)
    t, unit = _check(df, by_cols)
    rag = t[t["k"] > 0].sort_values("k")
    rag["perfect"] = rag.groupby([*by_cols, *unit, "retriever", "order"], sort=False)["score"].cummax()
    return pd.concat(
        [_curve(rag, by_cols, "score", "actual"), _curve(rag, by_cols, "perfect", "perfect_rsr")],
        ignore_index=True,
    ).sort_values([*by_cols, "setup", "k"], ignore_index=True)


def perfect_ror_curve(df: pd.DataFrame, by: Sequence[str] | str = BY) -> pd.DataFrame:
    """Each order's task performance vs. perfect ROR per k > 0 (Fig. 8).

    Perfect ROR takes, per example, retriever and k, the best score over the orders.

    Returns:
        Long format ``[*by, k, setup, score, n]`` with ``setup`` = each order's name and
        ``perfect_ror`` (whose ``n`` counts (example, retriever, k) triples).
    """
    by_cols = _cols(by)
    t, unit = _check(df, by_cols)
    rag = t[t["k"] > 0]
    best = rag.groupby([*by_cols, *unit, "retriever", "k"], sort=False)["score"].max().reset_index()
    per_order = [
        _curve(rag[rag["order"] == o], by_cols, "score", str(o)) for o in sorted(rag["order"].unique())
    ]
    return pd.concat(
        [*per_order, _curve(best, by_cols, "score", "perfect_ror")], ignore_index=True
    ).sort_values([*by_cols, "setup", "k"], ignore_index=True)


def robustness_vs_performance(df: pd.DataFrame, by: Sequence[str] | str = BY) -> pd.DataFrame:
    """Overall robustness vs. task performance per system (Fig. 1, 4, 9).

    Returns:
        :func:`rr.metrics.robustness.robustness_table` (``ndr``, ``rsr``, ``ror``, ``robustness``
        = their geometric mean, ``accuracy`` = mean over k > 0, ...) plus ``max_accuracy``: the
        best mean score over the k > 0 of the grid (Fig. 9's bar: "the maximum performance across
        retrieval sizes"), with the mean over retrievers and orders at each k.
    """
    by_cols = _cols(by)
    table = robustness_table(df, by=by_cols)
    perf = performance_by_k(df, by=by_cols, include_closed_book=False)
    best = perf.groupby(by_cols, sort=True)["score"].max().rename("max_accuracy").reset_index()
    return table.merge(best, on=by_cols, how="left")


def robustness_by_order(df: pd.DataFrame, by: Sequence[str] | str = BY) -> pd.DataFrame:
    """Robustness per document order (Fig. 7): geometric mean of NDR and RSR, and accuracy.

    ROR is undefined within one order, so the figure's robustness is ``sqrt(NDR * RSR)`` of that
    order's k > 0 rows (with the k = 0 rows), averaged over retrievers as the paper does.

    Returns:
        Columns ``[*by, order, ndr, rsr, robustness, accuracy, n_examples]``.
    """
    by_cols = _cols(by)
    t, _ = _check(df, by_cols)
    closed = t[t["k"] == 0]
    rows = []
    for order in sorted(t.loc[t["k"] > 0, "order"].unique()):
        sub = pd.concat([t[(t["k"] > 0) & (t["order"] == order)], closed], ignore_index=True)
        tab = robustness_table(sub, by=by_cols)
        tab.insert(len(by_cols), "order", order)
        tab["robustness"] = [
            math.sqrt(a * b) if not (math.isnan(a) or math.isnan(b)) else math.nan
            for a, b in zip(tab["ndr"], tab["rsr"], strict=True)
        ]
        rows.append(tab[[*by_cols, "order", "ndr", "rsr", "robustness", "accuracy", "n_examples"]])
    return pd.concat(rows, ignore_index=True).sort_values([*by_cols, "order"], ignore_index=True)


def robustness_by_dataset(df: pd.DataFrame, by: Sequence[str] | str = BY) -> pd.DataFrame:
    """The three metrics, robustness and accuracy per dataset (Fig. 10–12)."""
    by_cols = _cols(by)
    if "dataset" not in df.columns:
        raise ValueError("score table has no 'dataset' column")
    return robustness_table(df, by=[*by_cols, "dataset"])
