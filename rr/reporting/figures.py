"""The figure kit of ``rr report``'s sections: colours, markers, panel grids, error bars, one legend.

Every section draws with these, so figures look alike: one panel per setting (:func:`panels` on
:func:`panel_settings`, laid out by :func:`grid`), a colour per system (:func:`colors`), interval
columns drawn as error bars (:func:`error_bars`), and :func:`finish` for the tail every figure
shares (one legend right of the panels, the heading, the :class:`~rr.reporting.registry.ReportFigure`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from rr.analysis.intervals import CI_HIGH, CI_LOW, SYSTEM_COLUMNS
from rr.reporting.registry import ReportFigure
from rr.results import varying

#: Marker shapes, one per value (:func:`markers`), repeating after ten.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")


def colors(values: Sequence[str]) -> dict[str, tuple]:
    """A colour per value, in sorted order: ``tab10`` for up to ten values, else ``tab20`` (repeating)."""
    from matplotlib import colormaps

    cmap = colormaps["tab10" if len(values) <= 10 else "tab20"]
    return {v: cmap(i % cmap.N) for i, v in enumerate(sorted(values))}


def markers(values: Sequence[str]) -> dict[str, str]:
    """A marker shape (:data:`MARKERS`) per value, in sorted order."""
    return {v: MARKERS[i % len(MARKERS)] for i, v in enumerate(sorted(values))}


def panel_settings(table: pd.DataFrame, by: Sequence[str]) -> list[str]:
    """Columns of ``by`` other than generator/strategy that vary (one panel per combination)."""
    return varying(table, [c for c in by if c not in SYSTEM_COLUMNS])


def panels(table: pd.DataFrame, settings: list[str]) -> Iterator[tuple[str, pd.DataFrame]]:
    """``(title, rows)`` per combination of ``settings`` (sorted), the title ``"col=value, ..."``;
    one untitled panel of the whole table when ``settings`` is empty."""
    if not settings:
        yield "", table
        return
    for key, sub in table.groupby(settings, sort=True):
        key_t = key if isinstance(key, tuple) else (key,)
        yield ", ".join(f"{c}={v}" for c, v in zip(settings, key_t, strict=True)), sub


def grid(n: int, width: float = 5.0, height: float = 4.0, share: bool = False) -> tuple[Figure, list[Axes]]:
    """A figure of ``n`` panels, up to three a row, each ``width`` x ``height`` inches (room kept
    right for the legend); ``share``: shared x and y axes. Returns the figure and its ``n`` axes."""
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(max(width * cols + 2.5, 7.5), height * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, sharex=share, sharey=share).ravel().tolist()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def error_bars(sub: pd.DataFrame, m: str) -> np.ndarray:
    """Matplotlib's ``yerr`` (2 x rows) of column ``m`` from ``m_ci_low`` / ``m_ci_high``: the distances
    below and above the value, never negative, 0 where an interval is missing."""
    lo = (sub[m] - sub[m + CI_LOW]).clip(lower=0).fillna(0)
    hi = (sub[m + CI_HIGH] - sub[m]).clip(lower=0).fillna(0)
    return np.vstack([lo.to_numpy(), hi.to_numpy()])


def short(v: str) -> str:
    """A model name without its organisation (after the last ``/``)."""
    return str(v).rsplit("/", 1)[-1]


def legend_handles(colors: dict[str, tuple], markers: dict[str, str], ctitle: str, mtitle: str) -> list:
    """Legend entries of a colour x marker figure: a bold ``ctitle`` heading and a dot per colour,
    then (if more than one marker) a bold ``mtitle`` heading and a grey marker per shape."""
    from matplotlib.lines import Line2D

    handles: list = [Line2D([], [], linestyle="", label=f"$\\bf{{{ctitle}}}$")]
    handles += [Line2D([], [], color=c, marker="o", linestyle="", label=short(v)) for v, c in colors.items()]
    if len(markers) > 1:
        handles += [Line2D([], [], linestyle="", label=f"$\\bf{{{mtitle}}}$")]
        handles += [
            Line2D([], [], color="0.3", marker=mk, linestyle="", label=v) for v, mk in markers.items()
        ]
    return handles


def legend(fig: Figure, axes: Sequence[Axes], title: str = "", handles: list | None = None) -> None:
    """One legend right of the panels, with every label of every panel once (or ``handles``)."""
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


def finish(
    fig: Figure,
    axes: Sequence[Axes],
    *,
    name: str,
    title: str,
    heading: str,
    caption: str,
    legend_title: str = "",
    handles: list | None = None,
) -> ReportFigure:
    """The tail every panel figure shares: :func:`legend` right of ``axes``, ``heading`` above the
    panels, and the :class:`~rr.reporting.registry.ReportFigure` named ``name`` (index ``title``,
    ``caption``)."""
    legend(fig, axes, legend_title, handles)
    fig.suptitle(heading, fontsize=11)
    return ReportFigure(name, title, fig, caption=caption)
