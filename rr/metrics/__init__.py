"""Metrics over the tidy score table, registered by name.

A metric is a pure function ``(score_table: pd.DataFrame) -> float`` (see docs/design.md, "The score
table"). Register one with :func:`register_metric` and look it up in :data:`METRICS` (or with
:func:`get_metric`), so reports and configs can name metrics as strings::

    from rr.metrics import METRICS
    METRICS["ror"](df)           # == rr.metrics.robustness.ror(df)

Built-in metrics: ``ndr``, ``rsr``, ``ror`` (Cao et al. 2025, §3; :mod:`rr.metrics.robustness`);
``rgb_*`` (RGB, Chen et al. 2024; :mod:`rr.metrics.rgb`); ``rare_*`` (RARE, §5; :mod:`rr.metrics.rare`).
Every metric also has a :class:`MetricSpec` in :data:`SPECS` (what it measures, its direction, the names
the papers print it under, the report section and column that show it), including those computed from
more than the score table (``sure_*``, ``ql_*``): the one vocabulary of the report and the papers' values.
"""

from __future__ import annotations

from rr.metrics.registry import (
    METRICS,
    SPECS,
    Estimate,
    EstimationContext,
    Metric,
    MetricSpec,
    describe_metric,
    get_metric,
    get_spec,
    register_metric,
)
from rr.metrics.robustness import ndr, robustness_table, ror, rsr
from rr.registry import import_builtins

import_builtins("rr.metrics")  # every module of the package registers its metrics (rr.registry)

__all__ = [
    "METRICS",
    "SPECS",
    "EstimationContext",
    "Estimate",
    "Metric",
    "MetricSpec",
    "describe_metric",
    "get_metric",
    "get_spec",
    "ndr",
    "register_metric",
    "robustness_table",
    "ror",
    "rsr",
]
