"""SURE's instance-level robustness metrics (§3.6): Robustness, Win and Lose Rate.

For every instance (an example in a cell with k > 0) answered once with the original documents
(``doc_perturbation == "none"``) and once with perturbed ones, ``C = Y(y) - Y(ŷ)`` where
``Y`` is correctness (``score >= threshold``; 1/0 for NQ-style string match). Then

* **RR** (eq. 5) = share of instances with ``C = 0`` (correctness unchanged),
* **WR** = share with ``C = -1`` (wrong -> right after the perturbation),
* **LR** = share with ``C = 1`` (right -> wrong),

overall (``Total``) and per subset (§3.5): **K**nown / **U**nknown queries by the model's
closed-book correctness (its k = 0 row), **G**olden / **N**oise grounding data by whether the
original documents contain a gold answer string (the score table's ``answer_in_docs``).

The original and perturbed rows may come from different jobs of a sweep
(``perturbation/doc=none,format_json,...``); :func:`rr.results.load` concatenates them.
Pairs are matched on the example and the cell (see :data:`PAIR_KEYS`). A perturbed row without
its original is an error; an original without a perturbed row (SURE's causal-feature filter
dropped the pair) is simply not an instance of that perturbation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rr.metrics.registry import Estimate, EstimationContext, MetricSpec, describe_metric, mean_of
from rr.metrics.robustness import MetricUndefinedError
from rr.results import CELL_KEYS

#: Columns identifying an instance (those present in the table are used): the system, the cell
#: (:data:`rr.results.CELL_KEYS`), the query perturbation, seed and example; not
#: ``doc_perturbation``, which is what an original and a perturbed row of a pair differ in.
PAIR_KEYS = ("dataset", "generator", "strategy", *CELL_KEYS, "query_perturbation", "seed", "example_id")
#: Columns identifying a closed-book answer (the Known / Unknown label).
KNOWN_KEYS = ("dataset", "generator", "strategy", "query_perturbation", "seed", "example_id")
SUBSETS = ("K-G", "K-N", "U-G", "U-N")
#: SURE's rates (their specs' columns) -> the change of correctness C = Y(original) - Y(perturbed) each is
#: the share of.
RATES = {"LR": 1, "RR": 0, "WR": -1}


def _keys(df: pd.DataFrame, candidates: Sequence[str]) -> list[str]:
    return [c for c in candidates if c in df.columns]


def _describe(row: pd.Series, keys: Sequence[str]) -> str:
    return ", ".join(f"{k}={row[k]!r}" for k in keys)


def instance_pairs(df: pd.DataFrame, threshold: float = 1.0, subsets: bool = True) -> pd.DataFrame:
    """One row per (instance, perturbation): the original and perturbed correctness and ``C``.

    Args:
        df: A score table with ``example_id``, ``k``, ``doc_perturbation``, ``score`` (and, for
            subsets, ``answer_in_docs`` and the k = 0 closed-book rows).
        threshold: A row is correct when ``score >= threshold``.
        subsets: Label each instance K-G / K-N / U-G / U-N (needs the closed-book rows).

    Returns:
        Columns: the pair keys, ``doc_perturbation``, ``y_original``, ``y_perturbed`` (0/1),
        ``C`` (-1/0/1) and, with ``subsets``, ``known``, ``golden``, ``subset``.

    Raises:
        ValueError: missing columns, scores outside [0, 1], duplicate rows for an instance, a
            perturbed row without its original, or (with ``subsets``) an instance whose example
            lacks its closed-book row or whose closed-book rows disagree.
        MetricUndefinedError: no original or no perturbed rows with k > 0.
    """
    need = ["example_id", "k", "doc_perturbation", "score"] + (["answer_in_docs"] if subsets else [])
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise ValueError(f"score table is missing column(s) {missing}")
    scores = df["score"].astype(float)
    if (~scores.between(0.0, 1.0)).any():
        raise ValueError("score(s) outside [0, 1] or missing")
    df = df.assign(_y=(scores >= threshold).astype(int))
    keys = _keys(df, PAIR_KEYS)
    rag = df[df["k"] > 0]
    original = rag[rag["doc_perturbation"] == "none"]
    perturbed = rag[rag["doc_perturbation"] != "none"]
    if original.empty or perturbed.empty:
        raise MetricUndefinedError(
            "robustness rates need rows with doc_perturbation == 'none' and perturbed rows (k > 0); "
            f"the table has doc_perturbation {sorted(df['doc_perturbation'].unique())}"
        )
    for name, part, by in (
        ("original", original, keys),
        ("perturbed", perturbed, [*keys, "doc_perturbation"]),
    ):
        dup = part[part.duplicated(by, keep=False)]
        if len(dup):
            raise ValueError(
                f"duplicate {name} rows for ({_describe(dup.iloc[0], by)}): load one job per "
                "(system, perturbation) or filter the table first"
            )
    cols = [*keys, "_y"] + (["answer_in_docs"] if subsets else [])
    pairs = perturbed[[*keys, "doc_perturbation", "_y"]].merge(
        original[cols], on=keys, how="left", suffixes=("_p", "_o"), indicator=True
    )
    orphan = pairs[pairs["_merge"] != "both"]
    if len(orphan):
        raise ValueError(
            f"{len(orphan)} perturbed row(s) have no original (doc_perturbation='none') row, e.g. "
            f"({_describe(orphan.iloc[0], [*keys, 'doc_perturbation'])}); load the 'none' job too"
        )
    out = pairs.drop(columns="_merge").rename(columns={"_y_o": "y_original", "_y_p": "y_perturbed"})
    out["C"] = out["y_original"] - out["y_perturbed"]
    if subsets:
        out = _label_subsets(out, df)
    return out.reset_index(drop=True)


def _label_subsets(pairs: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    kkeys = _keys(df, KNOWN_KEYS)
    closed = df[df["k"] == 0][[*kkeys, "_y"]]
    conflict = closed.groupby(kkeys)["_y"].nunique()
    if (conflict > 1).any():
        bad = conflict[conflict > 1].index[0]
        raise ValueError(f"closed-book (k=0) rows disagree on correctness for ({', '.join(kkeys)}) = {bad!r}")
    known = closed.drop_duplicates(kkeys).rename(columns={"_y": "known"})
    out = pairs.merge(known, on=kkeys, how="left")
    lacking = out[out["known"].isna()]
    if len(lacking):
        raise ValueError(
            f"example {lacking.iloc[0]['example_id']!r} lacks its closed-book (k=0) row, needed for the "
            "Known/Unknown subsets (add grid.closed_book=true, or pass subsets=False)"
        )
    out["known"] = out["known"].astype(bool)
    out["golden"] = out.pop("answer_in_docs").astype(bool)
    out["subset"] = np.where(out["known"], "K", "U") + np.char.add("-", np.where(out["golden"], "G", "N"))
    return out


def rates(c: pd.Series) -> dict[str, float]:
    """LR, RR, WR (shares of ``C == 1``, ``0``, ``-1``) and ``n`` of a series of ``C`` values."""
    n = len(c)
    return {**{r: float((c == v).mean()) if n else float("nan") for r, v in RATES.items()}, "n": n}


def robustness_rates(
    df: pd.DataFrame,
    by: Sequence[str] = (),
    threshold: float = 1.0,
    subsets: bool = True,
    percent: bool = False,
) -> pd.DataFrame:
    """SURE Table 2: LR / RR / WR per perturbation, per subset and in total.

    Args:
        df: A score table with original (``doc_perturbation == "none"``) and perturbed rows for
            the same (example, cell), plus the closed-book (k = 0) rows for the subsets.
        by: Extra grouping columns put before ``doc_perturbation`` in the index (e.g.
            ``["generator"]`` for a table per model).
        threshold: A row is correct when ``score >= threshold``.
        subsets: Include the K-G, K-N, U-G, U-N column blocks (else only ``Total``).
        percent: Rates in percent (as printed in the paper) instead of fractions.

    Returns:
        Index ``[*by, "doc_perturbation"]``; columns a two-level index ``(subset, metric)`` with
        subsets ``K-G, K-N, U-G, U-N, Total`` and metrics ``LR, RR, WR, n``. A subset without
        instances has NaN rates and ``n = 0``. LR + RR + WR = 1 wherever ``n > 0``.

    Raises:
        ValueError / MetricUndefinedError: see :func:`instance_pairs`.
    """
    pairs = instance_pairs(df, threshold=threshold, subsets=subsets)
    missing = [c for c in by if c not in pairs.columns]
    if missing:
        raise ValueError(f"cannot group by {missing}: not pair keys of the table")
    index = [*by, "doc_perturbation"]
    blocks = [*(SUBSETS if subsets else ()), "Total"]
    records = []
    for group, part in pairs.groupby(index, sort=True):
        values = group if isinstance(group, tuple) else (group,)
        row: dict[tuple[str, str] | str, object] = dict(zip(index, values, strict=True))
        for block in blocks:
            sel = part if block == "Total" else part[part["subset"] == block]
            for metric, value in rates(sel["C"]).items():
                scale = 100.0 if percent and metric != "n" else 1.0
                row[(block, metric)] = value * scale
        records.append(row)
    table = pd.DataFrame.from_records(records).set_index(index)
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["subset", "metric"])
    return table


def rate_estimate(
    spec: MetricSpec,
    rows: pd.DataFrame,
    ctx: EstimationContext,
    job_rows: pd.DataFrame | None = None,
    perturbation: str = "",
    subset: str = "Total",
) -> Estimate | None:
    """The estimator of SURE's LR / RR / WR of one perturbation (``perturbation``, a tag such as
    ``style:simple``) in one subset (``K-G`` ... ``Total``): :func:`instance_pairs` of the unperturbed
    and the perturbed rows, the share of instances whose correctness C is 1 / 0 / -1."""
    assert spec.column is not None
    want = RATES[spec.column]
    part = rows[rows["doc_perturbation"].astype(str).isin(["none", perturbation])]
    if not (part["doc_perturbation"] == perturbation).any():
        return None
    try:
        pairs = instance_pairs(part, subsets=subset != "Total")
    except ValueError:  # incl. MetricUndefinedError
        return None
    if subset != "Total":
        pairs = pairs[pairs["subset"] == subset]
    if pairs.empty:
        return None
    return mean_of(pairs, (pairs["C"] == want), ctx)


for _rate, _what, _better in (
    ("LR", "LR: the share of instances whose correctness rises with the perturbation (C = 1)", None),
    ("RR", "RR: the share of instances whose correctness the perturbation leaves unchanged (C = 0)", True),
    ("WR", "WR: the share of instances whose correctness falls with the perturbation (C = -1)", False),
):
    describe_metric(
        MetricSpec(
            name=f"sure_{_rate.lower()}",
            measures=_what + " (instance_pairs of the unperturbed and the perturbed rows)",
            higher_is_better=_better,
            printed_as=(f"sure2025: {_rate} (Tables 2, 6)",),
            section="sure_robustness_rates",
            column=_rate,
            estimator=rate_estimate,
        )
    )
