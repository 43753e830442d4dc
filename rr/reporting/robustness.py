"""Cao et al. (2025) report sections: robustness table with intervals and the paper's figures.

* ``robustness``: NDR, RSR, ROR, their geometric mean, accuracy (k > 0) and closed-book accuracy
  per system, averaged over retrievers as the paper does, each with an example-level bootstrap
  interval (:func:`rr.analysis.intervals.robustness_ci`); robustness vs performance scatter (Fig. 1 / 9) and
  per-metric bars by model (Fig. 4).
* ``robustness_by_order``: geometric mean of NDR and RSR vs accuracy for each document order
  (Fig. 7).
* ``accuracy_vs_k``: task performance vs retrieval size per system, averaged over retrievers and
  orders (Fig. 13-16), and per retriever x order (Fig. 17-19).
* ``answer_recall``: answer recall of the top-k documents per retriever and k, from each job's
  ``retrieval.csv`` (Fig. 3), with the best closed-book accuracy as the "Non-RAG Perf" line.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from rr.analysis.intervals import (
    CI_HIGH,
    CI_LOW,
    RAG_METRICS,
    SYSTEM_COLUMNS,
    robustness_ci,
    system_by,
)
from rr.metrics import SPECS
from rr.metrics.robustness import NO_RETRIEVER, metric_notes, robustness_table
from rr.reporting import figures
from rr.reporting.loading import ReportContext
from rr.reporting.registry import Item, ReportFigure, ReportTable, SectionSkipped, section, system_label
from rr.results import varying
from rr.stats import COVERAGE_CHECKED_FROM, bootstrap_cluster_means

log = logging.getLogger(__name__)

YLABELS = {
    "robustness": "Robustness (geo. mean of NDR, RSR, ROR)",
    "ndr_rsr": "Robustness (geo. mean of NDR, RSR)",
}
# ----------------------------------------------------------------------------- helpers


def approximate_note(table: pd.DataFrame) -> str:
    """A caption sentence when some row's interval rests on fewer examples than coverage was checked
    at (:data:`rr.stats.COVERAGE_CHECKED_FROM`), else ``""``."""
    if "n_examples" not in table.columns or not (table["n_examples"] < COVERAGE_CHECKED_FROM).any():
        return ""
    return (
        f" Intervals of rows with fewer than {COVERAGE_CHECKED_FROM} examples (n_examples) are approximate: "
        f"their coverage is checked from {COVERAGE_CHECKED_FROM} examples on."
    )


def without_degenerate(table: pd.DataFrame, derived: Sequence[str] = ("robustness",)) -> pd.DataFrame:
    """:func:`robustness_ci`'s table with every undefined or degenerate metric of a row
    (:func:`rr.metrics.robustness.metric_notes`) blanked, value and interval, and a ``notes``
    column saying why (empty where nothing is). ``derived``: columns computed from NDR and RSR,
    blanked with them."""
    out = table.copy()
    notes = []
    for i, row in table.iterrows():
        found = metric_notes(row)
        blank = [m for m in found if m != "robustness"]
        if "robustness" in found:
            blank += list(derived)
        for m in blank:
            for col in (m, m + CI_LOW, m + CI_HIGH):
                if col in out.columns:
                    out.loc[i, col] = math.nan
        notes.append("; ".join(found.values()))
    out["notes"] = notes
    return out


def _has_robustness_grid(df: pd.DataFrame) -> bool:
    k = pd.to_numeric(df["k"], errors="coerce")
    return bool((k > 0).any())


def _table_ci(ctx: ReportContext, df: pd.DataFrame) -> pd.DataFrame:
    return ctx.shared(
        "robustness_ci",
        lambda: robustness_ci(
            df, system_by(df), n_resamples=ctx.n_resamples, confidence=ctx.confidence, seed=ctx.seed
        ),
    )


# ----------------------------------------------------------------------------- sections


@section(
    "robustness",
    title="Retrieval robustness (Cao et al. 2025)",
    requires=("example_id", "k", "order", "score", "retriever", "generator", "strategy"),
    applies=_has_robustness_grid,
    when="k > 0 rows",
    order=10,
)
def robustness_section(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """Robustness table with intervals, robustness vs performance (Fig. 1/9), bars (Fig. 4)."""
    by = system_by(df)
    table = _table_ci(ctx, df)
    shown = without_degenerate(table)
    yield ReportTable(
        "robustness",
        "NDR, RSR, ROR, robustness and accuracy per system",
        shown,
        caption=(
            "Cao et al. 2025 eq. 1-3 per system, averaged over retrievers; robustness = geometric "
            "mean of NDR, RSR, ROR; accuracy = mean score over k > 0 cells; accuracy k=0 = "
            f"closed-book. [low, high]: {ctx.confidence:.0%} example-level bootstrap interval "
            f"({ctx.n_resamples} resamples, seed {ctx.seed}). A metric that is undefined or degenerate "
            "for a system (RSR with one k; NDR when closed-book accuracy is 0) is left blank and "
            "the notes column says why." + approximate_note(table)
        ),
    )
    if (per := by_retriever(df, by, table)) is not None:
        yield ReportTable(
            "robustness_by_retriever",
            "NDR, RSR, ROR per retriever, beside their mean",
            per,
            caption=(
                "Each retriever's NDR, RSR, ROR and accuracy (its k > 0 rows with the system's "
                "closed-book rows); the row 'mean' is their mean over retrievers, the value the "
                "robustness table shows. Point values; the intervals are the robustness table's."
            ),
        )
    if shown["robustness"].notna().any():  # degenerate values are not drawn either
        yield _scatter(shown, by, "accuracy", "robustness", "robustness_vs_performance", ctx)
    yield _bars(shown, by)


def by_retriever(df: pd.DataFrame, by: Sequence[str], table: pd.DataFrame) -> pd.DataFrame | None:
    """NDR, RSR, ROR and accuracy per system and retriever, each system's rows followed by the
    mean over its retrievers (``retriever`` = ``mean``: ``table``'s values); ``None`` when no
    system has more than one retriever (the robustness table then shows the one retriever's)."""
    metrics = list(RAG_METRICS)
    per = robustness_table(df, by=by, per_retriever=True)
    per = per[per["retriever"] != NO_RETRIEVER]
    if per.empty or not (per.groupby(list(by), dropna=False)["retriever"].nunique() > 1).any():
        return None
    means = table[[*by, *metrics]].assign(retriever="mean")
    out = pd.concat([per[[*by, "retriever", *metrics]], means], ignore_index=True)
    out["_mean"] = out["retriever"] == "mean"
    out = out.sort_values([*by, "_mean", "retriever"], kind="stable").drop(columns="_mean")
    return out.reset_index(drop=True)


def _scatter(
    table: pd.DataFrame,
    by: Sequence[str],
    x: str,
    y: str,
    name: str,
    ctx: ReportContext,
    marker_col: str = "",
) -> ReportFigure:
    settings = figures.panel_settings(table, by)
    marker_col = marker_col or "strategy"
    colors = figures.colors(table["generator"].astype(str).unique())
    markers = figures.markers(table[marker_col].astype(str).unique())
    panels = list(figures.panels(table, settings))
    fig, axes = figures.grid(len(panels), share=True)
    for ax, (title, sub) in zip(axes, panels, strict=True):
        for _, r in sub.iterrows():
            one = sub.loc[[r.name]]
            ax.errorbar(
                r[x],
                r[y],
                xerr=figures.error_bars(one, x),
                yerr=figures.error_bars(one, y),
                fmt=markers[str(r[marker_col])],
                color=colors[str(r["generator"])],
                markersize=8,
                capsize=3,
                elinewidth=1,
                alpha=0.9,
            )
        ax.set_xlabel("Task performance (accuracy, k > 0)")
        ax.set_ylabel(YLABELS.get(y, y))
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    what = (
        "geometric mean of NDR and RSR per document order"
        if y == "ndr_rsr"
        else "geometric mean of NDR, RSR, ROR"
    )
    return figures.finish(
        fig,
        axes,
        handles=figures.legend_handles(colors, markers, "model", marker_col.replace("_", r"\_")),
        heading=f"Retrieval robustness vs task performance ({what})",
        name=name,
        title=f"Robustness vs task performance ({'Cao Fig. 7' if y == 'ndr_rsr' else 'Cao Fig. 1 / 9'})",
        caption=(
            f"y: {what}; x: mean accuracy over k > 0 cells. Colour: model; marker: {marker_col}. "
            f"Error bars: {ctx.confidence:.0%} example-level bootstrap intervals."
        ),
    )


def _bars(table: pd.DataFrame, by: Sequence[str]) -> ReportFigure:
    metrics = list(RAG_METRICS)
    table = table[table[metrics].notna().any(axis=1)]  # closed-book-only systems have no bars
    hue_cols = [c for c in by if c != "generator" and c in varying(table, by)]
    table = table.assign(
        _hue=[system_label(r, hue_cols) if hue_cols else "all" for _, r in table.iterrows()],
        _model=table["generator"].map(figures.short),
    )
    models = list(dict.fromkeys(table["_model"]))
    hues = list(dict.fromkeys(table["_hue"]))
    colors = figures.colors(hues)
    fig = Figure(
        figsize=(max(8.0, 1.2 * len(models) * max(1, len(hues)) * 0.6 + 6), 4.0), layout="constrained"
    )
    axes = fig.subplots(1, len(metrics), sharey=True)
    width = 0.8 / max(1, len(hues))
    for ax, m in zip(axes, metrics, strict=True):
        for j, h in enumerate(hues):
            sub = table[table["_hue"] == h].set_index("_model").reindex(models)
            xs = np.arange(len(models)) + (j - (len(hues) - 1) / 2) * width
            err = figures.error_bars(sub.fillna({m + CI_LOW: np.nan}), m)
            ax.bar(
                xs,
                sub[m].to_numpy(dtype=float),
                width,
                yerr=err,
                capsize=2,
                color=colors[h],
                label=h,
                hatch="//" if m == "accuracy" else None,
                edgecolor="white" if m != "accuracy" else "0.2",
            )
        ax.set_xticks(np.arange(len(models)), models, rotation=30, ha="right", fontsize=8)
        ax.set_title(SPECS[m].label)
        ax.set_ylim(0, 1.05)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("Score")
    if len(hues) > 1:
        fig.legend(
            *axes[0].get_legend_handles_labels(),
            loc="outside lower center",
            ncols=min(4, len(hues)),
            fontsize=9,
            frameon=False,
            title=" / ".join(hue_cols),
        )
    fig.suptitle("Retrieval robustness metrics and task performance per model (Cao Fig. 4)", fontsize=11)
    return ReportFigure(
        "robustness_metrics_by_model",
        "NDR, RSR, ROR and accuracy per model (Cao Fig. 4)",
        fig,
        caption="Bars: metric per model (hatched: accuracy over k > 0); error bars: bootstrap intervals.",
    )


@section(
    "robustness_by_order",
    title="Robustness per document order (Cao et al. Fig. 7)",
    requires=("example_id", "k", "order", "score", "retriever", "generator", "strategy"),
    applies=lambda df: (
        _has_robustness_grid(df)
        and df.loc[pd.to_numeric(df["k"]) > 0, "order"].nunique() > 1
        and pd.to_numeric(df["k"]).eq(0).any()
    ),
    when="k = 0 rows and more than one document order",
    order=20,
)
def by_order_section(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """NDR, RSR, their geometric mean and accuracy for each order on its own (Fig. 7)."""
    by = system_by(df)
    parts = []
    k = pd.to_numeric(df["k"])
    for o in sorted(df.loc[k > 0, "order"].astype(str).unique()):
        sub = df[(k == 0) | (df["order"].astype(str) == o)]
        t = robustness_ci(
            sub,
            by,
            n_resamples=ctx.n_resamples,
            confidence=ctx.confidence,
            seed=ctx.seed,
            derived={"ndr_rsr": lambda m: np.sqrt(m["ndr"] * m["rsr"])},
        )
        parts.append(t.assign(doc_order=o))
    table = pd.concat(parts, ignore_index=True)
    keep = [*by, "doc_order"]
    for m in ("ndr", "rsr", "ndr_rsr", "accuracy"):
        keep += [m, m + CI_LOW, m + CI_HIGH]
    table = without_degenerate(table[keep + ["n_examples"]], derived=("ndr_rsr",))
    yield ReportTable(
        "robustness_by_order",
        "NDR, RSR and accuracy per document order",
        table,
        caption=(
            "Each order evaluated on its own (with the k = 0 rows): NDR, RSR, their geometric mean "
            "(Cao Fig. 7's y axis; ROR needs several orders) and accuracy over k > 0, averaged over "
            f"retrievers; {ctx.confidence:.0%} example-level bootstrap intervals. An undefined or "
            "degenerate metric is blank, the notes column says why." + approximate_note(table)
        ),
    )
    if table["ndr_rsr"].notna().any():
        yield _scatter(table, by, "accuracy", "ndr_rsr", "robustness_by_order", ctx, marker_col="doc_order")


def _accuracy_by_k(df: pd.DataFrame, by: Sequence[str], ctx: ReportContext) -> pd.DataFrame:
    """Mean score per system and k (k > 0 averaged over retrievers and orders), bootstrap CIs."""
    rows = []
    for key, g in df.groupby(list(by), sort=True, dropna=False):
        key_t = key if isinstance(key, tuple) else (key,)
        gk = g.assign(k=pd.to_numeric(g["k"]).astype(int))
        # per example and k: mean over retrievers and orders (equal cell counts per example)
        wide = gk.groupby(["example_id", "k"])["score"].mean().unstack("k")
        complete = wide.dropna()
        if len(complete) >= 2:
            res = bootstrap_cluster_means(
                complete.rename(columns=str),
                n_resamples=ctx.n_resamples,
                confidence=ctx.confidence,
                seed=ctx.seed,
            )
        else:
            res = {}
        for kk in wide.columns:
            r = res.get(str(kk))
            rows.append(
                {
                    **dict(zip(by, key_t, strict=True)),
                    "k": int(kk),
                    "accuracy": float(gk.loc[gk["k"] == kk, "score"].mean()),
                    "accuracy" + CI_LOW: r.ci_low if r else math.nan,
                    "accuracy" + CI_HIGH: r.ci_high if r else math.nan,
                    "n_examples": int(wide[kk].notna().sum()),
                }
            )
    return pd.DataFrame(rows)


@section(
    "accuracy_vs_k",
    title="Task performance vs number of retrieved documents (Cao et al. Fig. 13-19)",
    requires=("example_id", "k", "order", "score", "retriever", "generator", "strategy"),
    applies=_has_robustness_grid,
    when="k > 0 rows",
    order=30,
)
def accuracy_vs_k_section(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """Accuracy vs k per system (averaged over retrievers and orders), and per retriever x order."""
    by = system_by(df)
    table = ctx.shared("accuracy_by_k", lambda: _accuracy_by_k(df, by, ctx))
    yield ReportTable(
        "accuracy_by_k",
        "Accuracy per system and k (averaged over retrievers and orders)",
        table,
        caption=(
            "Mean score per k > 0 over retrievers and orders; k = 0 is the closed-book baseline. "
            f"{ctx.confidence:.0%} example-level bootstrap intervals."
        ),
    )
    yield _k_figure(table, by, ctx)
    detail = (
        df.assign(k=pd.to_numeric(df["k"]).astype(int))
        .loc[lambda d: d["k"] > 0]
        .groupby([*by, "retriever", "order", "k"], sort=True, dropna=False)["score"]
        .agg(accuracy="mean", n_rows="size")
        .reset_index()
    )
    yield ReportTable(
        "accuracy_by_k_retriever_order",
        "Accuracy per system, retriever, order and k",
        detail,
        caption="Mean score per cell (Cao et al. Fig. 17-19).",
    )
    yield _k_grid_figure(detail, df, by)


def _k_figure(table: pd.DataFrame, by: Sequence[str], ctx: ReportContext) -> ReportFigure:
    settings = figures.panel_settings(table, by)
    sys_cols = [c for c in by if c in SYSTEM_COLUMNS]
    label_cols = varying(table, sys_cols) or ["generator"]
    panels = list(figures.panels(table, settings))
    fig, axes = figures.grid(len(panels))
    labels = sorted({system_label(r, label_cols) for _, r in table.iterrows()})
    colors = figures.colors(labels)
    ks = sorted(table["k"].unique())
    for ax, (title, sub) in zip(axes, panels, strict=True):
        for _, s in sub.groupby(sys_cols, sort=True):
            s = s.sort_values("k")
            lab = system_label(s.iloc[0], label_cols)
            ax.plot(s["k"], s["accuracy"], marker="o", color=colors[lab], label=lab)
            ax.fill_between(
                s["k"], s["accuracy" + CI_LOW], s["accuracy" + CI_HIGH], color=colors[lab], alpha=0.15, lw=0
            )
        ax.set_xticks(ks)
        ax.set_xlabel("Retrieved documents (k; 0 = closed-book)")
        ax.set_ylabel("Task performance (accuracy)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    return figures.finish(
        fig,
        axes,
        legend_title=" / ".join(label_cols),
        heading="Task performance vs retrieval size, averaged over retrievers and orders",
        name="accuracy_vs_k",
        title="Task performance vs k (Cao Fig. 13-16)",
        caption=f"Lines: mean accuracy; bands: {ctx.confidence:.0%} example-level bootstrap intervals.",
    )


def _k_grid_figure(detail: pd.DataFrame, df: pd.DataFrame, by: Sequence[str]) -> ReportFigure:
    retrievers = sorted(detail["retriever"].astype(str).unique())
    orders = sorted(detail["order"].astype(str).unique())
    sys_cols = list(by)
    label_cols = varying(detail, sys_cols) or ["generator"]
    labels = sorted({system_label(r, label_cols) for _, r in detail.iterrows()})
    colors = figures.colors(labels)
    closed = df[pd.to_numeric(df["k"]) == 0]
    cb = closed.groupby(sys_cols, dropna=False)["score"].mean() if len(closed) else None
    fig = Figure(figsize=(4.2 * len(orders) + 2, 3.4 * len(retrievers)), layout="constrained")
    axes = fig.subplots(len(retrievers), len(orders), squeeze=False, sharey=True)
    for i, r in enumerate(retrievers):
        for j, o in enumerate(orders):
            ax = axes[i][j]
            cell = detail[(detail["retriever"].astype(str) == r) & (detail["order"].astype(str) == o)]
            for keys, s in cell.groupby(sys_cols, sort=True, dropna=False):
                s = s.sort_values("k")
                lab = system_label(s.iloc[0], label_cols)
                xs, ys = list(s["k"]), list(s["accuracy"])
                if cb is not None and keys in cb.index:
                    xs, ys = [0, *xs], [float(cb.loc[keys]), *ys]
                ax.plot(xs, ys, marker="o", color=colors[lab], label=lab)
            ax.set_title(f"{r} - {o}", fontsize=10)
            ax.set_xticks(
                sorted({0, *detail["k"].unique()}) if cb is not None else sorted(detail["k"].unique())
            )
            ax.grid(alpha=0.3)
            if i == len(retrievers) - 1:
                ax.set_xlabel("Retrieved documents (k)")
            if j == 0:
                ax.set_ylabel("Task performance")
    return figures.finish(
        fig,
        [ax for row in axes for ax in row],
        legend_title=" / ".join(label_cols),
        heading="Task performance per retriever and document order (k = 0: closed-book)",
        name="accuracy_vs_k_by_retriever_order",
        title="Task performance vs k per retriever and order (Cao Fig. 17-19)",
        caption="One panel per retriever (rows) and document order (columns); k = 0 is the closed-book score.",
    )


@section(
    "answer_recall",
    title="Answer recall of the retrieved documents (Cao et al. Fig. 3)",
    order=40,
)
def answer_recall_section(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """Answer recall vs k per dataset and retriever, from the jobs' ``retrieval.csv``."""
    rec = ctx.retrieval
    if rec.empty:
        raise SectionSkipped("no job has a retrieval.csv")
    keys = ["dataset", "retriever", "query_perturbation", "k"]
    table = rec.groupby(keys, sort=True)["answer_recall"].agg(
        answer_recall="mean", recall_min="min", recall_max="max", n_jobs="size"
    )
    table = table.reset_index()
    spread = table["recall_max"] - table["recall_min"]
    if (spread > 1e-9).any():
        log.warning("answer recall differs between jobs of the same dataset/retriever/k (different samples?)")
    closed = df[pd.to_numeric(df["k"]) == 0]
    best_cb = (
        closed.groupby(["dataset", *[c for c in system_by(df) if c != "dataset"]])["score"]
        .mean()
        .groupby(level="dataset")
        .max()
        if len(closed)
        else pd.Series(dtype=float)
    )
    yield ReportTable(
        "answer_recall",
        "Answer recall of the top-k documents",
        table,
        caption=(
            "Share of examples whose gold answer occurs (normalised substring match) in the "
            "concatenated top-k documents (Cao et al. §4.3); mean over jobs (min/max shown)."
        ),
    )
    qps = sorted(table["query_perturbation"].astype(str).unique())
    fig, axes = figures.grid(len(qps))
    datasets = sorted(table["dataset"].astype(str).unique())
    colors = figures.colors(datasets)
    styles = dict(
        zip(sorted(table["retriever"].astype(str).unique()), ["-", "--", ":", "-."] * 5, strict=False)
    )
    for ax, qp in zip(axes, qps, strict=True):
        sub = table[table["query_perturbation"].astype(str) == qp]
        for (ds, r), s in sub.groupby(["dataset", "retriever"], sort=True):
            s = s.sort_values("k")
            ax.plot(
                s["k"],
                s["answer_recall"],
                styles[str(r)],
                marker="o",
                color=colors[str(ds)],
                label=f"{ds} - {r}",
            )
        for ds, v in best_cb.items():
            if str(ds) in colors:
                ax.axhline(v, color=colors[str(ds)], lw=1, ls=(0, (1, 3)), label=f"{ds} - Non-RAG perf")
        ax.set_xticks(sorted(sub["k"].unique()))
        ax.set_xlabel("Number of retrieved documents (k)")
        ax.set_ylabel("Recall of gold answer")
        ax.set_ylim(0, 1.02)
        ax.set_title("" if qps == ["none"] else f"query perturbation = {qp}", fontsize=10)
        ax.grid(alpha=0.3)
    yield figures.finish(
        fig,
        axes,
        heading="Answer recall of the retrievers (Cao Fig. 3)",
        name="answer_recall_vs_k",
        title="Answer recall vs k (Cao Fig. 3)",
        caption="Colour: dataset; line style: retriever; dotted: best closed-book accuracy of any system (Non-RAG perf).",
    )
