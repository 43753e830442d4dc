"""``rr prefetch [-m] [--dry-run] OVERRIDES...``: fetch, on a machine with network, what a job or a
sweep needs on compute nodes without it.

It composes the job (``-m``: every job of the sweep) as ``rr`` would, lists every hub model (with
its revision; a model's tokenizer is in its repository), hub dataset, pyserini prebuilt index and
local file the components name (:func:`rr.preflight.declared_resources`, what every job checks in
its first second), each with the config key that names it and whether it is in the local cache
already (:func:`rr.preflight.in_cache`), then downloads the missing ones into the caches a job
reads: the hub's (``HF_HOME``) for models and datasets, pyserini's (``PYSERINI_CACHE``) for its
indexes. ``--dry-run`` lists only, offline too. Local files and API models are listed, never
fetched (copy the file to the cluster; set the key).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from rr.errors import UserError
from rr.preflight import Resource

#: Files of a model repository a job never reads (the original checkpoints beside the
#: transformers weights, other frameworks' exports): left out of a model's download.
SKIPPED_FILES = [
    "original/*",
    "*.pth",
    "*.gguf",
    "*.onnx",
    "onnx/*",
    "openvino/*",
    "*.msgpack",
    "*.h5",
    "*.ot",
]


def needed(jobs: list[tuple[list[str], Any]]) -> list[tuple[Resource, list[str], int]]:
    """Each resource the jobs name (once), the config keys that name it and how many jobs need it."""
    from rr.preflight import declared_resources

    found: dict[tuple[str, str, str | None], tuple[Resource, list[str], int]] = {}
    for _, cfg in jobs:
        for res in declared_resources(cfg):
            res_id = (res.kind, res.name, res.revision)
            first, keys, n = found.get(res_id, (res, [], 0))
            if res.key not in keys:
                keys.append(res.key)
            found[res_id] = (first, keys, n + 1)
    return list(found.values())


def here(res: Resource) -> str:
    """Whether ``res`` is here already (``cached``, ``missing``; a file: ``present``, ``missing``)."""
    from rr.preflight import in_cache, missing_resources

    if res.kind == "api":
        return "API: needs its key" if missing_resources([res]) else "API: key set"
    if res.kind == "file":
        return "missing" if missing_resources([res]) else "present"
    return "cached" if in_cache(res) else "missing"


def download(res: Resource) -> str:
    """Fetch ``res`` into its cache; returns where it lies."""
    if res.kind == "index":
        from pyserini.util import download_prebuilt_index

        return str(download_prebuilt_index(res.name))
    from huggingface_hub import HfApi, snapshot_download

    skip: list[str] = []
    if res.kind == "model":
        files = HfApi().list_repo_files(res.name, revision=res.revision)
        skip = SKIPPED_FILES + (["*.bin"] if any(f.endswith(".safetensors") for f in files) else [])
    return str(
        snapshot_download(res.name, repo_type=res.kind, revision=res.revision, ignore_patterns=skip or None)
    )


def caches() -> str:
    """Where the downloads go (what a job must read: the same variables on the compute nodes)."""
    from huggingface_hub import constants

    from rr.preflight import pyserini_indexes

    return f"HF_HOME={constants.HF_HOME}, PYSERINI_CACHE={pyserini_indexes().parent}"


def prefetch_main(argv: list[str]) -> int:
    """``rr prefetch [-m] [--dry-run] OVERRIDES...``."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from rr.commands.status import PIPED_WIDTH
    from rr.cost import compose_jobs

    ap = argparse.ArgumentParser(prog="rr prefetch", description=__doc__.split("\n\n")[0])
    ap.add_argument("-m", "--multirun", action="store_true", help="every job of the sweep (as rr -m)")
    ap.add_argument("--dry-run", action="store_true", help="list what the jobs need and stop (works offline)")
    ap.add_argument("overrides", nargs="*", help="the job's (or sweep's) overrides, as for rr")
    a = ap.parse_args(argv)
    offline = [
        v
        for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
        if os.environ.get(v, "").upper() in ("1", "ON", "YES", "TRUE")
    ]
    if offline and not a.dry_run:
        raise UserError(
            f"rr prefetch downloads, and {' and '.join(offline)} {'is' if len(offline) == 1 else 'are'} set here (the Makefile sets it): run it "
            f"where there is network (a login node) as `{' '.join(f'{v}=0' for v in offline)} rr prefetch ...`, "
            "with the caches the jobs read (README, 'Cluster setup'), or add --dry-run to list only"
        )
    jobs = compose_jobs(a.overrides, a.multirun)
    rows = needed(jobs)
    console = Console(width=None if Console().is_terminal else PIPED_WIDTH)
    table = Table(title=escape(f"rr prefetch: what {len(jobs)} job(s) need"))
    for col in ("kind", "name", "revision", "named by", "jobs", "here"):
        table.add_column(col, overflow="fold")
    states = [here(res) for res, _, _ in rows]
    for (res, keys, n), state in zip(rows, states, strict=True):
        table.add_row(
            *(escape(c) for c in (res.kind, res.name, res.revision or "-", ", ".join(keys), str(n), state))
        )
    console.print(table)
    fetch = [
        res
        for (res, _, _), state in zip(rows, states, strict=True)
        if state == "missing" and res.kind in ("model", "dataset", "index")
    ]
    print(
        f"{len(rows)} needed, {len(fetch)} to download"
        + (" (--dry-run: nothing downloaded)" if a.dry_run else "")
    )
    if a.dry_run:
        return 0
    for res in fetch:
        print(
            f"downloading {res.kind} {res.name}{'@' + res.revision if res.revision else ''} ...", flush=True
        )
        print(f"  {res.kind} {res.name}: {download(res)}", flush=True)
    left = [
        res.name
        for (res, _, _), state in zip(rows, states, strict=True)
        if state == "missing" and res.kind == "file"
    ]
    if left:
        print(f"not downloadable, copy them to the cluster: {', '.join(left)}")
    return 0
