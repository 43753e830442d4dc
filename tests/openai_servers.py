"""Real OpenAI-compatible servers on loopback for tests and benchmarks.

* :func:`transformers_serve`: ``transformers serve`` (the OpenAI-compatible server that ships
  with transformers: ``/v1/chat/completions``, ``/v1/completions``) on the packaged
  SmolLM2-135M, CPU. Needs fastapi + uvicorn (dev extra).
* :class:`FaultProxy`: a reverse proxy (stdlib ``http.server``) in front of it that answers
  chosen requests with 429 / 500 or stalls them past the client's timeout, and records the
  ``Authorization`` headers it saw; it can also serve an alias as a provider does (the request's
  model name mapped to the served one, the answer's ``model`` rewritten to a dated snapshot).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def packaged_model_path() -> str:
    from rr.generation.hf import HFGenerator

    return HFGenerator()._model_path()


def wait_for_health(proc: subprocess.Popen, port: int, log_path: Path, startup_s: float, what: str) -> None:
    """Wait until the server ``proc`` answers ``/health`` on ``port``; raise (with its log's end)
    when it exits first or is not up within ``startup_s``."""
    deadline = time.monotonic() + startup_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited {proc.returncode}: {log_path.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start in {startup_s}s: {log_path.read_text()[-2000:]}")
        time.sleep(0.5)


@contextmanager
def transformers_serve(
    model_path: str, log_path: Path, startup_s: float = 240, extra_args: list[str] | None = None
) -> Iterator[str]:
    """Run ``transformers serve MODEL`` on a free loopback port; yields the ``/v1`` base URL."""
    exe = shutil.which("transformers") or str(Path(sys.executable).parent / "transformers")
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [
                exe,
                "serve",
                model_path,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--device",
                "cpu",
                *(extra_args or []),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        wait_for_health(proc, port, log_path, startup_s, "transformers serve")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class FaultProxy:
    """A reverse proxy that injects failures, in a background thread.

    Args:
        upstream: Base URL of the real server (``http://127.0.0.1:PORT``, no ``/v1``).
        faults: Actions for the first POSTs, in arrival order: an HTTP status such as
            ``"429"`` (sent with ``Retry-After: 0``), ``"500"`` or ``"401"``, or ``"stall"``
            (wait ``stall_s`` then answer 504: the client has timed out by then); later POSTs
            pass through.
        alias: ``(name, served)``: requests for the model ``name`` are sent upstream for ``served``
            (the model the server really loaded), as a provider resolves an alias.
        answer_as: The ``model`` field written into every JSON answer (a provider's dated snapshot
            behind the alias); settable while the proxy runs. ``None``: the server's own.
    """

    def __init__(
        self,
        upstream: str,
        faults: list[str],
        stall_s: float = 3.0,
        alias: tuple[str, str] | None = None,
        answer_as: str | None = None,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.faults = list(faults)
        self.stall_s = stall_s
        self.alias = alias
        self.answer_as = answer_as
        self.posts = 0
        self.auth: list[str | None] = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with proxy.lock:
                    proxy.posts += 1
                    proxy.auth.append(self.headers.get("Authorization"))
                    action = proxy.faults.pop(0) if proxy.faults else "pass"
                if action.isdigit():
                    extra = {"Retry-After": "0"} if action == "429" else {}
                    self._reply(int(action), b'{"error": "injected"}', extra)
                elif action == "stall":
                    time.sleep(proxy.stall_s)
                    self._reply(504, b'{"error": "stalled"}')
                else:
                    self._forward(body)

            def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    for k, v in {"Content-Type": "application/json", **(headers or {})}.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): fine

            def _forward(self, body: bytes | None) -> None:
                if proxy.alias is not None:
                    body = proxy._rewrite(body, "model", *proxy.alias)
                req = urllib.request.Request(
                    proxy.upstream + self.path,
                    data=body,
                    method="POST" if body is not None else "GET",
                    headers={"Content-Type": "application/json"},
                )
                try:
                    with urllib.request.urlopen(req, timeout=600) as r:
                        answer = r.read()
                        if proxy.answer_as is not None:
                            answer = proxy._rewrite(answer, "model", None, proxy.answer_as) or answer
                        self._reply(r.status, answer)
                except urllib.error.HTTPError as e:
                    self._reply(e.code, e.read())

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @staticmethod
    def _rewrite(body: bytes | None, key: str, old: str | None, new: str) -> bytes | None:
        """``body`` (JSON) with ``key`` set to ``new`` where it is ``old`` (``None``: any value)."""
        if not body:
            return body
        try:
            data = json.loads(body)
        except ValueError:
            return body
        if not isinstance(data, dict) or key not in data or (old is not None and data[key] != old):
            return body
        return json.dumps({**data, key: new}).encode()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
