"""Report sections of the query-level study (arXiv 2507.06956), over :mod:`rr.analysis.query_level`.

* ``query_level_retrieval``: Recall@k / Precision@k (%) per retriever and query-perturbation
  kind (Table 4), from each job's ``runs/*.trec`` and ``qrels.trec``
  (:func:`~rr.analysis.query_level.job_retrieval_metrics`, :func:`~rr.analysis.query_level.retriever_table`).
* ``query_level_match``: Match per setting (closed-book, oracle, RAG per retriever) and
  perturbation kind (Figs. 3/4/9; :func:`~rr.analysis.query_level.match_table`), as a table and a
  grouped bar figure with example-level bootstrap intervals.
* ``query_level_correlations``: Pearson r (and p) of the per-sample change of each module
  (retriever Recall@k, closed-book Match, oracle Match) with the change of RAG Match, per
  perturbation kind (Table 2; :func:`~rr.metrics.query_level.module_deltas`,
  :func:`~rr.analysis.query_level.correlations`), and a heatmap of r with p-value stars.

The cut-off is the paper's k = 5 when the table has it, else its smallest k > 0; the document
order is ``original`` when present.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from rr.analysis import query_level as ql
from rr.analysis.intervals import CI_HIGH, CI_LOW
from rr.metrics.query_level import ORACLE, module_deltas
from rr.reporting import figures
from rr.reporting.loading import ReportContext
from rr.reporting.registry import Item, ReportFigure, ReportTable, SectionSkipped, section, system_label
from rr.results import follow_split_ids, varying
from rr.stats import bootstrap_mean

#: Columns that make one query-level "system" (a match table / correlation analysis each).
GROUP = ("dataset", "generator", "strategy", "judge")
SETTING_LABEL = {"closed_book": "closed-book", "oracle": "oracle", "rag": "RAG"}


def _perturbed_queries(df: pd.DataFrame) -> bool:
    qp = df["query_perturbation"].astype(str)
    return bool((qp == ql.ORIGINAL).any() and (qp != ql.ORIGINAL).any())


def _cutoff(df: pd.DataFrame) -> tuple[int, str]:
    ks = sorted(int(k) for k in pd.unique(df["k"]) if int(k) > 0)
    if not ks:
        raise SectionSkipped("no k > 0 rows")
    orders = sorted(df.loc[df["k"] > 0, "order"].astype(str).unique())
    return (5 if 5 in ks else ks[0]), ("original" if "original" in orders else orders[0])


def _groups(df: pd.DataFrame) -> Iterator[tuple[dict[str, object], pd.DataFrame]]:
    cols = [c for c in GROUP if c in df.columns]
    for key, g in df.groupby(cols, sort=True, dropna=False):
        yield dict(zip(cols, key if isinstance(key, tuple) else (key,), strict=True)), g


def _no_runs() -> SectionSkipped:
    return SectionSkipped("no job folder has runs/*.trec and qrels.trec (examples without gold passages)")


@section(
    "query_level_retrieval",
    title="Retriever Recall@k / Precision@k per query perturbation (query-level paper, Table 4)",
    requires=("example_id", "k", "query_perturbation"),
    order=70,
)
def retrieval_section(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """Table 4: mean Recall@k and Precision@k (%) per retriever and perturbation kind."""
    ks = sorted({int(k) for k in pd.unique(df["k"]) if int(k) > 0})
    if not ks:
        raise SectionSkipped("no k > 0 rows")
    metrics = ctx.retrieval_metrics(ks)
    if metrics.empty:
        raise _no_runs()
    parts = []
    for k in ks:
        for measure, label in (
            ("recall", "Recall"),
            ("precision", "Precision"),
            ("bergen_recall", "BERGEN Recall"),
        ):
            t = ql.retriever_table(metrics, f"{measure}@{k}").reset_index()
            t.insert(1, "measure", f"{label}@{k}")
            parts.append(t)
    table = pd.concat(parts, ignore_index=True)
    yield ReportTable(
        "query_level_retrieval",
        "Recall@k / Precision@k (%) per retriever and query perturbation kind",
        table,
        caption=(
            "rr.analysis.query_level.retriever_table over every job's runs/*.trec judged with its "
            "qrels.trec (ir_measures): mean over queries, the variants of a kind (typo@0.1#1..5) "
            "pooled; column none = original queries. Recall@k is rr's (hits in rank order; a query "
            "with no hits scores 0); BERGEN Recall@k is the paper's tool's (pytrec_eval on the "
            "retriever's scores, ties broken by docid; a query with no hits left out of the mean)."
        ),
        digits=1,
    )


@section(
    "query_level_match",
    title="Match per setting and query perturbation (query-level paper, Figs. 3/4/9)",
    requires=("example_id", "k", "order", "retriever", "score", "generator", "query_perturbation"),
    applies=_perturbed_queries,
    when="original (query_perturbation=none) and perturbed query variants",
    order=71,
)
def match_section(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """Mean Match per (system, setting, retriever) and perturbation kind, table and bar figure."""
    k, order = _cutoff(df)
    rows = []
    for key, g in _groups(df):
        values = ql.match_table(g, k=k, order=order, oracle=ORACLE)
        sel = ql.with_setting(g, ORACLE)
        sel = sel[(sel["k"] == 0) | ((sel["k"] == k) & (sel["order"] == order))]
        for (gen, setting, retriever), vals in values.iterrows():
            for kind, v in vals.items():
                if pd.isna(v):
                    continue
                part = sel[
                    (sel["generator"] == gen)
                    & (sel["setting"] == setting)
                    & (sel["retriever"] == retriever)
                    & (sel["kind"] == kind)
                ]
                r = bootstrap_mean(
                    part,
                    n_resamples=ctx.n_resamples,
                    confidence=ctx.confidence,
                    seed=ctx.seed,
                    small_sample=True,
                )
                rows.append(
                    {
                        **key,
                        "setting": setting,
                        "retriever": retriever,
                        "kind": kind,
                        "match": float(v),
                        "match" + CI_LOW: r.ci_low,
                        "match" + CI_HIGH: r.ci_high,
                        "n_rows": len(part),
                    }
                )
    table = pd.DataFrame(rows)
    yield ReportTable(
        "query_level_match",
        f"Match per setting and perturbation kind (k = {k}, order {order})",
        table,
        caption=(
            "rr.analysis.query_level.match_table: mean score of the closed-book rows (k = 0), the "
            f"oracle retriever's and every other retriever's rows (RAG) at k = {k}, order {order}, per "
            f"perturbation kind (variants pooled); {ctx.confidence:.0%} example-level bootstrap intervals."
        ),
    )
    yield _match_figure(table, k)


def _match_figure(table: pd.DataFrame, k: int) -> ReportFigure:
    panel_cols = varying(table, [c for c in GROUP if c in table.columns]) or ["generator"]
    table = table.assign(
        bar=[
            SETTING_LABEL[s] + (f" ({r})" if s == "rag" else "")
            for s, r in zip(table["setting"], table["retriever"], strict=True)
        ]
    )
    bars = sorted(table["bar"].unique(), key=lambda b: (not b.startswith("closed"), b != "oracle", b))
    colors = figures.colors(bars)
    panels = list(table.groupby(panel_cols, sort=True))
    fig, axes = figures.grid(len(panels), width=max(4.0, 1.2 * table["kind"].nunique()))
    for ax, (_, p) in zip(axes, panels, strict=True):
        kinds = ql._kind_order(list(p["kind"]))
        x = np.arange(len(kinds))
        width = 0.8 / len(bars)
        for i, b in enumerate(bars):
            s = p[p["bar"] == b].set_index("kind").reindex(kinds)
            err = figures.error_bars(s, "match")
            ax.bar(
                x + (i - (len(bars) - 1) / 2) * width,
                s["match"],
                width,
                yerr=err,
                capsize=2,
                color=colors[b],
                label=b,
            )
        ax.set_xticks(x, kinds, rotation=30, ha="right")
        ax.set_xlabel("Query perturbation")
        ax.set_ylabel(f"Match (k = {k})")
        ax.set_ylim(0, 1.05)
        ax.set_title(system_label(p.iloc[0], panel_cols), fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    return figures.finish(
        fig,
        axes,
        legend_title="setting",
        heading="Match per setting and query perturbation",
        name="query_level_match",
        title="Match per setting and query perturbation (Figs. 3/4/9)",
        caption="Error bars: example-level bootstrap intervals.",
    )


def _correlations_apply(df: pd.DataFrame) -> bool:
    rag = df[df["k"] > 0]["retriever"].astype(str)
    return (
        _perturbed_queries(df)
        and bool((df["k"] == 0).any())
        and bool((rag == ORACLE).any())
        and bool((rag != ORACLE).any())
    )


def stars(p: float) -> str:
    """Significance stars of a p-value: ``***`` < 0.001, ``**`` < 0.01, ``*`` < 0.05, else none."""
    if not np.isfinite(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


@section(
    "query_level_correlations",
    title="Module correlations with RAG under query perturbations (query-level paper, Table 2)",
    requires=("example_id", "k", "order", "retriever", "score", "generator", "query_perturbation"),
    applies=_correlations_apply,
    when="perturbed query variants with closed-book (k = 0), oracle-retriever and other-retriever rows",
    order=72,
)
def correlations_section(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """Pearson r of ΔRET / ΔCB / ΔOR with ΔRAG per kind, long table, Table 2 layout and heatmap."""
    k, order = _cutoff(df)
    metrics = ctx.retrieval_metrics([k])
    if metrics.empty:
        raise _no_runs()
    rows = []
    for key, g in _groups(df):
        ret = metrics[metrics["job_id"].isin(set(g["job_id"]))] if "job_id" in g.columns else metrics
        ret = follow_split_ids(ret, g)  # a run names a query by the id its dataset gave
        ret = ret.drop_duplicates(["retriever", "example_id", "query_perturbation"])
        for retriever in sorted(set(g.loc[g["k"] == k, "retriever"].astype(str)) - {ORACLE}):
            if not (ret["retriever"] == retriever).any():
                continue
            deltas = module_deltas(g, ret, retriever, k=k, order=order, oracle=ORACLE)
            corr = ql.correlations(deltas)
            for _, c in corr.iterrows():
                rows.append({**key, "retriever": retriever, **c.to_dict()})
    if not rows:
        raise SectionSkipped(f"no retriever besides {ORACLE!r} has retrieval metrics at k = {k}")
    table = pd.DataFrame(rows)
    table["stars"] = table["p"].map(stars)
    yield ReportTable(
        "query_level_correlations",
        f"Pearson r of module changes with RAG changes (k = {k})",
        table,
        caption=(
            "rr.metrics.query_level.module_deltas + correlations: per perturbed sample, its change from "
            f"the original in Recall@{k} (RET), closed-book Match (CB), oracle Match (OR) and RAG Match; "
            "r and two-sided p of each with the RAG change per kind (scipy.stats.pearsonr); NaN where "
            "undefined (a constant change). Stars: * p < 0.05, ** p < 0.01, *** p < 0.001."
        ),
    )
    ids = [c for c in [*GROUP, "retriever"] if c in table.columns]
    wide = []
    for key, t in table.groupby(ids, sort=True, dropna=False):
        r = ql.correlation_table(t, "r")
        p = ql.correlation_table(t, "p")
        cells = r.map(lambda v: f"{v:.3f}" if np.isfinite(v) else "") + p.map(stars)
        cells = cells.reset_index()
        for c, v in reversed(list(zip(ids, key, strict=True))):
            cells.insert(0, c, v)
        wide.append(cells)
    yield ReportTable(
        "query_level_correlations_table2",
        "Module correlations, Table 2 layout (r with p-value stars)",
        pd.concat(wide, ignore_index=True),
        caption="Rows RET / CB / OR (each module's change vs the RAG change), one column per perturbation kind.",
    )
    yield _heatmap(table, ids, k)


def _heatmap(table: pd.DataFrame, ids: list[str], k: int) -> ReportFigure:
    label_cols = varying(table, ids) or ["generator", "retriever"]
    panels = list(table.groupby(ids, sort=True, dropna=False))
    n_kinds = table["kind"].nunique()
    fig, axes = figures.grid(len(panels), width=max(3.5, 1.1 * n_kinds), height=3.0)
    image = None
    for ax, (_, t) in zip(axes, panels, strict=True):
        r = ql.correlation_table(t, "r")
        p = ql.correlation_table(t, "p")
        image = ax.imshow(r.to_numpy(float), cmap="RdBu_r", vmin=-1, vmax=1, aspect="auto")
        for i in range(r.shape[0]):
            for j in range(r.shape[1]):
                v = r.iat[i, j]
                text = f"{v:.2f}{stars(p.iat[i, j])}" if np.isfinite(v) else "n/a"
                ax.text(
                    j,
                    i,
                    text,
                    ha="center",
                    va="center",
                    fontsize=9,
                    color="white" if np.isfinite(v) and abs(v) > 0.6 else "black",
                )
        ax.set_xticks(range(r.shape[1]), list(r.columns), rotation=30, ha="right")
        ax.set_yticks(range(r.shape[0]), [f"{t}–RAG" for t in r.index])
        ax.set_xlabel("Query perturbation")
        ax.set_ylabel("Module")
        ax.set_title(system_label(t.iloc[0], label_cols), fontsize=10)
    if image is not None:
        fig.colorbar(image, ax=axes, label="Pearson r", shrink=0.9)
    fig.suptitle(
        f"Correlation of module changes with RAG changes (k = {k}; * p<.05, ** p<.01, *** p<.001)",
        fontsize=10,
    )
    return ReportFigure(
        "query_level_correlations",
        "Module–RAG correlation heatmap (Table 2)",
        fig,
        caption="Pearson r per module and perturbation kind; stars: two-sided p-value of r.",
    )
