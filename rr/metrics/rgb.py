"""RGB's metrics (Chen et al. 2024, "Evaluation metrics"; Tables 1, 3, 5 and 7) over the score table.

Every metric is computed over the RAG rows (``k > 0``) of one system (filter or use
:func:`rgb_table`), except ``Acc`` of Table 7, which is the closed-book (``k = 0``) accuracy.
Each rate is what RGB's released scripts (github.com/chen700564/RGB at d2293ee: ``evalue.py``,
``reject_evalue.py``, ``fact_evalue.py``) compute from the same labels when the table comes from
``judge=rgb`` (RGB's own per-response rules, :mod:`rr.judges.rgb`); with ``judge=refusal_match`` the
same formulas run over rr's broader rules. ``docs/scoring-parity.md`` maps every rule.

* **Skipped rows.** RGB's ``evalue.py`` catches a failed generation (``except Exception: continue``)
  and leaves the instance out of ``results``, the denominator of every rate. rr's counterpart is a
  row whose prompt did not fit the window (``over_window``: not sent, empty prediction): every metric
  here leaves such rows out by default (``skipped="drop"``, RGB's rule; :func:`n_skipped` counts
  them); ``skipped="wrong"`` keeps them as wrong answers (rr's rule elsewhere).
* **Accuracy** (Tables 1, 5; ``evalue.py`` ``all_rate`` at noise ratio < 1): the share of responses
  RGB counts correct, ``0 not in label and 1 in label``: every required part present
  (``score == 1``), never a refusal. The mean score (partial credit on multi-part answers) is not
  RGB's and has its own name (:func:`mean_score`).
* **Rejection rate** Rej (Table 3) is ``evalue.py``'s ``all_rate`` at noise ratio 1: the share of
  responses that are a refusal (label ``[-1]``) *or* correct (:func:`rejection_all_rate`,
  ``rgb_rejection_all_rate``). The share of refusals alone is a different number, rr's
  :func:`rejection_rate` (``rgb_rejection_rate``: the phrase only). Rej* is ``reject_evalue.py``'s
  ``reject_rate``: the share the LLM judge reads as "not addressed" (``rgb_rejected_llm``).
* **Error detection rate** ED (Table 7; ``evalue.py`` ``fact_check_rate``): the share of responses
  that say "factual errors" (``error_detected``); ED* by the LLM judge (``error_detected_llm``).
* **Error correction rate.** Two of RGB's scripts compute one, differently:
  ``fact_evalue.py``'s ``correct_rate`` -- among the responses the ChatGPT check flagged
  (``error_detected_llm``), the share correct -- is Table 7's CR (ChatGPT-en: ED* 7 %, CR 57.14 =
  4/7; ChatGPT-zh ED* 3, CR 33.33 = 1/3): :func:`error_correction_rate_llm`. ``evalue.py``'s
  ``correct_rate`` -- among the responses with the fact-error phrase, the share with ``0 not in
  label``, which a refusal also passes -- is :func:`error_correction_rate_evalue` (column
  ``rgb_corrected`` of ``judge=rgb``). rr's own CR, among the phrase-detected responses the share
  correct, is :func:`error_correction_rate`. An empty denominator is undefined here (NaN in the
  tables); RGB's code prints 0 for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import pandas as pd

from rr.metrics.registry import SPECS, Estimate, EstimationContext, MetricSpec, mean_of, register_metric
from rr.metrics.robustness import MetricUndefinedError
from rr.perturbations.base import VALUE, PerturbationTag

#: A response is correct when its score reaches this (all answer parts covered).
CORRECT = 1.0 - 1e-9


#: The score-table column of rows RGB would have skipped (generation not done: prompt over the window).
SKIPPED = "over_window"
#: ``skipped=`` values: leave skipped rows out (RGB's rule) or count them as wrong answers.
SKIPPED_RULES = ("drop", "wrong")


def skipped_rows(df: pd.DataFrame) -> pd.Series:
    """Rows RGB's ``evalue.py`` would have left out (``over_window``); all ``False`` without the column."""
    if SKIPPED not in df.columns:
        return pd.Series(False, index=df.index)
    return df[SKIPPED].fillna(False).astype(bool)


def n_skipped(df: pd.DataFrame) -> int:
    """How many ``k > 0`` rows RGB would have skipped (see :data:`SKIPPED`)."""
    return int((skipped_rows(df) & (df["k"] > 0)).sum()) if "k" in df.columns else 0


def _need(df: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        hint = (
            " (use judge=rgb or judge=refusal_match)"
            if any(c != "score" and c != "k" for c in missing)
            else ""
        )
        raise ValueError(f"{what}: score table is missing column(s) {missing}{hint}")


def _rag(df: pd.DataFrame, cols: Sequence[str], what: str, skipped: str = "drop") -> pd.DataFrame:
    if skipped not in SKIPPED_RULES:
        raise ValueError(f"{what}: skipped must be one of {SKIPPED_RULES}, got {skipped!r}")
    _need(df, ["k", *cols], what)
    keep = df["k"] > 0
    if skipped == "drop":
        keep &= ~skipped_rows(df)
    rag = df[keep]
    if rag.empty:
        raise MetricUndefinedError(f"{what}: no rows with k > 0")
    for c in cols:
        if rag[c].isna().any():
            raise ValueError(f"{what}: column {c!r} has missing values")
    return rag


def _rate(df: pd.DataFrame, col: str, what: str, skipped: str = "drop") -> float:
    return float(_rag(df, [col], what, skipped)[col].astype(bool).mean())


def correct(scores: pd.Series) -> pd.Series:
    """RGB correctness of each row: ``score == 1`` (every required answer part present)."""
    return scores.astype(float) >= CORRECT


# The per-row values each rate averages (:attr:`rr.metrics.registry.MetricSpec.per_row`): the
# registered functions below and the paper-beside table (its intervals) both average these.


def correct_rows(df: pd.DataFrame) -> pd.Series:
    """1.0 where the row is correct (:func:`correct`), else 0.0."""
    return correct(df["score"]).astype(float)


def rejected_or_correct_rows(df: pd.DataFrame) -> pd.Series:
    """RGB's Rej per row (``evalue.py``'s ``all_rate`` at noise ratio 1): 1.0 for a refusal or a correct response."""
    return (df["rgb_rejected"].fillna(False).astype(bool) | correct(df["score"])).astype(float)


def _flag_rows(column: str) -> Callable[[pd.DataFrame], pd.Series]:
    def rows(df: pd.DataFrame) -> pd.Series:
        return df[column].fillna(False).astype(bool).astype(float)

    rows.__doc__ = f"1.0 where ``{column}`` is true, else 0.0."
    return rows


def _correct_among_rows(detected: str) -> Callable[[pd.DataFrame], pd.Series]:
    def rows(df: pd.DataFrame) -> pd.Series:
        return correct_rows(df).where(df[detected].fillna(False).astype(bool))

    rows.__doc__ = f"Correctness of the rows with ``{detected}``; NaN (left out of the mean) on the others."
    return rows


def rate_estimate(
    spec: MetricSpec, rows: pd.DataFrame, ctx: EstimationContext, job_rows: pd.DataFrame | None = None
) -> Estimate | None:
    """The estimator of RGB's rates: the mean of the spec's per-row values
    (:attr:`~rr.metrics.registry.MetricSpec.per_row`) over the ``k > 0`` rows (``k = 0`` for a closed-book
    rate), leaving out the rows RGB leaves out (:func:`skipped_rows`) and the NaN the per-row values give
    rows outside the rate."""
    k = rows["k"].astype(int)
    part = rows[((k == 0) if spec.closed_book else (k > 0)) & ~skipped_rows(rows)]
    if part.empty:
        return None
    assert spec.per_row is not None
    try:
        values = spec.per_row(part)
    except KeyError:  # the rows lack the column it reads (judge.llm_rejection=false, ...)
        return None
    keep = values.notna()
    if not keep.any():
        return None
    return mean_of(part[keep], values[keep], ctx)


#: RGB's metrics are rates, each with a per-row value and :func:`rate_estimate`.
rgb_metric = partial(register_metric, estimator=rate_estimate)


@rgb_metric(
    "rgb_accuracy",
    label="accuracy",
    printed_as=("rgb2024: Accuracy (Tables 1, 5)", "rgb2024: Acc_doc (Table 7)"),
    section="accuracy_vs_noise_ratio",
    column="accuracy",
    per_row=correct_rows,
)
def accuracy(df: pd.DataFrame, skipped: str = "drop") -> float:
    """RGB accuracy (eq. 1, ``#tt / #nums``) over the ``k > 0`` rows: the share with ``score == 1``."""
    return float(correct(_rag(df, ["score"], "rgb_accuracy", skipped)["score"]).mean())


@rgb_metric("rgb_mean_score", per_row=lambda df: df["score"].astype(float))
def mean_score(df: pd.DataFrame, skipped: str = "drop") -> float:
    """The mean ``score`` over the ``k > 0`` rows: partial credit for multi-part answers (not RGB's)."""
    return float(_rag(df, ["score"], "rgb_mean_score", skipped)["score"].astype(float).mean())


@rgb_metric(
    "rgb_closed_book_accuracy",
    label="Acc (k=0)",
    printed_as=("rgb2024: Acc (Table 7)",),
    section="rgb_counterfactual",
    column="acc",
    per_row=correct_rows,
    closed_book=True,
)
def closed_book_accuracy(df: pd.DataFrame) -> float:
    """RGB accuracy without documents: the share of the ``k = 0`` rows with ``score == 1``."""
    _need(df, ["k", "score"], "rgb_closed_book_accuracy")
    cb = df[df["k"] == 0]
    if cb.empty:
        raise MetricUndefinedError("rgb_closed_book_accuracy: no rows with k = 0")
    return float(correct_rows(cb).mean())


@rgb_metric(
    "rgb_rejection_all_rate",
    label="Rej",
    printed_as=("rgb2024: Rej (Table 3)",),
    section="rgb_rejection",
    column="rej",
    per_row=rejected_or_correct_rows,
)
def rejection_all_rate(df: pd.DataFrame, skipped: str = "drop") -> float:
    """Rej as RGB Table 3 reports it (``evalue.py``'s ``all_rate`` at noise ratio 1): the share of
    ``k > 0`` rows that are a refusal (``rgb_rejected``) or correct (``score == 1``)."""
    rag = _rag(df, ["score", "rgb_rejected"], "rgb_rejection_all_rate", skipped)
    return float(rejected_or_correct_rows(rag).mean())


@rgb_metric(
    "rgb_rejection_rate",
    section="rgb_rejection",
    column="rej_phrase_only",
    per_row=_flag_rows("rgb_rejected"),
)
def rejection_rate(df: pd.DataFrame, skipped: str = "drop") -> float:
    """The share of ``k > 0`` rows whose response has RGB's rejection phrase (``rgb_rejected``) -- the
    refusals alone (rr's number; RGB's Rej also counts correct answers: :func:`rejection_all_rate`)."""
    return _rate(df, "rgb_rejected", "rgb_rejection_rate", skipped)


@rgb_metric(
    "rgb_rejection_rate_llm",
    label="Rej*",
    printed_as=("rgb2024: Rej* (Table 3)",),
    section="rgb_rejection",
    column="rej_llm",
    per_row=_flag_rows("rgb_rejected_llm"),
)
def rejection_rate_llm(df: pd.DataFrame, skipped: str = "drop") -> float:
    """Rej*: the share of ``k > 0`` rows the LLM judge reads as a rejection (``rgb_rejected_llm``)."""
    return _rate(df, "rgb_rejected_llm", "rgb_rejection_rate_llm", skipped)


@rgb_metric(
    "rgb_error_detection_rate",
    label="ED",
    printed_as=("rgb2024: ED (Table 7)",),
    section="rgb_counterfactual",
    column="ed",
    per_row=_flag_rows("error_detected"),
)
def error_detection_rate(df: pd.DataFrame, skipped: str = "drop") -> float:
    """ED: the share of ``k > 0`` rows whose response says "factual errors" (``error_detected``)."""
    return _rate(df, "error_detected", "rgb_error_detection_rate", skipped)


@rgb_metric(
    "rgb_error_detection_rate_llm",
    label="ED*",
    printed_as=("rgb2024: ED* (Table 7)",),
    section="rgb_counterfactual",
    column="ed_llm",
    per_row=_flag_rows("error_detected_llm"),
)
def error_detection_rate_llm(df: pd.DataFrame, skipped: str = "drop") -> float:
    """ED*: the share of ``k > 0`` rows the LLM judge reads as flagging errors (``error_detected_llm``)."""
    return _rate(df, "error_detected_llm", "rgb_error_detection_rate_llm", skipped)


def _correction(df: pd.DataFrame, detected: str, corrected: str | None, what: str, skipped: str) -> float:
    cols = ["score", detected] + ([corrected] if corrected else [])
    rag = _rag(df, cols, what, skipped)
    hit = rag[rag[detected].astype(bool)]
    if hit.empty:
        raise MetricUndefinedError(f"{what}: no response detected the errors (RGB's code prints 0 here)")
    ok = hit[corrected].astype(bool) if corrected else correct(hit["score"])
    return float(ok.mean())


@rgb_metric("rgb_error_correction_rate", per_row=_correct_among_rows("error_detected"))
def error_correction_rate(df: pd.DataFrame, detected: str = "error_detected", skipped: str = "drop") -> float:
    """rr's CR: among ``k > 0`` rows whose response detected the errors (column ``detected``), the
    share that are correct (``score == 1``).

    Raises:
        MetricUndefinedError: no row detected the errors (RGB's code reports 0 then; we refuse to).
    """
    return _correction(df, detected, None, "rgb_error_correction_rate", skipped)


@rgb_metric(
    "rgb_error_correction_rate_llm",
    label="CR",
    printed_as=("rgb2024: CR (Table 7)",),
    section="rgb_counterfactual",
    column="cr_llm",
    per_row=_correct_among_rows("error_detected_llm"),
)
def error_correction_rate_llm(df: pd.DataFrame, skipped: str = "drop") -> float:
    """Table 7's CR (``fact_evalue.py``'s ``correct_rate``): among the rows the LLM check flagged
    (``error_detected_llm``), the share correct (``score == 1``). Undefined when none was flagged."""
    return _correction(df, "error_detected_llm", None, "rgb_error_correction_rate_llm", skipped)


@rgb_metric("rgb_error_correction_rate_evalue", label="CR (evalue.py)", per_row=_flag_rows("rgb_corrected"))
def error_correction_rate_evalue(df: pd.DataFrame, skipped: str = "drop") -> float:
    """``evalue.py``'s ``correct_rate``: among rows with the fact-error phrase (``error_detected``), the
    share with ``0 not in label`` (``rgb_corrected`` of ``judge=rgb``: correct, or a refusal).
    Undefined when no row has the phrase."""
    return _correction(df, "error_detected", "rgb_corrected", "rgb_error_correction_rate_evalue", skipped)


def noise_ratio_of(tag: str) -> float:
    """The noise ratio of a ``doc_perturbation`` tag: ``noise_ratio@0.4`` -> 0.4; NaN otherwise."""
    t = PerturbationTag.read(str(tag))
    ratio = t.params.get(VALUE) if t is not None and t.name == "noise_ratio" else None
    return float(ratio) if isinstance(ratio, int | float) else float("nan")


def _safe(fn, part: pd.DataFrame, *args, **kwargs) -> float:  # noqa: ANN001
    try:
        return fn(part, *args, **kwargs)
    except MetricUndefinedError:
        return float("nan")


def rgb_table(
    df: pd.DataFrame, by: Sequence[str] | str = ("generator", "strategy"), skipped: str = "drop"
) -> pd.DataFrame:
    """RGB's numbers per system and ``doc_perturbation`` (one row each, ``k > 0`` rows only).

    Columns: ``by``, ``doc_perturbation``, ``noise_ratio`` (NaN for non-noise-ratio tags),
    ``n_rows`` (rows scored), ``n_skipped`` (rows RGB would skip, left out by ``skipped="drop"``),
    ``accuracy`` (RGB's), ``mean_score`` (partial credit, not RGB's) and, where the table has their
    columns, ``rejection_all_rate`` (RGB Table 3's Rej at ratio 1), ``rejection_rate`` (refusals
    only), ``rejection_rate_llm``, ``error_detection_rate``, ``error_detection_rate_llm``,
    ``error_correction_rate`` (rr's), ``error_correction_rate_evalue``, ``error_correction_rate_llm``
    (NaN where undefined). Sorted by ``by`` and noise ratio: the rows of one system are Table 1's
    accuracy per noise ratio, and the ``noise_ratio@1`` row is Table 3.
    """
    by = [by] if isinstance(by, str) else list(by)
    _need(df, [*by, "k", "doc_perturbation", "score"], "rgb_table")
    rows = []
    rag = df[df["k"] > 0]
    for key, part in rag.groupby([*by, "doc_perturbation"], sort=True, dropna=False):
        row = dict(zip([*by, "doc_perturbation"], key if isinstance(key, tuple) else (key,), strict=True))
        row["noise_ratio"] = noise_ratio_of(row["doc_perturbation"])
        n_skip = n_skipped(part) if skipped == "drop" else 0
        row["n_rows"] = len(part) - n_skip
        row["n_skipped"] = n_skip
        row["accuracy"] = _safe(accuracy, part, skipped=skipped)
        row["mean_score"] = _safe(mean_score, part, skipped=skipped)
        for name, fn, cols in (
            ("rejection_all_rate", rejection_all_rate, ("rgb_rejected",)),
            ("rejection_rate", rejection_rate, ("rgb_rejected",)),
            ("rejection_rate_llm", rejection_rate_llm, ("rgb_rejected_llm",)),
            ("error_detection_rate", error_detection_rate, ("error_detected",)),
            ("error_detection_rate_llm", error_detection_rate_llm, ("error_detected_llm",)),
            ("error_correction_rate", error_correction_rate, ("error_detected",)),
            (
                "error_correction_rate_evalue",
                error_correction_rate_evalue,
                ("error_detected", "rgb_corrected"),
            ),
            ("error_correction_rate_llm", error_correction_rate_llm, ("error_detected_llm",)),
        ):
            if all(c in part.columns for c in cols):
                row[name] = _safe(fn, part, skipped=skipped)
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    return out.sort_values([*by, "noise_ratio", "doc_perturbation"], na_position="last").reset_index(
        drop=True
    )


def counterfactual_table(
    df: pd.DataFrame, by: Sequence[str] | str = ("generator", "strategy"), skipped: str = "drop"
) -> pd.DataFrame:
    """RGB Table 7 per system: ``acc`` (closed-book accuracy, ``k = 0``), ``acc_doc`` (accuracy with
    the counterfactual documents, ``k > 0``), ``ed`` (ED), ``ed_llm`` (ED*), ``cr_llm`` (Table 7's CR:
    ``fact_evalue.py``), ``cr_evalue`` (``evalue.py``'s ``correct_rate``), ``cr`` (rr's: phrase-detected
    rows, share correct), ``n_skipped``; NaN where undefined (RGB's code prints 0 for an empty
    denominator) or where the table lacks the column. Filter the table to the counterfactual job(s)
    first.
    """
    by = [by] if isinstance(by, str) else list(by)
    _need(df, [*by, "k", "score", "error_detected"], "counterfactual_table")
    rows = []
    for key, part in df.groupby(by, sort=True, dropna=False):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        closed = part[part["k"] == 0]
        if skipped == "drop":
            closed = closed[~skipped_rows(closed)]
        row["acc"] = float(correct(closed["score"]).mean()) if len(closed) else np.nan
        row["acc_doc"] = _safe(accuracy, part, skipped=skipped)
        row["ed"] = _safe(error_detection_rate, part, skipped=skipped)
        has_llm = "error_detected_llm" in part
        row["ed_llm"] = _safe(error_detection_rate_llm, part, skipped=skipped) if has_llm else np.nan
        row["cr_llm"] = _safe(error_correction_rate_llm, part, skipped=skipped) if has_llm else np.nan
        row["cr_evalue"] = (
            _safe(error_correction_rate_evalue, part, skipped=skipped) if "rgb_corrected" in part else np.nan
        )
        row["cr"] = _safe(error_correction_rate, part, skipped=skipped)
        row["n_examples"] = int(part["example_id"].nunique()) if "example_id" in part else len(part)
        row["n_skipped"] = n_skipped(part) + int(skipped_rows(part[part["k"] == 0]).sum())
        rows.append(row)
    return pd.DataFrame(rows)


#: The rates of :func:`job_rates` as RGB's tables name them, in the order the console shows them: the
#: RGB specs with a label (those RGB's scripts print; rr's own rates go by their names).
RATE_NAMES = {
    s.name.removeprefix("rgb_"): s.label
    for s in SPECS.values()
    if s.name.startswith("rgb_") and s.label != s.name
}
#: The column RGB's prompt writes on its rows (``strategy=rgb``: ``rr.strategies.rgb.INSTRUCTION``) and
#: the one every judge with RGB's phrase rules writes (``judge=rgb``, ``judge=refusal_match``): rows with
#: both have RGB's rates.
RGB_ROWS = ("instruction", "rgb_rejected")


def job_rates(df: pd.DataFrame, by: Sequence[str] | str = ("generator", "strategy")) -> pd.DataFrame:
    """RGB's rates of a job, as its scripts print them (``summary.json`` ``rgb_rates``, the console):
    :func:`rgb_table`'s rows (one per system and ``doc_perturbation``) with each system's closed-book
    accuracy (``closed_book_accuracy``, Table 7's Acc: RGB-correct ``k = 0`` rows). A rate is NaN where
    RGB's scripts do not compute it: Rej (``rejection_all_rate``, ``rejection_rate_llm``) only at noise
    ratio 1 (``evalue.py``'s ``all_rate`` counts refusals only there), ED and CR only on counterfactual
    documents (``fact_check_rate`` / ``correct_rate``: ``_fact`` files only). Over the rows of RGB's
    prompt scored by RGB's phrase rules (:data:`RGB_ROWS`); empty without them or without ``k > 0`` rows."""
    by = [by] if isinstance(by, str) else list(by)
    if any(c not in df.columns for c in RGB_ROWS):
        return pd.DataFrame()
    df = df[df[RGB_ROWS[0]].notna()]
    if not (df["k"] > 0).any():
        return pd.DataFrame()
    table = rgb_table(df, by)
    closed = df[(df["k"] == 0) & ~skipped_rows(df)]
    acc = {
        key if isinstance(key, tuple) else (key,): float(correct(part["score"]).mean())
        for key, part in closed.groupby(by, sort=True, dropna=False)
    }
    table["closed_book_accuracy"] = [acc.get(tuple(r), np.nan) for r in table[by].itertuples(index=False)]
    counterfactual = table["doc_perturbation"].map(
        lambda t: getattr(PerturbationTag.read(str(t)), "name", None)
    )
    for col in ("rejection_all_rate", "rejection_rate_llm"):
        if col in table:
            table.loc[table["noise_ratio"] != 1, col] = np.nan
    for col in [c for c in table.columns if c.startswith("error_")]:
        table.loc[counterfactual != "counterfactual", col] = np.nan
    return table
