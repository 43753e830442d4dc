"""A run's model is what it verifiably is (issue 49, item 7): every paper value row says where the run's
identity came from; a ``generator.model_name`` label that contradicts the server's reported model is warned
about and never matched; a local folder's ``config.json`` claim is matched only where the weights' parameter
count bears it out, else "claimed by config.json, not verified" and no verdict."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from rr.jobfolder import JobSummary, ModelRecord
from rr.reporting.loading import JobInfo, ReportContext
from rr.reporting.paper_match import MEASURED, NO_MATCH, compare_values, job_model_ids
from rr.reporting.run_identity import (
    NOT_VERIFIED,
    check_claim,
    folder_parameters,
    run_identity,
    stated_parameters,
)


def fake_weights(folder: Path, parameters: int, claims: str) -> Path:
    """A model folder whose config.json claims ``claims`` and whose safetensors header declares
    ``parameters`` parameters (the header only: the count is read from it, never the data)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"_name_or_path": claims}))
    header = json.dumps(
        {
            "__metadata__": {"format": "pt"},
            "w": {"dtype": "BF16", "shape": [parameters], "data_offsets": [0, 0]},
        }
    ).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    return folder


def test_the_size_a_name_states_and_the_weights_hold(tmp_path):
    assert stated_parameters("Qwen/Qwen-7B-Chat") == 7e9
    assert stated_parameters("HuggingFaceTB/SmolLM2-135M-Instruct") == 135e6
    assert stated_parameters("mistralai/Mixtral-8x7B-Instruct-v0.1") == 56e9
    assert stated_parameters("meta-llama/Llama-3.1-8B-Instruct") == 8e9
    assert stated_parameters("gpt-3.5-turbo") is None
    small = fake_weights(tmp_path / "small", 134_515_008, "Qwen/Qwen-7B-Chat")
    assert folder_parameters(small) == 134_515_008
    assert check_claim(str(small), "Qwen/Qwen-7B-Chat")[0] is False
    big = fake_weights(tmp_path / "big", 7_721_324_544, "Qwen/Qwen-7B-Chat")
    assert check_claim(str(big), "Qwen/Qwen-7B-Chat")[0] is True
    assert folder_parameters(tmp_path / "nowhere") is None


def _ctx(model: dict, public: str, label: str | None = None) -> ReportContext:
    cfg = OmegaConf.create({"generator": {"model_name": label}})
    record = ModelRecord(
        model["model_id"],
        model.get("revision"),
        {k: v for k, v in model.items() if k not in ("model_id", "revision")},
    )
    summary = JobSummary(name="x", model=record, public_model=public)
    return ReportContext(jobs=[JobInfo("j", Path("j"), 2, summary, None, cfg)], n_resamples=50)


def _value(model_id: str) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "paper": "x",
                "location": "Table 1",
                "model": model_id,
                "model_ids": model_id,
                "dataset": "d",
                "rr_datasets": "d",
                "metric": "accuracy",
                "setting": "",
                "printed": "50",
                "value": 0.5,
                "relation": "=",
                "note": "",
                "run": "",
                "out_of_reach": "",
            }
        ]
    )


ROWS = pd.DataFrame(
    {
        "job_id": ["j", "j"],
        "dataset": ["d", "d"],
        "k": [5, 5],
        "example_id": ["e1", "e2"],
        "score": [1.0, 0.0],
    }
)


def test_a_folder_that_only_claims_to_be_the_papers_model_gets_no_verdict(tmp_path):
    """The issue's case: a copy of the 135M demo model whose config.json says Qwen/Qwen-7B-Chat."""
    folder = fake_weights(tmp_path / "copy", 134_515_008, "Qwen/Qwen-7B-Chat")
    ctx = _ctx({"model_id": str(folder), "revision": "sha256:abc"}, "Qwen/Qwen-7B-Chat")
    (row,) = compare_values(ROWS, ctx, _value("Qwen/Qwen-7B-Chat")).to_dict("records")
    assert row["verdict"] == NOT_VERIFIED and pd.isna(row["rr"])
    assert "config.json claims Qwen/Qwen-7B-Chat" in row["identity"]
    assert "1.35e+08 parameters, not a 7e+09-parameter model" in row["identity"]
    # the same claim on weights of the paper model's size is matched, and says where it came from
    real = fake_weights(tmp_path / "real", 7_721_324_544, "Qwen/Qwen-7B-Chat")
    ctx = _ctx({"model_id": str(real), "revision": "sha256:def"}, "Qwen/Qwen-7B-Chat")
    (row,) = compare_values(ROWS, ctx, _value("Qwen/Qwen-7B-Chat")).to_dict("records")
    assert row["verdict"] in MEASURED and row["rr"] == 0.5
    assert row["identity"].startswith(f"local folder {real}: config.json claims Qwen/Qwen-7B-Chat")


def test_a_label_contradicting_the_servers_model_is_warned_about_and_never_matched():
    """The issue's case: a local-server run relabelled gpt-3.5-turbo-0613 while the server reported -0125."""
    model = {"model_id": "gpt-3.5-turbo", "revision": "unversioned", "reported_model": "gpt-3.5-turbo-0125"}
    ctx = _ctx(model, "gpt-3.5-turbo-0613", label="gpt-3.5-turbo-0613")
    assert job_model_ids(ctx) == {"j": ("", "")}
    (row,) = compare_values(ROWS, ctx, _value("gpt-3.5-turbo-0613")).to_dict("records")
    assert row["verdict"] == NO_MATCH and row["identity"] == "server-reported gpt-3.5-turbo-0125"
    assert any("contradicts the model the server reported answering with" in n for n in ctx.notes)
    # without the label the job is the reported snapshot, and says so; the alias it asked for is not matched
    ctx = _ctx(model, "gpt-3.5-turbo-0125")
    assert job_model_ids(ctx) == {"j": ("gpt-3.5-turbo-0125",) * 2}
    assert compare_values(ROWS, ctx, _value("gpt-3.5-turbo"))["verdict"].item() == NO_MATCH


def test_a_hub_model_says_its_commit():
    ident = run_identity({"model_id": "meta-llama/Llama-3.1-8B-Instruct", "revision": "0e9e39f"}, "", None)
    assert (ident.model, ident.source) == (
        "meta-llama/Llama-3.1-8B-Instruct",
        "hub meta-llama/Llama-3.1-8B-Instruct@0e9e39f",
    )
    (row,) = compare_values(
        ROWS,
        _ctx({"model_id": "meta-llama/Llama-3.1-8B-Instruct", "revision": "0e9e39f"}, ""),
        _value("meta-llama/Llama-3.1-8B-Instruct"),
    ).to_dict("records")
    assert row["identity"] == "hub meta-llama/Llama-3.1-8B-Instruct@0e9e39f" and row["verdict"] in MEASURED
