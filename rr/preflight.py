"""Check, before any work starts, that every model, dataset and file a job names can be had.

Compute nodes of most clusters have no internet. A job that names a Hugging Face model or
dataset that is not in the local cache would otherwise fail after minutes of work with a long
traceback from deep inside ``transformers`` or ``datasets``. :func:`check_resources` walks the
composed config once, before anything is built or loaded, and raises one
:class:`MissingResourceError` naming every missing item, the config key that names it, and how
to fetch it ahead of time (``hf download ...`` on a machine with network, e.g. a login node).

What is checked, per component node (a config node with ``_target_``):

* ``model``, ``tokenizer``, ``embedding_model``, ``query_encoder`` holding a hub id (``org/name``; not
  ``packaged:...``, not a local path; an OpenAI-compatible backend's ``model`` is the server's):
  the model's ``config.json`` must be in the hub cache (``HF_HOME``), or, when the hub may be
  used (``HF_HUB_OFFLINE`` unset), the hub must answer that the model exists.
* a Hugging Face dataset loader (``rr.data.hf``) without ``data_files``: its ``path`` must be in
  the hub or ``datasets`` cache, or (online) exist on the hub.
* ``prebuilt_index`` (pyserini): offline (``HF_HUB_OFFLINE=1``, rr's offline switch), a folder of
  pyserini's cache (``$PYSERINI_CACHE/indexes``) must carry the index's name; online pyserini
  downloads it itself.
* ``path`` / ``data_files`` of the other components (JSONL datasets and corpora, RGB files,
  query files, local dataset copies): the file (or a match of the glob) must exist. A Wikipedia
  dump (``corpus=wiki_dump``) with ``chunks_path`` is not checked: once its shards exist the dump
  is only named. A missing dump named by its date (``enwiki-20240601-pages-articles.xml.bz2``, a
  paper's) is told where Wikimedia and the Internet Archive keep it.
* an API model (``generator=openai`` at a server other than this machine's, ``gpt-4o`` at
  api.openai.com): the variable its key is read from (``api_key_env``) must be set. A judge's
  generator is checked only where the judge's LLM checks are on (RGB's ``llm_rejection`` /
  ``llm_error_detection``).
"""

from __future__ import annotations

import functools
import glob
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from rr.errors import UserError

#: Keys of a component node that name a model (a hub id, ``packaged:...`` or a local path).
MODEL_KEYS = ("model", "tokenizer", "embedding_model", "query_encoder")
#: Keys of a component node that name a local file (or glob).
FILE_KEYS = ("path", "data_files")
#: ``org/name`` (a hub repository id).
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
#: Config subtrees that hold components (``paths``, ``hydra`` and stage settings hold none).
_COMPONENT_ROOTS = ("dataset", "corpus", "retriever", "generator", "strategy", "judge", "perturbation")


class MissingResourceError(UserError):
    """A model, dataset or file the job needs is not available here; says how to get it."""


@dataclass(frozen=True)
class Resource:
    """One thing a job needs.

    Attributes:
        kind: ``model``, ``dataset`` (both on the Hugging Face hub), ``index`` (a pyserini prebuilt
            index), ``file`` (local) or ``api`` (a model behind an API that needs a key).
        name: The hub id or the path.
        key: The config key that names it (``retriever.bge_large.model``).
        revision: The hub revision (``None`` = the default branch).
        hint: How to get it, where the kind's own way does not say (a dump's download, an API key).
    """

    kind: str
    name: str
    key: str
    revision: str | None = None
    hint: str = ""


def _is_hub_id(value: Any) -> bool:
    return isinstance(value, str) and bool(_HUB_ID.match(value)) and not Path(value).exists()


def _nodes(node: Any, key: str) -> Iterator[tuple[str, dict]]:
    """Every dict with ``_target_`` below ``node`` (itself included), with its dotted key."""
    if isinstance(node, dict):
        if "_target_" in node:
            yield key, node
        for k, v in node.items():
            yield from _nodes(v, f"{key}.{k}" if key else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _nodes(v, f"{key}[{i}]")


def _resolved(cfg: DictConfig, root: str) -> Any:
    node = OmegaConf.select(cfg, root)
    if node is None:
        return None
    try:
        return OmegaConf.to_container(node, resolve=True, throw_on_missing=False)
    except Exception:  # an interpolation that needs Hydra's runtime: read it unresolved
        return OmegaConf.to_container(node, resolve=False)


def component_nodes(cfg: DictConfig, roots: tuple[str, ...] = _COMPONENT_ROOTS) -> Iterator[tuple[str, dict]]:
    """Every component node (a dict with ``_target_``, resolved) under ``roots``, with its dotted key."""
    for root in roots:
        yield from _nodes(_resolved(cfg, root), root)


def declared_resources(cfg: DictConfig, roots: tuple[str, ...] = _COMPONENT_ROOTS) -> list[Resource]:
    """The hub models, hub datasets and local files that the components under ``roots`` name."""
    found: list[Resource] = []
    for root in roots:
        root_node = _resolved(cfg, root)
        for key, node in _nodes(root_node, root):
            if _unused_generator(root_node, key):
                continue
            target = str(node["_target_"])
            if target.startswith("rr.generation.openai.") and (api := _api_resource(key, node)):
                found.append(api)
            revision = node.get("revision")
            revision = revision if isinstance(revision, str) else None
            for mk in MODEL_KEYS:
                value = node.get(mk)
                if mk == "model" and target.startswith("rr.generation.openai."):
                    continue  # the server's model name, not a hub download
                if isinstance(value, str) and _is_hub_id(value):
                    rev = revision if mk == "model" else None
                    found.append(Resource("model", value, f"{key}.{mk}", rev))
            if isinstance(index := node.get("prebuilt_index"), str) and index:
                found.append(Resource("index", index, f"{key}.prebuilt_index"))
            if target.startswith("rr.data.hf."):
                if node.get("data_files"):
                    found.append(Resource("file", str(node["data_files"]), f"{key}.data_files"))
                elif isinstance(path := node.get("path"), str) and _is_hub_id(path):
                    found.append(Resource("dataset", path, f"{key}.path", revision))
                continue
            if target.startswith("rr.data.wiki_dump.") and node.get("chunks_path"):
                continue
            for fk in FILE_KEYS:
                value = node.get(fk)
                values = value if isinstance(value, list) else [value]
                for v in values:
                    if isinstance(v, str) and v and v != "???":
                        found.append(Resource("file", v, f"{key}.{fk}", hint=_dump_hint(v)))
    return list(dict.fromkeys(found))


#: A Wikipedia dump named as Wikimedia names it: ``enwiki-20240601-pages-articles.xml.bz2``.
_DUMP = re.compile(r"^([a-z]+wiki)-(\d{8})-pages-articles")
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "0.0.0.0", "[::1]")


def _dump_hint(path: str) -> str:
    """Where a Wikipedia dump named by its date is kept ("" for another file)."""
    m = _DUMP.match(Path(path).name)
    if not m:
        return ""
    wiki, date = m[1], m[2]
    return (
        f"fetch it where there is network: `wget https://dumps.wikimedia.org/{wiki}/{date}/{Path(path).name}` "
        f"(Wikimedia keeps the last few months' dumps; older ones: https://archive.org/details/{wiki}-{date}) "
        "into the current folder, or point corpus.path at your copy"
    )


def _unused_generator(root_node: Any, key: str) -> bool:
    """Whether ``key`` is a judge's generator that its settings leave unused (RGB's LLM checks off)."""
    if key != "judge.generator" or not isinstance(root_node, dict) or "llm_rejection" not in root_node:
        return False
    return not (root_node.get("llm_rejection") or root_node.get("llm_error_detection"))


def _api_resource(key: str, node: dict) -> Resource | None:
    """An OpenAI-compatible generator at another machine whose API key variable is unset."""
    from urllib.parse import urlparse

    host = urlparse(str(node.get("base_url") or "")).netloc.rsplit(":", 1)[0]
    env = node.get("api_key_env")
    if not host or host in _LOCAL_HOSTS or not env or os.environ.get(str(env)):
        return None
    return Resource(
        "api",
        str(node.get("model")),
        f"{key}.model",
        hint=f"it is served at {node.get('base_url')}, which needs a key: export {env}=... (or set "
        f"{key}.base_url to a server of yours and {key}.model to the model it serves)",
    )


def _offline(kind: str) -> bool:
    from huggingface_hub import constants

    flags = ["HF_HUB_OFFLINE"] + (["HF_DATASETS_OFFLINE"] if kind == "dataset" else [])
    return bool(constants.HF_HUB_OFFLINE) or any(
        os.environ.get(f, "").upper() in ("1", "ON", "YES", "TRUE") for f in flags
    )


def pyserini_indexes() -> Path:
    """Where pyserini keeps its prebuilt indexes (``$PYSERINI_CACHE/indexes``, as pyserini.util)."""
    return Path(os.environ.get("PYSERINI_CACHE") or Path("~/.cache/pyserini").expanduser()) / "indexes"


def in_cache(res: Resource) -> bool:
    """Whether ``res`` (a hub model or dataset, a pyserini index) is in its local cache already."""
    from huggingface_hub import constants, try_to_load_from_cache

    if res.kind == "index":  # pyserini unpacks <url file name>.<md5>/, and the file name holds the index name
        folder = pyserini_indexes()
        return folder.is_dir() and any(res.name in p.name and p.is_dir() for p in folder.iterdir())
    if res.kind == "model":
        hit = try_to_load_from_cache(res.name, "config.json", revision=res.revision)
        return isinstance(hit, str)
    hub = Path(constants.HF_HUB_CACHE) / ("datasets--" + res.name.replace("/", "--"))
    datasets_cache = Path(
        os.environ.get("HF_DATASETS_CACHE") or Path(constants.HF_HOME) / "datasets"
    ) / res.name.replace("/", "___")
    return (hub / "snapshots").is_dir() or datasets_cache.is_dir()


@functools.lru_cache(maxsize=256)  # rr plan -m checks every job of a sweep: ask the hub once per repo
def _on_hub(res: Resource) -> str | None:
    """``None`` if the hub says ``res`` exists, else why not (not found, unreachable)."""
    from huggingface_hub import HfApi

    try:
        HfApi().repo_info(res.name, repo_type=res.kind, revision=res.revision, timeout=10)
    except Exception as e:  # not found, gated, no network: each is a reason to stop before any work
        name = type(e).__name__
        if name == "RevisionNotFoundError":
            return f"the hub has no revision {res.revision!r} of it"
        if name == "GatedRepoError":
            return "it is gated on the hub: accept its licence there and log in (`hf auth login`)"
        if name == "RepositoryNotFoundError":
            return "the hub has no such repository (check the id; a private one needs `hf auth login`)"
        return f"the hub cannot be reached ({name})"
    return None


def _file_exists(pattern: str) -> bool:
    path = os.path.expanduser(pattern)
    return Path(path).exists() or (glob.has_magic(path) and bool(glob.glob(path)))


def _fetch_hint(res: Resource) -> str:
    if res.kind == "index":
        return (
            '`python -c "from pyserini.util import download_prebuilt_index; '
            f"download_prebuilt_index('{res.name}')\"` (the same PYSERINI_CACHE)"
        )
    rev = f" --revision {res.revision}" if res.revision else ""
    repo_type = " --repo-type dataset" if res.kind == "dataset" else ""
    return f"`hf download{repo_type} {res.name}{rev}`"


def missing_resources(resources: list[Resource]) -> list[tuple[Resource, str]]:
    """The resources that cannot be had here, each with why."""
    missing = []
    for res in resources:
        if res.kind == "api":
            missing.append((res, "an API model, and no key is set"))
        elif res.kind == "file":
            if not _file_exists(res.name):
                missing.append((res, "no such file"))
        elif not in_cache(res):
            if (
                res.kind == "index"
            ):  # pyserini downloads it from its own servers: only rr's offline mode stops it
                if _offline(res.kind):
                    missing.append((res, f"not in pyserini's cache ({pyserini_indexes()}) and rr is offline"))
            elif _offline(res.kind):
                missing.append((res, "not in the local cache and the hub is off (HF_HUB_OFFLINE=1)"))
            elif (why := _on_hub(res)) is not None:
                missing.append((res, f"not in the local cache and {why}"))
    return missing


def check_resources(cfg: DictConfig, roots: tuple[str, ...] | None = None) -> None:
    """Raise :class:`MissingResourceError` (one line) if a model, dataset or file is missing.

    Called before any component is built, data loaded or model loaded (``rr``, ``rr plan``,
    ``rr encode``), so a job on a node without network fails in its first second.
    """
    missing = missing_resources(declared_resources(cfg, roots or _COMPONENT_ROOTS))
    if not missing:
        return
    parts = [f"{res.kind} {res.name!r} ({res.key}): {why}" for res, why in missing]
    hub = [res for res, _ in missing if res.kind not in ("file", "api")]
    files = [res for res, _ in missing if res.kind == "file" and not res.hint]
    fixes = [res.hint for res, _ in missing if res.hint]
    if hub:
        fixes.append(
            "fetch it ahead of time where there is network (a login node, the same HF_HOME): "
            + " and ".join(_fetch_hint(r) for r in hub)
            + (
                ", or point the key at a local copy"
                if len(hub) == 1
                else ", or point the keys at local copies"
            )
            + (" (dataset.data_files=...)" if any(r.kind == "dataset" for r in hub) else "")
        )
    if files:
        fixes.append(
            "check the path"
            + ("s" if len(files) > 1 else "")
            + " (relative paths are from the current folder)"
        )
    raise MissingResourceError("; ".join(parts) + "; " + "; ".join(fixes))
