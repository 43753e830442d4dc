"""The openai backend against a real OpenAI-compatible server on loopback (``transformers
serve`` on the packaged SmolLM2), behind a proxy that fails some requests; the API key never
reaches an output file. One server for the module; ``rr`` runs in-process
(:func:`tests.test_cli_errors.rr_main`): the server is the other process that matters."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rr.generation.hf import HFGenerator
from rr.generation.openai import OpenAIGenerator
from rr.records import GenerationParams, Request

from .openai_servers import FaultProxy, packaged_model_path, transformers_serve
from .test_cli_errors import rr_main

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("fastapi") is None or importlib.util.find_spec("uvicorn") is None,
    reason="transformers serve needs fastapi and uvicorn (dev extra)",
)

KEY = "sk-rr-test-4f1d9c2a7b"  # a fake key: must reach the server and never a file


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    path = packaged_model_path()
    with transformers_serve(path, tmp_path_factory.mktemp("serve") / "serve.log") as url:
        yield url, path


def test_chat_and_completions_with_retries(server: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    url, model = server
    monkeypatch.setenv("RR_TEST_OPENAI_KEY", KEY)
    questions = ["What is the capital of France?", "What is 2 + 2?", "Name a primary colour."]
    with FaultProxy(url.removesuffix("/v1"), ["429", "500"]) as proxy:
        gen = OpenAIGenerator(
            model=model,
            base_url=proxy.base_url,
            api_key_env="RR_TEST_OPENAI_KEY",
            concurrency=3,
            backoff_s=0.01,
        )
        prompts = [gen.render(Request.user(q)) for q in questions]
        out = gen.generate(prompts, GenerationParams(max_new_tokens=6))
        assert proxy.posts == 5 and set(proxy.auth) == {f"Bearer {KEY}"}
    assert gen.counters == {"retry:http_429": 1, "retry:http_500": 1}
    assert len(out) == 3 and all(c.text and 0 < c.completion_tokens <= 6 and c.prompt_tokens > 5 for c in out)
    assert "paris" in out[0].text.lower()

    # completions endpoint: the prompt is rendered locally exactly as the hf backend renders it
    comp = OpenAIGenerator(
        model=model,
        base_url=url,
        endpoint="completions",
        tokenizer="packaged:smollm2-135m-instruct",
        api_key_env=None,
    )
    req = Request.user(questions[0])
    assert comp.render(req) == HFGenerator().render(req)
    (c,) = comp.generate([comp.render(req)], GenerationParams(max_new_tokens=6))
    assert "paris" in c.text.lower() and c.prompt_tokens == comp.count_tokens([comp.render(req)])[0]


def test_cli_job_through_flaky_server_never_writes_the_key(
    server: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, model = server
    monkeypatch.setenv("RR_TEST_OPENAI_KEY", KEY)
    with FaultProxy(url.removesuffix("/v1"), ["503"]) as proxy:
        code, out, err = rr_main(
            [
                "generator=openai",
                f"generator.model={model}",
                f"generator.base_url={proxy.base_url}",
                "generator.api_key_env=RR_TEST_OPENAI_KEY",
                "generator.tokenizer=packaged:smollm2-135m-instruct",
                "generator.backoff_s=0.01",
                "generator.max_new_tokens=4",
                "strategy=closed_book",
                "grid.k=[0]",
                "dataset.n=2",
                "progress=false",
                f"paths.output_root={tmp_path / 'out'}",
            ],
            monkeypatch,
            capsys,
        )
        assert code == 0, err[-3000:]
        assert set(proxy.auth) == {f"Bearer {KEY}"}
    (summary_path,) = (tmp_path / "out").rglob("summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["model_calls"] == 2
    assert summary["counters"].get(f"{model.rstrip('/').split('/')[-1]}:retry:http_503") == 1
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "config.yaml" for p in files) and any(p.suffix == ".jsonl" for p in files)
    leaked = [str(p) for p in files if KEY.encode() in p.read_bytes()]
    assert leaked == [] and KEY not in out + err
    assert "RR_TEST_OPENAI_KEY" in (summary_path.parent / "config.yaml").read_text()
