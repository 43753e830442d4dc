"""Metrics over the tidy score table, registered by name.

A metric is a pure function ``(score_table: pd.DataFrame) -> float`` (see DESIGN.md, "The score
table"). Register one with :func:`register_metric` and look it up in :data:`METRICS` (or with
:func:`get_metric`), so reports and configs can name metrics as strings::

    from rr.metrics import METRICS
    METRICS["ror"](df)           # == rr.metrics.robustness.ror(df)

Built-in metrics: ``ndr``, ``rsr``, ``ror`` (Cao et al. 2025, §3; :mod:`rr.metrics.robustness`);
``rgb_*`` (RGB, Chen et al. 2024; :mod:`rr.metrics.rgb`); ``rare_*`` (RARE, §5; :mod:`rr.metrics.rare`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pandas as pd

#: A metric: score table in, one float out.
Metric = Callable[[pd.DataFrame], float]

#: name -> metric function
METRICS: dict[str, Metric] = {}


#: A metric function, possibly with extra keyword options after the table.
_F = TypeVar("_F", bound=Callable[..., Any])


def register_metric(name: str) -> Callable[[_F], _F]:
    """Decorator registering a metric function under ``name`` in :data:`METRICS`.

    Args:
        name: Registry key (e.g. ``"ndr"``). Must not already name a different function.

    Returns:
        A decorator that registers the function and returns it unchanged.

    Raises:
        ValueError: ``name`` is already registered to another function.
    """

    def wrap(fn: _F) -> _F:
        old = METRICS.get(name)
        if old is not None and _qualname(old) != _qualname(fn):
            raise ValueError(f"metric {name!r} is already registered to {_qualname(old)}")
        METRICS[name] = fn
        return fn

    return wrap


def get_metric(name: str) -> Metric:
    """The metric registered as ``name``.

    Raises:
        KeyError: No metric of that name; the message lists the known ones.
    """
    try:
        return METRICS[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known metrics: {sorted(METRICS)}") from None


def _qualname(fn: Metric) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


# Imported last: these modules register their metrics with the registry defined above.
from rr.metrics import rare, rgb  # noqa: E402
from rr.metrics.robustness import ndr, robustness_table, ror, rsr  # noqa: E402

__all__ = [
    "METRICS",
    "Metric",
    "get_metric",
    "ndr",
    "rare",
    "register_metric",
    "rgb",
    "robustness_table",
    "ror",
    "rsr",
]
