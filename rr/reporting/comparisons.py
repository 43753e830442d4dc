"""Paired comparisons of systems on the same examples, corrected for multiple comparisons.

Two systems are compared when they share a dataset, differ in exactly one of the grouping
columns (:func:`rr.analysis.intervals.system_by`: generator, strategy, or a setting such as the
doc perturbation) and were measured on the same examples and the same (retriever, k, order)
cells; other such pairs, and metrics undefined or degenerate for either system, are listed apart
with the reason (:func:`not_comparable_pairs`). For each metric (accuracy over k > 0 cells, NDR, RSR, ROR) each example gets
one value per system (its share of the metric, :func:`~rr.analysis.intervals.per_example_robustness`),
and a paired permutation test (:func:`rr.stats.paired_permutation_test`) tests the mean
difference over the examples both systems have. Examples, not cells, are the units: cells of
one example are not independent. p-values are adjusted over the whole table with Holm
(family-wise) and Benjamini-Hochberg (false discovery rate).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rr.analysis.intervals import checked_per_example, system_by
from rr.metrics.robustness import metric_notes
from rr.reporting.loading import ReportContext
from rr.reporting.registry import Item, ReportTable, SectionSkipped, section, system_label
from rr.results import CELL_KEYS, given_id, natural_key
from rr.stats import adjust_pvalues, paired_permutation_test

COMPARED = ("accuracy", "ndr", "rsr", "ror")


@dataclass(frozen=True)
class _System:
    """What a pair check needs of one system: its per-example values, examples, cells and notes."""

    values: pd.DataFrame
    examples: frozenset
    given: dict[str, str]  # example id -> the id its dataset gave it (rr.results.given_id)
    cells: dict[str, frozenset]  # cell column -> its values
    grid: frozenset  # (retriever, k, order) cells
    notes: dict[str, str]


def _systems(df: pd.DataFrame, by: list[str]) -> dict[tuple, _System]:
    out: dict[tuple, _System] = {}
    for key, g in df.groupby(by, sort=True, dropna=False):
        key_t = key if isinstance(key, tuple) else (key,)
        if not (pd.to_numeric(g["k"]) > 0).any():
            continue
        values = checked_per_example(g)
        if values is None:
            continue
        cols = [c for c in CELL_KEYS if c in g.columns]
        cells = g[cols].astype(str).drop_duplicates()
        row = {m: float(values[m].mean()) for m in values.columns}
        row["n_orders"] = int(
            g.loc[pd.to_numeric(g["k"]) > 0, "order"].nunique()
        )  # ROR with one order: degenerate
        ids = g.drop_duplicates("example_id")
        given = (
            {
                str(e): given_id(str(e), str(k))
                for e, k in zip(ids["example_id"], ids["example_key"], strict=True)
            }
            if "example_key" in ids.columns
            else {}
        )
        out[key_t] = _System(
            values,
            frozenset(g["example_id"].astype(str)),
            given,
            {c: frozenset(g[c].astype(str)) for c in cols},
            frozenset(map(tuple, cells.to_numpy().tolist())),
            metric_notes(row),
        )
    return out


def _set(values: frozenset) -> str:
    """``{1, 3}``: numbers in numeric order, other values in text order."""
    try:
        ordered = sorted(values, key=float)
    except ValueError:
        ordered = sorted(values)
    return "{" + ", ".join(ordered) + "}"


def why_not_comparable(a: _System, b: _System) -> str:
    """Why two systems cannot be compared pairwise (empty when they can): they must be measured on
    the same examples and the same (retriever, k, order) cells."""
    if a.examples != b.examples:
        why = f"different examples ({len(a.examples)} vs {len(b.examples)}, {len(a.examples & b.examples)} shared"
        names_a = {a.given.get(e, e) for e in a.examples - b.examples}
        clash = sorted(names_a & {b.given.get(e, e) for e in b.examples - a.examples}, key=natural_key)
        if clash:
            shown = ", ".join(clash[:5]) + (f" and {len(clash) - 5} more" if len(clash) > 5 else "")
            why += f"; {len(clash)} shared ids hold different questions or answers ({shown})"
        return why + ")"
    if a.grid != b.grid:
        parts = [
            f"{c} ∈ {_set(a.cells[c])} vs {_set(b.cells[c])}"
            for c in a.cells
            if c in b.cells and a.cells[c] != b.cells[c]
        ]
        return "different cells: " + ("; ".join(parts) or f"{len(a.grid)} vs {len(b.grid)} cells")
    return ""


def system_pairs(
    df: pd.DataFrame, by: list[str]
) -> Iterator[tuple[list[str], dict[str, Any], dict[str, Any], _System, _System, str]]:
    """Every pair of systems of one dataset that differ in exactly one grouping column:
    ``(differs_in, labels a, labels b, a, b, why not comparable or "")``. The one pairing rule:
    :func:`paired_comparisons`, :func:`not_comparable_pairs` and the result site's McNemar pairs
    (:mod:`rr.reporting.site`) all take their pairs from here."""
    per = _systems(df, by)
    for ka, kb in itertools.combinations(sorted(per, key=lambda t: tuple(map(str, t))), 2):
        diff = [c for c, a, b in zip(by, ka, kb, strict=True) if str(a) != str(b)]
        if len(diff) != 1 or diff[0] == "dataset":
            continue
        la, lb = dict(zip(by, ka, strict=True)), dict(zip(by, kb, strict=True))
        yield diff, la, lb, per[ka], per[kb], why_not_comparable(per[ka], per[kb])


def not_comparable_pairs(
    df: pd.DataFrame, by: list[str] | None = None, *, metrics: tuple[str, ...] = COMPARED
) -> pd.DataFrame:
    """The pairs :func:`paired_comparisons` leaves out, and why: systems of one dataset differing in
    one grouping column but measured on other examples or other cells (``metric`` = ``all``), or a
    metric undefined or degenerate for either (e.g. NDR when closed-book accuracy is 0).

    Returns:
        One row per (pair, metric or ``all``): ``differs_in``, ``system_a``, ``system_b``, the shared
        values, ``metric``, ``reason``.
    """
    by = list(system_by(df) if by is None else by)
    rows = []
    for diff, la, lb, a, b, why in system_pairs(df, by):
        base = {
            "differs_in": diff[0],
            "system_a": system_label(la, diff),
            "system_b": system_label(lb, diff),
            **{c: la[c] for c in by if c not in diff},
        }
        if why:
            rows.append({**base, "metric": "all", "reason": why})
            continue
        for m in metrics:
            noted = [(base[f"system_{n}"], s.notes[m]) for n, s in (("a", a), ("b", b)) if m in s.notes]
            if noted:
                rows.append({**base, "metric": m, "reason": "; ".join(f"{n}: {t}" for n, t in noted)})
    cols = ["differs_in", "system_a", "system_b", *by, "metric", "reason"]
    return pd.DataFrame(rows).reindex(columns=cols).fillna({c: "" for c in by})


def paired_comparisons(
    df: pd.DataFrame,
    by: list[str] | None = None,
    *,
    metrics: tuple[str, ...] = COMPARED,
    n_resamples: int = 9999,
    seed: int = 0,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Every pair of systems that differ in one grouping column and were measured on the same
    examples and the same cells, tested per metric (the others: :func:`not_comparable_pairs`).

    Args:
        df: Score table.
        by: Grouping columns naming systems (default :func:`system_by`).
        metrics: Per-example metrics compared (columns of ``per_example_robustness``).
        n_resamples: Permutations per test.
        seed: Seed of every test.
        confidence: Level of the interval of the mean difference.

    Returns:
        One row per (pair, metric): ``differs_in``, ``system_a``, ``system_b`` (labels), the
        shared values, ``metric``, ``a``, ``b`` (the systems' means over the examples),
        ``difference`` (a − b) with ``difference_ci_low``/``_ci_high``, ``p_value``,
        ``p_holm``, ``p_bh``, ``n_examples``. Metrics undefined or degenerate for either system
        are left out.
    """
    by = list(system_by(df) if by is None else by)
    rows = []
    for diff, la, lb, sa, sb, why in system_pairs(df, by):
        if why or len(sa.examples) < 2:
            continue
        va, vb = sa.values, sb.values
        shared = va.index.intersection(vb.index)
        for m in metrics:
            a, b = va.loc[shared, m], vb.loc[shared, m]
            if a.isna().any() or b.isna().any() or m in sa.notes or m in sb.notes:
                continue
            res = paired_permutation_test(
                a.to_numpy(),
                b.to_numpy(),
                n_resamples=n_resamples,
                seed=seed,
                confidence=confidence,
                small_sample=True,
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
    apart = not_comparable_pairs(df)
    if table.empty and apart.empty:
        raise SectionSkipped("fewer than two comparable systems (same dataset, differing in one factor)")
    if len(apart):
        yield ReportTable(
            "not_comparable",
            "Pairs of systems not compared, and why",
            apart,
            caption=(
                "Systems of one dataset differing in one factor that were not tested against each other: "
                "a paired test needs the same examples and the same (retriever, k, order) cells "
                "(metric all), and a metric defined and not degenerate for both."
            ),
        )
    if table.empty:
        return
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
