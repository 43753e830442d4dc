"""The papers' shipped values and claims (``rr/papers``) and the ``paper_beside`` report section: the
data as the papers print it, and, on jobs of the simulated reader (whose true values are known), a paper
value planted at the reader's value is *inside*, one planted away is *outside*, a value of another model
or setting is *no matching setting*, and a claim the planted reader makes false is *contradicted*."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rr.generation.simulated import ReaderParams, noise_curve
from rr.papers import VALUE_COLUMNS, Claim, paper_claims, paper_values, parse_setting
from rr.pipeline import run_job
from rr.reporting import build_report
from rr.reporting.core import ReportContext, load_jobs
from rr.reporting.paper_beside import (
    CONTRADICTED,
    HOLDS,
    INSIDE,
    METRICS,
    NO_MATCH,
    OUTSIDE,
    UNDECIDED,
    compare_values,
    evaluate_claims,
    select,
)
from tests.conftest import compose_config

PAPERS = Path("/work/shared/papers")
SIM = ["generator=simulated", "dataset=synthetic", "corpus=synthetic", "retriever=[bm25]"]
#: A reader whose RGB accuracy is well inside (0, 1) at every noise ratio (as in test_simulated.py).
WEAK = {"position_first": 0.5, "position_middle": 0.3, "position_last": 0.4}
SIM_ID = "rr-simulated-reader"


# ----------------------------------------------------------------------------- the data


def test_every_value_and_claim_names_a_metric_rr_computes_and_a_setting_it_reads():
    values = paper_values()
    assert tuple(values.columns) == VALUE_COLUMNS
    assert set(values["metric"]) <= set(METRICS)
    assert values["model_ids"].str.len().gt(0).all() and values["rr_datasets"].str.len().gt(0).all()
    for s in values["setting"]:
        assert parse_setting(s)
    assert values["value"].between(0, 1).all()
    for claim in paper_claims():
        assert {claim.metric, claim.metric_a or claim.metric, claim.metric_b or claim.metric} <= set(METRICS)


def test_rgb_tables_are_shipped_whole_and_as_printed():
    rgb = paper_values().query("paper == 'rgb2024'")
    # 6 models x 10 ratios/languages, 6 x 4, 6 x 6, 3 x 5: the tables' row and column counts
    assert rgb.groupby("location").size().to_dict() == {
        "Table 1": 60,
        "Table 3": 24,
        "Table 5": 36,
        "Table 7": 15,
    }
    assert (rgb.groupby(["location", "model"]).size().loc["Table 1"] == 10).all()

    def printed(location: str, model: str, dataset: str, metric: str, setting: str) -> str:
        row = rgb[
            (rgb["location"] == location)
            & (rgb["model"] == model)
            & (rgb["rr_datasets"] == dataset)
            & (rgb["metric"] == metric)
            & (rgb["setting"].str.contains(setting, regex=False))
        ]
        assert len(row) == 1, (location, model, dataset, metric, setting)
        return str(row["printed"].iloc[0])

    # spot checks against the paper's text, one per table (corners and the oddly printed ones)
    assert printed("Table 1", "ChatGPT", "rgb_en", "rgb_accuracy", "noise_ratio=0;") == "96.33"
    assert printed("Table 1", "BELLE-7B-2M", "rgb_zh", "rgb_accuracy", "noise_ratio=0.8;") == "67.68"
    assert printed("Table 3", "Vicuna-7B-v1.3", "rgb_zh", "rgb_rej", "noise_ratio=1") == "3.37"
    assert printed("Table 3", "Qwen-7B-Chat", "rgb_en", "rgb_rej_llm", "noise_ratio=1") == "35.67"
    assert printed("Table 5", "Vicuna-7B-v1.3", "rgb_en_int", "rgb_accuracy", "noise_ratio=0;") == "60"
    assert printed("Table 7", "ChatGPT", "rgb_en_fact", "rgb_cr_llm", "counterfactual") == "57.14"
    assert (
        printed("Table 7", "Qwen-7B-Chat", "rgb_zh_fact", "rgb_closed_book_accuracy", "counterfactual")
        == "77"
    )
    if (PAPERS / "004_a0495871f9ef26a6.txt").exists():  # every printed number is in the paper's text
        text = (PAPERS / "004_a0495871f9ef26a6.txt").read_text()
        assert all(p in text for p in rgb["printed"])


def test_cao_values_are_the_bounds_its_text_states():
    cao = paper_values().query("paper == 'cao2025'")
    bounds = cao[cao["printed"] == "higher than 80%"]
    assert len(bounds) == 33 and set(bounds["metric"]) == {"ndr", "rsr", "ror"}  # 11 models x 3
    assert (bounds["relation"] == ">").all() and (bounds["value"] == 0.8).all()
    assert set(cao.loc[cao["printed"] == "surpassing 90%", "model"]) == {"GPT-4o", "o3-mini"}


def test_select_matches_recorded_settings_only():
    rows = pd.DataFrame(
        {
            "job_id": ["j1"] * 4 + ["j2"] * 2,
            "example_id": ["a", "a", "b", "b", "a", "a"],
            "k": [0, 5, 0, 5, 0, 5],
            "strategy": ["rgb"] * 6,
            "doc_perturbation": [
                "none",
                "noise_ratio@0.4",
                "none",
                "noise_ratio@0.4",
                "none",
                "noise_ratio@0.6",
            ],
            "retriever": ["none", "bm25", "none", "bm25", "none", "dense"],
        }
    )
    got = select(rows, {"noise_ratio": "0.4"})
    assert got["job_id"].tolist() == ["j1"] * 4  # the job's k = 0 rows come with its matching rows
    assert select(rows, {"noise_ratio": "0.2"}).empty
    assert select(rows, {"k": "0"})["k"].tolist() == [0, 0, 0]
    assert select(rows, {"n_docs_given": "5"}).empty  # a column the run does not have: no match
    assert select(rows, {"retriever": "bm25+dense"})["job_id"].nunique() == 2
    assert select(
        rows[rows["job_id"] == "j1"], {"retriever": "bm25+dense"}
    ).empty  # the pooled grid needs both


# ----------------------------------------------------------------------------- on the simulated reader


def _rgb_job(root: Path, ratio: float, params: dict[str, float], n: int = 60) -> None:
    over = [
        *SIM,
        "experiment=rgb2024",
        f"dataset.n={n}",
        "corpus.max_passages=null",
        f"perturbation.doc.ratio={ratio}",
        "grid.k=[20]",
        *[f"generator.{key}={value}" for key, value in params.items()],
    ]
    tag = "-".join(f"{k}{v}" for k, v in params.items())
    run_job(compose_config(over, root), root / "jobs" / f"r{ratio}-{tag}")


def _value(
    setting: str, value: float, model_ids: str = SIM_ID, dataset: str = "synthetic"
) -> dict[str, object]:
    return {
        "paper": "planted",
        "location": "test",
        "model": "simulated reader",
        "model_ids": model_ids,
        "dataset": dataset,
        "rr_datasets": dataset,
        "metric": "rgb_accuracy",
        "setting": setting,
        "printed": f"{100 * value:.2f}",
        "value": value,
        "relation": "=",
        "note": "",
    }


@pytest.fixture(scope="module")
def rgb_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, ReportContext, float]:
    root = tmp_path_factory.mktemp("rgb")
    _rgb_job(root, 0.4, WEAK)
    scores, ctx = load_jobs(root / "jobs")
    ctx.n_resamples = 500
    truth = noise_curve(ReaderParams(**WEAK), [0.4])[0.4]
    return scores, ctx, truth


def test_a_value_planted_at_the_readers_is_inside_and_one_planted_away_is_outside(rgb_run):
    scores, ctx, truth = rgb_run
    setting = "strategy=rgb;noise_ratio=0.4;n_docs_given=5"
    away = truth - 0.35 if truth > 0.5 else truth + 0.35
    got = compare_values(scores, ctx, pd.DataFrame([_value(setting, truth), _value(setting, away)]))
    assert got["verdict"].tolist() == [INSIDE, OUTSIDE]
    rag = scores[scores["k"] > 0]
    assert got["rr"].iloc[0] == pytest.approx((rag["score"] == 1).mean())
    assert (got["rr_ci_low"] < got["rr"]).all() and (got["rr"] < got["rr_ci_high"]).all()
    assert got["n_examples"].tolist() == [60, 60]


def test_another_model_or_setting_is_no_matching_setting(rgb_run):
    scores, ctx, truth = rgb_run
    other = [
        _value("strategy=rgb;noise_ratio=0.6;n_docs_given=5", truth),  # another noise ratio
        _value("strategy=rgb;noise_ratio=0.4;n_docs_given=10", truth),  # another number of documents
        _value("strategy=vanilla;noise_ratio=0.4", truth),  # another strategy
        _value("strategy=rgb;noise_ratio=0.4", truth, model_ids="rr-simulated"),  # a similar model name
        _value("strategy=rgb;noise_ratio=0.4", truth, dataset="rgb_en"),  # another dataset
    ]
    assert compare_values(scores, ctx, pd.DataFrame(other))["verdict"].tolist() == [NO_MATCH] * 5
    shipped = compare_values(scores, ctx)  # no paper's model is the simulated reader
    assert (shipped["verdict"] == NO_MATCH).all() and len(shipped) == len(paper_values())


def test_report_section_lays_the_paper_beside_the_run(rgb_run, tmp_path):
    scores, ctx, _ = rgb_run
    report = build_report(
        [j.path for j in ctx.jobs], tmp_path / "report", n_resamples=100, only=["paper_beside"]
    )
    (outcome,) = report.outcomes
    assert outcome.skipped is None and outcome.error is None
    values = pd.read_csv(tmp_path / "report" / "tables" / "paper_values.csv")
    assert set(values["paper"]) == {"rgb2024"}  # the job ran experiment=rgb2024: RGB's values, none matched
    assert len(values) == 135 and (values["verdict"] == NO_MATCH).all()
    claims = pd.read_csv(tmp_path / "report" / "tables" / "paper_claims.csv")
    assert set(claims["claim"]) == {c.id for c in paper_claims() if c.paper == "rgb2024"}
    index = (tmp_path / "report" / "README.md").read_text()
    assert "The paper beside this run" in index and "paper_claims.csv" in index


def test_claims_hold_and_a_claim_planted_false_is_contradicted(tmp_path):
    # holds: one reader at noise ratios 0 and 0.8 (accuracy falls with noise, as RGB says)
    _rgb_job(tmp_path / "holds", 0.0, WEAK)
    _rgb_job(tmp_path / "holds", 0.8, WEAK)
    scores, ctx = load_jobs(tmp_path / "holds" / "jobs")
    ctx.n_resamples = 300
    claims = evaluate_claims(scores, ctx).set_index("claim")
    noise = claims.loc["rgb2024.noise_lowers_accuracy"]
    assert noise["verdict"] == HOLDS and noise["model"] == SIM_ID and noise["p_value"] < 0.05
    assert noise["diff"] > 0 and "paired permutation" in noise["test"]
    assert claims.loc["rgb2024.rejection_is_rare", "verdict"] == NO_MATCH  # no noise-only job
    assert claims.loc["cao2025.s2a_no_gain", "verdict"] == NO_MATCH
    # planted false: the noise-0.8 job's reader notices every document, the noise-0 job's almost none
    strong = {"position_first": 1.0, "position_middle": 1.0, "position_last": 1.0}
    blind = {"position_first": 0.05, "position_middle": 0.05, "position_last": 0.05}
    _rgb_job(tmp_path / "false", 0.0, blind)
    _rgb_job(tmp_path / "false", 0.8, strong)
    # and noise-only documents with a reader that knows nothing: it refuses every time
    _rgb_job(tmp_path / "false", 1.0, {"knowledge": 0.0})
    scores, ctx = load_jobs(tmp_path / "false" / "jobs")
    ctx.n_resamples = 300
    claims = evaluate_claims(scores, ctx).set_index("claim")
    assert claims.loc["rgb2024.noise_lowers_accuracy", "verdict"] == CONTRADICTED
    assert claims.loc["rgb2024.noise_lowers_accuracy", "diff"] < 0
    rej = claims.loc["rgb2024.rejection_is_rare"]
    assert rej["verdict"] == CONTRADICTED and rej["a_ci_low"] > 0.5


def test_a_claim_is_not_decided_on_too_few_examples(tmp_path):
    _rgb_job(tmp_path, 0.0, WEAK, n=4)
    _rgb_job(tmp_path, 0.8, WEAK, n=4)
    scores, ctx = load_jobs(tmp_path / "jobs")
    claim = next(c for c in paper_claims() if c.id == "rgb2024.noise_lowers_accuracy")
    (row,) = evaluate_claims(scores, ctx, (claim,)).to_dict("records")
    assert row["verdict"] == UNDECIDED  # 4 pairs: a permutation test cannot reach p < 0.05 two-sided


def test_ownknow_claim_on_the_simulated_reader(tmp_path):
    # A reader that always repeats its closed-book draft under OwnKnow is perfectly robust there.
    over = [*SIM, "strategy=[vanilla,ownknow]", "dataset.n=40", "grid.k=[1,3]", "generator.draft_trust=1.0"]
    run_job(compose_config(over, tmp_path), tmp_path / "jobs" / "job")
    scores, ctx = load_jobs(tmp_path / "jobs")
    ctx.n_resamples = 300
    claim = Claim.from_dict(
        "cao2025",
        {
            "id": "ownknow_raises_robustness",
            "location": "§5.5",
            "quote": "q",
            "kind": "direction",
            "metric": "robustness",
            "a": "strategy=ownknow",
            "b": "strategy=vanilla",
        },
    )
    (row,) = evaluate_claims(scores, ctx, (claim,)).to_dict("records")
    assert row["a"] == pytest.approx(1.0) and row["b"] < 1.0
    assert row["verdict"] == HOLDS and "bootstrap" in row["test"]
