"""The metric registry: name -> pure function over the score table.

The metric modules (:mod:`rr.metrics.robustness`, :mod:`rr.metrics.rgb`, :mod:`rr.metrics.rare`)
register themselves here with :func:`register_metric`; :mod:`rr.metrics` imports them so that
:data:`METRICS` (an :class:`rr.registry.Registry`) is full once ``rr.metrics`` is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pandas as pd

from rr.registry import Registry

#: A metric: score table in, one float out.
Metric = Callable[[pd.DataFrame], float]


def _qualname(fn: Metric) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


#: name -> metric function
METRICS: Registry[Metric] = Registry("metric", Callable, key=_qualname)


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
        METRICS.register(name, fn)
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
