"""A model is its content (issue 43 part 1, CONVENTIONS.md item 7): a local model folder whose weights
change is a new job and misses the generation cache; its identity is hashed once per file version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rr import model_identity
from rr.config import job_id
from rr.model_identity import local_identity

from .conftest import compose_config

SMALL = ["dataset.n=2", "grid.k=[]", "generator.max_new_tokens=4", "progress=false"]


@pytest.fixture(autouse=True)
def own_identity_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "identity-cache.json"
    monkeypatch.setenv("RR_IDENTITY_CACHE", str(path))
    return path


def tiny_model(folder: Path, seed: int) -> Path:
    """A 1-layer random Llama with the packaged SmolLM2 tokenizer (a few MB), saved to ``folder``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig

    from rr.generation import packaged

    spec = packaged.lookup("packaged:smollm2-135m-instruct")
    assert spec is not None
    tok = AutoTokenizer.from_pretrained(packaged.materialize(spec, compose_config([]).paths.model_cache_dir))
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=4096,
    )
    AutoModelForCausalLM.from_config(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_a_changed_weight_is_a_new_job_and_misses_the_cache(tmp_path: Path) -> None:
    from rr.pipeline import run_job

    folder = tiny_model(tmp_path / "my model", seed=0)
    overrides = [*SMALL, f"generator.model={folder}"]
    cfg = compose_config(overrides, tmp_path)
    first_id = job_id(cfg)
    run_job(cfg, tmp_path / "a")
    first = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert first["model_calls"] > 0
    assert first["model"]["revision"] == local_identity(str(folder))

    tiny_model(folder, seed=1)  # the same path, other weights
    cfg = compose_config([*overrides, "force=true"], tmp_path)
    assert job_id(cfg) != first_id
    run_job(cfg, tmp_path / "a")  # the same output folder, forced: the old answers must not be served
    second = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert second["job_id"] == job_id(cfg)
    assert second["model"]["revision"] != first["model"]["revision"]
    assert second["cache_hits"] == 0 and second["model_calls"] == first["model_calls"]


def test_the_packaged_model_keeps_the_demo_job_id() -> None:
    assert job_id(compose_config([])) == "2cf0aa69361f"
    assert "model_identity" not in json.dumps(
        __import__("rr.config", fromlist=["semantic_config"]).semantic_config(compose_config([]))
    )


def test_a_folder_is_hashed_once_then_read_from_the_user_cache(
    tmp_path: Path, own_identity_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"\0" * 1000)
    (folder / "README.md").write_text("docs change no output")
    first = local_identity(str(folder))
    assert first is not None and first.startswith("sha256:") and own_identity_cache.exists()

    reads: list[Path] = []
    real = model_identity._digest
    monkeypatch.setattr(model_identity, "_digest", lambda p: reads.append(p) or real(p))
    assert local_identity(str(folder)) == first and reads == []  # cached: nothing read
    (folder / "README.md").write_text("other docs")
    assert local_identity(str(folder)) == first
    (folder / "model.safetensors").write_bytes(b"\1" + b"\0" * 999)
    assert local_identity(str(folder)) != first
    assert reads == [folder / "model.safetensors"]  # only the changed file is read again


def test_a_hub_id_adds_its_cached_commit_and_an_api_model_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    refs = tmp_path / "models--org--name" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text("a" * 40)
    monkeypatch.setattr(model_identity, "_hub_memo", {})
    assert model_identity.model_identity("org/name") == "a" * 40
    assert model_identity.model_identity("org/name", "b" * 40) is None  # pinned: in the config already
    assert model_identity.model_identity("org/name", hub=False) is None  # e.g. an API model's name
    assert model_identity.model_identity("packaged:smollm2-135m-instruct") is None
