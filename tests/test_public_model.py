"""Which public model a job ran (issue 42, part 3): ``summary.json``'s ``public_model`` apart from where
the model was loaded from, and the paper values matching it by their aliases."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from rr.config import job_id
from rr.generation.base import public_model
from rr.generation.hf import HFGenerator
from rr.generation.openai import OpenAIGenerator
from rr.jobfolder import JobSummary, ModelRecord
from rr.reporting.loading import JobInfo, ReportContext
from rr.reporting.paper_match import NO_MATCH, RunIndex, compare_values, job_model_ids
from tests.conftest import compose_config


def test_a_local_folder_is_the_hub_model_its_config_was_saved_from(tmp_path: Path) -> None:
    folder = tmp_path / "llama"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"_name_or_path": "meta-llama/Llama-3.1-8B-Instruct"}))
    assert public_model(HFGenerator(model=str(folder))) == "meta-llama/Llama-3.1-8B-Instruct"
    # a folder saved from another folder says nothing public: the loaded id stands
    (folder / "config.json").write_text(json.dumps({"_name_or_path": "/scratch/ckpt"}))
    assert public_model(HFGenerator(model=str(folder))) == str(folder)
    # generator.model_name says it where nothing else does
    assert public_model(HFGenerator(model=str(folder), model_name="Qwen/Qwen2.5-7B-Instruct")) == (
        "Qwen/Qwen2.5-7B-Instruct"
    )
    assert (
        public_model(HFGenerator(model="meta-llama/Llama-3.2-1B-Instruct"))
        == "meta-llama/Llama-3.2-1B-Instruct"
    )


def test_an_api_model_is_the_model_the_server_reported() -> None:
    gen = OpenAIGenerator(model="gpt-4o")
    assert public_model(gen) == "gpt-4o"  # nothing answered yet
    gen.reported_model = "gpt-4o-2024-08-06"  # as _request records a response's "model"
    assert public_model(gen) == "gpt-4o-2024-08-06"


def test_model_name_is_a_label_not_the_job_id(tmp_path: Path) -> None:
    base = compose_config([], tmp_path)
    named = compose_config(["generator.model_name=HuggingFaceTB/SmolLM2-135M-Instruct"], tmp_path)
    assert job_id(base) == job_id(named)


def _ctx(public: str, loaded: str) -> ReportContext:
    summary = JobSummary(name="cao2025", model=ModelRecord(loaded), public_model=public)
    return ReportContext(
        jobs=[JobInfo("j", Path("j"), 1, summary, None, compose_config(["experiment=cao2025"]))]
    )


def test_paper_values_match_the_public_model_and_its_aliases() -> None:
    """A dated API version and an older hub name are the paper's model; the table shows the run's model."""
    from rr.papers import paper_values

    values = paper_values()
    gpt4o = values[(values["paper"] == "cao2025") & (values["model"] == "GPT-4o")].head(1)
    llama = values[(values["paper"] == "cao2025") & (values["model"] == "Llama-3.1-8B-Instruct")].head(1)
    rows = pd.DataFrame(
        {"job_id": ["j"], "dataset": ["nq_open"], "k": [5], "example_id": ["e"], "score": [1.0]}
    )
    for public, loaded, value in [
        ("gpt-4o-2024-08-06", "gpt-4o-2024-08-06", gpt4o),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "/models/llama", llama),
        ("meta-llama/Llama-3.1-8B-Instruct", "/models/llama", llama),
    ]:
        ctx = _ctx(public, loaded)
        assert job_model_ids(ctx)["j"][0] == public  # what it is (a folder: its claim), never its path
        index = RunIndex(rows, job_model_ids(ctx), {"strategy"})
        assert not any(d[0] == "model" for d in index.profiles["j"].differences(next(value.itertuples())))
    # another model: no match, and the row says which key differs
    got = compare_values(rows, _ctx("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct"), gpt4o)
    assert got["verdict"].item() == NO_MATCH
    assert "model (Qwen/Qwen2.5-7B-Instruct vs gpt-4o-2024-08-06)" in got["differs"].item()


def test_a_pooled_value_on_one_dataset_says_the_paper_pools() -> None:
    """Cao's values pool three datasets: one job on nq_open has the setting but not the pool, and says so."""
    from rr.papers import paper_values

    v = paper_values().query("paper == 'cao2025' and model == 'Llama-3.1-8B-Instruct' and metric == 'ndr'")
    cells = [("none", 0, "none")] + [
        (r, k, o)
        for r in ("bm25", "bge_large")
        for k in (5, 10, 25, 50, 75, 100)
        for o in ("original", "reversed", "shuffled")
    ]
    rows = pd.DataFrame(
        [("j", "nq_open", "vanilla", r, k, o, e, 1.0) for r, k, o in cells for e in ("e1", "e2")],
        columns=["job_id", "dataset", "strategy", "retriever", "k", "order", "example_id", "score"],
    )
    got = compare_values(rows, _ctx("meta-llama/Llama-3.1-8B-Instruct", "/models/llama"), v)
    assert got["verdict"].item() == NO_MATCH
    assert got["differs"].item().startswith("dataset (nq_open vs asqa+hotpot_qa+nq_open): the paper pools")
