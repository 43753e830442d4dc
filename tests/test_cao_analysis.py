"""The §5 analyses of Cao et al. (2025) on a hand-worked score table.

Two examples, one retriever, k in {1, 2}, orders original/reversed, plus closed-book (k = 0):

    example  k=0  (1,orig) (1,rev) (2,orig) (2,rev)
    e1        1      0        1       1        0
    e2        0      1        0       0        0
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from rr.analysis.cao import (
    answer_recall_by_k,
    perfect_ndr_curve,
    perfect_ror_curve,
    perfect_rsr_curve,
    performance_by_k,
    robustness_by_dataset,
    robustness_by_order,
    robustness_vs_performance,
)

GRID = {
    "e1": {0: 1, (1, "original"): 0, (1, "reversed"): 1, (2, "original"): 1, (2, "reversed"): 0},
    "e2": {0: 0, (1, "original"): 1, (1, "reversed"): 0, (2, "original"): 0, (2, "reversed"): 0},
}


def hand_table(dataset: str = "nq", strategy: str = "vanilla") -> pd.DataFrame:
    rows = []
    for ex, cells in GRID.items():
        for cell, score in cells.items():
            k, order, retriever = (0, "none", "none") if cell == 0 else (cell[0], cell[1], "bm25")
            rows.append(
                {
                    "example_id": ex,
                    "dataset": dataset,
                    "generator": "g",
                    "strategy": strategy,
                    "retriever": retriever,
                    "k": k,
                    "order": order,
                    "score": float(score),
                }
            )
    return pd.DataFrame(rows)


def curve(df: pd.DataFrame, setup: str) -> dict[int, float]:
    sub = df[df["setup"] == setup]
    return dict(zip(sub["k"], sub["score"], strict=True))


def test_performance_by_k() -> None:
    out = performance_by_k(hand_table())
    assert list(out.columns) == ["generator", "strategy", "k", "score", "n"]
    assert dict(zip(out["k"], out["score"], strict=True)) == {0: 0.5, 1: 0.5, 2: 0.25}
    assert list(out["n"]) == [2, 4, 4]
    # per order (Fig. 17-19): the k = 0 point is repeated for each order
    per = performance_by_k(hand_table(), by=["strategy", "order"])
    got = {(o, k): s for o, k, s in zip(per["order"], per["k"], per["score"], strict=True)}
    assert got == {
        ("original", 0): 0.5,
        ("original", 1): 0.5,
        ("original", 2): 0.5,
        ("reversed", 0): 0.5,
        ("reversed", 1): 0.5,
        ("reversed", 2): 0.0,
    }


def test_perfect_ndr_curve() -> None:
    out = perfect_ndr_curve(hand_table())
    assert curve(out, "actual") == {0: 0.5, 1: 0.5, 2: 0.25}
    assert curve(out, "perfect_ndr") == {0: 0.5, 1: 0.75, 2: 0.5}


def test_perfect_rsr_curve() -> None:
    out = perfect_rsr_curve(hand_table())
    assert curve(out, "actual") == {1: 0.5, 2: 0.25}
    assert curve(out, "perfect_rsr") == {1: 0.5, 2: 0.75}


def test_perfect_ror_curve() -> None:
    out = perfect_ror_curve(hand_table())
    assert curve(out, "original") == {1: 0.5, 2: 0.5}
    assert curve(out, "reversed") == {1: 0.5, 2: 0.0}
    assert curve(out, "perfect_ror") == {1: 1.0, 2: 0.5}


def test_robustness_vs_performance() -> None:
    row = robustness_vs_performance(hand_table()).iloc[0]
    assert (row["ndr"], row["rsr"], row["ror"]) == (0.75, 0.5, 0.25)
    assert row["robustness"] == pytest.approx((0.75 * 0.5 * 0.25) ** (1 / 3))
    assert row["accuracy"] == pytest.approx(0.375) and row["max_accuracy"] == 0.5


def test_robustness_by_order() -> None:
    out = robustness_by_order(hand_table()).set_index("order")
    assert (out.loc["original", "ndr"], out.loc["original", "rsr"]) == (0.75, 0.5)
    assert out.loc["original", "robustness"] == pytest.approx(math.sqrt(0.375))
    assert out.loc["original", "accuracy"] == 0.5 and out.loc["reversed", "accuracy"] == 0.25
    assert (out.loc["reversed", "ndr"], out.loc["reversed", "rsr"]) == (0.75, 0.5)


def test_breakdown_by_dataset_and_strategy() -> None:
    both = pd.concat([hand_table("nq"), hand_table("hotpot", "ownknow")])
    out = robustness_by_dataset(both)
    assert list(zip(out["strategy"], out["dataset"], strict=True)) == [
        ("ownknow", "hotpot"),
        ("vanilla", "nq"),
    ]
    assert list(out["ndr"]) == [0.75, 0.75]
    # two datasets averaged together in one curve (dataset joins the row identity, no duplicates)
    two = pd.concat([hand_table("nq"), hand_table("hotpot")])
    assert curve(perfect_ndr_curve(two), "perfect_ndr") == {0: 0.5, 1: 0.75, 2: 0.5}


def test_duplicate_cells_are_an_error() -> None:
    t = hand_table()
    with pytest.raises(ValueError, match="share a cell"):
        performance_by_k(pd.concat([t, t]))
    with pytest.raises(ValueError, match="closed-book"):
        perfect_ndr_curve(t[t["k"] > 0])


def test_answer_recall_by_k(tmp_path: Path) -> None:
    for job, dataset, recall in (("a", "nq_open", 0.5), ("b", "nq_open", 0.5), ("c", "asqa", 0.25)):
        d = tmp_path / "sweep" / job
        d.mkdir(parents=True)
        pd.DataFrame({"dataset": [dataset], "score": [1.0]}).to_parquet(d / "scores.parquet")
        pd.DataFrame(
            {
                "retriever": ["bm25", "bm25"],
                "query_perturbation": "none",
                "k": [5, 10],
                "answer_recall": [recall, 1.0],
            }
        ).to_csv(d / "retrieval.csv", index=False)
    out = answer_recall_by_k(tmp_path / "sweep")
    assert list(out.columns) == ["dataset", "retriever", "query_perturbation", "k", "answer_recall"]
    assert len(out) == 4  # the two nq_open jobs share their retrieval
    got = {(d, k): r for d, k, r in zip(out["dataset"], out["k"], out["answer_recall"], strict=True)}
    assert got == {("asqa", 5): 0.25, ("asqa", 10): 1.0, ("nq_open", 5): 0.5, ("nq_open", 10): 1.0}
    with pytest.raises(FileNotFoundError):
        answer_recall_by_k(tmp_path / "nothing")
