"""Cao et al. (2025) report sections: robustness table with intervals and the paper's figures.

* ``robustness``: NDR, RSR, ROR, their geometric mean, accuracy (k > 0) and closed-book accuracy
  per system, averaged over retrievers as the paper does, each with an example-level bootstrap
  interval (:func:`robustness_ci`); robustness vs performance scatter (Fig. 1 / 9) and
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
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from rr.metrics.robustness import NO_RETRIEVER, TIE_TOLERANCE, metric_notes, robustness_table
from rr.reporting.core import (
    CI_HIGH,
    CI_LOW,
    SYSTEM_COLUMNS,
    Item,
    ReportContext,
    ReportFigure,
    ReportTable,
    SectionSkipped,
    section,
    system_by,
    system_label,
    varying,
)
from rr.stats import (
    COVERAGE_CHECKED_FROM,
    BootstrapMethod,
    StatResult,
    bootstrap_cluster_means,
    cluster_bootstrap,
)

log = logging.getLogger(__name__)

#: The metrics of :func:`robustness_ci`, in table order.
METRICS = ("ndr", "rsr", "ror", "robustness", "accuracy", "closed_book_accuracy")
_BASE = ("ndr", "rsr", "ror", "accuracy", "closed_book_accuracy")
NAMES = {
    "ndr": "NDR",
    "rsr": "RSR",
    "ror": "ROR",
    "robustness": "robustness (geo. mean)",
    "accuracy": "accuracy",
    "closed_book_accuracy": "accuracy k=0",
    "ndr_rsr": "geo. mean of NDR, RSR",
}
YLABELS = {
    "robustness": "Robustness (geo. mean of NDR, RSR, ROR)",
    "ndr_rsr": "Robustness (geo. mean of NDR, RSR)",
}
Derived = Mapping[str, Callable[[Mapping[str, np.ndarray]], np.ndarray]]


def _gmean3(m: Mapping[str, np.ndarray]) -> np.ndarray:
    return np.cbrt(m["ndr"] * m["rsr"] * m["ror"])


# ----------------------------------------------------------------------------- intervals


def per_example_robustness(group: pd.DataFrame, retriever_col: str = "retriever") -> pd.DataFrame:
    """Each example's share of NDR, RSR, ROR, accuracy and closed-book accuracy in one group.

    For a valid table (one system; complete grid, as :func:`rr.metrics.robustness.ndr` etc.
    require) every example contributes the same number of comparisons to each metric, so the
    metric equals the mean of these per-example values (averaged over retrievers like
    :func:`robustness_table`). This decomposition only drives the bootstrap;
    :func:`robustness_ci` checks it reproduces :func:`robustness_table` before using it.

    Args:
        group: Score rows of one system and setting (k = 0 rows and k > 0 rows of any
            retrievers); assumed already validated by :func:`robustness_table`.
        retriever_col: Retriever column.

    Returns:
        One row per example, columns ``ndr``, ``rsr``, ``ror``, ``accuracy``,
        ``closed_book_accuracy`` (NaN where undefined).
    """
    ex, k, order, score = "example_id", "k", "order", "score"
    g = group.assign(**{k: group[k].astype(int), score: group[score].astype(float)})
    closed = g.loc[g[k] == 0].set_index(ex)[score]
    rag = g.loc[g[k] > 0]
    examples = pd.Index(pd.concat([g[ex]]).unique(), name=ex)
    per: list[pd.DataFrame] = []
    for _, mine in rag.groupby(retriever_col, sort=True):
        cols: dict[str, pd.Series] = {}
        if len(closed):
            ok = mine[score] >= mine[ex].map(closed) - TIE_TOLERANCE
            cols["ndr"] = ok.groupby(mine[ex]).mean()
        ks = sorted(mine[k].unique())
        if len(ks) >= 2:
            wide = mine.pivot(index=[ex, order], columns=k, values=score).reindex(columns=ks)
            arr = wide.to_numpy(dtype=float)
            best = np.maximum.accumulate(arr, axis=1)[:, :-1]
            row_mean = (arr[:, 1:] >= best - TIE_TOLERANCE).mean(axis=1)
            cols["rsr"] = pd.Series(row_mean, index=wide.index).groupby(level=ex).mean()
        sigma = mine.groupby([ex, k])[score].std(ddof=0)
        cols["ror"] = (1.0 - 2.0 * sigma).groupby(level=ex).mean()
        cols["accuracy"] = mine.groupby(ex)[score].mean()
        per.append(pd.DataFrame(cols).reindex(examples))
    out = (
        pd.concat(per).groupby(level=0).mean()
        if per
        else pd.DataFrame(index=examples, columns=["ndr", "rsr", "ror", "accuracy"], dtype=float)
    )
    out = out.reindex(index=examples, columns=["ndr", "rsr", "ror", "accuracy"])
    out["closed_book_accuracy"] = closed.reindex(examples) if len(closed) else math.nan
    return out.astype(float)


def _decomposes(values: pd.DataFrame, row: Mapping[str, float]) -> bool:
    """Whether the per-example values average to the table's metrics (the bootstrap's premise)."""
    return all(
        (math.isnan(row[m]) and values[m].isna().all())
        or math.isclose(float(values[m].mean()), float(row[m]), abs_tol=1e-9)
        for m in _BASE
    )


def checked_per_example(group: pd.DataFrame, retriever_col: str = "retriever") -> pd.DataFrame | None:
    """:func:`per_example_robustness` of one system's rows if it reproduces :func:`robustness_table`, else None.

    Raises:
        ValueError: The rows are not a valid table for the metrics (see :func:`robustness_table`).
    """
    row = robustness_table(group, by=(), retriever_col=retriever_col).iloc[0].to_dict()
    values = per_example_robustness(group, retriever_col)
    return values if _decomposes(values, row) else None


def robustness_ci(
    df: pd.DataFrame,
    by: Sequence[str] | None = None,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    derived: Derived | None = None,
    retriever_col: str = "retriever",
    method: BootstrapMethod = "BCa",
    small_sample: bool = True,
) -> pd.DataFrame:
    """:func:`rr.metrics.robustness_table` with an example-level bootstrap interval on every metric.

    Point estimates are exactly :func:`robustness_table`'s (averaged over retrievers). Intervals
    resample examples with replacement (``rr.stats.bootstrap_cluster_means`` on the per-example
    decomposition of :func:`per_example_robustness`, the same draw for all metrics, so the
    geometric mean gets a joint interval). If the decomposition does not reproduce the table
    (e.g. retrievers covering different examples), the group falls back to the generic
    ``rr.stats.cluster_bootstrap`` of :func:`robustness_table` itself.

    Args:
        df: Score table.
        by: Grouping columns (default :func:`rr.reporting.core.system_by`).
        n_resamples: Bootstrap resamples.
        confidence: Interval level.
        seed: Seed (same seed, same intervals).
        derived: Extra name -> function of the metric means (see
            :func:`rr.stats.bootstrap_cluster_means`), e.g. the geometric mean of NDR and RSR.
        retriever_col: Retriever column.
        method: ``"BCa"`` (default), ``"percentile"`` or ``"basic"`` (``scipy.stats.bootstrap``).
            BCa because its 95% intervals hold the true value at their nominal rate on tables of
            100 to 500 examples drawn from the simulated reader (``docs/reproduction.md``,
            ``benchmarks/calibration.py``), where percentile intervals of NDR near 1 cover only
            89-93% below 500 examples (the per-example values are skewed against the bound).
        small_sample: The small-sample rules of :func:`rr.stats.bootstrap_cluster_means` (the
            level expanded for few examples; Wilson for 0/1 or constant values), without which
            rr's 95% intervals covered 77-91% at 12 and 87-95% at 24 examples
            (``benchmarks/calibration.py``, ``benchmarks/README.md``).

    Returns:
        The :func:`robustness_table` columns, each metric ``m`` followed by ``m_ci_low`` and
        ``m_ci_high``, then any ``derived`` columns with theirs.
    """
    by_cols = list(system_by(df) if by is None else by)
    derived = {"robustness": _gmean3, **dict(derived or {})}
    point = robustness_table(df, by=by_cols, retriever_col=retriever_col)
    extra = [d for d in derived if d != "robustness"]
    rows = []
    groups = [((), df)] if not by_cols else df.groupby(by_cols, sort=True, dropna=False)
    for (key, group), (_, prow) in zip(groups, point.iterrows(), strict=True):
        key_t = key if isinstance(key, tuple) else (key,)
        assert all(str(a) == str(b) for a, b in zip(key_t, prow[by_cols], strict=True))
        row = prow.to_dict()
        values = per_example_robustness(group, retriever_col)
        ok = _decomposes(values, row)
        res: Mapping[str, StatResult]
        if group.loc[group["k"] > 0, retriever_col].astype(str).eq(NO_RETRIEVER).all():
            res = {}
        elif group["example_id"].nunique() < 2:  # an interval needs two examples: point only
            log.warning("group %s: one example, no confidence interval", key_t)
            res = {}
        elif ok:
            res = bootstrap_cluster_means(
                values,
                derived,
                n_resamples=n_resamples,
                confidence=confidence,
                seed=seed,
                method=method,
                small_sample=small_sample,
            )
        else:
            log.warning("group %s: per-example decomposition differs; using the generic bootstrap", key_t)

            def stat(d: pd.DataFrame) -> dict[str, float]:
                r = robustness_table(d, by=(), retriever_col=retriever_col).iloc[0]
                means = {m: np.array(float(r[m])) for m in _BASE}
                return {**{m: float(r[m]) for m in _BASE}, **{n: float(f(means)) for n, f in derived.items()}}

            res = cluster_bootstrap(
                group,
                stat,
                n_resamples=n_resamples,
                confidence=confidence,
                seed=seed,
                method=method,
                small_sample=small_sample,
            )
        for m in [*METRICS, *extra]:
            r = res.get(m)
            if m in extra:
                row[m] = r.statistic if r else math.nan
            row[m + CI_LOW] = r.ci_low if r else math.nan
            row[m + CI_HIGH] = r.ci_high if r else math.nan
        rows.append(row)
    ordered = [*by_cols]
    for m in [*METRICS, *extra]:
        ordered += [m, m + CI_LOW, m + CI_HIGH]
    ordered += [c for c in point.columns if c not in ordered]
    return pd.DataFrame(rows)[ordered]


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


def _colors(values: Sequence[str]) -> dict[str, tuple]:
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(values) <= 10 else "tab20"]
    return {v: cmap(i % cmap.N) for i, v in enumerate(sorted(values))}


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")


def _markers(values: Sequence[str]) -> dict[str, str]:
    return {v: MARKERS[i % len(MARKERS)] for i, v in enumerate(sorted(values))}


def _settings(table: pd.DataFrame, by: Sequence[str]) -> list[str]:
    """Columns of ``by`` other than generator/strategy that vary (one panel per combination)."""
    return varying(table, [c for c in by if c not in SYSTEM_COLUMNS])


def _panels(table: pd.DataFrame, settings: list[str]) -> Iterator[tuple[str, pd.DataFrame]]:
    if not settings:
        yield "", table
        return
    for key, sub in table.groupby(settings, sort=True):
        key_t = key if isinstance(key, tuple) else (key,)
        yield ", ".join(f"{c}={v}" for c, v in zip(settings, key_t, strict=True)), sub


def _grid(n: int, width: float = 5.0, height: float = 4.0, share: bool = False) -> tuple[Figure, list[Axes]]:
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(max(width * cols + 2.5, 7.5), height * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=share, sharey=share).ravel().tolist()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _err(sub: pd.DataFrame, m: str) -> np.ndarray:
    lo = (sub[m] - sub[m + CI_LOW]).clip(lower=0).fillna(0)
    hi = (sub[m + CI_HIGH] - sub[m]).clip(lower=0).fillna(0)
    return np.vstack([lo.to_numpy(), hi.to_numpy()])


def _legend_handles(colors: dict[str, tuple], markers: dict[str, str], ctitle: str, mtitle: str) -> list:
    from matplotlib.lines import Line2D

    handles: list = [Line2D([], [], linestyle="", label=f"$\\bf{{{ctitle}}}$")]
    handles += [Line2D([], [], color=c, marker="o", linestyle="", label=_short(v)) for v, c in colors.items()]
    if len(markers) > 1:
        handles += [Line2D([], [], linestyle="", label=f"$\\bf{{{mtitle}}}$")]
        handles += [
            Line2D([], [], color="0.3", marker=mk, linestyle="", label=v) for v, mk in markers.items()
        ]
    return handles


def _legend(fig: Figure, axes: Sequence[Axes], title: str = "", handles: list | None = None) -> None:
    """One legend right of the panels, with every label of every panel once."""
    if handles is None:
        seen: dict[str, object] = {}
        for ax in axes:
            for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                seen.setdefault(lab, h)
        handles = [h for h in seen.values()]
        labels = list(seen)
        fig.legend(
            handles, labels, loc="outside right center", fontsize=9, frameon=False, title=title or None
        )
    else:
        fig.legend(
            handles=handles, loc="outside right center", fontsize=9, frameon=False, title=title or None
        )


def _short(v: str) -> str:
    return str(v).rsplit("/", 1)[-1]


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
    if shown["robustness"].notna().any():  # degenerate values are not drawn either
        yield _scatter(shown, by, "accuracy", "robustness", "robustness_vs_performance", ctx)
    yield _bars(shown, by)


def _scatter(
    table: pd.DataFrame,
    by: Sequence[str],
    x: str,
    y: str,
    name: str,
    ctx: ReportContext,
    marker_col: str = "",
) -> ReportFigure:
    settings = _settings(table, by)
    marker_col = marker_col or "strategy"
    colors = _colors(table["generator"].astype(str).unique())
    markers = _markers(table[marker_col].astype(str).unique())
    panels = list(_panels(table, settings))
    fig, axes = _grid(len(panels), share=True)
    for ax, (title, sub) in zip(axes, panels, strict=True):
        for _, r in sub.iterrows():
            one = sub.loc[[r.name]]
            ax.errorbar(
                r[x],
                r[y],
                xerr=_err(one, x),
                yerr=_err(one, y),
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
    _legend(fig, axes, handles=_legend_handles(colors, markers, "model", marker_col.replace("_", r"\_")))
    what = (
        "geometric mean of NDR and RSR per document order"
        if y == "ndr_rsr"
        else "geometric mean of NDR, RSR, ROR"
    )
    fig.suptitle(f"Retrieval robustness vs task performance ({what})", fontsize=11)
    return ReportFigure(
        name,
        f"Robustness vs task performance ({'Cao Fig. 7' if y == 'ndr_rsr' else 'Cao Fig. 1 / 9'})",
        fig,
        caption=(
            f"y: {what}; x: mean accuracy over k > 0 cells. Colour: model; marker: {marker_col}. "
            f"Error bars: {ctx.confidence:.0%} example-level bootstrap intervals."
        ),
    )


def _bars(table: pd.DataFrame, by: Sequence[str]) -> ReportFigure:
    metrics = ["ndr", "rsr", "ror", "accuracy"]
    table = table[table[metrics].notna().any(axis=1)]  # closed-book-only systems have no bars
    hue_cols = [c for c in by if c != "generator" and c in varying(table, by)]
    table = table.assign(
        _hue=[system_label(r, hue_cols) if hue_cols else "all" for _, r in table.iterrows()],
        _model=table["generator"].map(_short),
    )
    models = list(dict.fromkeys(table["_model"]))
    hues = list(dict.fromkeys(table["_hue"]))
    colors = _colors(hues)
    fig = Figure(
        figsize=(max(8.0, 1.2 * len(models) * max(1, len(hues)) * 0.6 + 6), 4.0), layout="constrained"
    )
    axes = fig.subplots(1, len(metrics), sharey=True)
    width = 0.8 / max(1, len(hues))
    for ax, m in zip(axes, metrics, strict=True):
        for j, h in enumerate(hues):
            sub = table[table["_hue"] == h].set_index("_model").reindex(models)
            xs = np.arange(len(models)) + (j - (len(hues) - 1) / 2) * width
            err = _err(sub.fillna({m + CI_LOW: np.nan}), m)
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
        ax.set_title(NAMES[m])
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
    settings = _settings(table, by)
    sys_cols = [c for c in by if c in SYSTEM_COLUMNS]
    label_cols = varying(table, sys_cols) or ["generator"]
    panels = list(_panels(table, settings))
    fig, axes = _grid(len(panels))
    labels = sorted({system_label(r, label_cols) for _, r in table.iterrows()})
    colors = _colors(labels)
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
    _legend(fig, axes, " / ".join(label_cols))
    fig.suptitle("Task performance vs retrieval size, averaged over retrievers and orders", fontsize=11)
    return ReportFigure(
        "accuracy_vs_k",
        "Task performance vs k (Cao Fig. 13-16)",
        fig,
        caption=f"Lines: mean accuracy; bands: {ctx.confidence:.0%} example-level bootstrap intervals.",
    )


def _k_grid_figure(detail: pd.DataFrame, df: pd.DataFrame, by: Sequence[str]) -> ReportFigure:
    retrievers = sorted(detail["retriever"].astype(str).unique())
    orders = sorted(detail["order"].astype(str).unique())
    sys_cols = list(by)
    label_cols = varying(detail, sys_cols) or ["generator"]
    labels = sorted({system_label(r, label_cols) for _, r in detail.iterrows()})
    colors = _colors(labels)
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
    _legend(fig, [ax for row in axes for ax in row], " / ".join(label_cols))
    fig.suptitle("Task performance per retriever and document order (k = 0: closed-book)", fontsize=11)
    return ReportFigure(
        "accuracy_vs_k_by_retriever_order",
        "Task performance vs k per retriever and order (Cao Fig. 17-19)",
        fig,
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
    fig, axes = _grid(len(qps))
    datasets = sorted(table["dataset"].astype(str).unique())
    colors = _colors(datasets)
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
    _legend(fig, axes)
    fig.suptitle("Answer recall of the retrievers (Cao Fig. 3)", fontsize=11)
    yield ReportFigure(
        "answer_recall_vs_k",
        "Answer recall vs k (Cao Fig. 3)",
        fig,
        caption="Colour: dataset; line style: retriever; dotted: best closed-book accuracy of any system (Non-RAG perf).",
    )
