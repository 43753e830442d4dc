"""OpenAI-compatible HTTP backend: vLLM ``serve``, SGLang, TGI, llama.cpp server, ``transformers
serve``, OpenAI, Azure OpenAI, ...

Requests go out concurrently (``asyncio`` + ``httpx``, at most ``concurrency`` in flight),
each with a timeout; 408/409/429/5xx answers, timeouts and connection errors are retried
(with ``tenacity``) with exponential backoff (honouring ``Retry-After``), up to ``max_retries``
times; any other error fails the job with the server's message. Retries and failures are
counted (``counters`` in ``summary.json``).

The API key is read from the environment variable named by ``api_key_env`` when a request is
sent; it is never stored on the object, in configs, logs or outputs.

Prompts and cache keys: with ``endpoint: chat`` the server applies the chat template, so the
"prompt" that keys the cache is the canonical JSON of the messages (prefixed ``<rr-chat>``).
With ``endpoint: completions`` the prompt is rendered locally with ``tokenizer``'s chat
template, exactly as the ``hf`` backend renders it, so both share cache entries for the same
model and revision. Token counts (for fitting documents to the window) use ``tokenizer``
when set, else an estimate of 4 characters per token.

What the model is: the model id the server reports answering with (a dated snapshot behind an
alias), asked once per process (:func:`rr.model_identity.api_reported_model`), is in the job id
and the cache key, so a provider moving an alias makes a new job that misses the old snapshot's
answers; a job whose server starts answering with another model mid-run says so once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt
from tenacity.wait import wait_base

from rr.errors import UserError, require_positive
from rr.generation.base import Completion, ConfiguredDecoding
from rr.hashing import stable_json
from rr.model_identity import api_reported_model, content_identities, local_identity
from rr.records import GenerationParams, Request
from rr.registry import component

log = logging.getLogger(__name__)

#: HTTP statuses worth retrying: request timeout, conflict, rate limit, server errors.
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
CHAT_PREFIX = "<rr-chat>"


class OpenAIBackendError(UserError, RuntimeError):
    """A request failed for good (non-retryable status, or retries exhausted). The server is the
    user's (its address, its key, its state), so the command prints it as one line (a user error):
    the server's URL, the error, and what to check."""


#: What to check when the retries of one cause run out (:meth:`OpenAIGenerator._request`).
CHECK = {
    "connection_error": "is the server running, at that address? (generator.base_url; `curl {base_url}/models` "
    "answers when it is)",
    "timeout": "the server is up but did not answer in time: raise generator.timeout_s or lower "
    "generator.concurrency",
}


class RetryableError(Exception):
    """One attempt failed in a way worth retrying (a retryable status, a timeout, a lost connection).

    Args:
        cause: Counter name of the failure: ``timeout``, ``connection_error`` or ``http_<status>``
            (counted as ``retry:<cause>``).
        message: What went wrong, shown in the final error when the retries run out.
        retry_after: The answer's ``Retry-After`` header, if any.
    """

    def __init__(self, cause: str, message: str, retry_after: str | None = None) -> None:
        super().__init__(message)
        self.cause = cause
        self.message = message
        self.retry_after = retry_after


def chat_prompt(messages: list[dict[str, str]]) -> str:
    """The cache-key prompt of a chat request: canonical JSON of its messages."""
    return CHAT_PREFIX + stable_json(messages)


def chat_messages(prompt: str) -> list[dict[str, str]] | None:
    """The messages of a :func:`chat_prompt` string; ``None`` for a plain prompt."""
    if not prompt.startswith(CHAT_PREFIX):
        return None
    return json.loads(prompt[len(CHAT_PREFIX) :])


def build_payload(
    model: str,
    prompt: str,
    params: GenerationParams,
    endpoint: str,
    max_tokens_field: str = "max_tokens",
    extra_body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one request (``endpoint``: ``chat`` or ``completions``)."""
    body: dict[str, Any] = {"model": model, max_tokens_field: params.max_new_tokens}
    messages = chat_messages(prompt)
    if endpoint == "chat":
        if messages is None:
            messages = [{"role": "user", "content": prompt}]
        body["messages"] = messages
    elif endpoint == "completions":
        if messages is not None:
            raise ValueError("a chat prompt cannot be sent to the completions endpoint")
        body["prompt"] = prompt
    else:
        raise ValueError(f"generator.endpoint must be 'chat' or 'completions', got {endpoint!r}")
    body["temperature"] = 0.0 if params.greedy else params.temperature
    if not params.greedy:
        body["top_p"] = params.top_p
        if params.seed is not None:
            body["seed"] = params.seed
    if params.stop:
        body["stop"] = list(params.stop)
    body.update(extra_body or {})
    return body


def parse_response(body: dict[str, Any], endpoint: str) -> tuple[str, int | None, int | None]:
    """(text, prompt tokens, completion tokens) of a response body (token counts may be missing)."""
    try:
        choice = body["choices"][0]
        text = choice["message"]["content"] if endpoint == "chat" else choice["text"]
    except (KeyError, IndexError, TypeError) as e:
        raise OpenAIBackendError(f"unexpected response body (no choices[0] text): {str(body)[:300]}") from e
    usage = body.get("usage") or {}
    return text or "", usage.get("prompt_tokens"), usage.get("completion_tokens")


def backoff_delay(
    attempt: int, base_s: float, max_s: float, retry_after: str | None = None, jitter: float = 0.0
) -> float:
    """Seconds to wait before retry ``attempt`` (0-based): ``base * 2**attempt`` capped at ``max_s``,
    minus up to ``jitter`` of itself at random; at least the server's ``Retry-After`` (seconds,
    capped at ``max_s``), which the jitter never shortens."""
    delay = min(max_s, base_s * 2**attempt) * (1 - jitter * random.random())
    if retry_after is not None:
        with contextlib.suppress(ValueError):  # an HTTP date: keep our own backoff
            delay = max(delay, min(max_s, float(retry_after)))
    return delay


class BackoffWait(wait_base):
    """tenacity wait strategy: :func:`backoff_delay` after the failed attempt, using the
    ``Retry-After`` of the :class:`RetryableError` it raised (when it carries one)."""

    def __init__(self, base_s: float, max_s: float, jitter: float = 0.0) -> None:
        self.base_s = base_s
        self.max_s = max_s
        self.jitter = jitter

    def __call__(self, retry_state: RetryCallState) -> float:
        error = retry_state.outcome.exception() if retry_state.outcome is not None else None
        retry_after = error.retry_after if isinstance(error, RetryableError) else None
        return backoff_delay(
            retry_state.attempt_number - 1, self.base_s, self.max_s, retry_after, self.jitter
        )


@component("generator", "openai")
class OpenAIGenerator(ConfiguredDecoding):
    """A model behind an OpenAI-compatible HTTP API.

    Args:
        model: Model name sent to the server (``gpt-4o-2024-08-06``, or what ``vllm serve`` serves).
        base_url: API root, e.g. ``http://127.0.0.1:8000/v1`` or ``https://api.openai.com/v1``.
        api_key_env: Environment variable holding the API key (``None``: send none). An unset
            variable sends no key (local servers need none).
        endpoint: ``chat`` (``/chat/completions``; server-side chat template) or ``completions``
            (``/completions``; prompt rendered locally with ``tokenizer``).
        revision: Model version for the cache key (e.g. a dated model name or a commit).
        tokenizer: HF tokenizer (id, path or ``packaged:...``) for local rendering and token
            counts; ``None`` = estimate 4 characters per token (chat endpoint only).
        concurrency: Requests in flight at once.
        batch_size: Unused (accepted so experiments that set it compose); ``concurrency`` is
            this backend's throughput knob.
        timeout_s: Per-request timeout (seconds).
        max_retries: Retries per request on 408/409/429/5xx, timeouts and connection errors.
        backoff_s: First retry delay; doubles on every retry.
        max_backoff_s: Largest retry delay.
        seed: Sampling seed (sent and keyed only when sampling).
        max_tokens_field: ``max_tokens``, or ``max_completion_tokens`` (OpenAI reasoning models).
        context_window: Prompt + output budget in tokens; ``None`` = the tokenizer's model's
            (8192 without a tokenizer).
        system_prompt: Optional system message before every request's messages.
        extra_body: Extra JSON fields for every request (e.g. vLLM's ``structured_outputs``).
        model_cache_dir: Where packaged tokenizers are converted (``paths.model_cache_dir``).
        name: Name in the score table's ``generator`` column (default: ``model``'s last part).
        **kwargs: The decoding block (``max_new_tokens``, ``temperature``, ``top_p``, ``seed``,
            ``batch_size``), see :class:`~rr.generation.base.ConfiguredDecoding`.
    """

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        base_url: str = "http://127.0.0.1:8000/v1",
        api_key_env: str | None = "OPENAI_API_KEY",
        endpoint: str = "chat",
        revision: str | None = None,
        tokenizer: str | None = None,
        concurrency: int = 16,
        timeout_s: float = 120.0,
        max_retries: int = 6,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        max_tokens_field: str = "max_tokens",
        context_window: int | None = None,
        system_prompt: str | None = None,
        extra_body: dict[str, Any] | None = None,
        model_cache_dir: str | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        if endpoint not in ("chat", "completions"):
            raise ValueError(f"generator.endpoint must be 'chat' or 'completions', got {endpoint!r}")
        if endpoint == "completions" and tokenizer is None:
            raise ValueError("generator.endpoint=completions needs generator.tokenizer to render prompts")
        require_positive("concurrency", concurrency)
        super().__init__(**kwargs)
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.endpoint = endpoint
        self.revision = revision
        self.tokenizer_name = tokenizer
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_tokens_field = max_tokens_field
        self.system_prompt = system_prompt
        self.extra_body = dict(extra_body or {})
        self.model_cache_dir = model_cache_dir
        self.name = name or model.rstrip("/").split("/")[-1]
        self._context_window = context_window
        self._local: Any = None
        #: The model the server reported answering with (its responses' ``model`` field; None until one came).
        self.reported_model: str | None = None
        #: The reported model :meth:`identity` keyed the cache with (None: not asked, or not known).
        self._identity_reported: str | None = None
        #: retries / failures by cause; the pipeline adds them to summary.json ``counters``.
        self.counters: Counter[str] = Counter()
        #: How a retry waits its delay (seconds); tests swap in one that records and returns.
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    # -- identity, rendering, counting -------------------------------------------------------
    def identity(self) -> dict:
        """Model name and revision, plus ``reported_model``: the model the server reports answering
        with (:func:`rr.model_identity.api_reported_model`, as the job id holds it) when known, so
        an alias moved to another snapshot misses the old snapshot's cache entries; and
        ``tokenizer_identity`` when the tokenizer's content is known."""
        ident = {
            "model_id": self.model,
            "revision": self.revision or "unversioned",
            **content_identities({"tokenizer": self.tokenizer_name}),  # renders completions prompts
        }
        # A server serving a local folder (`vllm serve /models/x`) reports its path whatever is in it:
        # the folder's content, as the job id holds it, so changed weights miss the old answers.
        local = local_identity(self.model)
        if local is not None:
            ident["model_identity"] = local
        reported = api_reported_model(
            self.base_url, self.model, self.endpoint, self.api_key_env, self.max_tokens_field, self.extra_body
        )
        self._identity_reported = reported
        return ident if reported is None else {**ident, "reported_model": reported}

    @property
    def local(self) -> Any:
        """An ``hf`` generator used only for its tokenizer (never loads weights)."""
        if self._local is None and self.tokenizer_name is not None:
            from rr.generation.hf import HFGenerator

            self._local = HFGenerator(
                model=self.tokenizer_name,
                system_prompt=self.system_prompt,
                model_cache_dir=self.model_cache_dir,
            )
        return self._local

    @property
    def context_window(self) -> int:
        if self._context_window is None:
            self._context_window = self.local.context_window if self.local is not None else 8192
        return self._context_window

    def render(self, request: Request) -> str:
        if request.raw_prompt is not None:
            return request.raw_prompt
        if self.endpoint == "completions":
            return self.local.render(request)
        messages = request.chat()
        if self.system_prompt:
            messages = [{"role": "system", "content": self.system_prompt}, *messages]
        return chat_prompt(messages)

    def count_tokens(self, prompts: list[str]) -> list[int]:
        texts = []
        for p in prompts:
            messages = chat_messages(p)
            if messages is not None and self.local is not None:
                p = self.local.tokenizer.apply_chat_template(
                    messages, tokenize=False, add_generation_prompt=True
                )
            elif messages is not None:
                p = "\n".join(m["content"] for m in messages)
            texts.append(p)
        if self.local is not None:
            return self.local.count_tokens(texts)
        return [len(t) // 4 + 1 for t in texts]

    def _check_reported(self, reported: str) -> None:
        """Warn once when the server answers with another model than the one the job's identity
        (and cache key) holds: the provider moved the alias while the job ran."""
        expected = self._identity_reported
        if expected is not None and reported != expected and not self.counters["reported_model_changed"]:
            self.counters["reported_model_changed"] = 1
            log.warning(
                "%s at %s now answers with %s, but this job's id and cache key hold %s (the alias moved "
                "while the job ran): its answers mix both models",
                self.model,
                self.base_url,
                reported,
                expected,
            )

    # -- generation ----------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if key:
                headers["Authorization"] = f"Bearer {key}"
            elif not self.counters["no_api_key"]:
                self.counters["no_api_key"] = 1
                log.warning(
                    "environment variable %s is not set: sending requests without an API key",
                    self.api_key_env,
                )
        return headers

    def generate(
        self, prompts: list[str], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        if not prompts:
            return []
        coro = self._generate_all(prompts, params, progress)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        # Called from inside an event loop (a notebook): run ours in a thread.
        box: dict[str, Any] = {}
        thread = threading.Thread(target=lambda: box.setdefault("out", asyncio.run(coro)))
        thread.start()
        thread.join()
        return box["out"]

    async def _generate_all(
        self, prompts: Sequence[str], params: GenerationParams, progress: Any
    ) -> list[Completion]:
        import httpx

        url = f"{self.base_url}/{'chat/completions' if self.endpoint == 'chat' else 'completions'}"
        sem = asyncio.Semaphore(self.concurrency)
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        async with httpx.AsyncClient(timeout=self.timeout_s, limits=limits) as client:

            async def one(prompt: str) -> Completion:
                async with sem:
                    c = await self._request(client, url, prompt, params)
                if progress is not None:
                    progress.update(1)
                return c

            return list(await asyncio.gather(*(one(p) for p in prompts)))

    async def _request(self, client: Any, url: str, prompt: str, params: GenerationParams) -> Completion:
        """One prompt's completion: :meth:`_attempt`, retried by tenacity on a
        :class:`RetryableError` at most ``max_retries`` times, waiting :class:`BackoffWait`
        (jittered by up to half) before each retry and counting it as ``retry:<cause>``.

        Raises:
            OpenAIBackendError: a non-retryable answer (at once), or the retries ran out;
                either is counted as ``failed``.
        """
        payload = build_payload(
            self.model, prompt, params, self.endpoint, self.max_tokens_field, self.extra_body
        )

        def count_retry(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            if isinstance(error, RetryableError):  # always: nothing else is retried
                self.counters[f"retry:{error.cause}"] += 1

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=BackoffWait(self.backoff_s, self.max_backoff_s, jitter=0.5),
            retry=retry_if_exception_type(RetryableError),
            before_sleep=count_retry,
            sleep=self.sleep,
            reraise=True,
        )
        try:
            return await retrying(self._attempt, client, url, payload, prompt)
        except RetryableError as last:
            self.counters["failed"] += 1
            check = CHECK.get(last.cause, "the server answered with errors: see its log").format(
                base_url=self.base_url
            )
            raise OpenAIBackendError(
                f"{url}: giving up after {self.max_retries} retries; last error: {last.message}; {check}"
            ) from None

    async def _attempt(self, client: Any, url: str, payload: dict[str, Any], prompt: str) -> Completion:
        """Send the request once.

        Raises:
            RetryableError: a timeout, a connection error or a status in :data:`RETRY_STATUSES`.
            OpenAIBackendError: any other status (counted as ``failed``), or a 200 whose body has
                no ``choices[0]`` text.
        """
        import httpx

        try:
            r = await client.post(url, json=payload, headers=self._headers())
        except httpx.TimeoutException:
            raise RetryableError("timeout", f"no answer within {self.timeout_s}s") from None
        except httpx.TransportError as e:
            raise RetryableError("connection_error", f"{type(e).__name__}: {e}") from None
        if r.status_code in RETRY_STATUSES:
            raise RetryableError(
                f"http_{r.status_code}",
                f"HTTP {r.status_code}: {r.text[:200]}",
                r.headers.get("retry-after"),
            )
        if r.status_code != 200:
            self.counters["failed"] += 1
            hint = f" (is ${self.api_key_env} set?)" if r.status_code in (401, 403) else ""
            raise OpenAIBackendError(f"{url} answered {r.status_code}{hint}: {r.text[:500]}")
        body = r.json()
        text, n_prompt, n_out = parse_response(body, self.endpoint)
        if isinstance(body, dict) and isinstance(body.get("model"), str) and body["model"]:
            self._check_reported(body["model"])
            self.reported_model = body["model"]  # the model that answered (a dated version of an alias)
        if n_prompt is None:
            n_prompt = self.count_tokens([prompt])[0]
        if n_out is None:
            n_out = self.count_tokens([text])[0] if text else 0
        return Completion(text, int(n_prompt), int(n_out))
