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


# -- tokenizers, query encoders and local indexes are content too (issue 43) ----------------------
def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[0] ^= 1
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("generator", ["llamacpp", "openai"])
def test_a_changed_tokenizer_file_is_a_new_job_and_a_new_cache_key(
    generator: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rr.config import instantiate, semantic_config

    monkeypatch.setattr(model_identity, "_ask_api_model", lambda *args: None)  # no API server here
    monkeypatch.setattr(model_identity, "_api_memo", {})
    folder = tmp_path / "tokenizer"
    folder.mkdir()
    (folder / "tokenizer.json").write_text('{"model": {"vocab": {"a": 0}}}')
    (folder / "tokenizer_config.json").write_text('{"chat_template": "{{ messages }}"}')
    overrides = [f"generator={generator}", f"generator.tokenizer={folder}"]

    def keys() -> tuple[str, dict]:
        cfg = compose_config(overrides, tmp_path)
        identity = instantiate(cfg.generator).identity()  # what the generation cache is keyed by
        assert semantic_config(cfg)["generator"]["tokenizer_identity"] == identity["tokenizer_identity"]
        return job_id(cfg), identity

    first_id, first_key = keys()
    assert first_key["tokenizer_identity"] == local_identity(str(folder))
    _flip_a_byte(folder / "tokenizer_config.json")  # the chat template changed: other prompts
    second_id, second_key = keys()
    assert second_id != first_id and second_key != first_key
    # a packaged tokenizer is pinned by its package: nothing added, the id it had
    packaged = compose_config(
        [f"generator={generator}", "generator.tokenizer=packaged:smollm2-135m-instruct"]
    )
    assert "tokenizer_identity" not in semantic_config(packaged)["generator"]


def test_a_changed_local_index_or_query_encoder_file_is_a_new_job_and_fingerprint(tmp_path: Path) -> None:
    from rr.config import instantiate, semantic_config

    index, encoder = tmp_path / "index", tmp_path / "encoder"
    index.mkdir()
    encoder.mkdir()
    (index / "index").write_bytes(b"\0" * 64)  # pyserini's FAISS layout: the vectors and their docids
    (index / "docid").write_text("d1\nd2\n")
    (encoder / "model.safetensors").write_bytes(b"\0" * 64)
    (encoder / "config.json").write_text("{}")
    overrides = [
        "retriever=pyserini_faiss",
        f"retriever.pyserini_faiss.prebuilt_index={index}",
        f"retriever.pyserini_faiss.query_encoder={encoder}",
        "retriever.pyserini_faiss.encoder_class=auto",
    ]

    def keys() -> tuple[str, dict]:
        cfg = compose_config(overrides, tmp_path)
        node = semantic_config(cfg)["retriever"]["pyserini_faiss"]
        fingerprint = instantiate(cfg.retriever.pyserini_faiss).fingerprint()  # the TREC run cache's key
        assert node["prebuilt_index_identity"] == fingerprint["prebuilt_index_identity"]
        assert node["query_encoder_identity"] == fingerprint["query_encoder_identity"]
        return job_id(cfg), fingerprint

    seen = [keys()]
    for changed in (index / "index", encoder / "model.safetensors"):
        _flip_a_byte(changed)
        seen.append(keys())
    assert len({jid for jid, _ in seen}) == 3 and len({json.dumps(f) for _, f in seen}) == 3
    # pyserini's named prebuilt indexes stay named
    named = semantic_config(compose_config(["retriever=pyserini_faiss"]))["retriever"]["pyserini_faiss"]
    assert "prebuilt_index_identity" not in named


def test_an_api_model_served_from_a_local_folder_keys_its_cache_by_the_folders_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`vllm serve /models/x` reports the path whatever the folder holds: the job id held the
    folder's digest, the openai backend's cache key only the path, so changed weights behind the same
    server served the old answers with force=true. The key now holds the digest as the job id does."""
    from rr.config import instantiate, semantic_config

    monkeypatch.setattr(model_identity, "_ask_api_model", lambda *args: None)  # no API server here
    monkeypatch.setattr(model_identity, "_api_memo", {})
    folder = tmp_path / "served"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights v1")
    (folder / "config.json").write_text("{}")

    def keys() -> tuple[str, dict]:
        cfg = compose_config(["generator=openai", f"generator.model={folder}"], tmp_path)
        identity = instantiate(cfg.generator).identity()
        assert identity["model_identity"] == semantic_config(cfg)["generator"]["model_identity"]
        return job_id(cfg), identity

    first_id, first_key = keys()
    _flip_a_byte(folder / "model.safetensors")
    second_id, second_key = keys()
    assert second_id != first_id and second_key != first_key
    # an API name that is no local path adds nothing
    plain = instantiate(compose_config(["generator=openai", "generator.model=gpt-4o"], tmp_path).generator)
    assert "model_identity" not in plain.identity()
