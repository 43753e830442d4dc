"""The paper beside this run: each seed paper's published values and headline claims (:mod:`rr.papers`)
laid beside what the run measured.

*Values.* A paper value is matched to a run only on what the run recorded: the job's
``summary.json`` ``model.model_id`` must be one of the value's ``model_ids``, the score rows'
``dataset`` one of its ``rr_datasets`` (all of them where the paper pools several), and every
condition of its ``setting`` must hold on the rows (strategy, noise ratio, documents given,
retrievers, k grid, orders, ...). Where nothing matches, the verdict is *no matching setting in this
run*; nothing is matched by a similar name. A matched value gets rr's value on the matched rows,
its interval (the small-sample intervals ``rr report`` prints everywhere: :func:`rr.stats.bootstrap_mean`
and :func:`rr.analysis.intervals.robustness_ci`) and a verdict: *inside the interval*, *outside* or *not decided at this n*
(:func:`rr.reporting.paper_match._verdict`).

*Claims.* Their verdicts are :mod:`rr.reporting.paper_claims`'s; this section lays both tables out.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd

from rr.papers import APPROX_TOLERANCE, paper_claims, paper_values
from rr.papers.settings import stand_in_of
from rr.reporting.loading import ReportContext
from rr.reporting.paper_claims import claim_keys, claims_caption, evaluate_claims
from rr.reporting.paper_match import (
    INSIDE,
    MEASURED,
    NO_MATCH,
    OUT_OF_REACH,
    OUTSIDE,
    UNDECIDED,
    RunIndex,
    compare_values,
    job_model_ids,
    job_settings,
    nearest_values,
    setting_keys,
)
from rr.reporting.registry import Item, ReportTable, SectionSkipped, section
from rr.reporting.run_identity import NOT_VERIFIED

# ----------------------------------------------------------------------------- the section


def _job_papers(ctx: ReportContext, papers: set[str]) -> dict[str, set[str]]:
    """job id -> the papers whose experiment it ran (its recorded ``name``: ``rgb2024`` or ``rgb2024_mini``)."""
    out = {}
    for job in ctx.jobs:
        name = str(job.summary.name or "")
        out[job.job_id] = {p for p in papers if name in (p, f"{p}_mini")}
    return out


def _papers_of_run(ctx: ReportContext, matched: set[str]) -> set[str]:
    """Papers whose experiment a job ran (its recorded ``name``, ``rgb2024`` or ``rgb2024_mini``) or whose
    values or claims matched some of its rows."""
    papers = set(paper_values()["paper"]) | {c.paper for c in paper_claims()}
    ran = set().union(*_job_papers(ctx, papers).values()) if ctx.jobs else set()
    return ran | matched


@section(
    "paper_beside",
    title="The paper beside this run: published values and claims",
    requires=("example_id", "k", "score", "dataset", "job_id"),
    order=90,
)
def paper_beside(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """The papers' values with rr's beside them, each job's nearest paper values and how it differs,
    and each claim's verdict."""

    all_values = paper_values()
    keys = setting_keys(all_values) | claim_keys(paper_claims())
    index = RunIndex(df, job_model_ids(ctx), keys, job_settings(ctx))
    values = compare_values(df, ctx, all_values, index)
    claims = evaluate_claims(index.scores, ctx, index=index)  # on the values' index: their frames shared
    matched = set(values.loc[~values["verdict"].isin([NO_MATCH, OUT_OF_REACH]), "paper"]) | {
        c.split(".", 1)[0]
        for c in claims.loc[claims["dataset"].fillna("") != "", "claim"]  # tested on the run
    }
    papers = _papers_of_run(ctx, matched)
    nearest = nearest_values(index, all_values, _job_papers(ctx, set(all_values["paper"])))
    if not nearest.empty:  # a job of a _mini experiment: the offline stand-in of its paper's setting
        names = {job.job_id: stand_in_of(job.summary.name) for job in ctx.jobs}
        nearest = nearest.assign(
            stand_in=[f"{names[j]}_mini" if names.get(j) else "" for j in nearest["job_id"].astype(str)]
        )
    if not papers and nearest.empty:
        raise SectionSkipped("no job recorded a model, and no job ran a paper's experiment (recorded name)")
    if not papers:
        yield ReportTable(
            "paper_nearest",
            "The paper values nearest to each job, and the keys they differ in",
            nearest,
            caption=(
                "No job ran a paper's experiment (recorded name) and no paper value or claim matches the run's "
                "recorded model, dataset and setting. Per job: the 3 shipped paper values (rr/papers/values) with "
                "the fewest differing keys; differs: each key as (this run vs the paper); run: the rr command "
                "lines whose jobs reach the value."
            ),
        )
        return
    values = values[values["paper"].isin(papers)].reset_index(drop=True)
    claims = claims[claims["claim"].map(lambda c: c.split(".", 1)[0]).isin(papers)].reset_index(drop=True)
    counts = values["verdict"].value_counts().to_dict()
    yield ReportTable(
        "paper_values",
        "Each paper value beside this run's",
        values,
        caption=(
            f"Papers {', '.join(sorted(papers))} (rr/papers/values). A value is matched only on what the run "
            "recorded: the job's public model (summary.json public_model: the hub id, a local folder's "
            "_name_or_path, the API's reported model; the value's ids include aliases such as older hub names "
            "and dated API versions), the dataset and every condition of the setting; run_model: the matched "
            f"jobs' model; rr = the metric (rr.metrics.SPECS) on the matched rows with its {ctx.confidence:.0%} "
            f"small-sample interval; verdict: {INSIDE!r} / {OUTSIDE!r} / {UNDECIDED!r} (the interval excludes the "
            f"value, or is wider than the value ± {APPROX_TOLERANCE:g}, the claims' tolerance, so cannot tell; "
            "relation > or <: the paper states a bound, inside only where the whole interval lies on its side) / "
            f"{NO_MATCH!r} (differs: the "
            f"nearest job and the keys it differs in, as this run vs the paper) / {OUT_OF_REACH!r} (differs says "
            f"why) / {NOT_VERIFIED!r} (a local folder whose config.json names the paper's model while its weights' "
            "parameter count does not bear it out, or cannot be counted: no verdict); identity: where the matched "
            "(or nearest) job's model identity came from (the hub id and commit, the model the server reported, a "
            "local folder's claim and its check). Here: "
            + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
            + "."
        ),
    )
    yield ReportTable(
        "paper_nearest",
        "The paper values nearest to each job, and the keys they differ in",
        nearest,
        caption=(
            "Per job: the 3 values of its paper (the experiment it ran; every paper's for another job) with the "
            "fewest differing keys; differs: each key as (this run vs the paper), empty where the job has the "
            "value's setting; run: the rr command lines whose jobs reach the value; stand_in: the _mini "
            "experiment the job ran, the offline stand-in of its paper's setting (bundled data, the small "
            "model), which differs from the paper's in the keys shown."
        ),
    )
    yield ReportTable(
        "paper_claims",
        "Each paper claim tested on this run",
        claims,
        caption=claims_caption(),
    )


def console_lines(outcomes: list) -> list[str]:  # list[SectionOutcome]
    """What ``rr report`` prints of this section: the verdicts' counts per paper, each matched value, each
    job's nearest paper value and the keys it differs in, and each claim decided on the run (the full
    tables are ``tables/paper_values.csv`` / ``paper_nearest.csv`` / ``paper_claims.csv``)."""
    items = {item.name: item for o in outcomes if o.section.name == "paper_beside" for item in o.items}
    if "paper_nearest" not in items:
        return []
    lines = ["the paper beside this run (tables/paper_values.csv, paper_nearest.csv, paper_claims.csv):"]
    if "paper_values" in items:
        values = items["paper_values"].df  # type: ignore[union-attr]
        for paper, part in values.groupby("paper", sort=True):
            counts = part["verdict"].value_counts()
            lines.append(f"  {paper}: " + ", ".join(f"{n} {v}" for v, n in counts.items()))
        for v in values[values["verdict"].isin(MEASURED)].itertuples(index=False):
            lines.append(
                f"    {v.paper} {v.location} {v.model} (run: {v.identity}) {v.metric} [{v.setting}]: paper "
                f"{v.paper_value}, rr {v.rr:.3f} [{v.rr_ci_low:.3f}, {v.rr_ci_high:.3f}]: {v.verdict}"
            )
    nearest = items["paper_nearest"].df  # type: ignore[union-attr]
    shown = nearest[nearest["n_differences"] > 0].groupby("job_id", sort=True).head(1)
    for n in shown.head(MAX_NEAREST_LINES).itertuples(index=False):
        stand_in = getattr(n, "stand_in", "")
        lines.append(
            f"    job {n.job_id} ({n.run_model}, {n.run_dataset}"
            + (f", experiment={stand_in}: the offline stand-in" if stand_in else "")
            + f"): nearest {n.paper} {n.location} {n.model} {n.metric} [{n.setting}]: differs in {n.differs}"
        )
    if len(shown) > MAX_NEAREST_LINES:
        lines.append(f"    ... {len(shown) - MAX_NEAREST_LINES} more jobs in tables/paper_nearest.csv")
    if "paper_claims" in items:
        claims = items["paper_claims"].df  # type: ignore[union-attr]
        for c in claims[claims["verdict"] != NO_MATCH].itertuples(index=False):
            lines.append(
                f"    claim {c.claim} ({c.model or 'across models'}, {c.dataset}): {c.verdict} ({c.test})"
            )
    return lines


#: Jobs whose nearest paper value ``rr report`` prints (the rest are in ``tables/paper_nearest.csv``).
MAX_NEAREST_LINES = 10
