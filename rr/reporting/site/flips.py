"""Flips: each (example, system) row's flip kinds at each cell, computed by
:mod:`rr.metrics.flips` from the metrics' own decompositions (the examples list's flip filters)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rr.metrics.flips import KINDS, doc_perturbation_flips, query_perturbation_flips, robustness_flips
from rr.reporting.site.format import FlipCount
from rr.reporting.site.index import ScoreIndex

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
#: The RAG-helped rows (:func:`helped_count`), the counterpart of the NDR flips: label, metric, meaning.
HELPED = ("RAG helped", "closed-book vs RAG", "wrong closed-book (k = 0), right at some k > 0 cell")
#: Characters of a flip mask (0..31).
FLIP_CHARS = "0123456789abcdefghijklmnopqrstuv"


@dataclass(frozen=True)
class Flips:
    """Each slot's flip kinds (:func:`compute_flips`): a bit mask of :data:`FLIP_BITS` per
    (example, system) list row's cell, and the groups a kind could not be computed for."""

    buf: np.ndarray  # per slot (ScoreIndex.slots): its flip mask
    errors: dict[str, list[str]]  # flip kind -> the groups it was not computed for, and why
    notes: tuple[str, ...]

    def chars(self) -> np.ndarray:
        """Each slot's flip mask as its character (:data:`FLIP_CHARS`), as bytes."""
        return np.frombuffer(FLIP_CHARS.encode(), dtype=np.uint8)[self.buf]


def _mark(buf: np.ndarray, idx: ScoreIndex, rows: np.ndarray, kind: str) -> None:
    if len(rows):
        np.bitwise_or.at(buf, idx.slots(rows), FLIP_BITS[kind])


def _rows_of(idx: ScoreIndex, flips: pd.DataFrame, on: list[str]) -> np.ndarray:
    """Row numbers of ``idx.df`` matching ``flips`` on ``on`` (values compared as strings)."""
    if flips.empty:
        return np.array([], dtype=int)
    left = idx.df[on].astype(str).assign(_row=np.arange(len(idx.df)))
    right = flips[on].astype(str).drop_duplicates()
    return left.merge(right, on=on, how="inner")["_row"].to_numpy()


def compute_flips(idx: ScoreIndex) -> Flips:
    """Each row's flips (:data:`FLIP_BITS`), marked at its slot."""
    df = idx.df
    buf = np.zeros(int(idx.offsets[-1]), dtype=np.uint8)
    errors: dict[str, list[str]] = {kind: [] for kind in KINDS}
    cell = ["example_id", "retriever", "k", "order"]
    needed = {"example_id", "k", "order", "score", "retriever"}
    if needed <= set(df.columns):
        slim = df[list(dict.fromkeys([*needed, *idx.by]))]  # not the wide columns (doc_ids, outputs)
        for key, group in slim.groupby(idx.by, sort=True, dropna=False) if idx.by else [((), slim)]:
            try:
                flips = robustness_flips(group)
            except ValueError as err:
                label = ", ".join(f"{c}={v}" for c, v in zip(idx.by, np.atleast_1d(key), strict=False))
                for kind in ("ndr", "rsr", "ror"):
                    errors[kind].append(f"{label}: {err}")
                continue
            sub = group[cell].astype(str).assign(_row=group.index.to_numpy())
            hits = sub.merge(flips[cell].astype(str).assign(kind=flips["kind"]), on=cell, how="inner")
            for kind, rows in hits.groupby("kind")["_row"]:  # one merge for the three kinds
                _mark(buf, idx, rows.to_numpy(), str(kind))
    perturbation_flips = (
        ("query_perturbation", query_perturbation_flips, "query"),
        ("doc_perturbation", doc_perturbation_flips, "doc"),
    )
    for column, flips_of, kind in perturbation_flips:
        if column in df.columns and (df[column].astype(str) != "none").any():
            try:
                pf = flips_of(df)
                on = [c for c in pf.columns if c not in ("y_original", "y_perturbed", "C")]
                _mark(buf, idx, _rows_of(idx, pf, on), kind)
            except ValueError as err:
                errors[kind].append(str(err))
    notes = tuple(
        f"{FLIP_LABELS[kind][0]}s not computed for {len(errs)} group(s): {errs[0]}"
        for kind, errs in errors.items()
        if errs
    )
    return Flips(buf, errors, notes)


def flip_counts(idx: ScoreIndex, flips: Flips) -> dict[str, Any]:
    """Flip kind -> :class:`~rr.reporting.site.format.FlipCount` (how many list rows have one)."""
    out = {}
    for kind, bit in FLIP_BITS.items():
        rows = np.zeros(idx.n_list_rows, dtype=bool)
        hit = (flips.buf & bit) > 0
        if hit.any():
            owner = np.searchsorted(idx.offsets, np.nonzero(hit)[0], side="right") - 1
            rows[owner] = True
        out[kind] = {
            FlipCount.label: FLIP_LABELS[kind][0],
            FlipCount.metric: FLIP_LABELS[kind][1],
            FlipCount.means: FLIP_LABELS[kind][2],
            FlipCount.rows: int(rows.sum()),
            FlipCount.errors: flips.errors[kind],
        }
    return out


def helped_rows(idx: ScoreIndex) -> np.ndarray:
    """Per list row: whether RAG helped it (wrong closed-book, right at some k > 0 cell)."""
    right = (idx.k > 0) & (idx.score >= 1.0)
    right_rag = np.bincount(idx.row[right], minlength=idx.n_list_rows) > 0
    with np.errstate(invalid="ignore"):
        return right_rag & (idx.cb <= 0.0)


def helped_count(idx: ScoreIndex) -> dict[str, Any]:
    """The RAG-helped rows as a :class:`~rr.reporting.site.format.FlipCount` (:data:`HELPED`)."""
    label, metric, means = HELPED
    return {
        FlipCount.label: label,
        FlipCount.metric: metric,
        FlipCount.means: means,
        FlipCount.rows: int(helped_rows(idx).sum()),
        FlipCount.errors: [],
    }
