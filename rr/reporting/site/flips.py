"""Flips: each (example, system) row's flip kinds at each cell, computed by
:mod:`rr.metrics.flips` from the metrics' own decompositions (the examples list's flip filters)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rr.metrics.flips import KINDS, doc_perturbation_flips, query_perturbation_flips, robustness_flips
from rr.reporting.site.format import FlipCount
from rr.reporting.site.index import _Model

#: Bit of each flip kind in a row's flip characters.
FLIP_BITS = {kind: 1 << i for i, kind in enumerate(KINDS)}
#: What each flip kind means, and the metric it belongs to (shown on the pages).
FLIP_LABELS = {
    "ndr": ("NDR flip", "NDR", "right closed-book (k = 0), worse at some k > 0 cell"),
    "rsr": ("RSR flip", "RSR", "worse at a larger k than at a smaller k, same retriever and order"),
    "ror": ("ROR flip", "ROR", "different scores across document orders at the same retriever and k"),
    "query": (
        "query-perturbation flip",
        "query-level Match",
        "perturbed query's verdict differs from the original query's, same cell",
    ),
    "doc": (
        "doc-perturbation flip",
        "SURE RR / WR / LR",
        "verdict changes when the documents are perturbed, same cell (LR or WR)",
    ),
}
#: Characters of a flip mask (0..31).
FLIP_CHARS = "0123456789abcdefghijklmnopqrstuv"


def _mark(model: _Model, rows: np.ndarray, kind: str) -> None:
    if len(rows):
        np.bitwise_or.at(model.flip_buf, model.offsets[model.row[rows]] + model.pos[rows], FLIP_BITS[kind])


def _rows_of(model: _Model, flips: pd.DataFrame, on: list[str]) -> np.ndarray:
    """Row numbers of ``model.df`` matching ``flips`` on ``on`` (values compared as strings)."""
    if flips.empty:
        return np.array([], dtype=int)
    left = model.df[on].astype(str).assign(_row=np.arange(len(model.df)))
    right = flips[on].astype(str).drop_duplicates()
    return left.merge(right, on=on, how="inner")["_row"].to_numpy()


def compute_flips(model: _Model) -> None:
    """Mark each row's flips (:data:`FLIP_BITS`) in :attr:`flip_buf`."""
    df = model.df
    cell = ["example_id", "retriever", "k", "order"]
    needed = {"example_id", "k", "order", "score", "retriever"}
    if needed <= set(df.columns):
        slim = df[list(dict.fromkeys([*needed, *model.by]))]  # not the wide columns (doc_ids, outputs)
        for key, group in slim.groupby(model.by, sort=True, dropna=False) if model.by else [((), slim)]:
            try:
                flips = robustness_flips(group)
            except ValueError as err:
                label = ", ".join(f"{c}={v}" for c, v in zip(model.by, np.atleast_1d(key), strict=False))
                for kind in ("ndr", "rsr", "ror"):
                    model.flip_errors[kind].append(f"{label}: {err}")
                continue
            sub = group[cell].astype(str).assign(_row=group.index.to_numpy())
            hits = sub.merge(flips[cell].astype(str).assign(kind=flips["kind"]), on=cell, how="inner")
            for kind, rows in hits.groupby("kind")["_row"]:  # one merge for the three kinds
                _mark(model, rows.to_numpy(), str(kind))
    perturbation_flips = (
        ("query_perturbation", query_perturbation_flips, "query"),
        ("doc_perturbation", doc_perturbation_flips, "doc"),
    )
    for column, flips_of, kind in perturbation_flips:
        if column in df.columns and (df[column].astype(str) != "none").any():
            try:
                pf = flips_of(df)
                on = [c for c in pf.columns if c not in ("y_original", "y_perturbed", "C")]
                _mark(model, _rows_of(model, pf, on), kind)
            except ValueError as err:
                model.flip_errors[kind].append(str(err))
    for kind, errs in model.flip_errors.items():
        if errs:
            model.notes.append(f"{FLIP_LABELS[kind][0]}s not computed for {len(errs)} group(s): {errs[0]}")


def flip_counts(model: _Model) -> dict[str, Any]:
    out = {}
    for kind, bit in FLIP_BITS.items():
        rows = np.zeros(model.n_list_rows, dtype=bool)
        hit = (model.flip_buf & bit) > 0
        if hit.any():
            owner = np.searchsorted(model.offsets, np.nonzero(hit)[0], side="right") - 1
            rows[owner] = True
        out[kind] = {
            FlipCount.label: FLIP_LABELS[kind][0],
            FlipCount.metric: FLIP_LABELS[kind][1],
            FlipCount.means: FLIP_LABELS[kind][2],
            FlipCount.rows: int(rows.sum()),
            FlipCount.errors: model.flip_errors[kind],
        }
    return out
