"""Report sections of RGB (Chen et al. 2024) and RARE (Zeng et al. 2025), over :mod:`rr.metrics.rgb`
and :mod:`rr.metrics.rare`.

* ``rgb_rejection``: Table 3 on the negative-rejection rows (``doc_perturbation = noise_ratio@1``),
  from :func:`~rr.metrics.rgb.rgb_table`: ``rej`` is RGB's Rej (``evalue.py``'s ``all_rate``:
  refusals *and* correct answers), ``rej_phrase_only`` rr's share of refusals alone, ``rej_llm`` Rej*.
* ``rgb_counterfactual``: Table 7, Acc / Acc_doc / ED / ED* / CR of the jobs with
  ``counterfactual`` document perturbations (:func:`~rr.metrics.rgb.counterfactual_table`); Table 7's
  CR is ``cr_llm`` (``fact_evalue.py``), ``cr_evalue`` is ``evalue.py``'s ``correct_rate``, ``cr`` rr's.
* ``rare_robustness``: RARE Table 4's scores (overall, query, document, retrieval robustness) per
  system (:func:`~rr.metrics.rare.rare_table`) and, for every pair of systems of a dataset,
  two-proportion z-tests of each score like RARE Table 8 (:func:`rr.stats.two_proportion_ztest`).

(RGB Table 1, accuracy per noise ratio, is the ``accuracy_vs_noise_ratio`` section.)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pandas as pd

from rr.analysis.intervals import CI_HIGH, CI_LOW
from rr.metrics import rare
from rr.metrics.registry import shown_in
from rr.metrics.rgb import counterfactual_table, noise_ratio_of, rgb_table, skipped_rows
from rr.perturbations.base import PerturbationTag
from rr.reporting.loading import ReportContext
from rr.reporting.registry import Item, ReportTable, section, system_label
from rr.stats import adjust_pvalues, two_proportion_ztest

#: Columns that make a system in these sections (settings such as doc_perturbation are inside).
SYSTEM = ("dataset", "generator", "strategy", "judge")


def _by(df: pd.DataFrame) -> list[str]:
    return [c for c in SYSTEM if c in df.columns]


def _negative_rows(df: pd.DataFrame) -> pd.Series:
    return df["doc_perturbation"].astype(str).map(noise_ratio_of) == 1.0


@section(
    "rgb_rejection",
    title="Rejection rates on noise-only contexts (RGB, Table 3)",
    requires=("example_id", "k", "score", "doc_perturbation", "rgb_rejected"),
    applies=lambda df: bool(_negative_rows(df).any()),
    when="doc_perturbation noise_ratio@1 rows (judge=rgb or refusal_match)",
    order=61,
)
def rgb_rejection(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """Rej and Rej* per system on the ``noise_ratio@1`` rows, with example-level intervals."""
    neg = df[_negative_rows(df)].dropna(axis=1, how="all")  # columns of other jobs' judges
    by = _by(neg)
    table = rgb_table(neg, by=by)
    specs = shown_in("rgb_rejection")  # Rej, refusals alone, Rej*: rgb_table's columns without "rgb_"
    rag = neg[(neg["k"] > 0) & ~skipped_rows(neg)]
    for i, row in table.iterrows():
        part = rag
        for c in by:
            part = part[part[c] == row[c]]
        for spec in specs:
            name = spec.name.removeprefix("rgb_")
            est = spec.estimate(part, ctx) if name in table.columns and len(part) else None
            if est is not None:  # None: the rows lack the column its per-row values read
                table.loc[i, name + CI_LOW] = est.ci_low
                table.loc[i, name + CI_HIGH] = est.ci_high
    keep = [*by, "n_rows", "n_skipped"]
    names = {s.name.removeprefix("rgb_"): s.column or s.name for s in specs}
    for name in names:
        if name in table.columns:
            keep += [name, name + CI_LOW, name + CI_HIGH]

    def rename(c: str) -> str:
        for long, short in names.items():
            if c in (long, long + CI_LOW, long + CI_HIGH):
                return short + c[len(long) :]
        return c

    yield ReportTable(
        "rgb_rejection",
        "Rejection rate Rej (RGB's all_rate), refusals alone, and Rej* (LLM judge) with noise-only contexts",
        table[keep].rename(columns=rename),
        caption=(
            "rr.metrics.rgb.rgb_table on the k > 0 rows with doc_perturbation noise_ratio@1. rej = RGB Table 3's "
            "Rej, computed as RGB's evalue.py computes all_rate at noise ratio 1: the share of responses that are "
            "a refusal (rgb_rejected) or correct (score = 1). rej_phrase_only = the share of refusals alone "
            "(rr's number, not a column of RGB's). rej_llm = Table 3's Rej* (reject_evalue.py's reject_rate: the "
            "LLM judge says 'not addressed'). The judge column names the rules behind rgb_rejected and score "
            "(rgb: RGB's own, case-sensitive 'insufficient information' / '信息不足'; refusal_match: rr's). "
            "n_skipped: rows whose prompt did not fit the window, left out as RGB leaves out a failed generation. "
            f"{ctx.confidence:.0%} example-level bootstrap intervals."
        ),
    )


def _counterfactual(df: pd.DataFrame) -> pd.Series:
    tags = df["doc_perturbation"].astype(str).map(PerturbationTag.read)
    return tags.map(lambda t: t is not None and t.name == "counterfactual").astype(bool)


@section(
    "rgb_counterfactual",
    title="Error detection and correction with counterfactual documents (RGB, Table 7)",
    requires=("example_id", "k", "score", "doc_perturbation", "error_detected", "job_id"),
    applies=lambda df: bool(_counterfactual(df).any()),
    when="doc_perturbation=counterfactual rows (judge=rgb or refusal_match)",
    order=62,
)
def rgb_counterfactual(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """Table 7 per system and counterfactual setting, over the counterfactual jobs' rows."""
    jobs = set(df.loc[_counterfactual(df), "job_id"])
    sub = df[df["job_id"].isin(jobs)].dropna(axis=1, how="all")
    # a job's k = 0 rows are its closed-book accuracy; tag them with the job's counterfactual setting
    setting = (
        sub[_counterfactual(sub)]
        .groupby("job_id")["doc_perturbation"]
        .agg(lambda s: ",".join(sorted(set(s))))
    )
    sub = sub.assign(counterfactual=sub["job_id"].map(setting))
    table = counterfactual_table(sub, by=[*_by(sub), "counterfactual"])
    yield ReportTable(
        "rgb_counterfactual",
        "Accuracy (Acc, Acc_doc), error detection (ED, ED*) and correction (CR) rates with counterfactual documents",
        table,
        caption=(
            "rr.metrics.rgb.counterfactual_table over the jobs with counterfactual document perturbations. "
            "Paper columns (RGB Table 7): acc = Acc (closed-book accuracy, k = 0), acc_doc = Acc_doc, ed = ED "
            "(evalue.py fact_check_rate: 'factual errors' / '事实性错误' in the response), ed_llm = ED* (the "
            "LLM check), cr_llm = CR (fact_evalue.py correct_rate: among the responses the LLM check flagged, "
            "the share correct; Table 7's ChatGPT-en CR 57.14 = 4/7 with ED* 7). cr_evalue = evalue.py's "
            "correct_rate (among responses with the phrase, the share with no missing answer part, which a "
            "refusal also passes; not a column of Table 7). cr = rr's (among responses with the phrase, the "
            "share correct). NaN: no response detected the errors (RGB's code prints 0 there) or no such "
            "column. n_skipped: rows left out (prompt over the window), as RGB leaves out a failed generation."
        ),
    )


RARE_DOCS = {rare.GROUND_TRUTH, rare.LEXICAL_DIFF, rare.LEXICAL_SIMILAR}


def _rare_doc_rows(df: pd.DataFrame) -> pd.Series:
    return df["doc_perturbation"].astype(str).map(rare.doc_type).isin(RARE_DOCS)


def _has_rare_docs(df: pd.DataFrame) -> bool:
    return bool(_rare_doc_rows(df).any())


@section(
    "rare_robustness",
    title="RARE robustness scores and pairwise z-tests (RARE, Tables 4 and 8)",
    requires=("example_id", "k", "score", "refused", "doc_perturbation", "generator"),
    applies=_has_rare_docs,
    when="RARE document perturbations (ground_truth, backtranslate, delete_answer) with judge=rare or refusal_match",
    order=63,
)
def rare_robustness(df: pd.DataFrame, ctx: ReportContext) -> Iterator[Item]:
    """RARE's four robustness scores per system, and two-proportion z-tests between systems."""
    by = _by(df)
    # only the systems evaluated with RARE's documents (others in the report have no RARE scores)
    systems = df.loc[_rare_doc_rows(df), by].drop_duplicates()
    df = df.merge(systems, on=by, how="inner", validate="many_to_one") if by else df
    table = rare.rare_table(df, by=by)
    yield ReportTable(
        "rare_robustness",
        "RARE overall / query / document / retrieval robustness per system",
        table,
        caption=(
            "rr.metrics.rare.rare_table: the share of robust responses (RARE Table 3's f, refusals count "
            "where the closed-book probe fails) averaged per example, then over examples; overall = every "
            "query variant with ground-truth and perturbed documents, query = perturbed queries with the "
            "ground truth, document = original query with perturbed documents, retrieval = original query "
            "with real retrieval results. NaN: no rows for that score."
        ),
    )
    flags = rare.robustness_flags(df, by=by)
    groups = list(flags.groupby(by, sort=True)) if by else [((), flags)]
    same = [c for c in ("dataset", "judge") if c in by]
    rows: list[dict[str, object]] = []
    for (ka, a), (kb, b) in itertools.combinations(groups, 2):
        keys_a = ka if isinstance(ka, tuple) else (ka,)
        keys_b = kb if isinstance(kb, tuple) else (kb,)
        ra: dict[str, object] = dict(zip(by, keys_a, strict=True))
        rb: dict[str, object] = dict(zip(by, keys_b, strict=True))
        if any(ra[c] != rb[c] for c in same):
            continue
        label_cols = [c for c in by if ra[c] != rb[c]]
        for score in rare.SCORES:
            sa, sb = rare.score_rows(a, score), rare.score_rows(b, score)
            if sa.empty or sb.empty:
                continue
            t = two_proportion_ztest(int(sa["robust"].sum()), len(sa), int(sb["robust"].sum()), len(sb))
            shared: dict[str, object] = {c: ra[c] for c in same}
            rows.append(
                {
                    **shared,
                    "system_a": system_label(ra, label_cols),
                    "system_b": system_label(rb, label_cols),
                    "score": score,
                    "p_a": sa["robust"].mean(),
                    "p_b": sb["robust"].mean(),
                    "n_a": len(sa),
                    "n_b": len(sb),
                    "diff": sa["robust"].mean() - sb["robust"].mean(),
                    "diff" + CI_LOW: t.ci_low,
                    "diff" + CI_HIGH: t.ci_high,
                    "z": t.statistic,
                    "p_value": t.p_value,
                    "cohens_h": t.effect_size,
                }
            )
    if not rows:
        return  # one system (or none sharing a dataset and judge): nothing to compare
    tests = pd.DataFrame(rows)
    tests["p_holm"] = adjust_pvalues(tests["p_value"].to_numpy(), "holm").p_adjusted
    yield ReportTable(
        "rare_ztests",
        "Pairwise two-proportion z-tests of RARE robustness (Table 8)",
        tests,
        caption=(
            "rr.stats.two_proportion_ztest (pooled z, two-sided p, Cohen's h, Newcombe interval of "
            "p_a - p_b) on the robust (query, document) trials of each score: p_a, p_b are shares of trials, "
            "equal to the table's scores when every example has the same number of trials. p_holm: Holm "
            "adjustment over all rows."
        ),
        digits=4,
    )
