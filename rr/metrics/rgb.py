"""RGB's metrics (Chen et al. 2024, "Evaluation metrics"; Tables 1, 3, 5 and 7) over the score table.

Every metric is computed over the RAG rows (``k > 0``) of one system (filter or use
:func:`rgb_table`), except ``Acc`` of Table 7, which is the closed-book (``k = 0``) accuracy.

* **Accuracy** (Tables 1, 5): the share of responses that contain the answer -- every required
  part for multi-part questions (RGB counts a response correct only when no part is missing),
  i.e. ``score == 1``. A refusal is never correct (``judge=refusal_match`` scores it 0).
* **Rejection rate** Rej (Table 3): the share of responses with RGB's rejection phrase
  (``rgb_rejected``: the response contains "insufficient information", RGB's ``evalue.py``); Rej*
  the share the LLM judge reads as a rejection (``rgb_rejected_llm``). Computed on the
  negative-rejection rows (``doc_perturbation = noise_ratio@1``) in RGB.
* **Error detection rate** ED (Table 7): the share of responses that say "factual errors"
  (``error_detected``); ED* by the LLM judge (``error_detected_llm``).
* **Error correction rate** CR (Table 7): among responses that detected the error, the share
  that give the correct answer (RGB's ``correct_tt / fact_tt``). Undefined when none detected.

The columns come from ``judge=refusal_match`` (``rgb_rejected``, ``error_detected`` and, with its
LLM checks, ``*_llm``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rr.metrics.registry import register_metric
from rr.metrics.robustness import MetricUndefinedError
from rr.perturbations.base import VALUE, PerturbationTag

#: A response is correct when its score reaches this (all answer parts covered).
CORRECT = 1.0 - 1e-9


def _need(df: pd.DataFrame, cols: Sequence[str], what: str) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        hint = " (use judge=refusal_match)" if any(c != "score" and c != "k" for c in missing) else ""
        raise ValueError(f"{what}: score table is missing column(s) {missing}{hint}")


def _rag(df: pd.DataFrame, cols: Sequence[str], what: str) -> pd.DataFrame:
    _need(df, ["k", *cols], what)
    rag = df[df["k"] > 0]
    if rag.empty:
        raise MetricUndefinedError(f"{what}: no rows with k > 0")
    for c in cols:
        if rag[c].isna().any():
            raise ValueError(f"{what}: column {c!r} has missing values")
    return rag


def _rate(df: pd.DataFrame, col: str, what: str) -> float:
    return float(_rag(df, [col], what)[col].astype(bool).mean())


def correct(scores: pd.Series) -> pd.Series:
    """RGB correctness of each row: ``score == 1`` (every required answer part present)."""
    return scores.astype(float) >= CORRECT


@register_metric("rgb_accuracy")
def accuracy(df: pd.DataFrame) -> float:
    """RGB accuracy (eq. 1, ``#tt / #nums``) over the ``k > 0`` rows: the share with ``score == 1``."""
    return float(correct(_rag(df, ["score"], "rgb_accuracy")["score"]).mean())


@register_metric("rgb_rejection_rate")
def rejection_rate(df: pd.DataFrame) -> float:
    """Rej: the share of ``k > 0`` rows whose response has RGB's rejection phrase (``rgb_rejected``)."""
    return _rate(df, "rgb_rejected", "rgb_rejection_rate")


@register_metric("rgb_rejection_rate_llm")
def rejection_rate_llm(df: pd.DataFrame) -> float:
    """Rej*: the share of ``k > 0`` rows the LLM judge reads as a rejection (``rgb_rejected_llm``)."""
    return _rate(df, "rgb_rejected_llm", "rgb_rejection_rate_llm")


@register_metric("rgb_error_detection_rate")
def error_detection_rate(df: pd.DataFrame) -> float:
    """ED: the share of ``k > 0`` rows whose response says "factual errors" (``error_detected``)."""
    return _rate(df, "error_detected", "rgb_error_detection_rate")


@register_metric("rgb_error_detection_rate_llm")
def error_detection_rate_llm(df: pd.DataFrame) -> float:
    """ED*: the share of ``k > 0`` rows the LLM judge reads as flagging errors (``error_detected_llm``)."""
    return _rate(df, "error_detected_llm", "rgb_error_detection_rate_llm")


@register_metric("rgb_error_correction_rate")
def error_correction_rate(df: pd.DataFrame, detected: str = "error_detected") -> float:
    """CR: among ``k > 0`` rows whose response detected the errors (column ``detected``), the
    share that are correct (``score == 1``).

    Raises:
        MetricUndefinedError: no row detected the errors (RGB's code reports 0 then; we refuse to).
    """
    rag = _rag(df, ["score", detected], "rgb_error_correction_rate")
    hit = rag[rag[detected].astype(bool)]
    if hit.empty:
        raise MetricUndefinedError("rgb_error_correction_rate: no response detected the errors")
    return float(correct(hit["score"]).mean())


def noise_ratio_of(tag: str) -> float:
    """The noise ratio of a ``doc_perturbation`` tag: ``noise_ratio@0.4`` -> 0.4; NaN otherwise."""
    t = PerturbationTag.read(str(tag))
    ratio = t.params.get(VALUE) if t is not None and t.name == "noise_ratio" else None
    return float(ratio) if isinstance(ratio, int | float) else float("nan")


def _safe(fn, part: pd.DataFrame, *args) -> float:  # noqa: ANN001
    try:
        return fn(part, *args)
    except MetricUndefinedError:
        return float("nan")


def rgb_table(df: pd.DataFrame, by: Sequence[str] | str = ("generator", "strategy")) -> pd.DataFrame:
    """RGB's numbers per system and ``doc_perturbation`` (one row each, ``k > 0`` rows only).

    Columns: ``by``, ``doc_perturbation``, ``noise_ratio`` (NaN for non-noise-ratio tags),
    ``n_rows``, ``accuracy``, ``rejection_rate``, ``error_detection_rate`` and, where the table
    has their columns, ``rejection_rate_llm``, ``error_detection_rate_llm``,
    ``error_correction_rate`` (NaN where undefined). Sorted by ``by`` and noise ratio: the rows of
    one system are Table 1's accuracy per noise ratio, and the ``noise_ratio@1`` row is Table 3.
    """
    by = [by] if isinstance(by, str) else list(by)
    _need(df, [*by, "k", "doc_perturbation", "score"], "rgb_table")
    rows = []
    rag = df[df["k"] > 0]
    for key, part in rag.groupby([*by, "doc_perturbation"], sort=True, dropna=False):
        row = dict(zip([*by, "doc_perturbation"], key if isinstance(key, tuple) else (key,), strict=True))
        row["noise_ratio"] = noise_ratio_of(row["doc_perturbation"])
        row["n_rows"] = len(part)
        row["accuracy"] = accuracy(part)
        for name, fn, col in (
            ("rejection_rate", rejection_rate, "rgb_rejected"),
            ("rejection_rate_llm", rejection_rate_llm, "rgb_rejected_llm"),
            ("error_detection_rate", error_detection_rate, "error_detected"),
            ("error_detection_rate_llm", error_detection_rate_llm, "error_detected_llm"),
        ):
            if col in part.columns:
                row[name] = _safe(fn, part)
        if "error_detected" in part.columns:
            row["error_correction_rate"] = _safe(error_correction_rate, part)
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    return out.sort_values([*by, "noise_ratio", "doc_perturbation"], na_position="last").reset_index(
        drop=True
    )


def counterfactual_table(
    df: pd.DataFrame, by: Sequence[str] | str = ("generator", "strategy")
) -> pd.DataFrame:
    """RGB Table 7 per system: ``acc`` (closed-book accuracy, ``k = 0``), ``acc_doc`` (accuracy with
    the counterfactual documents, ``k > 0``), ``ed``, ``ed_llm``, ``cr`` (from ``error_detected``) and
    ``cr_llm`` (from ``error_detected_llm``, as RGB's ``fact_evalue.py``); NaN where undefined or
    where the table lacks the column. Filter the table to the counterfactual job(s) first.
    """
    by = [by] if isinstance(by, str) else list(by)
    _need(df, [*by, "k", "score", "error_detected"], "counterfactual_table")
    rows = []
    for key, part in df.groupby(by, sort=True, dropna=False):
        row = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        closed = part[part["k"] == 0]
        row["acc"] = float(correct(closed["score"]).mean()) if len(closed) else np.nan
        row["acc_doc"] = _safe(accuracy, part)
        row["ed"] = _safe(error_detection_rate, part)
        row["ed_llm"] = _safe(error_detection_rate_llm, part) if "error_detected_llm" in part else np.nan
        row["cr"] = _safe(error_correction_rate, part)
        row["cr_llm"] = (
            _safe(error_correction_rate, part, "error_detected_llm")
            if "error_detected_llm" in part
            else np.nan
        )
        row["n_examples"] = int(part["example_id"].nunique()) if "example_id" in part else len(part)
        rows.append(row)
    return pd.DataFrame(rows)
