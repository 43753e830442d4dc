"""One tiny job on typo'd queries with the oracle retriever: paired rows, runs, qrels and the analysis."""

from __future__ import annotations

from pathlib import Path

from rr.analysis.query_level import correlations, job_retrieval_metrics, retriever_table
from rr.metrics.query_level import module_deltas
from rr.pipeline import run_job
from rr.retrieval.qrels import read_qrels

from .conftest import compose_config


def test_typo_job_with_oracle(tmp_path: Path) -> None:
    cfg = compose_config(
        [
            "dataset.n=2",
            "corpus.max_passages=400",
            "retriever=[bm25,oracle]",
            "grid.k=[1]",
            "grid.orders=[original]",
            "perturbation/query=typo",
            "perturbation.query.rate=0.25",
            "perturbation.query.n=1",
            "generator.max_new_tokens=4",
        ],
        tmp_path,
    )
    res = run_job(cfg, tmp_path / "job")
    df = res.scores
    # 2 examples x (original + 1 typo variant) x (closed book + bm25 + oracle)
    assert len(df) == 12
    assert sorted(df["query_perturbation"].unique()) == ["none", "typo@0.25#1"]
    params = dict(zip(df["query_perturbation"], df["query_perturbation_params"], strict=True))
    assert params == {"none": "{}", "typo@0.25#1": '{"value": 0.25}'}
    for _ex, rows in df.groupby("example_id"):
        orig = rows.loc[rows["query_perturbation"] == "none", "question"].iloc[0]
        typo = rows.loc[rows["query_perturbation"] == "typo@0.25#1", "question"].iloc[0]
        assert typo != orig and len(typo.split()) == len(orig.split())
    # the oracle shows the gold passage whatever the query
    oracle = df[df["retriever"] == "oracle"]
    qrels = read_qrels(res.output_dir / "qrels.trec")
    assert all(list(r.doc_ids)[0] in qrels[r.example_id] for r in oracle.itertuples())
    metrics = job_retrieval_metrics(res.output_dir, ks=(1,))
    assert len(metrics) == 2 * 2 * 2  # retrievers x examples x variants
    table = retriever_table(metrics, "recall@1")
    assert table.loc["oracle"].tolist() == [100.0, 100.0]
    deltas = module_deltas(df, metrics, retriever="bm25", k=1)
    assert len(deltas) == 2 and (deltas["d_or"].abs() <= 1).all()
    assert set(correlations(deltas)["pair"]) == {"RET", "CB", "OR"}
    assert res.summary.counters.get("typo:unchanged", 0) == 0
