"""The paper beside this run: each seed paper's published values and headline claims (:mod:`rr.papers`)
laid beside what the run measured.

*Values.* A paper value is matched to a run only on what the run recorded: the job's
``summary.json`` ``model.model_id`` must be one of the value's ``model_ids``, the score rows'
``dataset`` one of its ``rr_datasets`` (all of them where the paper pools several), and every
condition of its ``setting`` must hold on the rows (strategy, noise ratio, documents given,
retrievers, k grid, orders, ...). Where nothing matches, the verdict is *no matching setting in this
run*; nothing is matched by a similar name. A matched value gets rr's value on the matched rows,
its interval (the small-sample intervals ``rr report`` prints everywhere: :func:`rr.stats.bootstrap_mean`
and :func:`rr.reporting.robustness.robustness_ci`) and a verdict: *inside the interval* or *outside*
(for a bound the paper states, ``> 0.8``: whether the interval reaches the bound's side).

*Claims.* Their verdicts are :mod:`rr.reporting.paper_claims`'s; this section lays both tables out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

import pandas as pd

from rr.metrics.rgb import correct, noise_ratio_of
from rr.papers import APPROX_TOLERANCE, paper_claims, paper_values, parse_setting
from rr.perturbations.base import PerturbationTag
from rr.reporting.core import CI_HIGH, CI_LOW, Item, ReportContext, ReportTable, SectionSkipped, section
from rr.stats import bootstrap_mean

INSIDE, OUTSIDE, NO_MATCH = "inside the interval", "outside", "no matching setting in this run"
NOT_MEASURED = "not measured in this run"
NOT_COMPUTED = "rr does not compute this beside the paper yet"
HOLDS, CONTRADICTED, UNDECIDED = "holds", "contradicted", "not decided at this n"
#: Significance level of the claims' paired tests (two-sided).
ALPHA = 0.05
#: Setting keys that describe the documents given, so hold on the ``k > 0`` rows only (a job's
#: closed-book rows have none of them).
RAG_KEYS = frozenset(
    {"noise_ratio", "counterfactual", "doc_perturbation", "n_docs_given", "retriever", "order", "k"}
)
ROBUSTNESS = ("ndr", "rsr", "ror", "robustness")
#: Setting keys that are the metric's parameters, not conditions on rows (SURE's perturbation and
#: subset: its rates pair each perturbed row with the unperturbed one).
METRIC_PARAMS = frozenset({"perturbation", "subset", "module", "query_kind"})


def split_setting(setting: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(conditions on rows, the metric's parameters) of a setting (:data:`METRIC_PARAMS`)."""
    rows = {k: v for k, v in setting.items() if k not in METRIC_PARAMS}
    return rows, {k: v for k, v in setting.items() if k in METRIC_PARAMS}


# ----------------------------------------------------------------------------- the job's recorded setting


def job_models(ctx: ReportContext) -> dict[str, str]:
    """job id -> the model id its ``summary.json`` recorded (``model.model_id``; jobs without one are left out)."""
    out = {}
    for job in ctx.jobs:
        if model_id := job.summary.model_id:
            out[job.job_id] = model_id
    return out


def _same(a: object, b: str) -> bool:
    """``a`` (a score-table value) equals ``b`` (a setting's text): as numbers where both are, else as text."""
    try:
        return math.isclose(float(a), float(b), abs_tol=1e-9)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(a).lower() == b.lower()


def _any_same(value: object, options: list[str]) -> bool:
    return any(_same(value, w) for w in options)


def _counterfactual(tag: str) -> str:
    t = PerturbationTag.read(tag)
    return str(t is not None and t.name == "counterfactual")


#: Setting keys read off another column: key -> (that column, the function of its value).
DERIVED: dict[str, tuple[str, Callable[[str], object]]] = {
    "noise_ratio": ("doc_perturbation", noise_ratio_of),
    "counterfactual": ("doc_perturbation", _counterfactual),
}


def values_of(rows: pd.DataFrame, key: str) -> dict[object, object] | None:
    """Each distinct value of the column behind ``key`` -> the key's value for it (None: no such column).
    Score tables have millions of rows and few distinct values, so settings are matched on these."""
    column, fn = DERIVED.get(key, (key, lambda v: v))
    if column not in rows.columns:
        return None
    return {v: fn(str(v)) if key in DERIVED else v for v in rows[column].unique()}


def _hit(rows: pd.DataFrame, key: str, options: list[str]) -> pd.Series | None:
    """Whether each row's value of ``key`` is one of ``options`` (None: the rows lack its column)."""
    values = values_of(rows, key)
    if values is None:
        return None
    column = DERIVED[key][0] if key in DERIVED else key
    good = [v for v, kv in values.items() if _any_same(kv, options)]
    return rows[column].isin(good)


def select(rows: pd.DataFrame, setting: Mapping[str, str]) -> pd.DataFrame:
    """The rows of ``rows`` in ``setting`` (empty if the run does not have it).

    Keys in :data:`RAG_KEYS` hold on the ``k > 0`` rows; a job's ``k = 0`` rows are kept with it
    when some of its ``k > 0`` rows are in the setting (``k=0`` itself selects the closed-book rows
    only). Rows need a ``job_id`` column. A value ``a+b+c`` needs exactly these values among the
    selected rows (a pooled grid).
    """
    if rows.empty:
        return rows
    rag = rows["k"].astype(int) > 0
    keep = pd.Series(True, index=rows.index)
    exact: dict[str, list[str]] = {}
    for key, want in setting.items():
        if key == "k" and want == "0":
            keep &= ~rag
            continue
        options = want.split("+")
        hit = _hit(rows, key, options)
        if hit is None:
            return rows.iloc[0:0]
        keep &= (hit | ~rag) if key in RAG_KEYS else hit
        if len(options) > 1:
            exact[key] = options
    out = rows[keep]
    if setting.get("k") == "0":
        return out
    out_rag = out["k"].astype(int) > 0
    if not out_rag.any():
        return out.iloc[0:0]
    out = out[out_rag | out["job_id"].isin(out.loc[out_rag, "job_id"].unique())]
    for key, options in exact.items():
        values = values_of(out[out["k"].astype(int) > 0] if key in RAG_KEYS else out, key)
        assert values is not None
        if not all(any(_same(p, w) for p in values.values()) for w in options):
            return out.iloc[0:0]
    return out


# ----------------------------------------------------------------------------- metrics


@dataclass(frozen=True)
class Estimate:
    """rr's value of a metric on some rows, its interval, and how many examples it rests on."""

    value: float
    ci_low: float
    ci_high: float
    n: int
    per_example: pd.Series | pd.DataFrame | None = None


def mean_of(rows: pd.DataFrame, values: pd.Series, ctx: ReportContext) -> Estimate:
    frame = rows.assign(_v=values.astype(float))
    r = bootstrap_mean(
        frame, "_v", n_resamples=ctx.n_resamples, confidence=ctx.confidence, seed=ctx.seed, small_sample=True
    )
    per = frame.groupby("example_id")["_v"].mean()
    return Estimate(r.statistic, r.ci_low, r.ci_high, r.n, per)


def _rate(column: str, closed_book: bool = False, among: str | None = None) -> Callable[..., Estimate | None]:
    """A per-row rate on the ``k > 0`` rows (``k = 0`` if ``closed_book``), optionally among the rows
    where ``among`` is true; ``correct`` means RGB's correctness (:func:`rr.metrics.rgb.correct`)."""

    def fn(rows: pd.DataFrame, ctx: ReportContext) -> Estimate | None:
        part = rows[(rows["k"].astype(int) == 0) if closed_book else (rows["k"].astype(int) > 0)]
        if among is not None:
            if among not in part.columns:
                return None
            part = part[part[among].fillna(False).astype(bool)]
        if column != "correct" and column not in part.columns:
            return None
        if part.empty:
            return None
        values = correct(part["score"]) if column == "correct" else part[column].fillna(False).astype(bool)
        return mean_of(part, values, ctx)

    return fn


def _robustness(metric: str) -> Callable[..., Estimate | None]:
    def fn(rows: pd.DataFrame, ctx: ReportContext) -> Estimate | None:
        from rr.reporting.robustness import per_example_robustness, robustness_ci

        try:
            t = robustness_ci(
                rows, by=[], n_resamples=ctx.n_resamples, confidence=ctx.confidence, seed=ctx.seed
            )
        except ValueError:
            return None  # not a table the robustness metrics are defined on (one k, no closed book, ...)
        row = t.iloc[0]
        if math.isnan(float(row[metric])):
            return None
        per = per_example_robustness(rows)
        return Estimate(
            float(row[metric]), float(row[metric + CI_LOW]), float(row[metric + CI_HIGH]), len(per), per
        )

    return fn


def _sure(rate: str) -> Callable[..., Estimate | None]:
    """SURE's LR / RR / WR of one perturbation (``perturbation``, a tag such as ``style:simple``) in one
    subset (``K-G`` ... ``Total``): :func:`rr.metrics.spurious.instance_pairs` of the unperturbed and the
    perturbed rows, the share of instances whose correctness C is 1 / 0 / -1."""
    want = {"lr": 1, "rr": 0, "wr": -1}[rate]

    def fn(
        rows: pd.DataFrame, ctx: ReportContext, perturbation: str = "", subset: str = "Total"
    ) -> Estimate | None:
        from rr.metrics.spurious import instance_pairs

        part = rows[rows["doc_perturbation"].astype(str).isin(["none", perturbation])]
        if not (part["doc_perturbation"] == perturbation).any():
            return None
        try:
            pairs = instance_pairs(part, subsets=subset != "Total")
        except ValueError:  # incl. MetricUndefinedError
            return None
        if subset != "Total":
            pairs = pairs[pairs["subset"] == subset]
        if pairs.empty:
            return None
        return mean_of(pairs, (pairs["C"] == want), ctx)

    return fn


def _rare(score: str) -> Callable[..., Estimate | None]:
    """RARE's Table 4 score: the share of robust trials per example (:func:`rr.metrics.rare.score_rows`),
    averaged over examples."""

    def fn(rows: pd.DataFrame, ctx: ReportContext) -> Estimate | None:
        from rr.metrics import rare

        try:
            trials = rare.score_rows(rare.robustness_flags(rows), score)
        except ValueError:  # incl. MetricUndefinedError
            return None
        if trials.empty:
            return None
        per = trials.groupby("example_id", as_index=False)["robust"].mean()
        return mean_of(per, per["robust"], ctx)

    return fn


#: metric name -> (function of the matched rows, the context and the setting's metric parameters: an
#: :class:`Estimate`, or None where the rows lack what it needs; None for a metric rr computes in its
#: own report section but not yet beside the paper; what it is).
METRICS: dict[str, tuple[Callable[..., Estimate | None] | None, str]] = {
    "rgb_accuracy": (_rate("correct"), "share of k > 0 responses with every answer part (RGB's accuracy)"),
    "rgb_closed_book_accuracy": (
        _rate("correct", closed_book=True),
        "the same on the k = 0 rows (Table 7 Acc)",
    ),
    "rgb_rej": (_rate("rgb_rejected"), "share of k > 0 responses with RGB's rejection sentence (Rej)"),
    "rgb_rej_llm": (_rate("rgb_rejected_llm"), "share the LLM judge reads as a rejection (Rej*)"),
    "rgb_ed": (_rate("error_detected"), "share of k > 0 responses saying 'factual errors' (ED)"),
    "rgb_ed_llm": (_rate("error_detected_llm"), "share the LLM judge reads as flagging errors (ED*)"),
    "rgb_cr_llm": (
        _rate("correct", among="error_detected_llm"),
        "RGB accuracy among the responses the LLM judge read as flagging errors (CR, fact_evalue.py's)",
    ),
    **{
        f"sure_{r}": (_sure(r), f"SURE's {r.upper()} of one perturbation in one subset")
        for r in ("lr", "rr", "wr")
    },
    **{
        f"rare_{m}": (_rare(m), f"RARE's {m} robustness (Table 4)")
        for m in ("overall", "query", "document", "retrieval")
    },
    "ql_recall@5": (
        None,
        "Recall@5 per query kind: section query_level_retrieval computes it, not yet matched here",
    ),
    "ql_pearson_r": (
        None,
        "Pearson r of per-sample changes: section query_level_correlations, not yet matched here",
    ),
    **{
        m: (_robustness(m), f"{m.upper() if m != 'robustness' else 'geometric mean of NDR, RSR, ROR'}")
        for m in ROBUSTNESS
    },
}


# ----------------------------------------------------------------------------- values


def _verdict(value: float, relation: str, est: Estimate) -> str:
    lo, hi = est.ci_low, est.ci_high
    if math.isnan(lo) or math.isnan(hi):
        lo = hi = est.value
    if relation == ">":
        return INSIDE if hi > value else OUTSIDE
    if relation == "<":
        return INSIDE if lo < value else OUTSIDE
    tol = APPROX_TOLERANCE if relation == "~" else 1e-12  # "approximately 14%": within the stated tolerance
    return INSIDE if lo - tol <= value <= hi + tol else OUTSIDE


def _model_rows(scores: pd.DataFrame, models: Mapping[str, str], ids: str) -> pd.DataFrame:
    """The rows of the jobs whose recorded model id is one of ``ids`` (``*``: any recorded model, for a
    value that does not depend on the generator, such as a retriever's recall)."""
    wanted = {i.strip() for i in ids.split(";") if i.strip()}
    jobs = list(models) if wanted == {"*"} else [j for j, m in models.items() if m in wanted]
    if not jobs:
        return scores.iloc[0:0]
    return scores[scores["job_id"].astype(str).isin(jobs)]


def compare_values(
    scores: pd.DataFrame, ctx: ReportContext, values: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per paper value (``values``, default every shipped one): the paper's value and
    rr's on the rows matching its setting, with interval and verdict (see the module docstring)."""
    values = paper_values() if values is None else values
    models = job_models(ctx)
    out = []
    for v in values.itertuples(index=False):
        rec: dict[str, object] = {
            "paper": v.paper,
            "location": v.location,
            "model": v.model,
            "dataset": v.dataset,
            "metric": v.metric,
            "setting": v.setting,
            "paper_value": v.printed,
            "paper_fraction": float(v.value),
            "relation": v.relation,
            "rr": math.nan,
            "rr" + CI_LOW: math.nan,
            "rr" + CI_HIGH: math.nan,
            "n_examples": 0,
            "jobs": "",
            "verdict": NO_MATCH,
        }
        fn = METRICS[v.metric][0]
        rows = _model_rows(scores, models, v.model_ids)
        datasets = v.rr_datasets.split("+")
        rows = rows[rows["dataset"].astype(str).isin(datasets)]
        conditions, params = split_setting(parse_setting(v.setting))
        rows = select(rows, conditions) if not rows.empty else rows
        if not rows.empty and set(rows["dataset"].astype(str)) == set(datasets):
            if fn is None:
                rec["verdict"] = NOT_COMPUTED
                out.append(rec)
                continue
            est = fn(rows, ctx, **params)
            rec["jobs"] = ",".join(sorted(set(rows["job_id"].astype(str))))
            if est is None:
                rec["verdict"] = NOT_MEASURED
            else:
                rec.update(
                    {
                        "rr": est.value,
                        "rr" + CI_LOW: est.ci_low,
                        "rr" + CI_HIGH: est.ci_high,
                        "n_examples": est.n,
                        "verdict": _verdict(float(v.value), v.relation, est),
                    }
                )
        out.append(rec)
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------- the section


def _papers_of_run(ctx: ReportContext, matched: set[str]) -> set[str]:
    """Papers whose experiment a job ran (its recorded ``name``, ``rgb2024`` or ``rgb2024_mini``) or whose
    values or claims matched some of its rows."""
    names = {str(j.summary.name) for j in ctx.jobs}
    papers = set(paper_values()["paper"]) | {c.paper for c in paper_claims()}
    return {p for p in papers if p in names or f"{p}_mini" in names} | matched


@section(
    "paper_beside",
    title="The paper beside this run: published values and claims",
    requires=("example_id", "k", "score", "dataset", "job_id"),
    order=90,
)
def paper_beside(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """The papers' values with rr's beside them, and each claim's verdict."""
    from rr.reporting.paper_claims import claims_caption, evaluate_claims  # it imports this module's metrics

    values = compare_values(df, ctx)
    claims = evaluate_claims(df, ctx)
    matched = set(values.loc[values["verdict"] != NO_MATCH, "paper"]) | {
        c.split(".", 1)[0]
        for c in claims.loc[claims["dataset"].fillna("") != "", "claim"]  # tested on the run
    }
    papers = _papers_of_run(ctx, matched)
    if not papers:
        raise SectionSkipped(
            "no job ran a paper's experiment (recorded name) and no paper value or claim matches the run's "
            "recorded model, dataset and setting"
        )
    values = values[values["paper"].isin(papers)].reset_index(drop=True)
    claims = claims[claims["claim"].map(lambda c: c.split(".", 1)[0]).isin(papers)].reset_index(drop=True)
    counts = values["verdict"].value_counts().to_dict()
    yield ReportTable(
        "paper_values",
        "Each paper value beside this run's",
        values,
        caption=(
            f"Papers {', '.join(sorted(papers))} (rr/papers/values). A value is matched only on what the run "
            "recorded: the job's model id (summary.json), the dataset and every condition of the setting; "
            f"rr = the metric on the matched rows with its {ctx.confidence:.0%} small-sample interval; verdict: "
            f"{INSIDE!r} / {OUTSIDE!r} (relation > or <: the paper states a bound, and the verdict says whether the "
            f"interval reaches its side; ~: the paper says approximately, within {APPROX_TOLERANCE:g}) / {NO_MATCH!r}. Here: "
            + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
            + "."
        ),
    )
    yield ReportTable(
        "paper_claims",
        "Each paper claim tested on this run",
        claims,
        caption=claims_caption(),
    )


def console_lines(outcomes: list) -> list[str]:  # list[SectionOutcome]
    """What ``rr report`` prints of this section: the verdicts' counts per paper, each matched value, and
    each claim decided on the run (the full tables are ``tables/paper_values.csv`` / ``paper_claims.csv``)."""
    items = {item.name: item for o in outcomes if o.section.name == "paper_beside" for item in o.items}
    if "paper_values" not in items:
        return []
    values = items["paper_values"].df  # type: ignore[union-attr]
    claims = items["paper_claims"].df  # type: ignore[union-attr]
    lines = ["the paper beside this run (tables/paper_values.csv, tables/paper_claims.csv):"]
    for paper, part in values.groupby("paper", sort=True):
        counts = part["verdict"].value_counts()
        lines.append(f"  {paper}: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
    for v in values[values["verdict"].isin([INSIDE, OUTSIDE])].itertuples(index=False):
        lines.append(
            f"    {v.paper} {v.location} {v.model} {v.metric} [{v.setting}]: paper {v.paper_value}, "
            f"rr {v.rr:.3f} [{v.rr_ci_low:.3f}, {v.rr_ci_high:.3f}]: {v.verdict}"
        )
    for c in claims[claims["verdict"] != NO_MATCH].itertuples(index=False):
        lines.append(
            f"    claim {c.claim} ({c.model or 'across models'}, {c.dataset}): {c.verdict} ({c.test})"
        )
    return lines
