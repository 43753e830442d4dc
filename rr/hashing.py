"""Content hashing: job ids, cache keys and seeded RNGs all derive from these."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from json.encoder import encode_basestring  # type: ignore[attr-defined]  # json's own (C) string encoder
from types import GeneratorType
from typing import Any

import numpy as np


def stable_json(obj: Any) -> str:
    """Canonical JSON (sorted keys, no whitespace) of plain data; the input of every hash."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_hash(obj: Any, length: int = 64) -> str:
    """Hex sha256 of :func:`stable_json` of ``obj``, cut to ``length`` characters."""
    return hashlib.sha256(stable_json(obj).encode("utf-8")).hexdigest()[:length]


def _json_pieces(obj: Any) -> Iterator[str]:
    """:func:`stable_json` of ``obj`` in pieces: containers are walked, so a list of millions of
    strings is never one string in memory. Generators and ``map`` objects count as lists."""
    if isinstance(obj, str):
        yield encode_basestring(obj)
    elif isinstance(obj, dict) and all(isinstance(k, str) for k in obj):
        yield "{"
        for i, key in enumerate(sorted(obj)):
            yield ("," if i else "") + encode_basestring(key) + ":"
            yield from _json_pieces(obj[key])
        yield "}"
    elif isinstance(obj, (list, tuple, GeneratorType, map)):
        yield "["
        for i, item in enumerate(obj):
            if i:
                yield ","
            yield from _json_pieces(item)
        yield "]"
    else:
        yield stable_json(obj)


def content_hash_streamed(obj: Any, length: int = 64) -> str:
    """:func:`content_hash` of ``obj`` (the same digest) without building its JSON in memory.

    For fingerprints of large collections (a 20 M-passage corpus: ~10 GB of text that
    :func:`content_hash` would hold twice, as JSON and as UTF-8). Lists may be given as
    generators.
    """
    h = hashlib.sha256()
    buffer: list[str] = []
    size = 0
    for piece in _json_pieces(obj):
        buffer.append(piece)
        size += len(piece)
        if size >= 1 << 20:
            h.update("".join(buffer).encode("utf-8"))
            buffer, size = [], 0
    h.update("".join(buffer).encode("utf-8"))
    return h.hexdigest()[:length]


def rng_for(*parts: Any) -> np.random.Generator:
    """A NumPy generator seeded by the given parts, e.g. ``rng_for(seed, example_id, k, "shuffled")``.

    Never depends on global random state or on Python's salted ``hash``, so the same
    parts give the same stream in every process and on every machine.
    """
    digest = hashlib.sha256(stable_json(list(parts)).encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))
