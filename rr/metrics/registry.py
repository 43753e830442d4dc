"""The metric registry: one :class:`MetricSpec` per metric name, the one vocabulary of metrics.

A spec says what the metric measures, its direction, the names the papers print it under, the
report section (and column) that shows it, its function over the score table, for a rate the per-row
values whose mean it is, and its estimator (how the paper-beside table and the claims estimate it with an
interval). Report sections and the paper-beside table
(:mod:`rr.reporting.paper_beside`) look metrics up here; ``rr/papers/values/*.csv``'s ``metric``
column names a spec (a test checks every row).

The metric modules (:mod:`rr.metrics.robustness`, :mod:`rr.metrics.rgb`, :mod:`rr.metrics.rare`,
:mod:`rr.metrics.spurious`, ...) register themselves with :func:`register_metric` (a function over the
score table) or :func:`describe_metric` (a metric computed from more than the score table, such as the
query-level Recall@5 from the job's runs); :mod:`rr.metrics` imports every module of its package
(:func:`rr.registry.import_builtins`) so that :data:`METRICS` (name -> function) and :data:`SPECS`
(name -> spec) are full once ``rr.metrics`` is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import pandas as pd

from rr.registry import Registry

#: A metric: score table in, one float out.
Metric = Callable[[pd.DataFrame], float]


class EstimationContext(Protocol):
    """What an estimator gets besides the rows (:class:`rr.reporting.loading.ReportContext` is one): the
    resampling settings, and what is computed from more than the rows or shared between estimators."""

    n_resamples: int
    confidence: float
    seed: int

    def robustness(self, rows: pd.DataFrame) -> tuple[pd.Series, pd.DataFrame] | None:
        """The robustness table's row of ``rows`` with intervals, and its per-example values (None: the
        robustness metrics are not defined on them)."""

    def retrieval_metrics(self, ks: Sequence[int]) -> pd.DataFrame:
        """Per-query Recall/Precision@k of the report's jobs, from their runs and qrels."""


#: Suffixes of the interval columns that go with a value column ``x``: ``x_ci_low``, ``x_ci_high``.
CI_LOW, CI_HIGH = "_ci_low", "_ci_high"


@dataclass(frozen=True)
class Estimate:
    """rr's value of a metric on some rows, its interval, and how many examples it rests on."""

    value: float
    ci_low: float
    ci_high: float
    n: int
    per_example: pd.Series | pd.DataFrame | None = None


def mean_of(rows: pd.DataFrame, values: pd.Series, ctx: EstimationContext) -> Estimate:
    """The mean of ``values`` (one per row of ``rows``) with its small-sample bootstrap interval over the
    rows (:func:`rr.stats.bootstrap_mean`), and each example's mean."""
    from rr.stats import bootstrap_mean  # scipy: not on the path of `import rr.metrics`

    frame = rows.assign(_v=values.astype(float))
    r = bootstrap_mean(
        frame, "_v", n_resamples=ctx.n_resamples, confidence=ctx.confidence, seed=ctx.seed, small_sample=True
    )
    per = frame.groupby("example_id")["_v"].mean()
    return Estimate(r.statistic, r.ci_low, r.ci_high, r.n, per)


#: How a metric is estimated with an interval beside a paper: ``(spec, rows, ctx, job_rows=None,
#: **params) -> Estimate | None`` (the matched rows, an :class:`EstimationContext`, the matched jobs'
#: rows, the setting's metric parameters; None where the rows lack what the metric needs).
Estimator = Callable[..., "Estimate | None"]


@dataclass(frozen=True)
class MetricSpec:
    """One metric, as every part of rr names it.

    Attributes:
        name: The registry key (``rgb_rejection_all_rate``); the papers' values name it so.
        measures: What it measures, one sentence.
        higher_is_better: Its direction (``None``: neither, e.g. a correlation).
        printed_as: The names the papers print it under, each ``<paper>: <name>``
            (``rgb2024: Rej (Table 3)``).
        section: The report section that shows it (``rgb_rejection``; ``None``: none does).
        column: That section's column for it (``rej``).
        label: Its name in a table's header, a figure or the console (``NDR``; default: :attr:`name`).
        fn: The function over the score table (:data:`METRICS`); ``None`` for a metric computed from
            more than the score table (its :attr:`estimator` says how).
        per_row: For a rate: the 0/1 value of each row whose mean over the rows :attr:`fn` averages.
        closed_book: For a rate: it averages the ``k = 0`` rows (else the ``k > 0`` rows).
        estimator: How it is estimated with an interval beside a paper (:data:`Estimator`; ``None``: rr
            does not estimate it there).
        rests_on: The robustness metrics it is computed from (``robustness``: NDR, RSR and ROR), whose
            degenerate cases it shares.
    """

    name: str
    measures: str
    higher_is_better: bool | None = True
    printed_as: tuple[str, ...] = ()
    section: str | None = None
    column: str | None = None
    label: str = ""
    fn: Callable[..., float] | None = None
    per_row: Callable[[pd.DataFrame], pd.Series] | None = None
    closed_book: bool = False
    estimator: Estimator | None = None
    rests_on: tuple[str, ...] = ()

    def estimate(
        self, rows: pd.DataFrame, ctx: EstimationContext, job_rows: pd.DataFrame | None = None, **params: str
    ) -> Estimate | None:
        """:attr:`estimator` on ``rows`` (see :data:`Estimator`).

        Raises:
            TypeError: the metric has no estimator.
        """
        if self.estimator is None:
            raise TypeError(f"metric {self.name!r} has no estimator")
        return self.estimator(self, rows, ctx, job_rows, **params)

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.name)

    @property
    def direction(self) -> str:
        """``higher is better`` / ``lower is better`` / ``neither``."""
        return {True: "higher is better", False: "lower is better", None: "neither"}[self.higher_is_better]


def _qualname(fn: Metric) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


#: name -> metric function
METRICS: Registry[Metric] = Registry("metric", Callable, key=_qualname)
#: name -> its spec (every metric of :data:`METRICS`, and those computed from more than the score table)
SPECS: Registry[MetricSpec] = Registry("metric spec", MetricSpec)


#: A metric function, possibly with extra keyword options after the table.
_F = TypeVar("_F", bound=Callable[..., Any])


def register_metric(
    name: str,
    *,
    measures: str = "",
    higher_is_better: bool | None = True,
    printed_as: tuple[str, ...] = (),
    section: str | None = None,
    column: str | None = None,
    label: str = "",
    per_row: Callable[[pd.DataFrame], pd.Series] | None = None,
    closed_book: bool = False,
    estimator: Estimator | None = None,
    rests_on: tuple[str, ...] = (),
) -> Callable[[_F], _F]:
    """Decorator registering a metric function under ``name`` in :data:`METRICS`, with its spec in
    :data:`SPECS` (the keyword arguments: :class:`MetricSpec`'s; ``measures`` defaults to the first
    line of the function's docstring).

    Args:
        name: Registry key (e.g. ``"ndr"``). Must not already name a different function.

    Returns:
        A decorator that registers the function and returns it unchanged.

    Raises:
        ValueError: ``name`` is already registered to another function.
    """

    def wrap(fn: _F) -> _F:
        METRICS.register(name, fn)
        origin = METRICS.origin(name)
        doc = (fn.__doc__ or "").strip().split("\n\n")[0]
        SPECS.register(
            name,
            MetricSpec(
                name=name,
                measures=measures or " ".join(doc.split()),
                higher_is_better=higher_is_better,
                printed_as=printed_as,
                section=section,
                column=column,
                label=label,
                fn=fn,
                per_row=per_row,
                closed_book=closed_book,
                estimator=estimator,
                rests_on=rests_on,
            ),
            origin=origin,
        )
        return fn

    return wrap


def describe_metric(spec: MetricSpec) -> MetricSpec:
    """Register the spec of a metric that has no function over the score table alone."""
    return SPECS.register(spec.name, spec)


def _get(registry: Registry[Any], name: str) -> Any:
    try:
        return registry[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known metrics: {sorted(registry)}") from None


def get_metric(name: str) -> Metric:
    """The metric registered as ``name``.

    Raises:
        KeyError: No metric of that name; the message lists the known ones.
    """
    return _get(METRICS, name)  # type: ignore[no-any-return]


def shown_in(section: str) -> tuple[MetricSpec, ...]:
    """The specs of the metrics report section ``section`` shows, in the order they registered (a column
    each: :attr:`MetricSpec.column`)."""
    return tuple(s for s in SPECS.values() if s.section == section)


def get_spec(name: str) -> MetricSpec:
    """The spec registered as ``name`` (a metric of :data:`METRICS` or one :func:`describe_metric` gave).

    Raises:
        KeyError: No metric of that name; the message lists the known ones.
    """
    return _get(SPECS, name)  # type: ignore[no-any-return]
