"""rr.stats: each wrapper against a direct scipy/statsmodels call and hand-worked values; bootstrap properties."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep, proportion_effectsize, proportions_ztest

from rr import stats
from rr.analysis.intervals import per_example_robustness, robustness_ci
from rr.metrics.robustness import robustness_table

from .synthetic import job_rows

A = np.array([0.12, 0.5, 0.33, 0.91, 0.27, 0.64, 0.08, 0.77, 0.45, 0.59])
B = np.array([0.31, 0.62, 0.48, 0.95, 0.22, 0.81, 0.35, 0.74, 0.69, 0.88])


def test_ks_2samp_matches_scipy() -> None:
    r = stats.ks_2samp(A, B)
    ref = scipy.stats.ks_2samp(A, B)
    assert (r.statistic, r.p_value, r.effect_size, r.n) == (ref.statistic, ref.pvalue, ref.statistic, 20)
    assert math.isnan(r.ci_low) and "K-S" in r.method
    # hand-worked: the ECDFs differ by at most 0.3 (7/10 vs 4/10 at x = 0.59)
    assert r.statistic == pytest.approx(0.3)


def test_two_proportion_ztest_matches_statsmodels_and_hand_value() -> None:
    r = stats.two_proportion_ztest(45, 100, 30, 100)
    z, p = proportions_ztest(np.array([45, 30]), np.array([100, 100]))
    low, high = confint_proportions_2indep(45, 100, 30, 100, method="newcomb", compare="diff")
    assert (r.statistic, r.p_value) == (z, p)
    assert r.effect_size == proportion_effectsize(0.45, 0.30)
    assert (r.ci_low, r.ci_high) == (low, high) and r.n == 200
    # hand: pooled p = 0.375, se = sqrt(0.375 * 0.625 * 2 / 100) = 0.0684653, z = 0.15 / se
    assert r.statistic == pytest.approx(2.190890, abs=1e-6)
    assert r.effect_size == pytest.approx(2 * math.asin(math.sqrt(0.45)) - 2 * math.asin(math.sqrt(0.30)))
    assert r.ci_low < 0.15 < r.ci_high
    with pytest.raises(ValueError, match="successes"):
        stats.two_proportion_ztest(5, 4, 1, 4)


def test_pearson_matches_scipy_with_fisher_z_interval() -> None:
    r = stats.pearson(A, B)
    ref = scipy.stats.pearsonr(A, B)
    ci = ref.confidence_interval(0.95)
    assert (r.statistic, r.p_value, r.ci_low, r.ci_high, r.n) == (
        ref.statistic,
        ref.pvalue,
        ci.low,
        ci.high,
        10,
    )
    z, se = math.atanh(ref.statistic), 1 / math.sqrt(10 - 3)
    q = scipy.stats.norm.ppf(0.975)
    assert r.ci_low == pytest.approx(math.tanh(z - q * se)) and r.ci_high == pytest.approx(
        math.tanh(z + q * se)
    )
    with pytest.raises(ValueError, match="equal length"):
        stats.pearson(A, B[:5])


def test_mcnemar_exact_matches_statsmodels_and_binomial() -> None:
    a = np.array([1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0, 1])
    b = np.array([1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 1])
    r = stats.mcnemar_exact(a, b)
    # n11 = 3, n10 = 6, n01 = 1, n00 = 2
    ref = mcnemar(np.array([[3, 6], [1, 2]]), exact=True)
    assert (r.statistic, r.p_value) == (ref.statistic, ref.pvalue)
    assert r.p_value == pytest.approx(2 * (1 + 7) / 2**7)  # two-sided binomial, 1 of 7 discordant
    assert r.effect_size == pytest.approx((6 - 1) / 12) and r.n == 12
    with pytest.raises(ValueError, match="0/1"):
        stats.mcnemar_exact([0.5, 1], [1, 0])


def test_paired_permutation_test_matches_scipy() -> None:
    r = stats.paired_permutation_test(A, B, n_resamples=5000, seed=3)
    ref = scipy.stats.permutation_test(
        (A, B),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=5000,
        rng=np.random.default_rng(3),
    )
    assert (r.statistic, r.p_value) == (ref.statistic, ref.pvalue)
    assert r.statistic == pytest.approx(np.mean(A - B)) and r.ci_low < r.statistic < r.ci_high
    # 2**10 = 1024 <= 5000: scipy enumerates every sign flip, so the p-value is exact; hand count
    d = A - B
    signs = np.array(np.meshgrid(*[[-1, 1]] * 10)).reshape(10, -1).T
    flipped = np.abs((signs * d).mean(axis=1))
    assert r.p_value == pytest.approx(np.mean(flipped >= abs(d.mean()) - 1e-12))


def test_adjust_pvalues_matches_multipletests_and_hand_holm() -> None:
    p = [0.01, 0.04, 0.03, 0.2]
    for method in ("holm", "fdr_bh"):
        r = stats.adjust_pvalues(p, method)
        rej, padj, _, _ = multipletests(p, method=method)
        assert np.array_equal(r.p_adjusted, padj) and np.array_equal(r.reject, rej)
    assert stats.holm(p).p_adjusted == pytest.approx([0.04, 0.09, 0.09, 0.2])
    # BH: sorted .01, .03, .04, .2 -> .04, .06, .0533, .2 -> running min from the top
    assert stats.benjamini_hochberg(p).p_adjusted == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.2])
    nan = stats.holm([0.01, float("nan"), 0.02])
    assert (
        math.isnan(nan.p_adjusted[1]) and not nan.reject[1] and nan.p_adjusted[0] == pytest.approx(0.02)
    )  # .01 x 2; .02 x 1


def _system(n: int) -> pd.DataFrame:
    return job_rows("m", "vanilla", n, base=0.45, gain=0.2)


def test_bootstrap_contains_point_narrows_and_is_seeded() -> None:
    small, large = _system(16), _system(160)
    ci_s = robustness_ci(small, by=[], n_resamples=400, seed=1).iloc[0]
    ci_l = robustness_ci(large, by=[], n_resamples=400, seed=1).iloc[0]
    point = robustness_table(small, by=()).iloc[0]
    for m in ("ndr", "rsr", "ror", "robustness", "accuracy"):
        assert ci_s[m] == point[m]  # point estimates are robustness_table's, unchanged
        assert ci_s[m + "_ci_low"] <= ci_s[m] <= ci_s[m + "_ci_high"]
        assert ci_l[m + "_ci_low"] <= ci_l[m] <= ci_l[m + "_ci_high"]
        width_s = ci_s[m + "_ci_high"] - ci_s[m + "_ci_low"]
        width_l = ci_l[m + "_ci_high"] - ci_l[m + "_ci_low"]
        assert width_l < width_s, m
    again = robustness_ci(small, by=[], n_resamples=400, seed=1)
    other = robustness_ci(small, by=[], n_resamples=400, seed=2)
    pd.testing.assert_frame_equal(again, robustness_ci(small, by=[], n_resamples=400, seed=1))
    assert not again.equals(other)


def test_fast_bootstrap_equals_generic_cluster_bootstrap() -> None:
    """The per-example fast path resamples exactly like cluster_bootstrap of robustness_table."""
    df = _system(6)
    # percentile: the two paths draw the same resamples; BCa's bias correction counts resamples
    # below the point, which float summation order can tip on these small discrete tables
    fast = robustness_ci(df, by=[], n_resamples=15, seed=5, method="percentile", small_sample=False).iloc[0]
    cols = ["ndr", "rsr", "ror", "robustness", "accuracy"]
    generic = stats.cluster_bootstrap(
        df,
        lambda d: robustness_table(d, by=()).iloc[0][cols].astype(float).to_dict(),
        n_resamples=15,
        seed=5,
    )
    for m in cols:
        assert generic[m].statistic == pytest.approx(fast[m])
        assert (generic[m].ci_low, generic[m].ci_high) == pytest.approx(
            (fast[m + "_ci_low"], fast[m + "_ci_high"])
        )
        assert generic[m].n == 6


def test_per_example_decomposition_averages_to_the_metrics() -> None:
    df = _system(12)
    values = per_example_robustness(df)
    point = robustness_table(df, by=()).iloc[0]
    for m in ("ndr", "rsr", "ror", "accuracy", "closed_book_accuracy"):
        assert values[m].mean() == pytest.approx(point[m])


def test_bootstrap_mean_is_the_cluster_bootstrap_of_the_row_mean() -> None:
    df = pd.DataFrame({"example_id": list("aabbbcdddde"), "score": [1, 0, 1, 1, 0, 1, 0, 0, 1, 1, 0.5]})
    fast = stats.bootstrap_mean(df, n_resamples=200, seed=9)
    slow = stats.cluster_bootstrap(df, lambda d: float(d["score"].mean()), n_resamples=200, seed=9)["value"]
    assert fast.statistic == pytest.approx(df["score"].mean()) == pytest.approx(slow.statistic)
    assert (fast.ci_low, fast.ci_high) == pytest.approx((slow.ci_low, slow.ci_high))
    assert fast.n == 5


def test_bootstrap_degenerate_and_errors() -> None:
    const = pd.DataFrame({"x": [1.0] * 6})
    r = stats.bootstrap_cluster_means(const, method="BCa")["x"]
    assert (r.statistic, r.ci_low, r.ci_high) == (1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="NaN for 1 of"):
        stats.bootstrap_cluster_means(pd.DataFrame({"x": [1.0, float("nan"), 0.0]}))
    with pytest.raises(ValueError, match="cluster column"):
        stats.cluster_bootstrap(const, lambda d: 0.0)


def test_bca_of_means_equals_scipys_bca_on_the_same_draws() -> None:
    """bootstrap_cluster_means' BCa (closed-form jackknife of means, O(n)) is scipy's BCa, which
    builds every leave-one-out resample (O(n^2)): same draws, same bounds, derived statistics too."""
    import scipy.stats

    rng = np.random.default_rng(0)
    n = 60
    cols = ["ndr", "rsr", "ror"]
    v = pd.DataFrame({c: np.where(rng.random(n) < 0.7, 1.0, rng.random(n)) for c in cols})
    derived = {"g": lambda m: np.cbrt(m["ndr"] * m["rsr"] * m["ror"])}
    fast = stats.bootstrap_cluster_means(v, derived, n_resamples=500, seed=3, method="BCa")

    def statistic(*s: np.ndarray, axis: int = -1) -> np.ndarray:
        m = {c: x.mean(axis=axis) for c, x in zip(cols, s, strict=True)}
        return np.stack([m[c] for c in cols] + [derived["g"](m)], 0)

    ref = scipy.stats.bootstrap(
        tuple(v[c].to_numpy() for c in cols),
        statistic,
        n_resamples=500,
        paired=True,
        vectorized=True,
        method="BCa",
        rng=np.random.default_rng(3),
    ).confidence_interval
    for i, name in enumerate([*cols, "g"]):
        assert (fast[name].ci_low, fast[name].ci_high) == pytest.approx((ref.low[i], ref.high[i]), abs=1e-12)
        assert fast[name].ci_low < fast[name].statistic < fast[name].ci_high
