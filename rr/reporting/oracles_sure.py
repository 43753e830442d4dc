"""Report sections for Cao et al.'s oracle curves and SURE's robustness rates.

* ``oracle_curves``: task performance vs k with the perfect-NDR, perfect-RSR and perfect-ROR
  oracles of Cao et al. (2025), Fig. 5, 6 and 8, from :func:`rr.analysis.cao.performance_by_k`,
  :func:`~rr.analysis.cao.perfect_ndr_curve`, :func:`~rr.analysis.cao.perfect_rsr_curve` and
  :func:`~rr.analysis.cao.perfect_ror_curve` (one table, one figure with a panel per system).
* ``sure_robustness_rates``: SURE Table 2, RR / WR / LR per document perturbation, overall and
  per K-G / K-N / U-G / U-N subset, from :func:`rr.metrics.spurious.robustness_rates`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd

from rr.analysis.cao import perfect_ndr_curve, perfect_ror_curve, perfect_rsr_curve, performance_by_k
from rr.analysis.intervals import SYSTEM_COLUMNS, system_by
from rr.metrics.spurious import PAIR_KEYS, robustness_rates
from rr.reporting import figures
from rr.reporting.loading import ReportContext
from rr.reporting.registry import Item, ReportFigure, ReportTable, SectionSkipped, section, system_label
from rr.results import varying

#: Curve columns of the ``oracle_curves`` table, with their line style in the figure.
CURVES = {
    "actual": ("Actual", "-", "black"),
    "perfect_ndr": ("Perfect NDR", "--", "tab:blue"),
    "perfect_rsr": ("Perfect RSR", "-.", "tab:orange"),
    "perfect_ror": ("Perfect ROR", ":", "tab:green"),
}


def _ks(df: pd.DataFrame) -> pd.Series:
    return pd.to_numeric(df["k"]).astype(int)


def _has_oracle_grid(df: pd.DataFrame) -> bool:
    k = _ks(df)
    return bool((k == 0).any()) and int(k[k > 0].nunique()) >= 2


def oracle_table(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Wide table ``[*by, k, actual, perfect_ndr, perfect_rsr, perfect_ror, order=<o>..., n]``.

    ``actual`` and ``n`` are :func:`performance_by_k`'s (k = 0 included); the oracle columns are
    the cao functions' ``perfect_*`` setups; ``order=<o>`` is each order's own curve (Fig. 8).
    k = 0 has only ``actual`` and ``perfect_ndr`` (equal: the closed-book score).
    """
    t = df.assign(k=_ks(df))
    actual = performance_by_k(t, by=by)
    parts = [
        perfect_ndr_curve(t, by=by).query("setup == 'perfect_ndr'"),
        perfect_rsr_curve(t, by=by).query("setup == 'perfect_rsr'"),
        perfect_ror_curve(t, by=by).assign(
            setup=lambda d: d["setup"].where(d["setup"] == "perfect_ror", "order=" + d["setup"])
        ),
    ]
    long = pd.concat(parts, ignore_index=True)
    wide = long.pivot_table(index=[*by, "k"], columns="setup", values="score", aggfunc="first").reset_index()
    wide.columns.name = None
    out = actual.rename(columns={"score": "actual"}).merge(wide, on=[*by, "k"], how="left")
    orders = sorted(c for c in out.columns if c.startswith("order="))
    return out[[*by, "k", *CURVES, *orders, "n"]]


@section(
    "oracle_curves",
    title="Task performance vs k with perfect NDR / RSR / ROR oracles (Cao et al. Fig. 5, 6, 8)",
    requires=("example_id", "k", "order", "score", "retriever", "generator", "strategy"),
    applies=_has_oracle_grid,
    when="k = 0 (closed-book) rows and at least two k > 0",
    order=35,
)
def oracle_curves_section(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """Actual and oracle curves per system (mean over examples, retrievers and orders)."""
    by = system_by(df)
    # a report over several sweeps (an RGB sweep at one k beside a Cao grid): only the systems
    # with their own k = 0 rows and two k > 0 get curves; the others are named in the caption
    fits = (
        df.assign(k=_ks(df))
        .groupby(by, dropna=False, sort=True)["k"]
        .transform(lambda k: bool((k == 0).any()) and int(k[k > 0].nunique()) >= 2)
    )
    left_out = sorted(
        {system_label(row, by) for _, row in df.loc[~fits.astype(bool), by].drop_duplicates().iterrows()}
    )
    if not fits.any():
        raise SectionSkipped("no system has its own k = 0 rows and two k > 0")
    table = oracle_table(df.loc[fits.astype(bool)], by)
    yield ReportTable(
        "oracle_curves",
        "Actual vs perfect-NDR, perfect-RSR and perfect-ROR task performance per system and k",
        table,
        caption=(
            "Mean score over examples, retrievers and orders (rr.analysis.cao). actual: performance_by_k "
            "(k = 0: closed-book); perfect_ndr: max(f(q,k,o), f(q,0)) (Fig. 5); perfect_rsr: best score over "
            "k' <= k, k' > 0 (Fig. 6); perfect_ror: best order per example, retriever and k (Fig. 8); "
            "order=<o>: that order's own curve; n: rows averaged for actual."
            + (
                f" Left out (no k = 0 rows or fewer than two k > 0): {', '.join(left_out)}."
                if left_out
                else ""
            )
        ),
    )
    yield _oracle_figure(table, by)


def _oracle_figure(table: pd.DataFrame, by: list[str]) -> ReportFigure:
    label_cols = varying(table, by) or [c for c in by if c in SYSTEM_COLUMNS] or by
    systems = list(table.groupby(by, sort=True, dropna=False))
    fig, axes = figures.grid(len(systems), width=4.6, height=3.6, share=True)
    ks = sorted(table["k"].unique())
    for ax, (_, sub) in zip(axes, systems, strict=True):
        sub = sub.sort_values("k")
        for col, (label, style, color) in CURVES.items():
            s = sub[sub[col].notna()]
            ax.plot(
                s["k"],
                s[col],
                linestyle=style,
                marker="o",
                ms=3.5,
                color=color,
                label=label,
                zorder=3 if col == "actual" else 2,
            )
        ax.set_xticks(ks)
        ax.set_xlabel("Retrieved documents (k; 0 = closed-book)")
        ax.set_ylabel("Task performance (accuracy)")
        ax.set_title(system_label(sub.iloc[0], label_cols), fontsize=9)
        ax.grid(alpha=0.3)
    return figures.finish(
        fig,
        axes,
        legend_title="curve",
        heading="Actual vs oracle task performance (Cao et al. Fig. 5, 6, 8)",
        name="oracle_curves",
        title="Actual vs perfect NDR / RSR / ROR per system (Cao Fig. 5, 6, 8)",
        caption="One panel per system; each line is a column of tables/oracle_curves.csv.",
    )


def _paired_perturbations(df: pd.DataFrame) -> bool:
    """``doc_perturbation == 'none'`` rows and perturbed rows sharing a (k > 0) cell with them."""
    if "doc_perturbation" not in df.columns:
        return False
    rag = df[_ks(df) > 0]
    dp = rag["doc_perturbation"].astype(str)
    keys = [c for c in PAIR_KEYS if c in df.columns]
    original = rag.loc[dp == "none", keys].drop_duplicates()
    perturbed = rag.loc[dp != "none", keys].drop_duplicates()
    if original.empty or perturbed.empty:
        return False
    return bool(len(perturbed.merge(original, on=keys)))


@section(
    "sure_robustness_rates",
    title="Robustness, win and lose rates per document perturbation (SURE, Table 2)",
    requires=("example_id", "k", "score", "doc_perturbation"),
    applies=_paired_perturbations,
    when="doc_perturbation == 'none' rows and perturbed rows of the same (example, k > 0 cell)",
    order=64,
)
def sure_rates_section(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """RR / WR / LR (%) per system and perturbation, with the K/U x G/N subsets where possible."""
    rag = _ks(df) > 0
    dp = df["doc_perturbation"].astype(str)
    # instances: perturbed rows whose original exists; closed-book rows: the unperturbed jobs'
    keys = [c for c in PAIR_KEYS if c in df.columns]
    original = df.loc[rag & (dp == "none"), keys].drop_duplicates()
    pert = df[rag & (dp != "none")].merge(original, on=keys)
    closed = df[~rag & (dp == "none")]
    t = pd.concat([df[rag & (dp == "none")], pert, closed], ignore_index=True)
    subsets = "answer_in_docs" in t.columns and not closed.empty
    by = [c for c in ("dataset", *SYSTEM_COLUMNS) if c in t.columns] + varying(t, ["query_perturbation"])
    try:
        table = robustness_rates(t, by=by, subsets=subsets, percent=True)
    except ValueError as e:
        raise SectionSkipped(f"robustness_rates cannot pair the rows: {e}") from e
    table.columns = [m if s == "Total" else f"{s} {m}" for s, m in table.columns]
    for c in [c for c in table.columns if c == "n" or c.endswith(" n")]:
        table[c] = table[c].astype(int)
    table = table.reset_index()
    note = (
        "K/U = closed-book (k = 0) answer right/wrong, G/N = original documents contain/lack a gold answer"
        if subsets
        else "Total only: the K-G / K-N / U-G / U-N subsets need answer_in_docs and the k = 0 rows"
    )
    yield ReportTable(
        "sure_robustness_rates",
        "Robustness (RR), win (WR) and lose (LR) rates in % per system and document perturbation",
        table,
        caption=(
            "rr.metrics.spurious.robustness_rates over the (example, k > 0 cell) instances answered with the "
            "original (doc_perturbation none) and the perturbed documents: RR = correctness unchanged, WR = "
            "wrong -> right, LR = right -> wrong (score >= 1 is correct); n = instances. " + note + "."
        ),
        digits=1,
    )
