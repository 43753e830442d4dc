"""The paper's claims beside this run (:mod:`rr.papers` ``claims/``), the claims half of the
``paper_beside`` report section (:mod:`rr.reporting.paper_beside`, which holds the values half).

Each claim (:class:`rr.papers.Claim`) is tested per model and dataset of the run, on the rows of its
``scope``: a ``direction`` claim (a above b) by a paired test over the examples both sides answered
(:func:`rr.stats.paired_permutation_test` of per-example values; for NDR, RSR, ROR and their geometric
mean a paired example bootstrap of the difference, :func:`rr.stats.bootstrap_cluster_means`), a ``bound``
by the metric's interval. Verdicts: *holds*, *contradicted*, *not decided at this n*, or *no matching
setting in this run*.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from rr.papers import Claim, paper_claims
from rr.reporting.core import CI_HIGH, CI_LOW, ReportContext
from rr.reporting.paper_beside import (
    _ROBUSTNESS,
    ALPHA,
    CONTRADICTED,
    HOLDS,
    METRICS,
    NO_MATCH,
    UNDECIDED,
    Estimate,
    job_models,
    select,
    split_setting,
)
from rr.stats import bootstrap_cluster_means, paired_permutation_test


def _groups(
    scores: pd.DataFrame, models: Mapping[str, str], across_models: bool
) -> list[tuple[str, str, pd.DataFrame]]:
    """(model id, dataset, rows) for every recorded model and dataset of the run, the rows with a
    ``model_id`` column (the recorded model id); with ``across_models`` one group per dataset (model "")."""
    jobs = scores["job_id"].astype(str)
    known = scores[jobs.isin(list(models))]
    codes, uniques = pd.factorize(known["job_id"].astype(str))
    known = known.assign(model_id=np.asarray([models[u] for u in uniques], dtype=object)[codes])
    if across_models:
        return [("", str(d), rows) for d, rows in known.groupby(known["dataset"].astype(str), sort=True)]
    return [
        (str(m), str(d), rows)
        for (m, d), rows in known.groupby(["model_id", known["dataset"].astype(str)], sort=True)
    ]


def _paired(
    claim: Claim, a: Estimate, b: Estimate, ctx: ReportContext
) -> tuple[float, float, float, float, str]:
    """(difference a - b, its interval low, high, p-value, test) over the examples both sides have."""
    pa, pb = a.per_example, b.per_example
    assert pa is not None and pb is not None
    common = pa.index.intersection(pb.index)
    if len(common) < 2:
        return math.nan, math.nan, math.nan, math.nan, "fewer than 2 shared examples"
    if claim.metric in _ROBUSTNESS:
        assert isinstance(pa, pd.DataFrame) and isinstance(pb, pd.DataFrame)
        parts = ["ndr", "rsr", "ror"] if claim.metric == "robustness" else [claim.metric]
        vals = pd.concat(
            [pa.loc[common, parts].add_prefix("a_"), pb.loc[common, parts].add_prefix("b_")], axis=1
        ).astype(float)

        def gm(m: Mapping[str, np.ndarray], side: str) -> np.ndarray:
            return np.prod([m[f"{side}_{p}"] for p in parts], axis=0) ** (1 / len(parts))

        res = bootstrap_cluster_means(
            vals,
            {"diff": lambda m: gm(m, "a") - gm(m, "b")},
            n_resamples=ctx.n_resamples,
            confidence=ctx.confidence,
            seed=ctx.seed,
            method="BCa",
            small_sample=True,
        )["diff"]
        return (
            res.statistic,
            res.ci_low,
            res.ci_high,
            math.nan,
            f"paired example bootstrap of the difference (BCa, small-sample, {len(common)} examples)",
        )
    r = paired_permutation_test(
        pa.loc[common].to_numpy(float),
        pb.loc[common].to_numpy(float),
        n_resamples=max(ctx.n_resamples, 999),  # as the paired_comparisons section
        seed=ctx.seed,
        confidence=ctx.confidence,
        small_sample=True,
    )
    return r.statistic, r.ci_low, r.ci_high, r.p_value, f"paired permutation test ({len(common)} examples)"


def _decide(kind: str, diff: float, lo: float, hi: float, p: float) -> str:
    """The verdict of a paired comparison (a above b for ``direction``, a not above b for ``no_gain``)."""
    if math.isnan(diff):
        return UNDECIDED
    if not math.isnan(p):  # a permutation test: significance from p, direction from the difference
        above, below = p < ALPHA and diff > 0, p < ALPHA and diff < 0
    else:  # a bootstrap: the interval of the difference
        above, below = lo > 0, hi < 0
    if kind == "direction":
        return HOLDS if above else CONTRADICTED if below else UNDECIDED
    return CONTRADICTED if above else HOLDS if (not math.isnan(hi) and hi <= 0) or below else UNDECIDED


def evaluate_claims(
    scores: pd.DataFrame, ctx: ReportContext, claims: tuple[Claim, ...] | None = None
) -> pd.DataFrame:
    """One row per claim and (model, dataset) of the run that has its setting (one row saying *no
    matching setting in this run* for a claim no part of the run has)."""
    claims = paper_claims() if claims is None else claims
    models = job_models(ctx)
    groups = {across: _groups(scores, models, across) for across in (False, True)}
    out = []
    for claim in claims:
        base: dict[str, object] = {
            "claim": claim.id,
            "location": claim.location,
            "quote": claim.quote,
            "reading": claim.reading,
        }
        found = False
        fn = METRICS[claim.metric][0]
        fn_a, fn_b = (METRICS[m or claim.metric][0] for m in (claim.metric_a, claim.metric_b))
        assert fn is not None and fn_a is not None and fn_b is not None, claim.id
        across = "model_id" in claim.a or "model_id" in claim.b
        scope, scope_params = split_setting(claim.scope)
        for mid, dataset, rows in groups[across]:
            scoped = select(rows, scope) if scope else rows
            if scoped.empty:
                continue
            rec: dict[str, object] = {**base, "model": mid, "dataset": dataset}
            if claim.kind == "bound":
                est = fn(scoped, ctx, **scope_params)
                if est is None:
                    continue
                lo, hi = est.ci_low, est.ci_high
                ok = lo > claim.threshold if claim.relation == ">" else hi < claim.threshold
                bad = hi < claim.threshold if claim.relation == ">" else lo > claim.threshold
                rec.update(
                    {
                        "a": est.value,
                        "a" + CI_LOW: lo,
                        "a" + CI_HIGH: hi,
                        "b": math.nan,
                        "diff": math.nan,
                        "p_value": math.nan,
                        "test": f"{claim.metric} {claim.relation} {claim.threshold:g}: the metric's interval "
                        f"({est.n} examples)",
                        "verdict": HOLDS if ok else CONTRADICTED if bad else UNDECIDED,
                    }
                )
            else:
                (cond_a, params_a), (cond_b, params_b) = split_setting(claim.a), split_setting(claim.b)
                side_a = select(scoped, cond_a) if cond_a else scoped
                side_b = select(scoped, cond_b) if cond_b else scoped
                if side_a.empty or side_b.empty:
                    continue
                ea = fn_a(side_a, ctx, **{**scope_params, **params_a})
                eb = fn_b(side_b, ctx, **{**scope_params, **params_b})
                if ea is None or eb is None:
                    continue
                diff, lo, hi, p, test = _paired(claim, ea, eb, ctx)
                rec.update(
                    {
                        "a": ea.value,
                        "a" + CI_LOW: ea.ci_low,
                        "a" + CI_HIGH: ea.ci_high,
                        "b": eb.value,
                        "diff": diff,
                        "diff" + CI_LOW: lo,
                        "diff" + CI_HIGH: hi,
                        "p_value": p,
                        "test": test,
                        "verdict": _decide(claim.kind, diff, lo, hi, p),
                    }
                )
            found = True
            out.append(rec)
        if not found:
            out.append({**base, "model": "", "dataset": "", "test": "", "verdict": NO_MATCH})
    return pd.DataFrame(out)
