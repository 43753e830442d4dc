"""The paper's claims beside this run (:mod:`rr.papers` ``claims/``), the claims half of the
``paper_beside`` report section (:mod:`rr.reporting.paper_beside`, which lays both out; the values are matched in :mod:`rr.reporting.paper_match`).

Each claim (:class:`rr.papers.Claim`) is tested per model and dataset of the run (on the datasets together
where the paper pools them: Cao's NQ, HotpotQA and ASQA), on the rows of its ``scope``: a ``direction`` claim (a above b) by a paired test over the examples both sides answered
(:func:`rr.stats.paired_permutation_test` of per-example values; for NDR, RSR, ROR and their geometric
mean a paired example bootstrap of the difference, :func:`rr.stats.bootstrap_cluster_means`), a ``bound``
by the metric's interval, an ``approx`` (the paper's "about 12%") by whether the interval lies within the
claim's tolerance of the printed value. Verdicts: *holds*, *contradicted*, *not decided at this n*, or
*no matching setting in this run*, and two that decide nothing:

* *degenerate here*: the metric is one the report's robustness table blanks on these rows
  (:func:`rr.metrics.robustness.metric_notes`, the same function: NDR with closed-book accuracy 0, ROR with
  one document order, RSR and ROR when every k > 0 cell scores 0), with its reason;
* *outside the paper's scope (...)*: the run is not what the paper stated the claim of (another model, k
  grid, retriever, dataset, a model below the paper's condition); the verdict names what differs and adds
  what the run shows on its own ("on this run: does not hold"), so a small model at k 1-3 never
  *contradicts* a claim about the paper's models at k 5-100.

A claim rr's score tables cannot test (``evaluable: false``) gets one row saying why.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from rr.analysis.intervals import CI_HIGH, CI_LOW
from rr.metrics import SPECS, Estimate
from rr.metrics.robustness import metric_notes, robustness_table
from rr.papers import Claim, canonical_model, paper_claims
from rr.reporting.loading import ReportContext
from rr.reporting.paper_match import (
    ALPHA,
    CONTRADICTED,
    HOLDS,
    NO_MATCH,
    UNDECIDED,
    RunIndex,
    estimator,
    job_model_ids,
    job_models,
    select,
    split_setting,
    values_of,
)
from rr.stats import bootstrap_cluster_means, paired_permutation_test


def _groups(
    index: RunIndex, models: Mapping[str, str], across_models: bool
) -> list[tuple[str, str, pd.DataFrame]]:
    """(model id, dataset, cells) for every recorded model and dataset of the run: the index's cells (their rows:
    :meth:`RunIndex.rows_of`) with a ``model_id`` column (the recorded model id); with ``across_models`` one
    group per dataset (model "")."""
    jobs = index.cells["job_id"].astype(str)
    cells = index.cells[jobs.isin(list(models))]
    # the values' and claims' name of each recorded model (rr/papers/aliases.yaml, the one alias list)
    cells = cells.assign(model_id=[canonical_model(models[j]) for j in cells["job_id"].astype(str)])
    if across_models:
        return [("", str(d), part) for d, part in cells.groupby(cells["dataset"].astype(str), sort=True)]
    return [
        (str(m), str(d), part)
        for (m, d), part in cells.groupby(["model_id", cells["dataset"].astype(str)], sort=True)
    ]


def _pooled(
    groups: list[tuple[str, str, pd.DataFrame]], datasets: tuple[str, ...]
) -> list[tuple[str, str, pd.DataFrame]]:
    """``groups`` as a claim the paper states pooled over ``datasets`` is judged: each model's cells on those
    datasets as one group (dataset ``nq_open+hotpot_qa+asqa``, those of them the run has, in the paper's
    order); the cells on any other dataset as they were."""
    out: list[tuple[str, str, pd.DataFrame]] = []
    pooled: dict[str, list[tuple[str, pd.DataFrame]]] = {}
    for mid, dataset, cells in groups:
        if dataset in datasets:
            pooled.setdefault(mid, []).append((dataset, cells))
        else:
            out.append((mid, dataset, cells))
    for mid, parts in pooled.items():
        have = {d for d, _ in parts}
        name = "+".join(d for d in datasets if d in have)
        out.append((mid, name, pd.concat([c for _, c in parts]) if len(parts) > 1 else parts[0][1]))
    return sorted(out, key=lambda g: (g[0], g[1]))


def claim_keys(claims: Iterable[Claim]) -> set[str]:
    """The setting keys the claims' scopes, sides and paper scopes name (a :class:`RunIndex` of them has a
    column for each)."""
    keys: set[str] = set()
    for c in claims:
        keys |= set(c.scope) | set(c.a) | set(c.b) | set(c.scope_setting)
    return keys


def _paired(
    claim: Claim, a: Estimate, b: Estimate, ctx: ReportContext
) -> tuple[float, float, float, float, str]:
    """(difference a - b, its interval low, high, p-value, test) over the examples both sides have."""
    pa, pb = a.per_example, b.per_example
    assert pa is not None and pb is not None
    common = pa.index.intersection(pb.index)
    if len(common) < 2:
        return math.nan, math.nan, math.nan, math.nan, "fewer than 2 shared examples"
    if isinstance(pa, pd.DataFrame):  # the robustness table's per-example values (NDR, RSR, ROR, ...)
        assert isinstance(pb, pd.DataFrame)
        parts = list(SPECS[claim.metric].rests_on)
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


#: The verdicts that decide nothing (prefixes; the rest of the text says why).
DEGENERATE, OUTSIDE_SCOPE, NOT_EVALUABLE = (
    "degenerate here",
    "outside the paper's scope",
    "not evaluable from rr's tables",
)
#: How an in-scope verdict reads after "on this run:" when the run is outside the paper's scope.
ON_THIS_RUN = {HOLDS: "holds", CONTRADICTED: "does not hold", UNDECIDED: UNDECIDED}


def degenerate_reason(rows: pd.DataFrame, metric: str, cache: _Cache | None = None) -> str:
    """Why ``metric`` is degenerate on ``rows`` (one system's rows), as the report's robustness table says it
    (:func:`rr.metrics.robustness.metric_notes` of :func:`rr.metrics.robustness.robustness_table`); ``""``
    where it is not, or rests on no robustness metric (:attr:`rr.metrics.MetricSpec.rests_on`). ``cache``: the
    table's notes once per rows."""
    spec = SPECS.get(metric)
    parts = spec.rests_on if spec is not None else ()
    if not parts:
        return ""
    notes = cache.notes(rows) if cache is not None else _notes(rows)
    if notes is None:
        return ""
    return "; ".join(dict.fromkeys(notes[p] for p in parts if p in notes))


def _notes(rows: pd.DataFrame) -> dict[str, str] | None:
    """The robustness table's notes on ``rows`` (None: not a table the robustness metrics are defined on,
    and the metric says so itself)."""
    try:
        row = robustness_table(rows, by=()).iloc[0]
    except ValueError:
        return None
    return metric_notes(row)


class _Cache:
    """What one :func:`evaluate_claims` call computes on the same rows more than once, computed once:
    the selections of a setting from a frame, the metrics' estimates, the robustness table's notes and the
    paired tests (claims share scopes and sides: ``strategy=vanilla`` is the scope of most of Cao's). Every
    entry holds the frames and estimates its key names by ``id``, so an id stays its object's; the results are
    the uncached functions' (each bootstrap draws from its own generator seeded with the report's seed)."""

    def __init__(self, ctx: ReportContext, index: RunIndex | None = None) -> None:
        self.ctx, self.index = ctx, index
        self._selected: dict[tuple[int, tuple[tuple[str, str], ...]], tuple[pd.DataFrame, pd.DataFrame]] = {}
        self._estimates: dict[tuple[object, ...], tuple[pd.DataFrame, Estimate | None]] = {}
        self._notes: dict[int, tuple[pd.DataFrame, dict[str, str] | None]] = {}
        self._paired: dict[tuple[object, ...], tuple[Estimate, Estimate, tuple]] = {}

    def select(self, rows: pd.DataFrame, setting: Mapping[str, str]) -> pd.DataFrame:
        """:func:`rr.reporting.paper_match.select` of ``setting`` from ``rows``."""
        key = (id(rows), tuple(setting.items()))
        if key not in self._selected:
            self._selected[key] = (rows, select(rows, setting))
        return self._selected[key][1]

    def estimate(self, metric: str, rows: pd.DataFrame, params: Mapping[str, str]) -> Estimate | None:
        """``metric`` (:func:`rr.reporting.paper_match.estimator`) on ``rows`` with the metric's parameters ``params``."""
        key = (metric, id(rows), tuple(sorted(params.items())))
        if key not in self._estimates:
            fn = estimator(metric)
            assert fn is not None, metric
            self._estimates[key] = (rows, fn(rows, self.ctx, **params))
        return self._estimates[key][1]

    def notes(self, rows: pd.DataFrame) -> dict[str, str] | None:
        if id(rows) not in self._notes:
            row = self.ctx.held_robustness(rows)  # the estimator's table: the same point values
            self._notes[id(rows)] = (rows, metric_notes(row) if row is not None else _notes(rows))
        return self._notes[id(rows)][1]

    def paired(self, claim: Claim, a: Estimate, b: Estimate) -> tuple[float, float, float, float, str]:
        """:func:`_paired` of the two estimates (it reads of the claim its metric only)."""
        key = (claim.metric, id(a), id(b))
        if key not in self._paired:
            self._paired[key] = (a, b, _paired(claim, a, b, self.ctx))
        return self._paired[key][2]  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- scope


def _shown(values: Iterable[object]) -> str:
    """The run's values of a setting key, numbers in numeric order: ``1, 2, 3``."""

    def key(v: str) -> tuple[int, float, str]:
        try:
            return (0, float(v), v)
        except ValueError:
            return (1, 0.0, v)

    return ", ".join(sorted({str(v) for v in values}, key=key))


def _condition(text: str) -> tuple[str, str, float]:
    for rel in (">", "<"):
        name, sep, value = text.partition(rel)
        if sep:
            return name.strip(), rel, float(value)
    raise ValueError(f"paper_scope condition {text!r}: not <metric> > <value> or <metric> < <value>")


def outside_scope(
    claim: Claim,
    model: str,
    dataset: str,
    rows: pd.DataFrame,
    ctx: ReportContext,
    cache: _Cache | None = None,
) -> list[str]:
    """What of this model's rows on ``dataset`` lies outside the paper's scope of ``claim`` (empty: inside)."""
    cache = cache or _Cache(ctx)
    out = []
    if model and claim.scope_models and model not in claim.scope_models:
        out.append(f"model {model}, not one the paper states it of")
    have = dataset.split("+")
    if claim.scope_pooled and set(have) <= set(claim.scope_datasets):
        if len(have) < len(claim.scope_datasets):
            out.append(f"dataset {', '.join(have)} (the paper pools {', '.join(claim.scope_datasets)})")
    elif claim.scope_datasets and dataset not in claim.scope_datasets:
        out.append(f"dataset {dataset} (paper: {', '.join(claim.scope_datasets)})")
    rag = rows[rows["k"].astype(int) > 0]
    for key, want in claim.scope_setting.items():
        if not cache.select(rows, {key: want}).empty:
            continue
        values = values_of(rag, key)
        run = _shown(values.values()) if values else "not recorded"
        out.append(f"{key} {run} (paper: {want.replace('+', ', ')})")
    if claim.scope_condition and model:
        name, rel, bound = _condition(claim.scope_condition)
        est = cache.estimate(name, rows, {}) if estimator(name) is not None else None
        if est is None:
            out.append(f"{name} not measured (paper: models with {name} {rel} {bound:g})")
        elif not (est.value > bound if rel == ">" else est.value < bound):
            out.append(f"{name} {est.value:.2f} (paper: models with {name} {rel} {bound:g})")
    return out


# ----------------------------------------------------------------------------- verdicts


def _approx(claim: Claim, est: Estimate) -> str:
    lo, hi = est.ci_low, est.ci_high
    if math.isnan(lo) or math.isnan(hi):
        lo = hi = est.value
    band_lo, band_hi = claim.threshold - claim.tolerance, claim.threshold + claim.tolerance
    if band_lo - 1e-12 <= lo and hi <= band_hi + 1e-12:
        return HOLDS
    return CONTRADICTED if hi < band_lo or lo > band_hi else UNDECIDED


def _bound(claim: Claim, est: Estimate) -> str:
    """A bound: holds where the interval lies on its side, contradicted where it lies on the other. ``<=`` /
    ``>=`` (the paper's own extreme) move the bound by the claim's tolerance, so an interval around the paper's
    value itself can hold and only one clear of the tolerance contradicts."""
    lo, hi = est.ci_low, est.ci_high
    if math.isnan(lo) or math.isnan(hi):
        lo = hi = est.value
    if claim.relation in (">", "<"):
        edge = claim.threshold
        ok, bad = (lo > edge, hi < edge) if claim.relation == ">" else (hi < edge, lo > edge)
    elif claim.relation == ">=":
        edge = claim.threshold - claim.tolerance
        ok, bad = lo >= edge - 1e-12, hi < edge - 1e-12
    else:
        edge = claim.threshold + claim.tolerance
        ok, bad = hi <= edge + 1e-12, lo > edge + 1e-12
    return HOLDS if ok else CONTRADICTED if bad else UNDECIDED


def _single(claim: Claim, rows: pd.DataFrame, cache: _Cache, params: Mapping[str, str]) -> dict | None:
    """A ``bound`` or ``approx`` claim on one set of rows (None: the rows lack what the metric needs)."""
    assert estimator(claim.metric) is not None, claim.id
    est = cache.estimate(claim.metric, rows, params)
    if est is None:
        return None
    rec: dict[str, object] = {
        "a": est.value,
        "a" + CI_LOW: est.ci_low,
        "a" + CI_HIGH: est.ci_high,
        "b": math.nan,
        "diff": math.nan,
        "p_value": math.nan,
    }
    why = degenerate_reason(rows, claim.metric, cache)
    if claim.kind == "approx":
        rec["test"] = (
            f"{claim.metric} ~ {claim.threshold:g} (within {claim.tolerance:g}): the metric's interval "
            f"({est.n} examples)"
        )
        rec["verdict"] = _approx(claim, est)
    else:
        rec["test"] = (
            f"{claim.metric} {claim.relation} {claim.threshold:g}"
            + (f" (within {claim.tolerance:g})" if "=" in claim.relation else "")
            + f": the metric's interval ({est.n} examples)"
        )
        rec["verdict"] = _bound(claim, est)
    if why:
        rec["verdict"] = f"{DEGENERATE}: {why}"
    return rec


def _pair(claim: Claim, scoped: pd.DataFrame, cache: _Cache, params: Mapping[str, str]) -> dict | None:
    """A ``direction`` or ``no_gain`` claim: side a against side b on the scoped cells (of ``cache.index``)."""
    (cond_a, params_a), (cond_b, params_b) = split_setting(claim.a), split_setting(claim.b)
    cells_a = cache.select(scoped, cond_a) if cond_a else scoped
    cells_b = cache.select(scoped, cond_b) if cond_b else scoped
    if cells_a.empty or cells_b.empty:
        return None
    assert cache.index is not None
    side_a, side_b = cache.index.rows_of(cells_a), cache.index.rows_of(cells_b)
    metric_a, metric_b = claim.metric_a or claim.metric, claim.metric_b or claim.metric
    assert estimator(metric_a) is not None and estimator(metric_b) is not None, claim.id
    ea = cache.estimate(metric_a, side_a, {**params, **params_a})
    eb = cache.estimate(metric_b, side_b, {**params, **params_b})
    if ea is None or eb is None:
        return None
    diff, lo, hi, p, test = cache.paired(claim, ea, eb)
    rec: dict[str, object] = {
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
    reasons: dict[str, list[str]] = {}  # reason -> the sides it holds on (both sides once, where they agree)
    for side, cond, rows, metric in (
        ("a", cond_a, side_a, claim.metric_a or claim.metric),
        ("b", cond_b, side_b, claim.metric_b or claim.metric),
    ):
        if why := degenerate_reason(rows, metric, cache):
            reasons.setdefault(why, []).append(f"{side} ({', '.join(f'{k}={v}' for k, v in cond.items())})")
    if reasons:
        rec["verdict"] = f"{DEGENERATE}: " + "; ".join(f"{' and '.join(s)}: {w}" for w, s in reasons.items())
    return rec


def _in_scope(verdict: str, outside: list[str]) -> str:
    """The verdict of a run part of which lies outside the paper's scope: what lies outside, then what this run
    shows on its own."""
    if not outside:
        return verdict
    return f"{OUTSIDE_SCOPE} ({'; '.join(outside)}); on this run: {ON_THIS_RUN.get(verdict, verdict)}"


def evaluate_claims(
    scores: pd.DataFrame,
    ctx: ReportContext,
    claims: tuple[Claim, ...] | None = None,
    index: RunIndex | None = None,
) -> pd.DataFrame:
    """One row per claim and (model, dataset) of the run that has its setting (a claim the paper states
    pooled over datasets: one row per model on those datasets together, outside the paper's scope where the
    run lacks one of them; one row saying *no
    matching setting in this run* for a claim no part of the run has, and one saying *not evaluable* with
    the reason for a claim rr's tables cannot test). Rows are selected on ``index``'s cells (built here
    unless given with a column for every key the claims name, :func:`claim_keys`), so the claims and the
    values share their rows' frames and the estimates memoized on them."""
    claims = paper_claims() if claims is None else claims
    models = job_models(ctx)
    if index is None or not claim_keys(claims) <= index.keys:
        index = RunIndex(scores, job_model_ids(ctx), claim_keys(claims))
    groups = {across: _groups(index, models, across) for across in (False, True)}
    pooled: dict[tuple[bool, tuple[str, ...]], list[tuple[str, str, pd.DataFrame]]] = {}
    cache = _Cache(ctx, index)
    out = []
    for claim in claims:
        base: dict[str, object] = {
            "claim": claim.id,
            "location": claim.location,
            "quote": claim.quote,
            "reading": claim.reading,
            "scope": claim.scope_text,
        }
        if not claim.evaluable:
            out.append(
                {
                    **base,
                    "model": "",
                    "dataset": "",
                    "test": "",
                    "verdict": f"{NOT_EVALUABLE}: {claim.why_not}",
                }
            )
            continue
        found = False
        across = "model_id" in claim.a or "model_id" in claim.b
        scope, scope_params = split_setting(claim.scope)
        judged = groups[across]
        if claim.scope_pooled and claim.scope_datasets:  # judged pooled, as the paper pools them
            key = (across, claim.scope_datasets)
            judged = pooled.setdefault(key, _pooled(judged, claim.scope_datasets))
        for mid, dataset, rows in judged:
            scoped_cells = cache.select(rows, scope) if scope else rows
            if scoped_cells.empty:
                continue
            scoped = index.rows_of(scoped_cells)
            got = (
                _single(claim, scoped, cache, scope_params)
                if claim.kind in ("bound", "approx")
                else _pair(claim, scoped_cells, cache, scope_params)
            )
            if got is None:
                continue
            outside = outside_scope(claim, mid, dataset, scoped, ctx, cache)
            if "+" in dataset:
                got["test"] = (
                    f"{got['test']}; pooled over {dataset.replace('+', ', ')}, as the paper pools them"
                )
            got["verdict"] = _in_scope(str(got["verdict"]), outside)
            out.append({**base, "model": mid, "dataset": dataset, **got})
            found = True
        if not found:
            out.append({**base, "model": "", "dataset": "", "test": "", "verdict": NO_MATCH})
    return pd.DataFrame(out)


def claims_caption() -> str:
    """The caption of the report's ``paper_claims`` table."""
    return (
        "rr/papers/claims, per model and dataset of the run (the datasets together where the paper pools "
        "them; a run lacking one of them is outside the paper's scope): direction claims (a above b) by a paired test "
        f"over the examples both sides answered (two-sided, alpha {ALPHA}: permutation test of per-example "
        "values, or a paired example bootstrap of the difference for NDR/RSR/ROR and their geometric mean); "
        "bounds by the metric's interval (a <= or >= bound, the paper's own extreme, moved by the claim's "
        "tolerance); approx claims by whether the interval lies within the stated "
        f"tolerance. Verdicts {HOLDS!r}, {CONTRADICTED!r}, {UNDECIDED!r}, {NO_MATCH!r}; {DEGENERATE!r} where the "
        "metric is one the robustness table blanks on these rows (its reason follows); "
        f"{OUTSIDE_SCOPE!r} where the run is not what the paper states the claim of (model, setting, dataset: "
        "named), followed by what this run shows on its own; the scope column is the paper's; "
        f"{NOT_EVALUABLE!r} with the reason where rr's score tables cannot test the claim."
    )
