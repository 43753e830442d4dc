"""McNemar pairs: the pairs ``rr report``'s paired tests compare, each with its discordant
examples and cells, and the pairs left out with the reason."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rr.metrics.flips import discordant_cells
from rr.reporting.comparisons import system_pairs
from rr.reporting.registry import ReportTable, system_label
from rr.reporting.report import Report
from rr.reporting.site.encoding import records_of
from rr.reporting.site.index import ScoreIndex
from rr.results import CELL_KEYS


@dataclass(frozen=True)
class Pairs:
    """The McNemar pairs (:func:`compute_pairs`): each a dict of ``a``, ``b`` (system numbers),
    ``dataset``, ``differs_in``, ``label``, ``reason`` and, when compared, its discordant examples
    ``ex`` with ``a_right`` / ``b_right`` (the fields of format.IndexPair and format.PairExamples)."""

    compared: list[dict[str, Any]]
    apart: list[dict[str, Any]]  # the pairs not compared, each with its reason
    notes: tuple[str, ...] = ()


def compute_pairs(idx: ScoreIndex, report: Report | None = None) -> Pairs:
    """The McNemar pairs: exactly the pairs ``rr report``'s paired tests compare, each with the
    cells of each example where one system is right and the other wrong; the pairs left out go
    to :attr:`Pairs.apart` with the reason (the overview lists them).

    The pairs come from the one pairing rule (:func:`rr.reporting.comparisons.system_pairs`:
    same dataset, one grouping column apart, the same examples and (retriever, k, order) cells;
    two examples at least, as :func:`~rr.reporting.comparisons.paired_comparisons` asks): read
    from ``report``'s ``paired_comparisons`` and ``not_comparable`` tables when it ran that
    section on this table (the rule's output, not computed twice), else from the rule itself.
    """
    df = idx.df
    needed = {"example_id", "k", "order", "score", "retriever"}
    if not needed <= set(df.columns) or not idx.sys_cols:
        return Pairs([], [])
    ds = df["dataset"].astype(str).to_numpy() if "dataset" in df.columns else np.full(len(df), "")
    found = _pairs_of_report(idx, report, ds) if report is not None else None
    notes: tuple[str, ...] = ()
    if found is None:
        found, notes = _pairs_of_rule(idx, ds)
    compared: list[dict[str, Any]] = []
    apart: list[dict[str, Any]] = []
    # example and cell as numbers: the wide columns stay out of the merges
    numbered = pd.DataFrame({"example_id": idx.ex, "_c": idx.cell, "score": idx.score})
    for pair in found:
        if pair.get("reason"):
            apart.append(pair)
            continue
        d, sa, sb = pair["dataset"], pair["a"], pair["b"]
        rows_a = numbered.loc[(idx.sys == sa) & (ds == d)]
        rows_b = numbered.loc[(idx.sys == sb) & (ds == d)]
        disc = discordant_cells(rows_a, rows_b, cell=("_c",)).sort_values(["example_id", "_c"])
        e, c, right = (disc[k].to_numpy() for k in ("example_id", "_c", "a_right"))
        exs = np.unique(e)

        def cells_of(mask: np.ndarray, e=e, c=c, exs=exs) -> list[list[int]]:
            ee, cc = e[mask], c[mask]
            lo, hi = np.searchsorted(ee, exs, "left"), np.searchsorted(ee, exs, "right")
            return [cc[x:y].tolist() for x, y in zip(lo, hi, strict=True)]

        pair["ex"] = exs.tolist()
        pair["a_right"] = cells_of(right.astype(bool))
        pair["b_right"] = cells_of(~right.astype(bool))
        compared.append(pair)
    return Pairs(compared, apart, notes)


def _pairs_of_rule(idx: ScoreIndex, ds: np.ndarray) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """The pairs as :func:`~rr.reporting.comparisons.system_pairs` gives them: ``a``, ``b``
    (system numbers), ``dataset``, ``differs_in``, ``label``, ``reason`` (empty: compared); and
    a note when the rule cannot read the table."""
    # the columns the rule reads: the wide ones (doc_ids, outputs) stay out of its groupby
    slim = idx.df[list(dict.fromkeys([*idx.by, "example_id", *CELL_KEYS, "score"]))]
    try:
        found = list(system_pairs(slim, list(idx.by)))
    except (ValueError, KeyError) as err:  # not a valid table for the metrics
        return [], (f"McNemar pairs not offered: {err}",)
    number = {
        (d, tuple(sysd["cols"][c] for c in idx.sys_cols)): s
        for s, sysd in enumerate(idx.systems)
        for d in np.unique(ds[idx.sys == s]).tolist()
    }
    out = []
    for diff, la, lb, a, _b, why in found:
        if not why and len(a.examples) < 2:  # not tested, and not listed apart, by the report
            continue
        d = str(la.get("dataset", ""))
        out.append(
            {
                "a": number[(d, tuple(str(la[c]) for c in idx.sys_cols))],
                "b": number[(d, tuple(str(lb[c]) for c in idx.sys_cols))],
                "dataset": d,
                "differs_in": diff[0],
                "label": f"{system_label(la, diff)} vs {system_label(lb, diff)}",
                "reason": why,
            }
        )
    return out, ()


def _pairs_of_report(idx: ScoreIndex, report: Report, ds: np.ndarray) -> list[dict[str, Any]] | None:
    """The pairs of ``report``'s ``paired_comparisons`` section (as :func:`_pairs_of_rule`),
    or None when it did not run on this table's systems or a row names no single system."""
    outcome = next((o for o in report.outcomes if o.section.name == "paired_comparisons"), None)
    if outcome is None or outcome.error or report.scores is None or len(report.scores) != len(idx.df):
        return None
    if outcome.section.skip_reason(report.scores) is not None:
        return None  # the section did not run (a missing column): the rule did not either
    tables = {i.name: i.df for i in outcome.items if isinstance(i, ReportTable)}
    # a system by its dataset, the column a pair differs in, its label there and its other values
    labelled: dict[tuple[Any, ...], list[int]] = {}
    for s, sysd in enumerate(idx.systems):
        cols = sysd["cols"]
        for d in np.unique(ds[idx.sys == s]).tolist():
            for c in idx.sys_cols:
                rest = tuple(cols[x] for x in idx.sys_cols if x != c)
                labelled.setdefault((d, c, system_label(cols, [c]), rest), []).append(s)
    out: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    rows = [(r, "") for r in records_of(tables.get("paired_comparisons"))]
    rows += [(r, r["reason"]) for r in records_of(tables.get("not_comparable")) if r["metric"] == "all"]
    for r, reason in rows:
        c = str(r["differs_in"])
        d = str(r.get("dataset", ""))
        rest = tuple(str(r.get(x, "")) for x in idx.sys_cols if x != c)
        sa = labelled.get((d, c, str(r["system_a"]), rest), [])
        sb = labelled.get((d, c, str(r["system_b"]), rest), [])
        if len(sa) != 1 or len(sb) != 1:
            return None
        key = (sa[0], sb[0], d)
        if key in seen:
            continue
        seen.add(key)
        out.append(
            {
                "a": sa[0],
                "b": sb[0],
                "dataset": d,
                "differs_in": c,
                "label": f"{r['system_a']} vs {r['system_b']}",
                "reason": str(reason),
            }
        )
    return out
