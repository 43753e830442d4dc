"""Statistical tests and confidence intervals: thin, named wrappers over scipy and statsmodels.

Every function returns a :class:`StatResult` (statistic, p-value, effect size, confidence
interval, sample size, method), with ``NaN`` where a field is not defined for that test, so
reports and notebooks print every number with its uncertainty the same way. The arithmetic is
scipy's and statsmodels'; this module only chooses the call, names the result and documents
the choice.

* Two samples: :func:`ks_2samp` (SURE Tables 3-4), :func:`two_proportion_ztest` (RARE Table 8).
* Association: :func:`pearson` (query-level paper Tables 2, 5, 6), Fisher-z interval.
* Uncertainty of any metric over a score table: :func:`cluster_bootstrap` resamples *examples*
  (clusters of rows), never rows, with a seeded generator; :func:`bootstrap_cluster_means` is
  its fast form for metrics that are means of per-example values (NDR, RSR, ROR, accuracy and
  functions of them such as their geometric mean).
* Two systems on the same examples: :func:`mcnemar_exact` (0/1 scores),
  :func:`paired_permutation_test` (any paired values); :func:`adjust_pvalues` (Holm,
  Benjamini-Hochberg) for many comparisons.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import scipy.stats
from numpy.typing import ArrayLike

#: Bootstrap interval methods accepted by :func:`cluster_bootstrap` (scipy.stats.bootstrap's).
BootstrapMethod = Literal["percentile", "basic", "BCa"]
NAN = math.nan


@dataclass(frozen=True)
class StatResult:
    """The outcome of one test or interval estimate.

    Attributes:
        statistic: The test statistic (z, D, r, ...) or, for an interval estimate, the point
            estimate of the quantity on the full data.
        p_value: Two-sided p-value unless the function says otherwise; NaN when not a test.
        effect_size: A scale-free or natural effect size named in the function's docstring
            (Cohen's h, D, r, a difference of means); NaN when undefined.
        ci_low: Lower end of the confidence interval (of the quantity the function names).
        ci_high: Upper end; both NaN when no interval is defined.
        n: Sample size the result rests on (pairs, examples, or both samples together).
        method: How it was computed, e.g. ``"two-proportion z-test (statsmodels)"``.
    """

    statistic: float
    p_value: float
    effect_size: float
    ci_low: float
    ci_high: float
    n: int
    method: str


@dataclass(frozen=True)
class AdjustedPValues:
    """Multiple-comparison correction of a family of p-values (input order kept).

    Attributes:
        p_adjusted: Adjusted p-values.
        reject: Whether each null hypothesis is rejected at ``alpha`` after correction.
        alpha: Family-wise error rate (Holm) or false discovery rate (BH).
        method: ``"holm"`` or ``"fdr_bh"``.
    """

    p_adjusted: np.ndarray
    reject: np.ndarray
    alpha: float
    method: str


def _vector(x: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError(f"{name} is empty")
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN ({int(np.isnan(arr).sum())} value(s))")
    return arr


def _paired(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    x, y = _vector(a, "a"), _vector(b, "b")
    if x.shape != y.shape:
        raise ValueError(f"paired samples must have equal length, got {x.size} and {y.size}")
    return x, y


# ----------------------------------------------------------------------------- two samples


def ks_2samp(a: ArrayLike, b: ArrayLike, alternative: str = "two-sided") -> StatResult:
    """Two-sample Kolmogorov-Smirnov test (``scipy.stats.ks_2samp``), as SURE Tables 3-4.

    Args:
        a: First sample (e.g. a text feature of original documents).
        b: Second sample (the same feature of perturbed documents).
        alternative: ``"two-sided"``, ``"less"`` or ``"greater"`` (scipy's meaning).

    Returns:
        statistic and effect_size: the K-S distance D (sup-norm between the two empirical
        CDFs, in [0, 1]); p_value: scipy's (exact for small samples); no interval; n: both
        sample sizes together.
    """
    x, y = _vector(a, "a"), _vector(b, "b")
    res = scipy.stats.ks_2samp(x, y, alternative=alternative)
    d = float(res.statistic)
    return StatResult(
        d, float(res.pvalue), d, NAN, NAN, x.size + y.size, f"two-sample K-S ({alternative}; scipy)"
    )


def two_proportion_ztest(
    successes_a: int, n_a: int, successes_b: int, n_b: int, confidence: float = 0.95
) -> StatResult:
    """Two-proportion z-test of ``p_a = p_b`` (RARE Table 8), e.g. two systems' accuracy or robustness.

    Args:
        successes_a: Successes of system A (e.g. correct answers), ``0 <= successes_a <= n_a``.
        n_a: Trials of system A (> 0).
        successes_b: Successes of system B.
        n_b: Trials of system B (> 0).
        confidence: Level of the interval of the difference.

    Returns:
        statistic: z (``statsmodels.stats.proportion.proportions_ztest``, pooled variance);
        p_value: two-sided; effect_size: Cohen's h = 2·asin√p_a − 2·asin√p_b
        (``proportion_effectsize``); ci_low/ci_high: interval of ``p_a − p_b`` by Newcombe's
        hybrid score method (``confint_proportions_2indep``; unlike the Wald interval it
        stays inside [-1, 1] and covers well at small n); n: ``n_a + n_b``. When both
        proportions are 0 or both 1 the z statistic is undefined (NaN, p = NaN).

    Raises:
        ValueError: Non-positive trials or successes outside ``[0, n]``.
    """
    from statsmodels.stats.proportion import (
        confint_proportions_2indep,
        proportion_effectsize,
        proportions_ztest,
    )

    for s, n, who in ((successes_a, n_a, "a"), (successes_b, n_b, "b")):
        if n <= 0 or not 0 <= s <= n:
            raise ValueError(f"system {who}: need 0 <= successes <= n and n > 0, got {s} of {n}")
    p_a, p_b = successes_a / n_a, successes_b / n_b
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        z, p = proportions_ztest(np.array([successes_a, successes_b]), np.array([n_a, n_b]))
        low, high = confint_proportions_2indep(
            successes_a,
            n_a,
            successes_b,
            n_b,
            method="newcomb",
            compare="diff",
            alpha=round(1 - confidence, 12),
        )
    return StatResult(
        float(z),
        float(p),
        float(proportion_effectsize(p_a, p_b)),
        float(low),
        float(high),
        n_a + n_b,
        "two-proportion z-test (statsmodels; Cohen's h; Newcombe CI of p_a - p_b)",
    )


# ----------------------------------------------------------------------------- association


def pearson(x: ArrayLike, y: ArrayLike, confidence: float = 0.95) -> StatResult:
    """Pearson correlation with p-value and Fisher-z interval (query-level paper Tables 2, 5, 6).

    Args:
        x: First variable (e.g. per-example change in retrieval recall).
        y: Second variable, paired with ``x`` (e.g. per-example change in answer match).
        confidence: Level of the interval.

    Returns:
        statistic and effect_size: r; p_value: two-sided (``scipy.stats.pearsonr``);
        ci_low/ci_high: Fisher-z interval of r (``PearsonRResult.confidence_interval``);
        n: pairs. A constant input gives r = NaN (scipy warns) rather than an error.

    Raises:
        ValueError: Unequal lengths or fewer than 2 pairs.
    """
    a, b = _paired(x, y)
    if a.size < 2:
        raise ValueError(f"Pearson correlation needs at least 2 pairs, got {a.size}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = scipy.stats.pearsonr(a, b)
        if a.size > 3 and np.isfinite(res.statistic):
            ci = res.confidence_interval(confidence_level=confidence)
            low, high = float(ci.low), float(ci.high)
        else:
            low = high = NAN
    r = float(res.statistic)
    return StatResult(r, float(res.pvalue), r, low, high, a.size, "Pearson r (scipy; Fisher-z CI)")


# ----------------------------------------------------------------------------- bootstrap


def _bootstrap_method(method: str, n_resamples: int, seed: int, n: int, confidence: float) -> str:
    return f"cluster bootstrap ({method}, {n_resamples} resamples of {n} examples, seed {seed}, {confidence:.0%})"


#: The fewest examples at which the small-sample intervals' coverage was checked
#: (``benchmarks/calibration.py``); below it reports call them approximate.
COVERAGE_CHECKED_FROM = 12


def small_sample_confidence(confidence: float, n: int) -> float:
    """The level at which a bootstrap interval of a mean of ``n`` examples is computed so that it
    holds ``confidence`` with few examples: Hesterberg's expanded interval (Hesterberg 2015, "What
    teachers should know about the bootstrap", The American Statistician 69(4), sec. 4.2): the level
    whose normal quantile is ``sqrt(n / (n - 1))`` times Student's t quantile with ``n - 1`` degrees of
    freedom (bootstrap intervals are too narrow by about both factors at small n). 0.95 becomes
    0.979 at n = 12, 0.966 at 24, 0.958 at 50 and 0.951 at 500."""
    if n < 2:
        return confidence
    t = float(scipy.stats.t.ppf(0.5 + confidence / 2, n - 1)) * math.sqrt(n / (n - 1))
    return float(1.0 - 2.0 * scipy.stats.norm.sf(t))


def wilson_interval(mean: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a proportion ``mean`` of ``n`` (statsmodels ``proportion_confint``):
    for 0/1 values, and for values in [0, 1] that are all equal (where a bootstrap has no spread to
    resample; a 0/1 variable has the largest variance for its mean, so this interval is conservative)."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(mean * n, n, alpha=1 - confidence, method="wilson")
    return float(low), float(high)


def bootstrap_cluster_means(
    values: pd.DataFrame,
    derived: Mapping[str, Callable[[Mapping[str, np.ndarray]], np.ndarray]] | None = None,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    method: BootstrapMethod = "percentile",
    small_sample: bool = False,
) -> dict[str, StatResult]:
    """Bootstrap intervals of column means, resampling rows (= clusters) jointly.

    The fast path of :func:`cluster_bootstrap` for metrics that are means of per-example values:
    give one row per example and one column per metric; each resample draws examples with
    replacement (the same draw for every column, ``paired=True`` in ``scipy.stats.bootstrap``),
    so derived quantities such as a geometric mean of several means get a joint interval.

    Args:
        values: One row per cluster (example), numeric columns. A column that is NaN in every
            row (a metric undefined for this table) yields NaN everywhere.
        derived: name -> function of the dict of (resampled) column means, vectorised over the
            last axis (numpy broadcasting), e.g. ``{"robustness": lambda m: (m["ndr"] *
            m["rsr"] * m["ror"]) ** (1 / 3)}``.
        n_resamples: Bootstrap resamples.
        confidence: Interval level.
        seed: Seed of the ``numpy.random.Generator`` (same seed, same interval).
        method: ``"percentile"`` (default), ``"basic"`` or ``"BCa"`` (scipy's formulas; BCa's
            jackknife is computed in closed form for means, O(n), so it costs what percentile
            costs). Where a statistic does not vary across resamples the interval is the point itself.
        small_sample: Intervals that hold their level with few examples (what ``rr report``
            uses): resample quantiles at :func:`small_sample_confidence`, and for a column of
            0/1 values, or of values in [0, 1] that are all equal, :func:`wilson_interval` instead
            (``benchmarks/calibration.py`` chose them: coverage at 12 to 500 examples).

    Returns:
        name -> :class:`StatResult` with statistic = the value on the full data, ci_low/ci_high,
        n = number of clusters; p_value and effect_size NaN. Columns first, then ``derived``.

    Raises:
        ValueError: Empty table, fewer than 2 clusters, or a column that is NaN in some rows
            but not all.
    """
    if len(values) < 2:
        raise ValueError(f"bootstrap needs at least 2 examples, got {len(values)}")
    derived = dict(derived or {})
    cols = [str(c) for c in values.columns]
    arrays = {c: values[c].to_numpy(dtype=float) for c in cols}
    for c, arr in arrays.items():
        if np.isnan(arr).any() and not np.isnan(arr).all():
            raise ValueError(
                f"column {c!r} is NaN for {int(np.isnan(arr).sum())} of {arr.size} examples; "
                "per-example values must be all defined or all undefined"
            )
    live = [c for c in cols if not np.isnan(arrays[c]).all()]
    names = cols + list(derived)

    def statistic(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        means = {c: s.mean(axis=axis) for c, s in zip(live, samples, strict=True)}
        shape = next(iter(means.values())).shape
        full = {c: means.get(c, np.full(shape, NAN)) for c in cols}
        rows = [full[c] for c in cols]
        rows += [np.broadcast_to(np.asarray(fn(full), dtype=float), shape) for fn in derived.values()]
        return np.stack(rows, axis=0)

    if not live:
        return {nm: StatResult(NAN, NAN, NAN, NAN, NAN, len(values), "undefined") for nm in names}
    data = tuple(arrays[c] for c in live)
    point = statistic(*data)
    level = small_sample_confidence(confidence, len(values)) if small_sample else confidence
    desc = _bootstrap_method(method, n_resamples, seed, len(values), confidence)
    if small_sample:
        desc += f" at level {level:.4f} (small-sample expansion); 0/1 or constant columns: Wilson"
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        res = scipy.stats.bootstrap(
            data,
            statistic,
            n_resamples=n_resamples,
            paired=True,
            vectorized=True,
            confidence_level=level,
            # BCa from the same draws, with the jackknife of means in closed form (below)
            method="percentile" if method == "BCa" else method,
            rng=np.random.default_rng(seed),
        )
        dist = np.atleast_2d(res.bootstrap_distribution)
        if method == "BCa":
            n = len(values)
            jack = tuple((a.sum() - a) / (n - 1) for a in data)  # leave-one-out means, O(n)
            low, high = _bca_of_means(
                np.atleast_1d(point), dist, statistic(*(j[:, None] for j in jack)), level
            )
        else:
            low, high = (
                np.atleast_1d(res.confidence_interval.low),
                np.atleast_1d(res.confidence_interval.high),
            )
    out: dict[str, StatResult] = {}
    for i, nm in enumerate(names):
        lo, hi, pt = float(low[i]), float(high[i]), float(point[i])
        arr = arrays.get(nm)
        if small_sample and arr is not None and nm in live and _proportion_like(arr):
            lo, hi = wilson_interval(pt, len(values), confidence)
        elif math.isfinite(pt) and np.allclose(dist[i], pt, equal_nan=False):
            lo = hi = pt  # degenerate: every resample gives the same value (BCa would give NaN)
        out[nm] = StatResult(pt, NAN, NAN, lo, hi, len(values), desc)
    return out


def _proportion_like(arr: np.ndarray) -> bool:
    """0/1 values, or values in [0, 1] that are all equal: :func:`wilson_interval`'s cases."""
    if np.isin(arr, (0.0, 1.0)).all():
        return True
    return bool(np.all(arr == arr[0]) and 0.0 <= arr[0] <= 1.0)


def _bca_of_means(
    point: np.ndarray, dist: np.ndarray, jack: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """BCa interval bounds of each statistic (Efron & Tibshirani 1993, 14.3; scipy's formulas).

    Args:
        point: Each statistic on the data, shape ``(s,)``.
        dist: Its bootstrap distribution, shape ``(s, B)``.
        jack: Its jackknife (leave-one-out) values, shape ``(s, n)``; for means of per-example
            values these are ``(sum - x_i) / (n - 1)``, so no ``n x (n - 1)`` resample is built
            (scipy's BCa builds one: ~10x slower and ~1 GB at 3,610 examples).

    Returns:
        ``(low, high)``, each of shape ``(s,)``; equal to ``scipy.stats.bootstrap(method="BCa")``
        on the same draws (``tests/test_stats.py``).
    """
    from scipy.special import ndtr, ndtri

    b = dist.shape[-1]
    below = np.count_nonzero(dist < point[:, None], axis=-1) + np.count_nonzero(
        dist <= point[:, None], axis=-1
    )
    z0 = ndtri(below / (2 * b))
    n = jack.shape[-1]
    u = (n - 1) * (jack.mean(axis=-1, keepdims=True) - jack)
    a = (np.sum(u**3, axis=-1) / n**3) / 6 / (np.sum(u**2, axis=-1) / n**2) ** 1.5
    z_alpha = float(ndtri((1 - confidence) / 2))
    alpha_1 = ndtr(z0 + (z0 + z_alpha) / (1 - a * (z0 + z_alpha)))
    alpha_2 = ndtr(z0 + (z0 - z_alpha) / (1 - a * (z0 - z_alpha)))
    low, high = np.full(len(point), NAN), np.full(len(point), NAN)
    for i in range(len(point)):
        if np.isfinite(alpha_1[i]) and np.isfinite(alpha_2[i]):
            low[i], high[i] = scipy.stats.quantile(dist[i], np.array([alpha_1[i], alpha_2[i]]))
    return low, high


def cluster_bootstrap(
    df: pd.DataFrame,
    statistic: Callable[[pd.DataFrame], float | Mapping[str, float]],
    *,
    cluster: str = "example_id",
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    method: BootstrapMethod = "percentile",
    small_sample: bool = False,
) -> dict[str, StatResult]:
    """Bootstrap interval of any metric of a score table, resampling clusters (examples), not rows.

    Each resample draws ``n`` cluster ids with replacement from the ``n`` distinct values of
    ``cluster`` and stacks all rows of each drawn cluster; a cluster drawn twice appears twice
    with distinct ids (``"<id>#<draw>"``), so metrics that require one row per
    (example, cell) stay valid. Works for NDR, RSR, ROR, their geometric mean, accuracy,
    RR/WR/LR or any future metric: pass ``statistic`` returning a float or a dict of floats.
    Cost: ``n_resamples`` calls of ``statistic`` (plus ``n`` for BCa); prefer
    :func:`bootstrap_cluster_means` when the metric is a mean of per-example values.

    Args:
        df: Score table (or any table with a ``cluster`` column).
        statistic: Table -> float or name -> float. It sees relabelled cluster ids.
        cluster: Column whose values are the resampling units.
        n_resamples: Bootstrap resamples.
        confidence: Interval level.
        seed: Seed of the ``numpy.random.Generator``; same seed, same interval.
        method: ``"percentile"`` (default), ``"basic"`` or ``"BCa"`` (``scipy.stats.bootstrap``).
        small_sample: Compute the interval at :func:`small_sample_confidence` (few clusters).

    Returns:
        name -> :class:`StatResult` (name ``"value"`` when ``statistic`` returns a float):
        statistic = value on ``df`` itself, ci_low/ci_high, n = number of clusters. A resample
        on which ``statistic`` returns NaN makes the interval NaN.

    Raises:
        ValueError: ``cluster`` column missing or fewer than 2 clusters.
    """
    if cluster not in df.columns:
        raise ValueError(f"cluster column {cluster!r} not in the table (columns: {list(df.columns)})")
    codes, uniques = pd.factorize(df[cluster], sort=True)
    n = len(uniques)
    if n < 2:
        raise ValueError(f"bootstrap needs at least 2 clusters ({cluster!r}), got {n}")
    rows_of = [np.flatnonzero(codes == i) for i in range(n)]
    labels = df[cluster].astype(str).to_numpy()
    first = statistic(df)
    names = list(first) if isinstance(first, Mapping) else ["value"]

    def as_vector(value: float | Mapping[str, float]) -> np.ndarray:
        if isinstance(value, Mapping):
            return np.array([float(value[k]) for k in names])
        return np.array([float(value)])

    def resampled(idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=int)
        pos = np.concatenate([rows_of[i] for i in idx])
        draw = np.concatenate([np.full(rows_of[i].size, j) for j, i in enumerate(idx)])
        sub = df.iloc[pos].copy()
        sub[cluster] = [f"{lab}#{d}" for lab, d in zip(labels[pos], draw, strict=True)]
        return as_vector(statistic(sub))

    point = as_vector(first)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        res = scipy.stats.bootstrap(
            (np.arange(n),),
            resampled,
            n_resamples=n_resamples,
            vectorized=False,
            confidence_level=small_sample_confidence(confidence, n) if small_sample else confidence,
            method=method,
            rng=np.random.default_rng(seed),
        )
    low, high = np.atleast_1d(res.confidence_interval.low), np.atleast_1d(res.confidence_interval.high)
    dist = np.atleast_2d(res.bootstrap_distribution)
    desc = _bootstrap_method(method, n_resamples, seed, n, confidence)
    out = {}
    for i, nm in enumerate(names):
        lo, hi, pt = float(low[i]), float(high[i]), float(point[i])
        if math.isfinite(pt) and np.allclose(dist[i], pt):
            lo = hi = pt
        out[nm] = StatResult(pt, NAN, NAN, lo, hi, n, desc)
    return out


# ----------------------------------------------------------------------------- paired


def mcnemar_exact(a: ArrayLike, b: ArrayLike) -> StatResult:
    """Exact McNemar test of two systems' 0/1 scores on the same items.

    Args:
        a: System A's scores, each 0 or 1, one per item (e.g. per example at one cell).
        b: System B's scores on the same items, same order.

    Returns:
        statistic: min(n10, n01), the binomial statistic of ``statsmodels.stats.contingency_tables.mcnemar(exact=True)``;
        p_value: exact two-sided; effect_size: ``(n10 - n01) / n`` = accuracy of A minus
        accuracy of B (n10: A right, B wrong); no interval; n: items.

    Raises:
        ValueError: Unequal lengths or a score other than 0/1.
    """
    from statsmodels.stats.contingency_tables import mcnemar

    x, y = _paired(a, b)
    if not (np.isin(x, (0.0, 1.0)).all() and np.isin(y, (0.0, 1.0)).all()):
        raise ValueError("McNemar's test needs 0/1 scores; use paired_permutation_test for fractional scores")
    n11 = int(((x == 1) & (y == 1)).sum())
    n10 = int(((x == 1) & (y == 0)).sum())
    n01 = int(((x == 0) & (y == 1)).sum())
    n00 = int(((x == 0) & (y == 0)).sum())
    res = mcnemar(np.array([[n11, n10], [n01, n00]]), exact=True)
    return StatResult(
        float(res.statistic),
        float(res.pvalue),
        (n10 - n01) / x.size,
        NAN,
        NAN,
        x.size,
        "exact McNemar (statsmodels)",
    )


def paired_permutation_test(
    a: ArrayLike,
    b: ArrayLike,
    *,
    n_resamples: int = 9999,
    seed: int = 0,
    alternative: str = "two-sided",
    confidence: float = 0.95,
    small_sample: bool = False,
) -> StatResult:
    """Paired permutation test of the mean difference of two systems on the same examples.

    Under the null, A's and B's values are exchangeable within each pair, so each permutation
    swaps them in a random subset of pairs (``scipy.stats.permutation_test`` with
    ``permutation_type="samples"``; exact when ``2**n <= n_resamples``).

    Args:
        a: System A's per-example values (e.g. mean score over cells, or a per-example metric).
        b: System B's values on the same examples, same order.
        n_resamples: Permutations (Monte Carlo when fewer than the ``2**n`` possible).
        seed: Seed of the ``numpy.random.Generator``.
        alternative: ``"two-sided"``, ``"greater"`` (A > B) or ``"less"``.
        confidence: Level of the bootstrap interval of the mean difference.
        small_sample: The interval by :func:`bootstrap_cluster_means`' small-sample rules, on the
            differences of values in [0, 1] mapped to [0, 1] (``(d + 1) / 2``).

    Returns:
        statistic and effect_size: mean of ``a - b``; p_value: permutation p-value;
        ci_low/ci_high: percentile bootstrap interval of the mean difference (pairs
        resampled, same seed); n: pairs.
    """
    x, y = _paired(a, b)

    def mean_diff(u: np.ndarray, v: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(u - v, axis=axis)

    res = scipy.stats.permutation_test(
        (x, y),
        mean_diff,
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative=alternative,
        rng=np.random.default_rng(seed),
    )
    ci = (
        bootstrap_cluster_means(
            pd.DataFrame({"d": (x - y + 1) / 2 if small_sample else x - y}),
            n_resamples=min(n_resamples, 2000),
            seed=seed,
            confidence=confidence,
            small_sample=small_sample,
        )["d"]
        if x.size >= 2
        else StatResult(NAN, NAN, NAN, NAN, NAN, x.size, "")
    )
    if small_sample:
        ci = StatResult(ci.statistic, NAN, NAN, 2 * ci.ci_low - 1, 2 * ci.ci_high - 1, ci.n, ci.method)
    diff = float(res.statistic)
    return StatResult(
        diff,
        float(res.pvalue),
        diff,
        ci.ci_low,
        ci.ci_high,
        x.size,
        f"paired permutation test of the mean difference (scipy, {n_resamples} resamples, seed {seed})",
    )


def adjust_pvalues(
    p_values: Sequence[float] | np.ndarray, method: str = "holm", alpha: float = 0.05
) -> AdjustedPValues:
    """Correct a family of p-values for multiple comparisons (``statsmodels`` ``multipletests``).

    Args:
        p_values: The family's p-values (NaN entries stay NaN and are never rejected).
        method: ``"holm"`` (family-wise error rate) or ``"fdr_bh"`` / ``"bh"``
            (Benjamini-Hochberg false discovery rate).
        alpha: Error rate to control.

    Returns:
        :class:`AdjustedPValues` in the input order.
    """
    from statsmodels.stats.multitest import multipletests

    method = {"bh": "fdr_bh", "benjamini-hochberg": "fdr_bh"}.get(method, method)
    if method not in ("holm", "fdr_bh"):
        raise ValueError(f"unknown correction {method!r}; use 'holm' or 'fdr_bh'")
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, NAN)
    reject = np.zeros(p.shape, dtype=bool)
    ok = ~np.isnan(p)
    if ok.any():
        rej, padj, _, _ = multipletests(p[ok], alpha=alpha, method=method)
        adjusted[ok], reject[ok] = padj, rej
    return AdjustedPValues(adjusted, reject, alpha, method)


def holm(p_values: Sequence[float] | np.ndarray, alpha: float = 0.05) -> AdjustedPValues:
    """Holm-Bonferroni correction; shorthand for ``adjust_pvalues(p, "holm")``."""
    return adjust_pvalues(p_values, "holm", alpha)


def benjamini_hochberg(p_values: Sequence[float] | np.ndarray, alpha: float = 0.05) -> AdjustedPValues:
    """Benjamini-Hochberg FDR correction; shorthand for ``adjust_pvalues(p, "fdr_bh")``."""
    return adjust_pvalues(p_values, "fdr_bh", alpha)


def bootstrap_mean(
    df: pd.DataFrame,
    value: str = "score",
    *,
    cluster: str = "example_id",
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    method: BootstrapMethod = "percentile",
    small_sample: bool = False,
) -> StatResult:
    """Mean of a column over all rows with an interval that resamples clusters (examples).

    Exactly :func:`cluster_bootstrap` of ``df[value].mean()``, computed fast: each example
    contributes its row sum and row count, and the statistic is the ratio of their resampled
    means (so examples with more rows weigh more, as in the plain row mean).

    Args:
        df: Table with ``value`` and ``cluster`` columns (e.g. score rows of one system).
        value: Numeric column averaged.
        cluster: Resampling unit.
        n_resamples: Bootstrap resamples.
        confidence: Interval level.
        seed: Generator seed.
        method: ``"percentile"``, ``"basic"`` or ``"BCa"``.
        small_sample: :func:`bootstrap_cluster_means`' small-sample rules (what ``rr report``
            uses); where every cluster has as many rows, on the clusters' means (so 0/1 means get
            the Wilson interval).

    Returns:
        :class:`StatResult` with statistic = the row mean and the interval; n = clusters. With
        a single cluster the interval is NaN.
    """
    if df.empty:
        raise ValueError("bootstrap_mean: empty table")
    g = df.groupby(cluster, sort=True)[value].agg(["sum", "count"]).astype(float)
    point = float(df[value].astype(float).mean())
    if len(g) < 2:
        return StatResult(point, NAN, NAN, NAN, NAN, len(g), "row mean (one cluster: no interval)")
    # equal clusters: the row mean is the mean of the clusters' means (so 0/1 means get Wilson's interval)
    equal = small_sample and g["count"].nunique() == 1
    res = bootstrap_cluster_means(
        pd.DataFrame({"mean": g["sum"] / g["count"]}) if equal else g,
        None if equal else {"mean": lambda m: m["sum"] / m["count"]},
        n_resamples=n_resamples,
        confidence=confidence,
        seed=seed,
        method=method,
        small_sample=small_sample,
    )["mean"]
    return StatResult(point, NAN, NAN, res.ci_low, res.ci_high, len(g), res.method)
