"""Statistical power of a plan: how wide will the 95% intervals be, and how many examples are needed.

``rr plan`` reports, for the number of examples a job will score, the expected half-width of
the confidence interval of accuracy and of NDR / RSR / ROR (Cao et al. 2025, §3), and the number
of examples that brings each half-width down to a target (``--target-halfwidth``). Two bases:

* **An assumed rate** ``p`` (default 0.5, the worst case): the Wald half-width
  ``z * sqrt(p (1 - p) / n)``. For accuracy on 0/1 scores it is the usual normal approximation;
  for NDR, RSR and ROR it is an upper bound, since each is a mean over examples of per-example
  values in [0, 1] (:func:`rr.analysis.intervals.per_example_robustness`), and a [0, 1] variable
  with mean ``p`` has variance at most ``p (1 - p)``, reached when every per-example value is 0
  or 1. Examples are assumed independent; rows of one example are not (that is why the unit is
  the example).
* **A pilot job's score table**: the interval ``rr report`` prints
  (:func:`rr.analysis.intervals.robustness_ci`: example-level bootstrap, same resamples,
  confidence and seed), for each system of the pilot. Its half-width ``h`` at the pilot's ``m``
  examples is projected to ``n`` examples as ``h * sqrt(m / n)``: every metric is a mean of
  i.i.d. per-example values, whose standard error falls as ``1 / sqrt(n)``. The projection is
  only as good as the pilot is representative (same data distribution, model and grid).

Examples needed for a target half-width ``t``: ``ceil(m * (h / t) ** 2)`` (``m = 1``,
``h = z sqrt(p (1 - p))`` for an assumed rate).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
import scipy.stats

from rr.analysis.intervals import CI_HIGH, CI_LOW, RAG_METRICS, robustness_ci, system_by

#: Default assumed rate: p (1 - p) is largest at 0.5, so the half-widths are upper bounds.
DEFAULT_RATE = 0.5
DEFAULT_TARGET = 0.02


@dataclass(frozen=True)
class PowerRow:
    """Expected interval half-width of one metric (of one system, for a pilot) at the planned size.

    Attributes:
        system: The pilot's system (``generator / strategy / ...``), or ``assumed``.
        metric: ``accuracy``, ``ndr``, ``rsr`` or ``ror``.
        basis: ``assumed rate`` or ``pilot bootstrap``.
        value: The assumed rate, or the pilot's point estimate.
        n_basis: Examples behind ``halfwidth_basis`` (1 for an assumed rate: the per-example spread).
        halfwidth_basis: Half-width at ``n_basis`` examples.
        n_planned: The examples the plan scores.
        halfwidth: Expected half-width at ``n_planned`` examples.
        target: Target half-width.
        n_needed: Examples for a half-width of at most ``target``; ``None`` where the pilot's
            interval is degenerate (no variation across its examples: nothing to project).
    """

    system: str
    metric: str
    basis: str
    value: float
    n_basis: int
    halfwidth_basis: float
    n_planned: int
    halfwidth: float
    target: float
    n_needed: int | None


def z_value(confidence: float = 0.95) -> float:
    """The two-sided normal quantile of ``confidence`` (1.959964 for 0.95)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return float(scipy.stats.norm.ppf(0.5 + confidence / 2))


def wald_halfwidth(p: float, n: int, confidence: float = 0.95) -> float:
    """``z * sqrt(p (1 - p) / n)``: the Wald half-width of a proportion ``p`` over ``n`` examples."""
    if not 0 <= p <= 1:
        raise ValueError(f"an assumed rate must be in [0, 1], got {p}")
    if n < 1:
        raise ValueError(f"the number of examples must be >= 1, got {n}")
    return z_value(confidence) * math.sqrt(p * (1 - p) / n)


def project_halfwidth(halfwidth: float, n_from: int, n_to: int) -> float:
    """A half-width measured at ``n_from`` examples, projected to ``n_to`` (``1/sqrt(n)`` scaling)."""
    return halfwidth * math.sqrt(n_from / n_to)


def examples_needed(halfwidth: float, n: int, target: float) -> int | None:
    """Fewest examples whose projected half-width is at most ``target`` (``None`` if ``halfwidth`` is 0).

    ``ceil(n (halfwidth / target)^2)``, at least 1; a relative tolerance of 1e-9 keeps an exact
    integer (e.g. 2401.0000000002 from rounding) from becoming the next one.
    """
    if target <= 0:
        raise ValueError(f"--target-halfwidth must be > 0, got {target}")
    if halfwidth <= 0:
        return None
    need = n * (halfwidth / target) ** 2
    return max(1, math.ceil(need * (1 - 1e-9)))


def power_from_rates(
    rates: Mapping[str, float], n_planned: int, target: float = DEFAULT_TARGET, confidence: float = 0.95
) -> list[PowerRow]:
    """One :class:`PowerRow` per metric from an assumed rate (Wald; an upper bound for NDR / RSR / ROR)."""
    rows = []
    for metric, p in rates.items():
        h1 = wald_halfwidth(p, 1, confidence)
        rows.append(
            PowerRow(
                "assumed",
                metric,
                "assumed rate",
                float(p),
                1,
                h1,
                n_planned,
                project_halfwidth(h1, 1, n_planned),
                target,
                examples_needed(h1, 1, target),
            )
        )
    return rows


def power_from_pilot(
    scores: pd.DataFrame,
    n_planned: int,
    target: float = DEFAULT_TARGET,
    *,
    confidence: float = 0.95,
    n_resamples: int = 1000,
    seed: int = 0,
    metrics: Sequence[str] = RAG_METRICS,
) -> tuple[list[PowerRow], list[str]]:
    """Half-widths of ``rr report``'s example-level bootstrap on a pilot, projected to ``n_planned``.

    Args:
        scores: The pilot's score table (``rr.results.load``).
        n_planned: Examples the plan scores.
        target: Target half-width.
        confidence, n_resamples, seed: As for ``rr report`` (its defaults).
        metrics: Metrics to report.

    Returns:
        The rows (per system of the pilot and metric, where the metric is defined) and notes on
        what was left out and why.
    """
    if scores.empty:
        raise ValueError("rr plan --pilot: the pilot's score table is empty")
    by = system_by(scores)
    # the plain bootstrap: its half-width scales as 1 / sqrt(n); the small-sample rules rr report adds
    # at few examples (an expanded level, Wilson for constant values) are not projected
    table = robustness_ci(
        scores, by, n_resamples=n_resamples, confidence=confidence, seed=seed, small_sample=False
    )
    rows: list[PowerRow] = []
    notes: list[str] = []
    for _, r in table.iterrows():
        system = " / ".join(str(r[c]) for c in by) or "all"
        key = (scores[by].astype(str) == pd.Series({c: str(r[c]) for c in by})).all(axis=1) if by else None
        m = int(
            scores.loc[key, "example_id"].nunique() if key is not None else scores["example_id"].nunique()
        )
        for metric in metrics:
            value, lo, hi = float(r[metric]), float(r[metric + CI_LOW]), float(r[metric + CI_HIGH])
            if not all(math.isfinite(v) for v in (value, lo, hi)):
                notes.append(
                    f"{system}: {metric} has no interval in the pilot (undefined for its grid: "
                    "NDR needs k = 0 and k > 0 rows, RSR two k > 0, ROR several orders)"
                )
                continue
            h = (hi - lo) / 2
            if h == 0:
                notes.append(
                    f"{system}: {metric} = {value:.3f} on every resample of the pilot's {m} examples "
                    "(no variation): its half-width cannot be projected; use an assumed rate"
                )
            rows.append(
                PowerRow(
                    system,
                    metric,
                    "pilot bootstrap",
                    value,
                    m,
                    h,
                    n_planned,
                    project_halfwidth(h, m, n_planned),
                    target,
                    examples_needed(h, m, target),
                )
            )
    return rows, notes


def parse_rates(specs: Sequence[str], metrics: Sequence[str] = RAG_METRICS) -> dict[str, float]:
    """``--assumed-rate`` values: ``P`` (every metric) and/or ``METRIC=P``, later ones winning.

    Raises:
        ValueError: An unknown metric or a rate outside [0, 1], naming the bad value.
    """
    rates = dict.fromkeys(metrics, DEFAULT_RATE)
    for spec in specs:
        name, _, value = spec.rpartition("=")
        try:
            p = float(value)
        except ValueError:
            raise ValueError(f"--assumed-rate {spec!r}: expected P or METRIC=P with P a number") from None
        if not 0 <= p <= 1:
            raise ValueError(f"--assumed-rate {spec!r}: the rate must be in [0, 1]")
        if not name:
            rates = dict.fromkeys(metrics, p)
        elif name in rates:
            rates[name] = p
        else:
            raise ValueError(f"--assumed-rate {spec!r}: unknown metric {name!r}; known: {', '.join(metrics)}")
    return rates
