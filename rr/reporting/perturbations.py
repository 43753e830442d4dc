"""Report sections over perturbation settings: accuracy per (query, doc) perturbation and vs noise ratio.

* ``accuracy_by_perturbation``: accuracy of each system under every
  (``query_perturbation``, ``doc_perturbation``) pair of the table, with example-level
  bootstrap intervals (applies when some perturbation is not ``none``).
* ``accuracy_vs_noise_ratio``: accuracy vs the noise ratio of ``doc_perturbation`` values such
  as ``noise_ratio@0.4`` (parsed by :func:`rr.metrics.rgb.noise_ratio_of`), with intervals, and
  RGB's Table 1 layout from :func:`rr.metrics.rgb.rgb_table` (applies when such values exist).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pandas as pd

from rr.metrics.rgb import noise_ratio_of, rgb_table
from rr.reporting import figures
from rr.reporting.core import (
    CI_HIGH,
    CI_LOW,
    SYSTEM_COLUMNS,
    Item,
    ReportContext,
    ReportTable,
    section,
    system_by,
    system_label,
    varying,
)
from rr.stats import bootstrap_mean

PERTURBATIONS = ("query_perturbation", "doc_perturbation")


def _noise_ratios(df: pd.DataFrame) -> pd.Series:
    """Each row's noise ratio by :func:`rr.metrics.rgb.noise_ratio_of` (NaN for other tags)."""
    return df["doc_perturbation"].astype(str).map(noise_ratio_of)


def _rag_or_all(g: pd.DataFrame) -> pd.DataFrame:
    k = pd.to_numeric(g["k"])
    return g[k > 0] if (k > 0).any() else g


def _mean_rows(df: pd.DataFrame, keys: Sequence[str], ctx: ReportContext) -> pd.DataFrame:
    rows = []
    for key, g in df.groupby(list(keys), sort=True, dropna=False):
        key_t = key if isinstance(key, tuple) else (key,)
        rag = _rag_or_all(g)
        r = bootstrap_mean(
            rag, n_resamples=ctx.n_resamples, confidence=ctx.confidence, seed=ctx.seed, small_sample=True
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
    """Accuracy per system and noise ratio, as a table and a line plot."""
    sub = df.assign(noise_ratio=_noise_ratios(df)).dropna(subset=["noise_ratio"])
    by = [c for c in system_by(sub) if c != "doc_perturbation"]
    table = _mean_rows(sub, [*by, "noise_ratio"], ctx)
    yield ReportTable(
        "accuracy_by_noise_ratio",
        "Accuracy per system and noise ratio",
        table,
        caption=(
            "Noise ratio parsed from doc_perturbation (name@ratio); accuracy = mean score over k > 0 "
            f"cells; {ctx.confidence:.0%} example-level bootstrap intervals."
        ),
    )
    rgb = rgb_table(sub[[*by, "k", "doc_perturbation", "score"]], by=by)  # accuracy only
    wide = rgb.pivot_table(index=by, columns="noise_ratio", values="accuracy", aggfunc="first")
    wide.columns = [f"noise {r:g}" for r in wide.columns]
    yield ReportTable(
        "rgb_accuracy_by_noise_ratio",
        "RGB accuracy per noise ratio (Table 1 layout)",
        wide.reset_index(),
        caption=(
            "rr.metrics.rgb.rgb_table's accuracy (share of k > 0 responses with score = 1, i.e. every "
            "answer part present) per system (rows) and noise ratio (columns), as RGB Table 1."
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
        ax.set_ylabel("Accuracy")
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
