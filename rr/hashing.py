"""Content hashing: job ids, cache keys and seeded RNGs all derive from these."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np


def stable_json(obj: Any) -> str:
    """Canonical JSON (sorted keys, no whitespace) of plain data; the input of every hash."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def content_hash(obj: Any, length: int = 64) -> str:
    """Hex sha256 of :func:`stable_json` of ``obj``, cut to ``length`` characters."""
    return hashlib.sha256(stable_json(obj).encode("utf-8")).hexdigest()[:length]


def rng_for(*parts: Any) -> np.random.Generator:
    """A NumPy generator seeded by the given parts, e.g. ``rng_for(seed, example_id, k, "shuffled")``.

    Never depends on global random state or on Python's salted ``hash``, so the same
    parts give the same stream in every process and on every machine.
    """
    digest = hashlib.sha256(stable_json(list(parts)).encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))
