"""Query-level analysis: Recall/Precision@k on hand-worked qrels, Table 4, the §5.4 correlations on a
synthetic score table with hand-checked values, and the Fig. 6 quality report."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rr.analysis.query_level import (
    correlation_table,
    correlations,
    match_table,
    quality_report,
    retrieval_metrics,
    retriever_table,
)
from rr.metrics.query_level import module_deltas, perturbation_kind
from rr.records import Hit


def hits(*ids: str, scores: list[float] | None = None) -> list[Hit]:
    return [Hit(d, r, (scores or [10.0 - r] * len(ids))[r - 1]) for r, d in enumerate(ids, 1)]


QRELS = {"q1": {"a": 1, "b": 1}, "q2": {"c": 1}}
RUNS = {
    "bm25": {
        "q1": hits("a", "x", "b"),
        "q1::typo@0.1#1": hits("x", "y", "a"),
        "q2": [],
        "q3": hits("a"),  # no qrels: left out
    },
    # equal scores: the rank decides (trec_eval alone would put z before b by docid)
    "dense": {"q1": hits("b", "z", scores=[1.0, 1.0])},
}


def test_recall_precision_hand_worked() -> None:
    df = retrieval_metrics(RUNS, QRELS, ks=(1, 2, 3)).set_index(
        ["retriever", "example_id", "query_perturbation"]
    )
    df = df[[c for c in df.columns if not c.startswith("bergen_")]]  # rr's rule (BERGEN's: test below)
    assert len(df) == 4
    assert df.loc[("bm25", "q1", "none")].to_dict() == pytest.approx(
        {
            "recall@1": 0.5,
            "precision@1": 1.0,
            "recall@2": 0.5,
            "precision@2": 0.5,
            "recall@3": 1.0,
            "precision@3": 2 / 3,
        }
    )
    assert df.loc[("bm25", "q1", "typo@0.1#1")].to_dict() == pytest.approx(
        {
            "recall@1": 0.0,
            "precision@1": 0.0,
            "recall@2": 0.0,
            "precision@2": 0.0,
            "recall@3": 0.5,
            "precision@3": 1 / 3,
        }
    )
    assert df.loc[("bm25", "q2", "none")].to_dict() == pytest.approx(dict.fromkeys(df.columns, 0.0))
    assert df.loc[("dense", "q1", "none"), "recall@1"] == 0.5


def test_retriever_table_like_table4() -> None:
    runs = {
        "bm25": {
            "q1": hits("a", "b"),
            "q2": hits("c"),
            "q1::typo@0.1#1": hits("a"),
            "q1::typo@0.1#2": hits("x"),
            "q2::formal#1": hits("x"),
        }
    }
    t = retriever_table(retrieval_metrics(runs, QRELS, ks=(5,)))
    assert list(t.columns) == ["none", "formal", "typo@0.1"]
    assert t.loc["bm25"].to_dict() == pytest.approx({"none": 100.0, "formal": 0.0, "typo@0.1": 25.0})


@pytest.mark.parametrize(
    ("tag", "kind"),
    [("typo@0.25#3", "typo@0.25"), ("formal#12", "formal"), ("none", "none"), ("char@0.1#1", "char@0.1")],
)
def test_perturbation_kind(tag: str, kind: str) -> None:
    assert perturbation_kind(tag) == kind


# Per-sample changes (perturbed - original) for 4 examples and two perturbations, chosen so that the
# Pearson coefficients are known by hand: r(x, x) = 1 (p = 0); centred orthogonal vectors give r = 0
# (p = 1); x = [-1,0,1,0], y = [-1,0,0,1] give r = 1/2 and, with n - 2 = 2 degrees of freedom,
# t = r sqrt(2 / (1 - r^2)) and p = 1 - t / sqrt(t^2 + 2) = 1/2 exactly; a constant column gives NaN.
D = {
    "typo@0.1#1": {"ret": [-1, -1, 0, 0], "cb": [-1, 0, -1, 0], "or": [0, 0, -1, -1], "rag": [-1, -1, 0, 0]},
    "formal#1": {"ret": [-1, 0, 1, 0], "cb": [-1, 0, 0, 1], "or": [0, 0, 0, 0], "rag": [-1, 0, 0, 1]},
}
EXAMPLES = ["e1", "e2", "e3", "e4"]


def synthetic_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score table and retrieval metrics whose originals are 0.5 and perturbed values 0.5 + d / 2."""
    base = {"generator": "g", "strategy": "vanilla", "order": "original"}
    rows, ret = [], []
    for tag in ["none", *D]:
        for i, ex in enumerate(EXAMPLES):
            d = {m: (0.0 if tag == "none" else D[tag][m][i] / 2) for m in ("ret", "cb", "or", "rag")}
            rows.append(
                {
                    **base,
                    "example_id": ex,
                    "query_perturbation": tag,
                    "retriever": "none",
                    "k": 0,
                    "order": "none",
                    "score": 0.5 + d["cb"],
                }
            )
            rows.append(
                {
                    **base,
                    "example_id": ex,
                    "query_perturbation": tag,
                    "retriever": "oracle",
                    "k": 5,
                    "score": 0.5 + d["or"],
                }
            )
            rows.append(
                {
                    **base,
                    "example_id": ex,
                    "query_perturbation": tag,
                    "retriever": "bm25",
                    "k": 5,
                    "score": 0.5 + d["rag"],
                }
            )
            # distractors that must be ignored: another k, another order, another retriever
            rows.append(
                {
                    **base,
                    "example_id": ex,
                    "query_perturbation": tag,
                    "retriever": "bm25",
                    "k": 10,
                    "score": 1.0,
                }
            )
            rows.append(
                {
                    **base,
                    "example_id": ex,
                    "query_perturbation": tag,
                    "retriever": "bm25",
                    "k": 5,
                    "order": "reversed",
                    "score": 0.0,
                }
            )
            rows.append(
                {
                    **base,
                    "example_id": ex,
                    "query_perturbation": tag,
                    "retriever": "dense",
                    "k": 5,
                    "score": 0.0,
                }
            )
            ret.append(
                {"retriever": "bm25", "example_id": ex, "query_perturbation": tag, "recall@5": 0.5 + d["ret"]}
            )
            ret.append({"retriever": "dense", "example_id": ex, "query_perturbation": tag, "recall@5": 0.0})
    return pd.DataFrame(rows), pd.DataFrame(ret)


def test_module_deltas_pairs_each_sample_with_its_original() -> None:
    scores, ret = synthetic_tables()
    deltas = module_deltas(scores, ret, retriever="bm25", k=5)
    assert len(deltas) == 8
    typo = deltas[deltas["kind"] == "typo@0.1"].set_index("example_id")
    assert typo["d_ret"].tolist() == [-0.5, -0.5, 0.0, 0.0]
    assert typo["d_cb"].tolist() == [-0.5, 0.0, -0.5, 0.0]
    assert typo["d_or"].tolist() == [0.0, 0.0, -0.5, -0.5]
    assert typo["d_rag"].tolist() == [-0.5, -0.5, 0.0, 0.0]


def test_correlations_hand_checked() -> None:
    scores, ret = synthetic_tables()
    corr = correlations(module_deltas(scores, ret, retriever="bm25", k=5)).set_index(["kind", "pair"])
    assert corr.loc[("typo@0.1", "RET"), ["r", "p"]].tolist() == pytest.approx([1.0, 0.0], abs=1e-12)
    assert corr.loc[("typo@0.1", "CB"), ["r", "p"]].tolist() == pytest.approx([0.0, 1.0], abs=1e-12)
    assert corr.loc[("typo@0.1", "OR"), ["r", "p"]].tolist() == pytest.approx([-1.0, 0.0], abs=1e-12)
    assert corr.loc[("formal", "RET"), ["r", "p"]].tolist() == pytest.approx([0.5, 0.5], abs=1e-12)
    assert corr.loc[("formal", "CB"), "r"] == pytest.approx(1.0)
    assert math.isnan(corr.loc[("formal", "OR"), "r"]) and math.isnan(corr.loc[("formal", "OR"), "p"])
    assert set(corr["n"]) == {4}
    table = correlation_table(corr.reset_index())
    assert list(table.index) == ["RET", "CB", "OR"] and list(table.columns) == ["formal", "typo@0.1"]
    assert table.loc["RET", "formal"] == pytest.approx(0.5)


def test_module_deltas_errors() -> None:
    scores, ret = synthetic_tables()
    with pytest.raises(ValueError, match="several rows per sample"):
        module_deltas(pd.concat([scores, scores.assign(generator="h")]), ret, retriever="bm25")
    with pytest.raises(ValueError, match="oracle"):
        module_deltas(scores[scores["retriever"] != "oracle"], ret, retriever="bm25")
    with pytest.raises(ValueError, match="without an original"):
        module_deltas(
            scores[~((scores["example_id"] == "e1") & (scores["query_perturbation"] == "none"))],
            ret,
            retriever="bm25",
        )


def test_match_table_settings() -> None:
    scores, _ = synthetic_tables()
    t = match_table(scores, k=5)
    assert t.loc[("g", "closed_book", "none"), "none"] == 0.5
    assert t.loc[("g", "oracle", "oracle"), "typo@0.1"] == pytest.approx(0.5 + np.mean([0, 0, -1, -1]) / 2)
    assert t.loc[("g", "rag", "bm25"), "formal"] == pytest.approx(0.5)
    assert ("g", "rag", "dense") in t.index and list(t.columns) == ["none", "formal", "typo@0.1"]


def test_quality_report_smollm2_and_minilm() -> None:
    q = "when does the cannes film festival take place"
    scores = pd.DataFrame(
        [
            {"example_id": "e1", "query_perturbation": "none", "question": q},
            {"example_id": "e1", "query_perturbation": "none", "question": q},  # repeated rows count once
            {
                "example_id": "e1",
                "query_perturbation": "typo@0.25#1",
                "question": "wgen dpes thr cznnes fjlm festivak tske plsce",
            },
            {
                "example_id": "e1",
                "query_perturbation": "formal#1",
                "question": "When is the Cannes Film Festival held?",
            },
        ]
    )
    per_query, per_kind = quality_report(scores)
    assert len(per_query) == 3
    pq = per_query.set_index("query_perturbation")
    assert pq.loc["none", "similarity"] == pytest.approx(1.0, abs=1e-5)
    assert pq.loc["typo@0.25#1", "perplexity"] > pq.loc["none", "perplexity"] > 1.0
    assert pq.loc["formal#1", "similarity"] > pq.loc["typo@0.25#1", "similarity"]
    assert list(per_kind["kind"]) == ["none", "formal", "typo@0.25"]
    assert (per_kind["perplexity_original"] == pq.loc["none", "perplexity"]).all()


# --- BERGEN's Recall@k: naver/bergen, utils.py ``eval_retrieval_kilt``, commit
# --- 13fbd28d9cffc2d1a2c8b79ac5959d3f6d51d0b3: the lines that build the run and average (verbatim, trailing spaces aside,
# --- but for the loop variables' source: query_ids, doc_ids, scores below are the function's arguments).
def bergen_eval_retrieval(qrel: dict, query_ids: list, doc_ids: list, scores: list, top_k: int) -> dict:
    from collections import defaultdict

    import pytrec_eval

    # fmt: off
    evaluator = pytrec_eval.RelevanceEvaluator(qrel, {'P_1', f'recall_{top_k}'})
    run = defaultdict(dict)
    for i, q_id in enumerate(query_ids):
        for i, (doc_id, score) in enumerate(zip(doc_ids[i], scores[i])):  # noqa: B007, B020, B905
            # if we have duplicate doc ids (because different passage can map to same wiki page) only write the max scoring passage
            if doc_id not in run[q_id]:  # noqa: SIM114
                run[q_id].update({doc_id: score})
            # if there is a higher scoring passage from the same wiki_doc, update the score (maxP)
            elif score >= run[q_id][doc_id]:
                run[q_id].update({doc_id: score})
    metrics_out = evaluator.evaluate(run)
    p_1 = sum([d["P_1"] for d in metrics_out.values()]) / max(1, len(metrics_out))
    recall = sum([d[f"recall_{top_k}"] for d in metrics_out.values()]) / max(1, len(metrics_out))

    mean_metrics = {'P_1':p_1, f'recall_{top_k}': recall}
    # fmt: on
    return mean_metrics


#: Hand-made runs with ties across the cut-off and queries without hits (issue 42, part 6).
TIE_QRELS = {"t1": {"d1": 1, "d2": 1}, "t2": {"c": 1}, "t3": {"z": 1}, "t4": {"m": 1}}
TIE_RUNS = {
    "bm25": {
        # three documents tie at rank 1-3 across the cut-off k = 2: trec_eval takes d2 and d1 (docid
        # descending), rr the first two ranks (a, d1)
        "t1": hits("a", "d1", "d2", scores=[5.0, 5.0, 5.0]),
        "t2": [],  # no hits: rr scores 0, BERGEN leaves the query out
        "t3": hits("z", "y", scores=[2.0, 3.0]),  # scores that disagree with the ranks
        "t4": hits("b", "m", "a", scores=[1.0, 1.0, 1.0]),
    }
}


def test_bergen_recall_is_pytrec_eval_on_scores_ties_and_empty_queries_as_bergen() -> None:
    df = retrieval_metrics(TIE_RUNS, TIE_QRELS, ks=(1, 2)).set_index("example_id")
    run = TIE_RUNS["bm25"]
    for k in (1, 2):
        official = bergen_eval_retrieval(
            TIE_QRELS,
            list(run),
            [[h.passage_id for h in run[q]] for q in run],
            [[h.score for h in run[q]] for q in run],
            top_k=k,
        )
        assert df[f"bergen_recall@{k}"].mean() == pytest.approx(official[f"recall_{k}"])  # NaN skipped
    # per query: ties across the cut-off and the empty query, each rule under its own name
    assert df.loc["t1", ["recall@2", "bergen_recall@2"]].tolist() == [0.5, 1.0]
    assert df.loc["t2", "recall@2"] == 0.0 and math.isnan(df.loc["t2", "bergen_recall@2"])
    assert df.loc["t3", ["recall@1", "bergen_recall@1"]].tolist() == [1.0, 0.0]
    assert df.loc["t4", ["recall@1", "bergen_recall@1"]].tolist() == [0.0, 1.0]  # m > b > a by docid
    # the two means differ on these runs: rr's counts t2 as 0, BERGEN's leaves it out
    assert df["recall@2"].mean() == pytest.approx((0.5 + 0 + 1 + 1) / 4)
    assert df["bergen_recall@2"].mean() == pytest.approx((1 + 1 + 1) / 3)
