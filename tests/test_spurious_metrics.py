"""SURE's RR / WR / LR (rr.metrics.spurious): hand-worked cases as data, plus validation."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rr.metrics.robustness import MetricUndefinedError
from rr.metrics.spurious import instance_pairs, robustness_rates

CASES = yaml.safe_load((Path(__file__).parent / "metric_cases" / "spurious.yaml").read_text(encoding="utf-8"))
COLUMNS = ["example_id", "k", "doc_perturbation", "score", "answer_in_docs"]


def table(rows: list[list]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_case(case: dict) -> None:
    out = robustness_rates(table(case["rows"]))
    assert list(out.index) == sorted(case["expected"])
    assert list(out.columns.get_level_values(0).unique()) == ["K-G", "K-N", "U-G", "U-N", "Total"]
    for pert, blocks in case["expected"].items():
        for block, (lr, rr, wr, n) in blocks.items():
            got = out.loc[pert, block]
            assert int(got["n"]) == n, (pert, block)
            for metric, want in (("LR", lr), ("RR", rr), ("WR", wr)):
                if want is None:
                    assert math.isnan(got[metric]), (pert, block, metric)
                else:
                    assert got[metric] == pytest.approx(want, abs=1e-12), (pert, block, metric)


def test_percent_total_only_and_grouping() -> None:
    df = table(CASES[0]["rows"])
    pct = robustness_rates(df, subsets=False, percent=True)
    assert list(pct.columns) == [("Total", m) for m in ("LR", "RR", "WR", "n")]
    assert pct.loc["format:json", ("Total", "RR")] == pytest.approx(50.0)
    two = pd.concat([df.assign(generator="a"), df.assign(generator="b")])
    grouped = robustness_rates(two, by=["generator"])
    assert list(grouped.index.names) == ["generator", "doc_perturbation"] and len(grouped) == 4


def test_pairs_columns() -> None:
    pairs = instance_pairs(table(CASES[0]["rows"]))
    q1 = pairs[(pairs["example_id"] == "q1") & (pairs["doc_perturbation"] == "format:json")].iloc[0]
    assert (q1["y_original"], q1["y_perturbed"], q1["C"], q1["subset"]) == (1, 0, 1, "K-G")


def test_validation() -> None:
    rows = CASES[0]["rows"]
    with pytest.raises(ValueError, match="have no original"):
        robustness_rates(table([r for r in rows if not (r[0] == "q2" and r[1] == 1 and r[2] == "none")]))
    with pytest.raises(ValueError, match="example 'q3' lacks its closed-book"):
        robustness_rates(table([r for r in rows if not (r[0] == "q3" and r[1] == 0)]))
    robustness_rates(table([r for r in rows if r[1] > 0]), subsets=False)  # fine without k = 0
    with pytest.raises(ValueError, match="closed-book \\(k=0\\) rows disagree"):
        robustness_rates(table([*rows, ["q1", 0, "metadata:wiki", 0.0, False]]))
    with pytest.raises(ValueError, match="duplicate perturbed rows"):
        robustness_rates(table([*rows, ["q1", 1, "metadata:wiki", 0.0, True]]))
    with pytest.raises(ValueError, match="duplicate original rows"):
        robustness_rates(table([*rows, ["q1", 1, "none", 0.0, True]]))
    with pytest.raises(MetricUndefinedError, match="need rows with doc_perturbation == 'none'"):
        robustness_rates(table([r for r in rows if r[2] == "none"]))
    with pytest.raises(ValueError, match=r"missing column\(s\) \['answer_in_docs'\]"):
        robustness_rates(table(rows).drop(columns="answer_in_docs"))
    with pytest.raises(ValueError, match="outside"):
        robustness_rates(table([*rows[:-1], ["q1", 1, "metadata:wiki", 2.0, True]]))
