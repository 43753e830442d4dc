"""Report sections over perturbation settings: accuracy per (query, doc) perturbation and vs noise ratio.

* ``accuracy_by_perturbation``: accuracy of each system under every
  (``query_perturbation``, ``doc_perturbation``) pair of the table, with example-level
  bootstrap intervals (applies when some perturbation is not ``none``).
* ``accuracy_vs_noise_ratio``: RGB's accuracy (the share of responses with every answer part,
  ``score == 1``; rows RGB skips -- ``over_window`` -- left out and counted) vs the noise ratio of
  ``doc_perturbation`` values such as ``noise_ratio@0.4`` (parsed by
  :func:`rr.metrics.rgb.noise_ratio_of`), with intervals, the mean score (partial credit) under its
  own name, and RGB's Table 1 layout from :func:`rr.metrics.rgb.rgb_table`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pandas as pd

from rr.analysis.intervals import CI_HIGH, CI_LOW, SYSTEM_COLUMNS, system_by
from rr.metrics.rgb import correct, noise_ratio_of, rgb_table, skipped_rows
from rr.reporting import figures
from rr.reporting.loading import ReportContext
from rr.reporting.registry import Item, ReportTable, section, system_label
from rr.results import varying
from rr.stats import bootstrap_mean

PERTURBATIONS = ("query_perturbation", "doc_perturbation")


def _noise_ratios(df: pd.DataFrame) -> pd.Series:
    """Each row's noise ratio by :func:`rr.metrics.rgb.noise_ratio_of` (NaN for other tags)."""
    return df["doc_perturbation"].astype(str).map(noise_ratio_of)


def _rag_or_all(g: pd.DataFrame) -> pd.DataFrame:
    k = pd.to_numeric(g["k"])
    return g[k > 0] if (k > 0).any() else g


def _mean_rows(
    df: pd.DataFrame, keys: Sequence[str], ctx: ReportContext, value: str = "score"
) -> pd.DataFrame:
    rows = []
    for key, g in df.groupby(list(keys), sort=True, dropna=False):
        key_t = key if isinstance(key, tuple) else (key,)
        rag = _rag_or_all(g)
        r = bootstrap_mean(
            rag,
            value,
            n_resamples=ctx.n_resamples,
            confidence=ctx.confidence,
            seed=ctx.seed,
            small_sample=True,
        )
        rows.append(
            {
                **dict(zip(keys, key_t, strict=True)),
                "accuracy": r.statistic,
                "accuracy" + CI_LOW: r.ci_low,
                "accuracy" + CI_HIGH: r.ci_high,
                "cells": "k>0" if (pd.to_numeric(g["k"]) > 0).any() else "k=0",
                "n_examples": r.n,
                "n_rows": len(rag),
            }
        )
    return pd.DataFrame(rows)


def _perturbed(df: pd.DataFrame) -> bool:
    return any(c in df.columns and (df[c].astype(str) != "none").any() for c in PERTURBATIONS)


@section(
    "accuracy_by_perturbation",
    title="Accuracy per query and document perturbation",
    requires=("example_id", "k", "score", "generator", "strategy", *PERTURBATIONS),
    applies=_perturbed,
    when="a query_perturbation or doc_perturbation other than 'none'",
    order=50,
)
def accuracy_by_perturbation(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """Accuracy (k > 0 rows; k = 0 where a system has no others) per system and perturbation pair."""
    by = [c for c in system_by(df) if c not in PERTURBATIONS]
    table = _mean_rows(df, [*by, *PERTURBATIONS], ctx)
    base = table[
        (table["query_perturbation"].astype(str) == "none")
        & (table["doc_perturbation"].astype(str) == "none")
    ]
    if len(base) and by:
        ref = base[by].assign(_ref=base["accuracy"])
        table = table.merge(ref, on=by, how="left", validate="many_to_one")
        table["delta_vs_none"] = table.pop("_ref").rsub(table["accuracy"])
    yield ReportTable(
        "accuracy_by_perturbation",
        "Accuracy per system and (query, doc) perturbation",
        table,
        caption=(
            "Mean score over k > 0 cells (k = 0 for closed-book-only systems) for every "
            "(query_perturbation, doc_perturbation) pair; delta_vs_none: difference to the same "
            f"system without perturbation. {ctx.confidence:.0%} example-level bootstrap intervals."
        ),
    )


def _has_noise_ratio(df: pd.DataFrame) -> bool:
    return bool(_noise_ratios(df).notna().any())


@section(
    "accuracy_vs_noise_ratio",
    title="Accuracy vs noise ratio (RGB, Chen et al. 2024, Table 1)",
    requires=("example_id", "k", "score", "generator", "strategy", "doc_perturbation"),
    applies=_has_noise_ratio,
    when="doc_perturbation values like noise_ratio@0.4",
    order=60,
)
def accuracy_vs_noise_ratio(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """RGB accuracy (every answer part present) per system and noise ratio, as a table and a line plot."""
    sub = df.assign(noise_ratio=_noise_ratios(df)).dropna(subset=["noise_ratio"])
    by = [c for c in system_by(sub) if c != "doc_perturbation"]
    keys = [*by, "noise_ratio"]
    skipped = skipped_rows(sub)
    # RGB's evalue.py leaves a row whose generation failed out of every rate (rr: over_window)
    n_skipped = (
        sub.assign(n_skipped=(skipped & (pd.to_numeric(sub["k"]) > 0)).astype(int))
        .groupby(keys, sort=True, dropna=False)["n_skipped"]
        .sum()
        .reset_index()
    )
    kept = sub[~skipped]
    kept = kept.assign(_correct=correct(kept["score"]).astype(float))
    table = _mean_rows(kept, keys, ctx, value="_correct")
    table["mean_score"] = _mean_rows(kept, keys, ctx)["accuracy"].to_numpy()
    table = table.merge(n_skipped, on=keys, how="left", validate="one_to_one")
    yield ReportTable(
        "accuracy_by_noise_ratio",
        "RGB accuracy (all answer parts) per system and noise ratio",
        table,
        caption=(
            "Noise ratio parsed from doc_perturbation (name@ratio); accuracy = share of k > 0 responses "
            "RGB counts correct (score = 1: every answer part present, never a refusal; RGB's evalue.py "
            "all_rate), with "
            f"{ctx.confidence:.0%} example-level bootstrap intervals; mean_score = mean score (partial "
            "credit on multi-part answers, not RGB's rule); n_skipped = rows whose prompt did not fit the "
            "window (over_window), left out as RGB's code leaves out a failed generation. The judge "
            "column names the scorer (rgb: RGB's own rules; refusal_match / match: rr's)."
        ),
    )
    cols = [c for c in (*by, "k", "doc_perturbation", "score", "over_window") if c in sub.columns]
    rgb = rgb_table(sub[cols], by=by)  # accuracy only
    wide = rgb.pivot_table(index=by, columns="noise_ratio", values="accuracy", aggfunc="first")
    wide.columns = [f"noise {r:g}" for r in wide.columns]
    yield ReportTable(
        "rgb_accuracy_by_noise_ratio",
        "RGB accuracy per noise ratio (Table 1 layout)",
        wide.reset_index(),
        caption=(
            "rr.metrics.rgb.rgb_table's accuracy (share of k > 0 responses with score = 1, i.e. every "
            "answer part present; over_window rows left out) per system (rows) and noise ratio "
            "(columns), as RGB Table 1."
        ),
    )
    settings = figures.panel_settings(table, by)
    label_cols = varying(table, list(SYSTEM_COLUMNS)) or ["generator"]
    colors = figures.colors(sorted({system_label(r, label_cols) for _, r in table.iterrows()}))
    panels = list(figures.panels(table, settings))
    fig, axes = figures.grid(len(panels))
    for ax, (title, p) in zip(axes, panels, strict=True):
        for _, s in p.groupby(list(SYSTEM_COLUMNS), sort=True):
            s = s.sort_values("noise_ratio")
            lab = system_label(s.iloc[0], label_cols)
            ax.errorbar(
                s["noise_ratio"],
                s["accuracy"],
                yerr=figures.error_bars(s, "accuracy"),
                marker="o",
                capsize=3,
                color=colors[lab],
                label=lab,
            )
        ax.set_xlabel("Noise ratio (share of noise documents)")
        ax.set_ylabel("Accuracy (all answer parts)")
        ax.set_xticks(sorted(p["noise_ratio"].unique()))
        ax.set_ylim(0, 1.02)
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
    yield figures.finish(
        fig,
        axes,
        legend_title=" / ".join(label_cols),
        heading="Accuracy vs noise ratio (RGB noise robustness)",
        name="accuracy_vs_noise_ratio",
        title="Accuracy vs noise ratio (RGB Table 1)",
        caption=f"Error bars: {ctx.confidence:.0%} example-level bootstrap intervals.",
    )
