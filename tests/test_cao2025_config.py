"""The paper-scale configuration of Cao et al. (2025): full grid, strategies, judge, models."""

from __future__ import annotations

from pathlib import Path

import yaml

from .conftest import compose_config

ROOT = Path(__file__).resolve().parent.parent


def test_paper_experiment_has_three_strategies_and_the_llm_judge(tmp_path: Path) -> None:
    cfg = compose_config(["experiment=cao2025"], tmp_path)
    assert list(cfg.strategy) == ["vanilla", "ownknow", "s2a"]
    assert sorted(cfg.retriever) == ["bge_large", "bm25"]
    assert list(cfg.grid.k) == [5, 10, 25, 50, 75, 100] and cfg.grid.closed_book
    assert cfg.judge._target_ == "rr.judges.llm.LLMJudge" and not cfg.judge._recursive_
    assert cfg.judge.generator.model == "meta-llama/Llama-3.3-70B-Instruct"
    # the judge override leaves the model under test alone, and datasets are swept
    assert cfg.generator.model == "packaged:smollm2-135m-instruct"
    cfg = compose_config(["experiment=cao2025", "dataset=asqa", "judge=match"], tmp_path)
    assert cfg.dataset._target_.endswith("ASQA") and cfg.judge._target_.endswith("MatchJudge")


def test_paper_sweep_lists_the_papers_open_models() -> None:
    params = yaml.safe_load((ROOT / "sweeps" / "cao2025.yaml").read_text())["hydra"]["sweeper"]["params"]
    models = [m.strip() for m in params["generator.model"].split(",")]
    assert models == [
        "meta-llama/Llama-3.2-1B-Instruct",
        "meta-llama/Llama-3.2-3B-Instruct",
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Llama-3.1-70B-Instruct",
        "mistralai/Mistral-Nemo-Instruct-2407",
        "mistralai/Mistral-Large-Instruct-2407",
        "CohereForAI/c4ai-command-r-08-2024",
        "CohereForAI/c4ai-command-r-plus-08-2024",
    ]
    assert params["dataset"].split(",") == ["nq_open", "hotpot_qa", "asqa"]
