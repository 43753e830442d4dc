"""The papers' claims judged only where they speak (issue 42, part 5): each claim states the paper's scope, a run
outside it is never said to contradict the paper, a claim never rests on a metric the report calls degenerate,
and every quote is verbatim (in the shipped excerpt of the paper, and the excerpt in the paper's text)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rr.jobfolder import JobSummary, ModelRecord
from rr.metrics import Estimate
from rr.metrics.robustness import NOTE_NDR_TRIVIAL, NOTE_ROR_ONE_ORDER
from rr.papers import (
    ELLIPSIS,
    Claim,
    is_api_name,
    model_identities,
    paper_claims,
    paper_excerpts,
    paper_values,
    quote_in,
)
from rr.reporting.loading import JobInfo, ReportContext
from rr.reporting.paper_claims import (
    DEGENERATE,
    NOT_EVALUABLE,
    OUTSIDE_SCOPE,
    _bound,
    evaluate_claims,
)
from rr.reporting.paper_match import CONTRADICTED, HOLDS, INSIDE, OUTSIDE, UNDECIDED, _verdict, estimator
from tests.conftest import compose_config
from tests.test_paper_beside import PAPER_FILES, PAPERS

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct"


def _claim(claim_id: str) -> Claim:
    return next(c for c in paper_claims() if c.id == claim_id)


# ----------------------------------------------------------------------------- the data


def test_every_quote_is_verbatim_in_its_papers_shipped_excerpt():
    for claim in paper_claims():
        excerpts = paper_excerpts(claim.paper)
        assert excerpts, f"rr/papers/excerpts/{claim.paper}.txt is missing"
        assert any(quote_in(claim.quote, e) for e in excerpts), (claim.id, claim.quote)
    # hand-worked: whitespace and a word broken at a line end are normalised; nothing else is
    assert quote_in("retrieval robustness", "re-\ntrieval  robustness")
    assert not quote_in("retrieval robustnes.", "retrieval robustness")
    assert quote_in(f"only 45% and {ELLIPSIS} 43.33%", "only 45% and [Table 3] 43.33%")
    assert not quote_in(f"43.33% {ELLIPSIS} only 45%", "only 45% and 43.33%")  # parts in order


@pytest.mark.skipif(not PAPERS.exists(), reason="the papers' text is not here (set RR_PAPERS_TEXT)")
def test_every_excerpt_is_in_its_papers_text():
    for paper, name in PAPER_FILES.items():
        text = (PAPERS / name).read_text()
        for excerpt in paper_excerpts(paper):
            assert quote_in(excerpt, text, spaces=False), (paper, excerpt[:120])


def test_every_claim_states_its_scope_and_is_evaluable_or_says_why():
    claims = paper_claims()
    assert {c.paper for c in claims} == set(PAPER_FILES)  # a claims file for every paper
    for c in claims:
        assert c.scope_text, c.id
        if c.evaluable:
            for m in (c.metric, c.metric_a or c.metric, c.metric_b or c.metric):
                assert estimator(m) is not None, (c.id, m)
        else:
            assert c.why_not, c.id
    ids = {c.id for c in claims}
    # the headline claims issue 42 found missing
    assert {
        "cao2025.smaller_llama_more_robust",
        "cao2025.inverse_scaling_from_ndr",
        "cao2025.perfect_ndr_gain_12",
        "cao2025.reversed_order_preferred",
        "rgb2024.integration_is_hard_en",
        "rgb2024.counterfactual_errors_not_identified",
        "sure2025.spurious_features_statistically_confirmed",
        "query_level2025.dense_robust_to_redundancy",
        "query_level2025.sparse_robust_to_typos",
        "query_level2025.typos_25_worst",
        "rare2025.single_hop_above_multi_hop",
        "rare2025.finance_best_economics_worst",
    } <= ids
    rej = _claim("rgb2024.rejection_is_rare_en")  # 45% is Table 3's highest Rej* (LLM-judged), not a 0.5
    assert (rej.metric, rej.threshold) == ("rgb_rejection_rate_llm", 0.45)
    assert _claim("rgb2024.counterfactual_misleads").scope_condition == "rgb_closed_book_accuracy>0.7"


def test_a_claims_scope_names_what_its_papers_experiment_config_writes():
    """CONVENTIONS 17: the retrievers, k grid and orders of a claim's scope are the paper's experiment config's,
    and its model ids are models the paper's values name."""
    for paper in ("cao2025", "rgb2024"):
        cfg = compose_config([f"experiment={paper}"])
        written = {
            "retriever": set(cfg.retriever),
            "k": {str(k) for k in cfg.grid.k},
            "order": set(cfg.grid.orders),
        }
        model_ids = set(paper_values().query("paper == @paper")["model_ids"].str.split(";").explode())
        for c in paper_claims():
            if c.paper != paper:
                continue
            for key, want in c.scope_setting.items():
                if key in written:
                    assert set(want.split("+")) <= written[key], (c.id, key, want)
            assert set(c.scope_models) <= model_ids, c.id
    datasets = {p.stem for p in (Path(__file__).resolve().parents[1] / "conf" / "dataset").glob("*.yaml")}
    missing = {d for c in paper_claims() if c.evaluable for d in c.scope_datasets} - datasets
    # RGB's Chinese files (configs of issue 42 part 1) and RARE-Set (no loader: its values say so)
    assert missing <= {"rgb_zh", "rgb_zh_int", "rgb_zh_fact", "rare_set"}


# ----------------------------------------------------------------------------- planted runs


def _cao_rows(
    job: str,
    strategy: str,
    ks: list[int],
    orders: list[str],
    closed: float,
    rag: float,
    n: int = 12,
    seed: int = 0,
    dataset: str = "nq_open",
) -> pd.DataFrame:
    """One system's score rows on ``dataset``: closed-book score ``closed`` for every question, each RAG cell
    correct with probability ``rag`` (per question and cell, seeded)."""
    rng = np.random.default_rng(seed)
    rows = []
    prefix = "q" if dataset == "nq_open" else f"{dataset}-q"  # another dataset's questions are others
    for e in range(n):
        rows.append((f"{prefix}{e}", 0, "none", "none", closed))
        for r in ("bm25", "bge_large"):
            for k in ks:
                for o in orders:
                    rows.append((f"{prefix}{e}", k, o, r, float(rng.random() < rag)))
    df = pd.DataFrame(rows, columns=["example_id", "k", "order", "retriever", "score"])
    return df.assign(job_id=job, strategy=strategy, dataset=dataset, generator=job, doc_perturbation="none")


def _record(model: str) -> ModelRecord:
    """What a run of ``model`` records: an API alias (``o3-mini``) with the paper's snapshot it was answered by."""
    snapshots = model_identities(model) - {model}
    if is_api_name(model) and snapshots:
        return ModelRecord(model, "unversioned", {"reported_model": min(snapshots)})
    return ModelRecord(model)


def _ctx(models: dict[str, str]) -> ReportContext:
    jobs = [
        JobInfo(j, Path(j), 1, JobSummary(name="cao2025", model=_record(m)), None) for j, m in models.items()
    ]
    return ReportContext(jobs=jobs, n_resamples=200)


PAPER_K, PAPER_ORDERS = [5, 10, 25, 50, 75, 100], ["original", "reversed", "shuffled"]
POOLED = ("nq_open", "hotpot_qa", "asqa")


def test_s2a_no_gain_on_a_degenerate_run_is_degenerate_not_holds():
    """The issue's demo: closed-book accuracy 0 and identical answers with S2A and vanilla gave "holds" with a
    difference of 0.000 [0.000, 0.000]; NDR is 1 by construction there, so robustness rests on nothing."""
    vanilla = _cao_rows("j", "vanilla", [1, 2, 3], PAPER_ORDERS, closed=0.0, rag=0.0)
    s2a = vanilla.assign(strategy="s2a")
    scores = pd.concat([vanilla, s2a], ignore_index=True)
    (row,) = evaluate_claims(scores, _ctx({"j": LLAMA_70B}), (_claim("cao2025.s2a_no_gain"),)).to_dict(
        "records"
    )
    assert row["diff"] == 0.0  # before: verdict "holds" on this
    assert row["verdict"].startswith(
        f"{OUTSIDE_SCOPE} (dataset nq_open (the paper pools nq_open, hotpot_qa, asqa); "
        "k 1, 2, 3 (paper: 5, 10, 25, 50, 75, 100)); on this run: "
    )
    assert f"{DEGENERATE}: a (strategy=s2a) and b (strategy=vanilla): {NOTE_NDR_TRIVIAL}" in row["verdict"]
    assert HOLDS not in row["verdict"].replace("on this run: degenerate", "")


def test_ror_with_one_order_is_degenerate_and_another_model_at_k_1_3_is_outside_scope():
    one_order = _cao_rows("j", "vanilla", PAPER_K, ["original"], closed=0.5, rag=0.7)
    (row,) = evaluate_claims(one_order, _ctx({"j": LLAMA_8B}), (_claim("cao2025.ror_above_80"),)).to_dict(
        "records"
    )
    assert row["a"] == 1.0  # 1 by construction: no spread over one order
    assert row["verdict"].endswith(f"on this run: {DEGENERATE}: {NOTE_ROR_ONE_ORDER}")
    assert "order original (paper: original, reversed, shuffled)" in row["verdict"]
    # docs/reproduction.md's case: another model at k 1-3 whose ROR is low: never "contradicted"
    small = _cao_rows("s", "vanilla", [1, 2, 3], PAPER_ORDERS, closed=0.5, rag=0.5)
    (row,) = evaluate_claims(
        small, _ctx({"s": "rr-simulated-reader"}), (_claim("cao2025.ror_above_80"),)
    ).to_dict("records")
    assert row["a_ci_high"] < 0.8
    assert row["verdict"] == (
        f"{OUTSIDE_SCOPE} (model rr-simulated-reader, not one the paper states it of; dataset nq_open (the "
        "paper pools nq_open, hotpot_qa, asqa); k 1, 2, 3 (paper: 5, 10, 25, 50, 75, 100)); on this run: "
        "does not hold"
    )


def test_a_paper_model_on_the_papers_grid_gets_a_plain_verdict():
    good = _cao_rows("j", "vanilla", PAPER_K, PAPER_ORDERS, closed=0.0, rag=1.0, n=16)
    good.loc[good["example_id"].isin(["q0", "q1"]) & (good["k"] == 0), "score"] = 1.0  # closed-book 2/16
    pooled = pd.concat(
        [good, *(_cao_rows("j", "vanilla", PAPER_K, PAPER_ORDERS, 0.0, 1.0, 16, 0, d) for d in POOLED[1:])],
        ignore_index=True,
    )
    claims = evaluate_claims(pooled, _ctx({"j": LLAMA_8B}), (_claim("cao2025.ndr_above_80"),))
    (row,) = claims.to_dict("records")
    assert row["a"] == 1.0 and row["verdict"] == HOLDS and row["dataset"] == "+".join(POOLED)
    assert row["test"].endswith("pooled over nq_open, hotpot_qa, asqa, as the paper pools them")


def test_a_claim_the_paper_pools_is_judged_pooled_and_one_dataset_alone_is_outside_its_scope():
    """Cao pools NQ, HotpotQA and ASQA: rr judged the pooled claims per dataset and called each in scope.
    Pooled, the three datasets give one row on all their questions; NQ alone is outside the paper's scope."""
    claim = _claim("cao2025.ndr_above_80")
    parts = {
        d: _cao_rows("j", "vanilla", PAPER_K, PAPER_ORDERS, closed=1.0, rag=rag, n=12, dataset=d)
        for d, rag in zip(POOLED, (0.95, 0.9, 0.6), strict=True)
    }
    pooled = pd.concat(parts.values(), ignore_index=True)
    (row,) = evaluate_claims(pooled, _ctx({"j": LLAMA_8B}), (claim,)).to_dict("records")
    assert row["dataset"] == "nq_open+hotpot_qa+asqa"
    # NDR over the 36 questions: each question's share of k > 0 cells scoring at least its closed-book 1.0
    rag = pooled[pooled["k"] > 0]
    assert row["a"] == pytest.approx(rag.groupby("example_id")["score"].mean().mean())
    assert not row["verdict"].startswith(OUTSIDE_SCOPE)
    (row,) = evaluate_claims(parts["nq_open"], _ctx({"j": LLAMA_8B}), (claim,)).to_dict("records")
    assert row["dataset"] == "nq_open"
    assert row["verdict"].startswith(
        f"{OUTSIDE_SCOPE} (dataset nq_open (the paper pools nq_open, hotpot_qa, asqa)); on this run: "
    )


def test_counterfactual_claim_only_for_models_the_paper_keeps():
    """RGB Table 7 keeps the models with closed-book accuracy over 70%: a paper model at 50% is outside it."""
    rows = []
    for e in range(20):
        base = {
            "job_id": "j",
            "example_id": f"q{e}",
            "dataset": "rgb_en_fact",
            "strategy": "rgb",
            "order": "original",
        }
        rows.append({**base, "k": 0, "doc_perturbation": "none", "retriever": "none", "score": float(e < 10)})
        rows.append(
            {**base, "k": 20, "doc_perturbation": "counterfactual", "retriever": "bm25", "score": 0.0}
        )
    scores = pd.DataFrame(rows)
    ctx = _ctx({"j": "gpt-3.5-turbo"})
    (row,) = evaluate_claims(scores, ctx, (_claim("rgb2024.counterfactual_misleads"),)).to_dict("records")
    assert (row["a"], row["b"]) == (0.5, 0.0)
    assert row["verdict"] == (
        f"{OUTSIDE_SCOPE} (rgb_closed_book_accuracy 0.50 (paper: models with rgb_closed_book_accuracy > 0.7)); "
        "on this run: holds"
    )
    scores.loc[scores["k"] == 0, "score"] = [float(e < 16) for e in range(20)]  # 80%: inside the scope
    (row,) = evaluate_claims(scores, ctx, (_claim("rgb2024.counterfactual_misleads"),)).to_dict("records")
    assert row["verdict"] == HOLDS


def test_a_claim_rr_cannot_evaluate_says_why():
    claim = _claim("rare2025.single_hop_above_multi_hop")
    (row,) = evaluate_claims(
        _cao_rows("j", "vanilla", [1], ["original"], 0.5, 0.5), _ctx({"j": LLAMA_8B}), (claim,)
    ).to_dict("records")
    assert row["verdict"] == f"{NOT_EVALUABLE}: {claim.why_not}" and "no loader" in row["verdict"]


def test_perfect_ndr_gain_is_approximately_the_printed_value_within_its_tolerance():
    """Hand-worked: 40 questions right closed-book, 20 of them wrong in every RAG cell, the rest right: the
    perfect-NDR gain is 20/40 = 0.5, far above 12% +- 0.02. Closed-book accuracy 0: the gain is 0 by
    construction (NDR degenerate), not a result."""
    claim = _claim("cao2025.perfect_ndr_gain_12")
    for lost, closed in ((20, 1.0), (0, 0.0)):
        parts = [_cao_rows("j", "vanilla", PAPER_K, PAPER_ORDERS, closed, 1.0, 40, 0, d) for d in POOLED]
        for part in parts:  # each dataset's first `lost` questions
            first = part["example_id"].drop_duplicates().iloc[:lost]
            part.loc[part["example_id"].isin(first) & (part["k"] > 0), "score"] = 0.0
        rows = pd.concat(parts, ignore_index=True)  # the paper pools the three datasets
        (row,) = evaluate_claims(rows, _ctx({"j": "o3-mini"}), (claim,)).to_dict("records")
        assert row["a"] == pytest.approx(lost / 40)
        want = CONTRADICTED if closed else f"{DEGENERATE}: {NOTE_NDR_TRIVIAL}"
        assert row["verdict"] == want, (lost, closed, row)


def test_approximately_has_a_stated_tolerance():
    """Cao's "approximately 14%" (NDR ~ 0.86): a value printed as approximate counts as matched when rr's
    interval reaches within APPROX_TOLERANCE (0.02) of it; an exact value needs the interval itself."""
    est = Estimate(0.83, 0.825, 0.835, 400)
    assert _verdict(0.85, "~", est) == INSIDE  # 0.015 above the interval (before: outside)
    assert _verdict(0.86, "~", est) == OUTSIDE  # 0.025 above
    assert _verdict(0.85, "=", est) == OUTSIDE
    assert _verdict(0.81, "~", est) == INSIDE and _verdict(0.80, "~", est) == OUTSIDE


def test_a_value_the_interval_cannot_decide_at_this_n_is_not_decided():
    """Issue 49: at 4 questions an interval of [0, 0.49] read "inside the interval" beside any value in it;
    it cannot tell a value within the claims' tolerance (0.02) from one outside, so it decides nothing."""
    wide = Estimate(0.25, 0.0, 0.49, 4)
    assert _verdict(0.3, "=", wide) == UNDECIDED and _verdict(0.3, "~", wide) == UNDECIDED
    assert _verdict(0.55, "=", wide) == OUTSIDE  # outside the interval is decided at any n
    assert _verdict(0.3, "=", Estimate(0.31, 0.29, 0.33, 2000)) == INSIDE  # the band 0.3 +- 0.02 holds it
    assert _verdict(0.3, "=", Estimate(0.31, 0.28, 0.345, 900)) == UNDECIDED  # 0.065 wide: wider than 0.04


def test_a_bound_value_is_inside_only_where_the_whole_interval_supports_it():
    """Cao's "higher than 80%" beside NDR [0.74, 0.81] read "inside the interval" (its top exceeds 0.8)."""
    assert _verdict(0.8, ">", Estimate(0.78, 0.74, 0.81, 500)) == UNDECIDED
    assert _verdict(0.8, ">", Estimate(0.84, 0.81, 0.87, 500)) == INSIDE
    assert _verdict(0.8, ">", Estimate(0.75, 0.72, 0.79, 500)) == OUTSIDE
    assert _verdict(0.45, "<", Estimate(0.43, 0.40, 0.46, 500)) == UNDECIDED
    assert _verdict(0.45, "<", Estimate(0.40, 0.37, 0.44, 500)) == INSIDE
    assert _verdict(0.45, "<", Estimate(0.50, 0.46, 0.54, 500)) == OUTSIDE


@pytest.mark.parametrize(
    "claim_id",
    [
        "cao2025.ownknow_raises_robustness",
        "cao2025.s2a_no_gain",
        "cao2025.reversed_order_preferred",
        "cao2025.reversed_order_beats_shuffled",
    ],
)
def test_a_model_absent_from_the_figures_legend_is_outside_the_claims_scope(claim_id):
    """Figures 7 and 9's legends have 9 of the 11 models: Llama-3.2-1B and Llama-3.1-8B are in neither, so
    the OwnKnow, S2A and order claims are not stated of them (before: in scope, a plain verdict)."""
    claim = _claim(claim_id)
    rows = _cao_rows("j", "vanilla", PAPER_K, PAPER_ORDERS, closed=0.5, rag=0.7, n=8)
    scores = pd.concat([rows, rows.assign(strategy=claim.a.get("strategy", "vanilla"))], ignore_index=True)
    scores = scores.drop_duplicates(ignore_index=True)
    for model in (LLAMA_8B, "meta-llama/Llama-3.2-1B-Instruct"):
        assert model not in claim.scope_models
        (row,) = evaluate_claims(scores, _ctx({"j": model}), (claim,)).to_dict("records")
        assert row["verdict"].startswith(f"{OUTSIDE_SCOPE} (model {model}, not one the paper states it of")
    assert len(claim.scope_models) == (9 if "Figure 9" in claim.location else 7)  # 7: less GPT-4o, o3-mini


@pytest.mark.parametrize(
    "claim_id",
    [
        "rgb2024.rejection_is_rare_en",
        "rgb2024.rejection_is_rare_zh",
        "rgb2024.integration_is_hard_en",
        "rgb2024.integration_is_hard_zh",
    ],
)
def test_a_bound_at_the_papers_own_maximum_can_hold_for_a_faithful_replication(claim_id):
    """RGB's "the highest ... only 45%" is the paper's own maximum (ChatGPT's Rej* 45.00): a strict "< 0.45"
    could never hold for a replication of ChatGPT. An interval about the maximum, within the claim's
    tolerance, holds; one clear of the tolerance contradicts; one across its edge decides nothing."""
    claim = _claim(claim_id)
    t, tol = claim.threshold, claim.tolerance
    assert _bound(claim, Estimate(t, t - 0.01, t + 0.01, 3000)) == HOLDS  # before: not decided
    assert _bound(claim, Estimate(t + tol + 0.03, t + tol + 0.01, t + tol + 0.05, 3000)) == CONTRADICTED
    assert _bound(claim, Estimate(t, t - 0.05, t + 0.05, 300)) == UNDECIDED
    assert _bound(claim, Estimate(t - 0.2, t - 0.25, t - 0.15, 300)) == HOLDS


def test_errors_flagged_far_more_often_than_table_7_contradict_its_claim():
    """Table 7's ED* is 3-7%: "hard for LLMs to identify ... factual errors" held beside an ED* of 0.6 (it
    compared ED* with closed-book accuracy only). It is a bound at the table's own 7% now."""
    rows = []
    for e in range(40):
        base = {"job_id": "j", "example_id": f"q{e}", "dataset": "rgb_en_fact", "strategy": "rgb"}
        base["order"] = "original"
        rows.append({**base, "k": 0, "doc_perturbation": "none", "retriever": "none", "score": float(e < 36)})
        rows.append(
            {
                **base,
                **{"k": 20, "doc_perturbation": "counterfactual", "retriever": "bm25", "score": 0.0},
                "error_detected": False,
                "error_detected_llm": e < 24,  # ED* 0.6
            }
        )
    scores = pd.DataFrame(rows)
    claim = _claim("rgb2024.counterfactual_errors_not_identified")
    (row,) = evaluate_claims(scores, _ctx({"j": "gpt-3.5-turbo"}), (claim,)).to_dict("records")
    assert row["a"] == pytest.approx(0.6) and row["verdict"] == CONTRADICTED  # before: holds
    scores["error_detected_llm"] = [False if r["k"] == 0 else r["example_id"] in ("q0", "q1") for r in rows]
    (row,) = evaluate_claims(scores, _ctx({"j": "gpt-3.5-turbo"}), (claim,)).to_dict("records")
    assert row["a"] == pytest.approx(0.05) and row["verdict"] != CONTRADICTED
