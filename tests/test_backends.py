"""vLLM and OpenAI-compatible backends: request building, parameter mapping, output parsing
(plain functions, no GPU), retries against a real loopback HTTP server, and vLLM on a GPU."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

from rr.config import instantiate
from rr.generation.base import Completion
from rr.generation.openai import (
    CHAT_PREFIX,
    OpenAIBackendError,
    OpenAIGenerator,
    backoff_delay,
    build_payload,
    chat_messages,
    chat_prompt,
    parse_response,
)
from rr.generation.vllm import (
    VLLMGenerator,
    continuation_logprob,
    parse_outputs,
    prefix_order,
    sampling_kwargs,
    token_prompts,
)
from rr.records import GenerationParams, Request

from .conftest import compose_config
from .openai_servers import FaultProxy

GREEDY = GenerationParams(max_new_tokens=7)
SAMPLED = GenerationParams(max_new_tokens=5, temperature=0.7, top_p=0.9, seed=3, stop=("\n\n",))


# -- vLLM ---------------------------------------------------------------------------------------
def test_prefix_order_puts_shared_prefixes_together() -> None:
    prompts = ["Q: b\nDocs: 1 2", "Q: a\nDocs: 1", "Q: b\nDocs: 1", "Q: a\nDocs: 1 2 3", "Q: a\nDocs: 1"]
    order = prefix_order(prompts)
    assert [prompts[i] for i in order] == sorted(prompts)
    assert order == [1, 4, 3, 2, 0]  # ties keep input order


def test_vllm_sampling_kwargs() -> None:
    assert sampling_kwargs(GREEDY) == {
        "max_tokens": 7,
        "temperature": 0.0,
        "top_p": 1.0,
        "skip_special_tokens": True,
    }
    assert sampling_kwargs(SAMPLED, prompt_logprobs=0, max_tokens=1) == {
        "max_tokens": 1,
        "temperature": 0.7,
        "top_p": 0.9,
        "skip_special_tokens": True,
        "seed": 3,
        "stop": ["\n\n"],
        "prompt_logprobs": 0,
    }


def test_vllm_output_parsing_and_prompt_logprob_scoring() -> None:
    outs = [
        SimpleNamespace(
            prompt_token_ids=[1, 2, 3], outputs=[SimpleNamespace(text=" Paris", token_ids=[9, 8])]
        ),
        SimpleNamespace(prompt_token_ids=[4], outputs=[SimpleNamespace(text="", token_ids=[])]),
    ]
    assert [(c.text, c.prompt_tokens, c.completion_tokens) for c in parse_outputs(outs)] == [
        (" Paris", 3, 2),
        ("", 1, 0),
    ]
    # hf counts the generated tokens that are not the pad token (EOS when there is no pad):
    # vLLM's trailing EOS (8 here) is not counted
    assert [c.completion_tokens for c in parse_outputs(outs, pad_token_id=8)] == [1, 0]
    lp = SimpleNamespace
    scored = SimpleNamespace(
        prompt_token_ids=[5, 6, 7, 8],
        prompt_logprobs=[
            None,
            {6: lp(logprob=-1.0)},
            {7: lp(logprob=-0.5), 1: lp(logprob=-2.0)},
            {8: lp(logprob=-0.25)},
        ],
    )
    assert continuation_logprob(scored, 2) == -0.75  # tokens 7 and 8 follow a 2-token prompt
    with pytest.raises(ValueError, match="position 0"):
        continuation_logprob(scored, 0)
    assert token_prompts([[1, 2], [3]]) == [{"prompt_token_ids": [1, 2]}, {"prompt_token_ids": [3]}]


def test_vllm_config_maps_to_engine_arguments(tmp_path: Path) -> None:
    model_dir = tmp_path / "llama-8b"  # a local model path must exist (checked at instantiation)
    model_dir.mkdir()
    cfg = compose_config(
        [
            "generator=vllm",
            f"generator.model={model_dir}",
            "generator.tensor_parallel_size=8",
            "generator.max_model_len=16384",
            "generator.dtype=bfloat16",
            "generator.gpu_memory_utilization=0.85",
            "generator.kv_cache_memory_bytes=1073741824",
        ],
        tmp_path,
    )
    gen = instantiate(cfg.generator)
    assert isinstance(gen, VLLMGenerator)
    assert gen.engine_kwargs() == {
        "model": str(model_dir),
        "tokenizer": str(model_dir),
        "revision": None,
        "tensor_parallel_size": 8,
        "dtype": "bfloat16",
        "gpu_memory_utilization": 0.85,
        "enable_prefix_caching": True,
        "enforce_eager": False,
        "trust_remote_code": False,
        "seed": 0,
        "disable_log_stats": False,  # vLLM keeps its prefix-cache counters only with stats on
        "kv_cache_memory_bytes": 2**30,
        "max_model_len": 16384,
    }
    assert gen.context_window == 16384 and gen.default_params() == GenerationParams(max_new_tokens=24)


def test_vllm_renders_like_hf_so_they_share_cache_entries() -> None:
    from rr.generation.hf import HFGenerator

    hf, vl = HFGenerator(device="cpu", dtype="float32"), VLLMGenerator(dtype="float32")
    req = Request.user("What is the capital of France?")
    assert vl.identity() == hf.identity() and vl.render(req) == hf.render(req)


def test_cache_identity_holds_the_numerics_computed_with() -> None:
    from rr.generation.hf import HFGenerator

    # a bf16 (or quantized) job is never served an fp32 job's cached outputs
    fp32 = VLLMGenerator(dtype="float32").identity()
    assert fp32["dtype"] == "float32" and "quantization" not in fp32
    assert VLLMGenerator(dtype="bfloat16").identity()["dtype"] == "bfloat16"
    assert VLLMGenerator(dtype="bfloat16", quantization="fp8").identity()["quantization"] == "fp8"
    assert HFGenerator(device="cpu").identity()["dtype"] == "float32"  # hf's auto on CPU
    assert HFGenerator(device="cuda").identity()["dtype"] == "bfloat16"  # hf's auto on CUDA
    assert HFGenerator(device="cpu", dtype="float16").identity()["dtype"] == "float16"
    with pytest.raises(ValueError, match="generator.dtype must be one of"):
        HFGenerator(dtype="fp32").identity()
    with pytest.raises(ValueError, match="kv_cache_memory_bytes must be > 0"):
        VLLMGenerator(kv_cache_memory_bytes=0)


def test_prefix_cache_counts_from_vllm_metrics() -> None:
    from rr.generation.vllm import prefix_cache_counts

    m = SimpleNamespace
    metrics = [
        m(name="vllm:prefix_cache_queries", value=120),
        m(name="vllm:prefix_cache_hits", value=48),
        m(name="vllm:prefix_cache_queries", value=30),  # a second engine (data parallel)
        m(name="vllm:num_requests_running", value=2),
    ]
    assert prefix_cache_counts(metrics) == {"queries": 150, "hits": 48}
    with pytest.raises(ValueError, match="disable_log_stats"):
        prefix_cache_counts([m(name="vllm:num_requests_running", value=2)])


@pytest.mark.gpu
def test_vllm_generates_on_gpu() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available() or importlib.util.find_spec("vllm") is None:
        pytest.skip("needs a CUDA GPU and the gpu extra (vllm)")
    gen = VLLMGenerator(max_model_len=2048, gpu_memory_utilization=0.3, enforce_eager=True)
    prompts = [gen.render(Request.user(q)) for q in ("What is the capital of France?", "Name a colour.")]
    out = gen.generate(prompts, GenerationParams(max_new_tokens=8))
    assert len(out) == 2 and all(c.completion_tokens > 0 for c in out)
    assert gen.choose(prompts[:1], ["yes", "no"], GenerationParams(max_new_tokens=2)) in (["yes"], ["no"])
    (good, bad) = gen.score([prompts[0]] * 2, ["The capital of France is Paris.", "Banana banana banana."])
    assert good > bad


# -- OpenAI-compatible ----------------------------------------------------------------------------
def test_openai_payloads() -> None:
    chat = chat_prompt([{"role": "user", "content": "Hi"}])
    assert chat.startswith(CHAT_PREFIX) and chat_messages(chat) == [{"role": "user", "content": "Hi"}]
    assert build_payload("m", chat, GREEDY, "chat") == {
        "model": "m",
        "max_tokens": 7,
        "messages": [{"role": "user", "content": "Hi"}],
        "temperature": 0.0,
    }
    assert build_payload("m", "raw text", SAMPLED, "completions", "max_completion_tokens", {"top_k": 5}) == {
        "model": "m",
        "max_completion_tokens": 5,
        "prompt": "raw text",
        "temperature": 0.7,
        "top_p": 0.9,
        "seed": 3,
        "stop": ["\n\n"],
        "top_k": 5,
    }
    with pytest.raises(ValueError, match="chat prompt"):
        build_payload("m", chat, GREEDY, "completions")
    assert parse_response(
        {
            "choices": [{"message": {"content": "Paris"}}],
            "usage": {"prompt_tokens": 4, "completion_tokens": 1},
        },
        "chat",
    ) == ("Paris", 4, 1)
    assert parse_response({"choices": [{"text": " Rome"}]}, "completions") == (" Rome", None, None)
    with pytest.raises(OpenAIBackendError, match="unexpected response"):
        parse_response({"error": "x"}, "chat")


def test_backoff_doubles_caps_and_honours_retry_after() -> None:
    assert [backoff_delay(a, 0.5, 3.0) for a in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert backoff_delay(0, 0.5, 30.0, retry_after="7") == 7.0
    assert backoff_delay(0, 0.5, 30.0, retry_after="Wed, 21 Oct 2015 07:28:00 GMT") == 0.5
    assert 0.25 <= backoff_delay(0, 0.5, 3.0, jitter=0.5) <= 0.5
    assert backoff_delay(0, 0.5, 30.0, retry_after="7", jitter=0.5) == 7.0  # jitter never cuts Retry-After


def test_openai_chat_render_and_token_estimate() -> None:
    gen = OpenAIGenerator(model="gpt-x", system_prompt="Be brief.")
    prompt = gen.render(Request.user("Hello there"))
    assert chat_messages(prompt) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hello there"},
    ]
    assert gen.count_tokens([prompt, "abcdefgh"]) == [len("Be brief.\nHello there") // 4 + 1, 3]
    assert gen.identity() == {"model_id": "gpt-x", "revision": "unversioned"} and gen.context_window == 8192
    with pytest.raises(ValueError, match="tokenizer"):
        OpenAIGenerator(endpoint="completions")


def test_openai_timeouts_are_retried_then_fail_clearly() -> None:
    with FaultProxy("http://127.0.0.1:9", ["stall", "stall"], stall_s=1.0) as proxy:
        gen = OpenAIGenerator(
            model="m", base_url=proxy.base_url, timeout_s=0.3, max_retries=1, backoff_s=0.01
        )
        with pytest.raises(OpenAIBackendError, match="giving up after 1 retries; last error: no answer"):
            gen.generate(["hello"], GREEDY)
    assert gen.counters == {"retry:timeout": 1, "failed": 1, "no_api_key": 1}


def test_openai_non_retryable_status_fails_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RR_TEST_NO_KEY", raising=False)
    with FaultProxy("http://127.0.0.1:9", ["401"]) as proxy:
        gen = OpenAIGenerator(
            model="m", base_url=proxy.base_url, api_key_env="RR_TEST_NO_KEY", backoff_s=0.01
        )
        with pytest.raises(OpenAIBackendError, match=r"answered 401 \(is \$RR_TEST_NO_KEY set\?\)"):
            gen.generate(["hello"], GREEDY)
        assert proxy.posts == 1 and proxy.auth == [None]


def _post_through_mock(gen: OpenAIGenerator, answers: list) -> tuple[Completion, list[float], int]:
    """``gen._request`` once over an ``httpx.MockTransport`` answering POSTs from ``answers`` in
    turn (an ``httpx.Response``, or an exception class to raise); retries sleep no time.

    Returns (the completion, the delays retries asked to sleep, the POSTs sent)."""
    import asyncio

    import httpx

    posts: list[httpx.Request] = []
    slept: list[float] = []

    def answer(request: httpx.Request) -> httpx.Response:
        posts.append(request)
        a = answers.pop(0)
        if isinstance(a, type):
            raise a("injected", request=request)
        return a

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def go() -> Completion:
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
            return await gen._request(client, "http://mock/v1/chat/completions", "hi", GREEDY)

    gen.sleep = sleep
    return asyncio.run(go()), slept, len(posts)


def test_openai_retries_wait_at_least_retry_after_else_back_off(monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    monkeypatch.setattr("rr.generation.openai.random.random", lambda: 1.0)  # jitter: half of each delay

    ok = {
        "choices": [{"message": {"content": "Paris"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    gen = OpenAIGenerator(model="m", api_key_env=None, max_retries=5, backoff_s=0.01, max_backoff_s=30.0)
    # waits: the server's 7 s (not our 0.01 less its jitter); no header and an HTTP date: our
    # backoff 0.02 and 0.04 less half (the jitter); 120 s capped at max_backoff_s
    answers = [
        httpx.Response(429, headers={"Retry-After": "7"}),
        httpx.Response(503),
        httpx.Response(429, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}),
        httpx.Response(429, headers={"Retry-After": "120"}),
        httpx.Response(200, json=ok),
    ]
    done, slept, posts = _post_through_mock(gen, answers)
    assert (done.text, done.prompt_tokens, done.completion_tokens) == ("Paris", 3, 1) and posts == 5
    assert slept == pytest.approx([7.0, 0.01, 0.02, 30.0])
    assert gen.counters == {"retry:http_429": 3, "retry:http_503": 1}


def test_openai_retries_run_out_with_the_last_error() -> None:
    import httpx

    gen = OpenAIGenerator(model="m", api_key_env=None, max_retries=2, backoff_s=0.01)
    answers = [httpx.ReadTimeout, httpx.ConnectError, httpx.Response(500, text="boom")]
    with pytest.raises(
        OpenAIBackendError,
        match=r"giving up after 2 retries; last error: HTTP 500: boom; the server answered with errors",
    ):
        _post_through_mock(gen, answers)
    assert not answers
    assert gen.counters == {"retry:timeout": 1, "retry:connection_error": 1, "failed": 1}

    once = OpenAIGenerator(model="m", api_key_env=None, max_retries=0)
    with pytest.raises(
        OpenAIBackendError, match=r"giving up after 0 retries; last error: ConnectError: injected"
    ):
        _post_through_mock(once, [httpx.ConnectError])
    assert once.counters == {"failed": 1}
