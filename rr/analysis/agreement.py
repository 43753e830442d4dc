"""Agreement between two judges over the same predictions (Cao et al. 2025, §4.1 footnote 2).

Cao et al. report that GPT-4o and Llama-3.3-70B-Instruct "agree at 93% of time" on 2,000
samples. :func:`judge_agreement` computes that raw agreement and Cohen's kappa
(:func:`sklearn.metrics.cohen_kappa_score`) between the ``score`` columns of two score tables
judged by different judges over the same rows.

Rows are paired on the cell key :data:`ROW_KEY` (the columns of it present in both tables). Scores
are compared as categories (rounded to 6 decimals): 0/1 for NQ-style data, and the group
fractions (0, 1/3, ...) for ASQA-style data, so two judges agree on a row only when they give
exactly the same score. Paired rows must hold the same prediction (otherwise the judges did not
see the same thing); rows present in only one table are counted, not silently dropped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from rr.data.base import DataError
from rr.results import CELL_KEYS

#: Columns identifying one judged row (those present in both tables are used): the system, the
#: cell (:data:`rr.results.CELL_KEYS`), its perturbations and the example.
ROW_KEY = (
    "dataset",
    "generator",
    "strategy",
    *CELL_KEYS,
    "query_perturbation",
    "doc_perturbation",
    "example_id",
)


def _kappa(a: pd.Series, b: pd.Series) -> float:
    from sklearn.metrics import cohen_kappa_score

    labels = sorted(set(a) | set(b))
    if len(labels) < 2:  # both judges gave one and the same score everywhere: kappa is 0/0
        return math.nan
    return float(cohen_kappa_score(a, b, labels=labels))


def pair_scores(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, int]]:
    """Pair the rows of two score tables on :data:`ROW_KEY`.

    Returns:
        The paired rows (the key columns, ``score_a``, ``score_b``) and counts
        ``{"only_a": ..., "only_b": ...}`` of unpaired rows.

    Raises:
        ValueError: A table lacks ``example_id``/``score``, a key repeats within a table, or
            paired rows hold different predictions.
    """
    for name, t in (("A", a), ("B", b)):
        for col in ("example_id", "score"):
            if col not in t.columns:
                raise DataError(f"score table {name} has no {col!r} column")
    key = [c for c in ROW_KEY if c in a.columns and c in b.columns]
    for name, t in (("A", a), ("B", b)):
        dup = t.duplicated(key, keep=False)
        if dup.any():
            raise DataError(
                f"score table {name} has {int(dup.sum())} rows sharing a key {key} "
                f"(e.g. {t.loc[dup, key].iloc[0].to_dict()}); load one judge's tables per side"
            )
    cols_a = [*key, "score"] + (["prediction"] if "prediction" in a.columns else [])
    cols_b = [*key, "score"] + (["prediction"] if "prediction" in b.columns else [])
    merged = a[cols_a].merge(b[cols_b], on=key, how="outer", suffixes=("_a", "_b"), indicator=True)
    only_a = int((merged["_merge"] == "left_only").sum())
    only_b = int((merged["_merge"] == "right_only").sum())
    both = merged[merged["_merge"] == "both"].drop(columns="_merge")
    if "prediction_a" in both.columns and "prediction_b" in both.columns:
        differ = both["prediction_a"].astype(str) != both["prediction_b"].astype(str)
        if differ.any():
            row = both.loc[differ].iloc[0]
            raise DataError(
                f"{int(differ.sum())} paired rows hold different predictions, e.g. {row[key].to_dict()}: "
                f"{row['prediction_a']!r} vs {row['prediction_b']!r}; compare judges over the same outputs"
            )
        both = both.drop(columns=["prediction_a", "prediction_b"])
    return both.reset_index(drop=True), {"only_a": only_a, "only_b": only_b}


def judge_agreement(a: pd.DataFrame, b: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """Raw agreement and Cohen's kappa between two judges' scores over the same rows.

    Args:
        a: Score table judged by judge A.
        b: Score table of the same runs judged by judge B.
        by: Optional key columns to break the agreement down by (e.g. ``["dataset"]``).

    Returns:
        One row per group (one row for the whole table when ``by`` is empty) with ``n`` (paired
        rows), ``agreement`` (fraction with equal scores), ``kappa`` (Cohen's kappa over the score
        categories; NaN when both judges used a single category), ``mean_score_a``,
        ``mean_score_b``, and (whole-table rows only) ``only_a`` / ``only_b`` unpaired counts.

    Raises:
        ValueError: See :func:`pair_scores`; also when no row pairs up.
    """
    paired, unpaired = pair_scores(a, b)
    if paired.empty:
        raise DataError(
            f"no rows pair up between the two tables ({unpaired['only_a']} only in A, "
            f"{unpaired['only_b']} only in B): rows pair on {', '.join(ROW_KEY)}, so give two judges' "
            "scores of the same jobs (the same run with judge=... changed)"
        )
    # integer categories (sklearn rejects float labels as "continuous")
    sa = (paired["score_a"].astype(float) * 1e6).round().astype(int)
    sb = (paired["score_b"].astype(float) * 1e6).round().astype(int)
    paired = paired.assign(cat_a=sa, cat_b=sb)
    groups: Any = [((), paired)] if not by else paired.groupby(list(by), sort=True)
    rows = []
    for key, g in groups:
        labels = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        rows.append(
            {
                **labels,
                "n": len(g),
                "agreement": float((g["cat_a"] == g["cat_b"]).mean()),
                "kappa": _kappa(g["cat_a"], g["cat_b"]),
                "mean_score_a": float(g["score_a"].mean()),
                "mean_score_b": float(g["score_b"].mean()),
                **(unpaired if not by else {}),
            }
        )
    return pd.DataFrame(rows)
