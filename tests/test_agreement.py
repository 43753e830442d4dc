"""Judge agreement and Cohen's kappa on a hand-worked case, and the CLI subcommand."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rr.analysis.agreement import judge_agreement

A = [1, 1, 0, 0, 1, 0, 1, 1]
B = [1, 0, 0, 0, 1, 1, 1, 1]


def table(scores: list[float], preds: list[str] | None = None) -> pd.DataFrame:
    n = len(scores)
    return pd.DataFrame(
        {
            "example_id": [f"q{i}" for i in range(n)],
            "dataset": ["nq"] * (n // 2) + ["hotpot"] * (n - n // 2),
            "strategy": "vanilla",
            "retriever": "bm25",
            "k": 5,
            "order": "original",
            "prediction": preds or [f"p{i}" for i in range(n)],
            "score": scores,
        }
    )


def test_hand_worked_kappa() -> None:
    # agreement 6/8; p_e = (5/8)(5/8) + (3/8)(3/8) = 34/64; kappa = (48/64 - 34/64) / (30/64) = 7/15
    out = judge_agreement(table(A), table(B))
    row = out.iloc[0]
    assert row["n"] == 8 and row["agreement"] == pytest.approx(0.75)
    assert row["kappa"] == pytest.approx(7 / 15)
    assert (row["only_a"], row["only_b"]) == (0, 0)
    assert row["mean_score_a"] == pytest.approx(5 / 8)


def test_breakdown_unpaired_and_constant() -> None:
    by = judge_agreement(table(A), table(B), by=["dataset"]).set_index("dataset")
    # hotpot rows 4..7: A=[1,0,1,1], B=[1,1,1,1]: agreement 3/4, B constant -> kappa 0
    assert by.loc["hotpot", "agreement"] == pytest.approx(0.75)
    assert by.loc["hotpot", "kappa"] == pytest.approx(0.0)
    # nq rows 0..3: A=[1,1,0,0], B=[1,0,0,0]: agreement 3/4; p_e = 2/4*1/4 + 2/4*3/4 = 1/2 -> 1/2
    assert by.loc["nq", "kappa"] == pytest.approx(0.5)
    same = judge_agreement(table([1, 1]), table([1, 1])).iloc[0]
    assert same["agreement"] == 1.0 and math.isnan(same["kappa"])
    out = judge_agreement(table(A), table(B).iloc[:6]).iloc[0]
    assert (out["n"], out["only_a"], out["only_b"]) == (6, 2, 0)


def test_fractional_scores_are_categories() -> None:
    out = judge_agreement(table([0.5, 1 / 3, 1.0, 0.0]), table([0.5, 0.3333333333, 1.0, 0.5])).iloc[0]
    assert out["agreement"] == pytest.approx(0.75)


def test_different_predictions_are_an_error() -> None:
    with pytest.raises(ValueError, match="different predictions"):
        judge_agreement(table([1, 0]), table([1, 0], ["x", "p1"]))


def test_cli_subcommand(tmp_path: Path) -> None:
    for name, scores in (("a", A), ("b", B)):
        (tmp_path / name).mkdir()
        table(scores).to_parquet(tmp_path / name / "scores.parquet")
    out = subprocess.run(
        [sys.executable, "-m", "rr", "judge-agreement", str(tmp_path / "a"), str(tmp_path / "b")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "0.7500" in out.stdout and "0.4667" in out.stdout
