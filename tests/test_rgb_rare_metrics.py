"""RGB and RARE metrics: data-driven hand-worked cases plus tables and validation."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rr.metrics import METRICS
from rr.metrics.rare import overall_robustness, rare_table, robustness_flags
from rr.metrics.rgb import counterfactual_table, error_correction_rate, noise_ratio_of, rgb_table
from rr.metrics.robustness import MetricUndefinedError

CASES = yaml.safe_load((Path(__file__).parent / "metric_cases" / "rgb_rare.yaml").read_text(encoding="utf-8"))


def frame(case: dict) -> pd.DataFrame:
    return pd.DataFrame(case["rows"], columns=case["columns"])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_metric_case(case: dict) -> None:
    value = METRICS[case["metric"]](frame(case))
    assert isinstance(value, float)
    assert value == pytest.approx(case["expected"], abs=case["tol"])


def test_cases_cover_every_rgb_and_rare_metric() -> None:
    names = {m for m in METRICS if m.startswith(("rgb_", "rare_"))}
    assert {c["metric"] for c in CASES} == names


def rare_rows() -> pd.DataFrame:
    return frame(next(c for c in CASES if c["name"] == "rare_overall"))


def test_rare_flags_and_table() -> None:
    f = robustness_flags(rare_rows())
    assert f["robust"].tolist() == [1, 0, 1, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1]
    assert f["rare_doc_type"].iloc[:4].tolist() == [
        "ground_truth",
        "ground_truth",
        "lexical_diff",
        "lexical_similar",
    ]
    # with D_ret in the overall set: q1 (4 + 0 + 1) / 7, q2 (2 + 1 + 1) / 6
    assert overall_robustness(rare_rows(), include_retrieval=True) == pytest.approx((5 / 7 + 4 / 6) / 2)
    df = pd.concat([rare_rows().assign(generator="g"), rare_rows().assign(generator="h")])
    table = rare_table(df.assign(strategy="vanilla"))
    assert (
        table[["overall", "query", "document", "retrieval"]].values.tolist() == [[0.65, 0.5, 0.5, 0.75]] * 2
    )
    assert table["n_examples"].tolist() == [2, 2]


def test_rare_needs_the_probe_and_known_types() -> None:
    df = rare_rows()
    with pytest.raises(ValueError, match=r"1 example\(s\) lack the closed-book probe.*'q2'"):
        robustness_flags(df[~((df["example_id"] == "q2") & (df["k"] == 0))])
    with pytest.raises(MetricUndefinedError, match="no k > 0 rows with a known document type"):
        robustness_flags(df.assign(doc_perturbation="typo"))
    with pytest.raises(ValueError, match=r"missing column\(s\) \['refused'\]"):
        robustness_flags(df.drop(columns="refused"))
    only_gt = df[(df["doc_perturbation"] != "none") | (df["k"] == 0)]
    assert math.isnan(rare_table(only_gt)["retrieval"].iloc[0])


def test_rgb_table_per_noise_ratio() -> None:
    rows = []
    for ratio, scores in ((0.0, [1, 1]), (0.4, [1, 0]), (1.0, [0, 0])):
        for i, s in enumerate(scores):
            rows.append(
                {
                    "generator": "g",
                    "strategy": "rgb",
                    "example_id": f"q{i}",
                    "k": 20,
                    "doc_perturbation": f"noise_ratio@{ratio:g}",
                    "score": float(s),
                    "rgb_rejected": ratio == 1.0 and i == 0,
                    "error_detected": False,
                }
            )
    t = rgb_table(pd.DataFrame(rows))
    assert t["noise_ratio"].tolist() == [0.0, 0.4, 1.0]
    assert t["accuracy"].tolist() == [1.0, 0.5, 0.0]
    assert t["rejection_rate"].tolist() == [0.0, 0.0, 0.5]
    assert t["error_correction_rate"].isna().all()  # nothing detected: undefined
    assert noise_ratio_of("noise_ratio@0.2") == 0.2 and math.isnan(noise_ratio_of("none"))


def test_counterfactual_table() -> None:
    df = pd.DataFrame(
        {
            "generator": "g",
            "strategy": "rgb",
            "example_id": ["a", "b", "a", "b"],
            "k": [0, 0, 5, 5],
            "score": [1.0, 1.0, 0.0, 1.0],
            "error_detected": [False, False, True, True],
        }
    )
    (row,) = counterfactual_table(df).to_dict(orient="records")
    assert (row["acc"], row["acc_doc"], row["ed"], row["cr"]) == (1.0, 0.5, 1.0, 0.5)
    assert math.isnan(row["ed_llm"]) and math.isnan(row["cr_llm"]) and row["n_examples"] == 2
    with pytest.raises(MetricUndefinedError, match="no response detected"):
        error_correction_rate(df.assign(error_detected=False))
    with pytest.raises(ValueError, match=r"missing column\(s\) \['error_detected'\].*refusal_match"):
        error_correction_rate(df.drop(columns="error_detected"))
