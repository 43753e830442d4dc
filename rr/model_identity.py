"""What a model *is*, for job ids and cache keys (CONVENTIONS.md item 7): never only its name or path.

* ``packaged:<alias>``: the package's name and version, which the alias pins in rr's code (the
  ``hf`` / ``llamacpp`` / ``dense`` backends put them in their cache keys); nothing is added to the
  job id, so the demo keeps its id.
* a local folder: ``sha256:<digest>`` of its files (weights, config, tokenizer; documentation and
  hidden files left out), each file streamed once and its digest kept in a per-user cache keyed by
  (path, size, mtime), so a 140 GB folder is read once, not once per job.
* a local file (a ``.gguf``): the same, for that one file.
* a hub id without a pinned revision: the commit the hub's ``main`` (or the named branch) points
  to: asked of the hub when online, else read from the local hub cache; ``None`` when neither
  knows (offline and never downloaded: the job cannot load it either).
* an API model (``generator=openai``): the model id its server reports answering with (a dated
  snapshot such as ``gpt-4o-2024-08-06`` behind the alias ``gpt-4o``): asked of the server once
  per process (:func:`api_reported_model`: one 1-token request), recorded per user, and the
  recorded answer used while the server cannot be reached, and by the commands that read jobs
  (:func:`recorded_identities`: ``rr status``, ``rr report``, ``rr plan`` send no request).

The job id (:func:`rr.config.identity.job_id`) adds :func:`model_identity` beside each component's ``model``,
and :func:`content_identities` beside the tokenizers, query encoders and local indexes a component reads
(:data:`CONTENT_KEYS`); the backends use the same functions for their cache keys and fingerprints.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

log = logging.getLogger(__name__)

PACKAGED_PREFIX = "packaged:"
#: File names left out of a folder's identity: documentation and licences change no output.
_SKIPPED_SUFFIXES = (".md", ".txt.license", ".gitattributes")
_SKIPPED_NAMES = ("LICENSE", "LICENSE.txt", "NOTICE", "USE_POLICY.md")
#: Targets whose ``model`` names a hub repository when it is not a path (others: API names).
HUB_TARGETS = (
    "rr.generation.hf.HFGenerator",
    "rr.generation.vllm.VLLMGenerator",
    "rr.retrieval.dense.DenseRetriever",
)
#: The generator whose ``model`` is an API model, identified by the id its server reports.
API_TARGET = "rr.generation.openai.OpenAIGenerator"
_FAISS_TARGET = "rr.retrieval.pyserini_faiss.PyseriniFaissRetriever"


class ContentKey(NamedTuple):
    """A setting besides ``model`` that names content: the targets that read it, and whether a hub
    id in it is identified by its commit (else only a local path is, by its digest)."""

    targets: tuple[str, ...]
    hub: bool


#: Settings that name content: each gets ``<key>_identity`` beside it (:func:`content_identities`).
#: A prebuilt index is identified only as a local folder: pyserini's named indexes stay named.
CONTENT_KEYS: dict[str, ContentKey] = {
    "tokenizer": ContentKey(("rr.generation.llamacpp.LlamaCppGenerator", API_TARGET), hub=True),
    "query_encoder": ContentKey((_FAISS_TARGET,), hub=True),
    "prebuilt_index": ContentKey((_FAISS_TARGET,), hub=False),
}
_CHUNK = 1 << 24
_lock = threading.Lock()
_api_lock = threading.Lock()
#: (model, revision) -> hub commit, per process (one hub request per model and process).
_hub_memo: dict[tuple[str, str | None], str | None] = {}
#: (base_url, model, endpoint) -> the model the server reported, per process (one request each).
_api_memo: dict[tuple[str, str, str], str | None] = {}
#: The file beside :func:`cache_file` recording each API model's last reported id.
API_MODELS_FILE = "api_models.json"
#: Seconds the identity request may take (connect: 3 s), so an unreachable server costs little.
API_TIMEOUT_S = 10.0
#: While not empty, :func:`api_reported_model` asks no server: it answers from these (model -> the
#: id recorded for it, innermost first), then from the per-user record (:func:`recorded_identities`).
_recorded_only: list[Mapping[str, str]] = []


def cache_file() -> Path:
    """The per-user file of file digests: ``$RR_IDENTITY_CACHE``, else ``$XDG_CACHE_HOME/rr`` or
    ``~/.cache/rr``, ``model_identity.json``."""
    if os.environ.get("RR_IDENTITY_CACHE"):
        return Path(os.environ["RR_IDENTITY_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rr" / "model_identity.json"


def _load_cache(path: Path | None = None) -> dict[str, str]:
    try:
        data = json.loads((path or cache_file()).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_cache(entries: dict[str, str], path: Path | None = None) -> None:
    path = path or cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entries, sort_keys=True))
        os.replace(tmp, path)
    except OSError as e:  # a read-only home: identities are still right, only recomputed next time
        log.debug("model identity cache %s not written: %s", path, e)


def _stat_key(path: Path) -> str:
    st = path.stat()
    return f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def file_digests(paths: list[Path]) -> list[str]:
    """sha256 of each file, read only for files whose (path, size, mtime) the user cache lacks."""
    with _lock:
        cache = _load_cache()
        keys = [_stat_key(p) for p in paths]
        missing = [(k, p) for k, p in zip(keys, paths, strict=True) if k not in cache]
        if missing:
            size = sum(p.stat().st_size for _, p in missing)
            if size > 1 << 30:  # minutes for a large model: said (a warning shows before logging is set up)
                log.warning(
                    "rr: reading %.1f GB of model files once for the model's identity (a few s per GB; "
                    "then kept in %s)",
                    size / 1e9,
                    cache_file(),
                )
            for key, path in missing:
                cache[key] = _digest(path)
            _save_cache(cache)
        return [cache[k] for k in keys]


def _identity_files(folder: Path) -> list[Path]:
    files = []
    for root, dirs, names in os.walk(folder, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith(".") or name in _SKIPPED_NAMES or name.endswith(_SKIPPED_SUFFIXES):
                continue
            files.append(Path(root) / name)
    return files


def local_identity(model: str) -> str | None:
    """``sha256:<64 hex>`` of a local model folder's files (relative names and contents) or of a
    local file; ``None`` when ``model`` is not an existing local path (a hub id, ``packaged:``)."""
    if model.startswith(PACKAGED_PREFIX):
        return None
    path = Path(os.path.expanduser(model))
    if not path.exists():
        return None
    if path.is_file():
        return "sha256:" + file_digests([path])[0]
    files = _identity_files(path)
    digests = file_digests(files)
    listing = [[f.relative_to(path).as_posix(), d] for f, d in zip(files, digests, strict=True)]
    return "sha256:" + hashlib.sha256(json.dumps(listing).encode()).hexdigest()


def _hub_cache_commit(model: str, revision: str | None) -> str | None:
    """The commit the local hub cache's ``refs/<revision or main>`` holds for ``model``."""
    try:
        from huggingface_hub import constants
    except ImportError:
        return None
    ref = Path(constants.HF_HUB_CACHE) / f"models--{model.replace('/', '--')}" / "refs" / (revision or "main")
    try:
        return ref.read_text().strip() or None
    except OSError:
        return None


def hub_commit(model: str, revision: str | None = None) -> str | None:
    """The commit ``model`` at ``revision`` (a branch or tag; ``None`` = main) resolves to: asked of
    the hub (3 s timeout) unless ``HF_HUB_OFFLINE`` is set, else the local hub cache's ref."""
    key = (model, revision)
    if key not in _hub_memo:
        commit = None
        offline = os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on")
        if not offline:
            try:
                from huggingface_hub import HfApi

                commit = HfApi().model_info(model, revision=revision, timeout=3).sha
            except Exception as e:  # no network, unknown id, gated: the cache may still know
                log.debug("hub revision of %s not known online: %s", model, e)
        _hub_memo[key] = commit or _hub_cache_commit(model, revision)
    return _hub_memo[key]


def _is_commit(revision: str | None) -> bool:
    return revision is not None and len(revision) == 40 and all(c in "0123456789abcdef" for c in revision)


def model_identity(model: str, revision: str | None = None, hub: bool = True) -> str | None:
    """What the job id adds beside ``model``: a local path's content digest, a hub id's commit
    (``hub``: only for components that load hub repositories), ``None`` where the config already
    says it all (``packaged:``, a pinned commit) or nothing is known."""
    if model.startswith(PACKAGED_PREFIX):
        return None
    local = local_identity(model)
    if local is not None:
        return local
    if not hub or _is_commit(revision) or "/" not in model.strip("/"):
        # A name without an owner is a hub alias (e.g. gpt2) or an API model: left as before.
        return None
    return hub_commit(model, revision)


def content_identities(settings: dict[str, Any]) -> dict[str, str]:
    """``{"<key>_identity": ...}`` for each :data:`CONTENT_KEYS` key of ``settings`` whose value's
    identity is known (:func:`model_identity`: a local folder's or file's digest, a hub id's commit);
    keys with a ``None`` identity (``packaged:``, a pyserini index name, unknown) are left out, so
    job ids and cache keys stay where nothing is known."""
    out = {}
    for key, value in settings.items():
        if key in CONTENT_KEYS and isinstance(value, str):
            ident = model_identity(value, hub=CONTENT_KEYS[key].hub)
            if ident is not None:
                out[f"{key}_identity"] = ident
    return out


def api_models_file() -> Path:
    """The per-user record of API models' reported ids: :data:`API_MODELS_FILE` beside :func:`cache_file`."""
    return cache_file().with_name(API_MODELS_FILE)


def _ask_api_model(
    base_url: str,
    model: str,
    endpoint: str,
    api_key_env: str | None,
    max_tokens_field: str,
    extra_body: dict[str, Any] | None,
) -> str | None:
    """The ``model`` field of the server's answer to one greedy 1-token request; ``None`` when it
    cannot be reached, refuses or answers without one."""
    import httpx

    body: dict[str, Any] = {"model": model, max_tokens_field: 1, "temperature": 0.0}
    if endpoint == "chat":
        body["messages"] = [{"role": "user", "content": "Hi"}]
    else:
        body["prompt"] = "Hi"
    body.update(extra_body or {})
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(api_key_env) if api_key_env else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    url = f"{base_url}/{'chat/completions' if endpoint == 'chat' else 'completions'}"
    try:
        r = httpx.post(url, json=body, headers=headers, timeout=httpx.Timeout(API_TIMEOUT_S, connect=3.0))
    except Exception as e:  # unreachable (DNS, refused, timeout) or a malformed URL: composing goes on
        log.info("API model %s at %s: no answer for its identity (%s)", model, base_url, type(e).__name__)
        return None
    if r.status_code != 200:
        log.info("API model %s at %s: identity request answered %d", model, base_url, r.status_code)
        return None
    try:
        reported = r.json().get("model")
    except (ValueError, AttributeError):
        reported = None
    return reported if isinstance(reported, str) and reported else None


@contextmanager
def recorded_identities(known: Mapping[str, str] | None = None) -> Iterator[None]:
    """Within it (or a function it decorates), :func:`api_reported_model` sends no request: an API
    model's identity is the one ``known`` gives (model -> reported id, e.g. a job folder's
    ``summary.json``), else the one recorded per user when a job last asked, else unknown. For the
    commands that read jobs and never run one (``rr status``, ``rr report``, ``rr plan``): a
    reporting command makes no call billed to the user's key (issue 52)."""
    _recorded_only.append(dict(known or {}))
    try:
        yield
    finally:
        _recorded_only.pop()


def api_reported_model(
    base_url: str,
    model: str,
    endpoint: str = "chat",
    api_key_env: str | None = None,
    max_tokens_field: str = "max_tokens",
    extra_body: dict[str, Any] | None = None,
) -> str | None:
    """The model id an OpenAI-compatible server reports answering ``model`` with.

    Asked once per process and (base_url, model, endpoint): one request of 1 token at
    temperature 0 (``endpoint`` ``chat``: a one-word user message; ``completions``: a one-word
    prompt), with the API key read from ``api_key_env`` as the backend sends it, at most
    :data:`API_TIMEOUT_S` seconds. Each answer is recorded per user (:func:`api_models_file`);
    when the server cannot be reached or refuses (no network, 401, ...) the recorded answer is
    returned, else ``None``. Inside :func:`recorded_identities` nothing is asked. Never raises.
    """
    base_url = base_url.rstrip("/")
    key = (base_url, model, endpoint)
    if _recorded_only:  # a command that reads jobs (rr status, report, plan): no request, no memo
        for known in reversed(_recorded_only):
            if model in known:
                return known[model]
        return _api_memo.get(key) or _load_cache(api_models_file()).get(f"{base_url}|{endpoint}|{model}")
    with _api_lock:  # its own lock: a slow server must not hold up file hashing in other threads
        if key not in _api_memo:
            reported = _ask_api_model(base_url, model, endpoint, api_key_env, max_tokens_field, extra_body)
            path, record = api_models_file(), f"{base_url}|{endpoint}|{model}"
            recorded = _load_cache(path)
            if reported is None:
                reported = recorded.get(record)
                if reported is not None:
                    log.info("API model %s at %s: using its recorded id %s", model, base_url, reported)
            elif recorded.get(record) != reported:
                _save_cache({**recorded, record: reported}, path)
            _api_memo[key] = reported
        return _api_memo[key]
