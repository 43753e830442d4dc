"""The openai backend against a real OpenAI-compatible server on loopback (``transformers
serve`` on the packaged SmolLM2), behind a proxy that fails some requests; the API key never
reaches an output file. One server for the module; ``rr`` runs in-process
(:func:`tests.test_cli_errors.rr_main`): the server is the other process that matters."""

from __future__ import annotations

import importlib.util
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rr import model_identity
from rr.config import instantiate, job_id, semantic_config
from rr.generation.hf import HFGenerator
from rr.generation.openai import OpenAIGenerator
from rr.records import GenerationParams, Request

from .conftest import compose_config
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


def api_job(model: str, base_url: str, tmp_path: Path, *overrides: str) -> list[str]:
    """The overrides of a small closed-book job (2 questions, 4 tokens) against ``base_url``."""
    return [
        "generator=openai",
        f"generator.model={model}",
        f"generator.base_url={base_url}",
        "generator.api_key_env=RR_TEST_OPENAI_KEY",
        "generator.max_new_tokens=4",
        "strategy=closed_book",
        "grid.k=[0]",
        "dataset.n=2",
        "progress=false",
        f"paths.output_root={tmp_path / 'out'}",
        *overrides,
    ]


def test_cli_job_through_flaky_server_never_writes_the_key(
    server: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, model = server
    monkeypatch.setenv("RR_TEST_OPENAI_KEY", KEY)
    # the first POST is the model's identity request at compose time (rr.model_identity.api_reported_model)
    with FaultProxy(url.removesuffix("/v1"), ["pass", "503"]) as proxy:
        code, out, err = rr_main(
            api_job(
                model,
                proxy.base_url,
                tmp_path,
                "generator.tokenizer=packaged:smollm2-135m-instruct",
                "generator.backoff_s=0.01",
            ),
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


# -- an API model is the model its server reports answering with (issue 43) ----------------------
#: The one fake part of these tests: the proxy serves the packaged SmolLM2 under the alias ``m`` and
#: rewrites each answer's ``model`` field to a dated snapshot (``m-2024-01``, later ``m-2024-06``), as
#: OpenAI answers ``gpt-4o`` with ``gpt-4o-2024-08-06``. No provider that moves an alias is reachable
#: here; everything else (the server, its answers, the identity request, the job) is real.
ALIAS = "m"


@pytest.fixture
def own_api_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's record of reported models, and a fresh per-process memo (as a new process has)."""
    monkeypatch.setenv("RR_IDENTITY_CACHE", str(tmp_path / "identity" / "model_identity.json"))
    monkeypatch.setattr(model_identity, "_api_memo", {})
    monkeypatch.setenv("RR_TEST_OPENAI_KEY", KEY)
    return model_identity.api_models_file()


def job_summary(tmp_path: Path, jid: str) -> dict:
    (path,) = [p for p in (tmp_path / "out").rglob("summary.json") if p.parent.name == jid]
    return json.loads(path.read_text())


def test_a_moved_alias_is_a_new_job_that_misses_the_cache(
    server: tuple[str, str],
    own_api_records: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The provider moves ``m`` from one snapshot to the next: the rerun (``force=true``) is a new job
    whose cache key misses the old snapshot's answers (they were served before: same id, same key)."""
    url, path = server
    with FaultProxy(url.removesuffix("/v1"), [], alias=(ALIAS, path), answer_as="m-2024-01") as proxy:
        args = api_job(ALIAS, proxy.base_url, tmp_path)
        first_id = job_id(compose_config(args))  # as the CLI composes it
        code, _, err = rr_main(args, monkeypatch, capsys)
        assert code == 0, err[-3000:]
        first = job_summary(tmp_path, first_id)
        assert first["model_calls"] == 2
        assert proxy.auth[0] == f"Bearer {KEY}"  # the identity request sends the key as the backend does

        proxy.answer_as = "m-2024-06"  # the provider moved the alias
        model_identity._api_memo.clear()  # a later process asks again
        second_id = job_id(compose_config([*args, "force=true"]))
        assert second_id != first_id
        code, _, err = rr_main([*args, "force=true"], monkeypatch, capsys)
        assert code == 0, err[-3000:]
    second = job_summary(tmp_path, second_id)
    assert second["cache_hits"] == 0 and second["model_calls"] == 2  # asked again, not served m-2024-01's
    assert (first["model"]["reported_model"], second["model"]["reported_model"]) == ("m-2024-01", "m-2024-06")
    assert KEY not in own_api_records.read_text()


def test_an_unreachable_server_is_identified_by_its_recorded_answer(
    server: tuple[str, str], own_api_records: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The answer is recorded per user: a server that refuses (401) or cannot be reached keeps the
    job id it had; with nothing recorded nothing is added (the id it had before identities). A server
    that moves the alias while a job runs is said once, naming both snapshots."""
    url, path = server
    with FaultProxy(url.removesuffix("/v1"), [], alias=(ALIAS, path), answer_as="m-2024-06") as proxy:
        args = api_job(ALIAS, proxy.base_url, tmp_path)
        answered = compose_config(args)
        answered_id = job_id(answered)  # ids are computed when asked: kept as they were now
        assert semantic_config(answered)["generator"]["model_identity"] == "reported:m-2024-06"
        assert json.loads(own_api_records.read_text()) == {f"{proxy.base_url}|chat|{ALIAS}": "m-2024-06"}

        gen = instantiate(answered.generator)
        assert gen.identity()["reported_model"] == "m-2024-06"  # the job id's, from the process memo
        proxy.answer_as = "m-2024-09"  # moved while the job runs
        with caplog.at_level(logging.WARNING, logger="rr.generation.openai"):
            gen.generate(
                [gen.render(Request.user(q)) for q in ("Hi", "Hello")], GenerationParams(max_new_tokens=2)
            )
        (warning,) = [r.getMessage() for r in caplog.records if "m-2024-09" in r.getMessage()]
        assert "m-2024-06" in warning and gen.counters["reported_model_changed"] == 1

        model_identity._api_memo.clear()
        proxy.faults.append("401")  # refused
        assert job_id(compose_config(args)) == answered_id
    model_identity._api_memo.clear()  # the proxy is gone: nothing listens on its port
    start = time.monotonic()
    unreachable = compose_config(args)
    assert job_id(unreachable) == answered_id and time.monotonic() - start < 5

    own_api_records.unlink()  # nothing recorded
    model_identity._api_memo.clear()
    unknown = compose_config(args)
    assert "model_identity" not in semantic_config(unknown)["generator"]
    assert job_id(unknown) != answered_id


def test_status_report_and_plan_send_no_request_to_the_server(
    server: tuple[str, str],
    own_api_records: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The commands that read jobs read the identity the job recorded: the proxy counts no request
    (issue 52: `rr report` sent the identity probe, a chat completion billed to the user's key). On a
    machine without the per-user record the job folder's own summary still gives its id."""
    url, path = server
    with FaultProxy(url.removesuffix("/v1"), [], alias=(ALIAS, path), answer_as="m-2024-01") as proxy:
        args = api_job(ALIAS, proxy.base_url, tmp_path)
        code, _, err = rr_main(args, monkeypatch, capsys)
        assert code == 0, err[-3000:]
        (folder,) = [p.parent for p in (tmp_path / "out").rglob("summary.json")]
        posts = proxy.posts
        for record in (True, False):  # this machine; another one (nothing recorded per user)
            if not record:
                own_api_records.unlink()
            model_identity._api_memo.clear()  # a new process
            code, out, err = rr_main(["status", str(tmp_path / "out")], monkeypatch, capsys)
            assert code == 0 and "1 done" in out, out + err
            report = [
                "report",
                str(tmp_path / "out"),
                "--out",
                str(tmp_path / f"report-{record}"),
                "--no-site",
            ]
            code, out, err = rr_main(report, monkeypatch, capsys)
            assert code == 0, err[-3000:]
            code, out, err = rr_main(
                ["plan", *args[:-1], f"paths.output_root={tmp_path / 'plan'}"], monkeypatch, capsys
            )
            assert code == 0, err[-3000:]
            assert proxy.posts == posts, f"a reading command sent {proxy.posts - posts} request(s)"
            if record:  # the plan names the job by the recorded identity's id (unknown elsewhere)
                assert folder.name in out, out
