"""SURE §2: oracle score (eq. 1) against a direct logits computation, oracle reranking, the
feature extractors on fixed texts, and the K-S wrapper against scipy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from rr.analysis.sure import (
    dependency_tree_depth,
    distinct_1,
    document_features,
    flesch_reading_ease,
    ks_table,
    ks_test,
    oracle_rerank,
    oracle_scores,
    plot_feature_distributions,
    significance_stars,
)
from rr.data.base import Corpus
from rr.generation.hf import HFGenerator
from rr.perturbations.sentences import spacy_pipeline
from rr.records import Example, Hit, Passage


@pytest.fixture(scope="module")
def smol() -> HFGenerator:
    return HFGenerator(batch_size=2)


def direct_logprob(gen: HFGenerator, prompt: str, continuation: str) -> float:
    """Token by token: log p(y_t | prompt, y_<t) from the last logits of an unpadded forward."""
    tok, model = gen.tokenizer, gen.load()
    ctx = tok(prompt, add_special_tokens=False)["input_ids"]
    cont = tok(continuation, add_special_tokens=False)["input_ids"]
    total = 0.0
    for t, y in enumerate(cont):
        ids = torch.tensor([ctx + cont[:t]])
        with torch.inference_mode():
            logits = model(input_ids=ids).logits[0, -1]
        total += float(torch.log_softmax(logits.double(), -1)[y])
    return total


def test_score_continuations_equals_direct_computation(smol: HFGenerator) -> None:
    prompts = ["The capital of France is", "Question: Where was Marie Curie born?\nAnswer:"]
    conts = [" Paris", " Warsaw, Poland"]
    # batch of 2 with right padding (different lengths) vs one forward per token, unpadded
    got = smol.score_continuations(prompts, conts)
    want = [direct_logprob(smol, p, c) for p, c in zip(prompts, conts, strict=True)]
    assert got == pytest.approx(want, abs=1e-3)
    assert all(x < 0 for x in got)
    # eq. 1 averaged over answer variants
    avg = oracle_scores(smol, [prompts[1]], [[" Warsaw, Poland", " Warsaw"]])
    assert avg[0] == pytest.approx((want[1] + direct_logprob(smol, prompts[1], " Warsaw")) / 2, abs=1e-3)
    with pytest.raises(ValueError, match="empty continuation"):
        smol.score_continuations(["x"], [""])
    with pytest.raises(ValueError, match="no non-empty gold answer"):
        oracle_scores(smol, ["x"], [[" "]])


def test_oracle_rerank_orders_by_oracle_score(smol: HFGenerator) -> None:
    corpus = Corpus(
        [
            Passage("d1", "Bananas are yellow fruit grown in the tropics.", "Banana"),
            Passage("d2", "Marie Curie was born in Warsaw, the capital of Poland.", "Marie Curie"),
        ],
        name="t",
    )
    ex = Example("q1", "Where was Marie Curie born?", ["Warsaw"])
    runs = {"q1": [Hit("d1", 1, 9.0), Hit("d2", 2, 8.0)]}
    out = oracle_rerank(smol, [ex], runs, corpus)["q1"]
    assert [h.rank for h in out] == [1, 2] and out[0].score >= out[1].score
    assert out[0].passage_id == "d2"  # the document holding the answer makes it likelier
    golden = oracle_rerank(smol, [ex], runs, corpus, golden_only=True)["q1"]
    assert [h.passage_id for h in golden] == ["d2"]


TEXT = "The cat sat on the mat. It was happy."


def test_feature_extractors_on_fixed_texts(smol: HFGenerator) -> None:
    # textstat 0.7.8: 206.835 - 1.015 * (9 words / 2 sentences) - 84.6 * (10 syllables / 9 words)
    assert flesch_reading_ease(TEXT) == pytest.approx(206.835 - 1.015 * 4.5 - 84.6 * 10 / 9, abs=0.01)
    assert distinct_1(["The", "cat", "the", "mat"]) == 0.75
    assert np.isnan(distinct_1([]))
    # "sat" is the root; cat <- The, on <- mat <- the: depth 4 (sat > on > mat > the)
    assert dependency_tree_depth(spacy_pipeline()(TEXT)) == 4
    assert dependency_tree_depth(spacy_pipeline()("")) == 0
    feats = document_features([TEXT], lm=smol)
    assert list(feats.columns) == ["flesch", "distinct_1", "dtd", "ppl", "token_length"]
    row = feats.iloc[0]
    assert row["distinct_1"] == pytest.approx(8 / 9)  # 9 words, "the" twice (case-folded)
    assert row["dtd"] == 4 and row["token_length"] == smol.count_tokens([TEXT])[0]
    # perplexity from one unpadded forward pass over BOS + text
    ids = smol.tokenizer(smol.tokenizer.bos_token + TEXT, add_special_tokens=False)["input_ids"]
    with torch.inference_mode():
        logp = torch.log_softmax(smol.load()(input_ids=torch.tensor([ids])).logits[0].double(), -1)
    nll = -sum(float(logp[t, ids[t + 1]]) for t in range(len(ids) - 1))
    assert row["ppl"] == pytest.approx(np.exp(nll / (len(ids) - 1)), rel=1e-3)


def test_ks_wrapper_equals_scipy() -> None:
    a = [0.1, 0.4, 0.35, 0.8, 0.9, 0.05, 0.5]
    b = [0.6, 0.7, 0.75, 0.95, 0.85, 0.65]
    r = ks_test(a, b + [float("nan")])
    ref = stats.ks_2samp(a, b)
    assert (r.statistic, r.pvalue, r.n1, r.n2) == (ref.statistic, ref.pvalue, 7, 6)
    assert [significance_stars(p) for p in (0.0005, 0.001, 0.009, 0.049, 0.05)] == [
        "***",
        "**",
        "**",
        "*",
        "",
    ]
    with pytest.raises(ValueError, match="non-empty samples"):
        ks_test([], [1.0])


def test_ks_table_layout(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    rows = []
    for g, shift in (("experimental", 1.0), ("control", 0.0)):
        for s in ("a", "b"):
            for v in rng.normal(shift if s == "a" else 0.0, 1.0, 60):
                rows.append({"group": g, "set": s, "flesch": v, "ppl": float("nan")})
    df = pd.DataFrame(rows)
    table = ks_table(df)
    assert list(table.index) == ["Flesch score"]  # all-NaN features are skipped
    assert list(table.columns.get_level_values(0).unique()) == ["experimental", "control"]
    exp = df[df["group"] == "experimental"]
    ref = stats.ks_2samp(exp.loc[exp["set"] == "a", "flesch"], exp.loc[exp["set"] == "b", "flesch"])
    assert table.loc["Flesch score", ("experimental", "statistic")] == ref.statistic
    assert table.loc["Flesch score", ("experimental", "stars")] == "***"
    assert table.loc["Flesch score", ("control", "n")] == 60
    out = plot_feature_distributions(df, tmp_path / "fig6.png")
    assert out.exists() and out.stat().st_size > 1000
