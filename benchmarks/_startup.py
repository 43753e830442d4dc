"""The start-up lines the benchmark scripts share: this checkout's rr first on ``sys.path``, and
Hugging Face kept offline.

A script runs as ``python benchmarks/X.py``, which puts this folder first on ``sys.path``, so
``from _startup import start`` finds this module; the script calls :func:`start` before it imports
rr. It is a function, not code run at import: ``tests/test_benchmarks.py`` runs every script in one
process (this module imported once) and restores the environment after each. Not a benchmark itself
(its name starts with ``_``; the benchmark test skips such files).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

#: The checkout this folder belongs to.
REPO = Path(__file__).resolve().parent.parent
#: Environment variables a benchmark sets unless the caller already has (no network, no tokenizer threads).
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def start(env: Iterable[str] = tuple(OFFLINE)) -> Path:
    """Put :data:`REPO` first on ``sys.path`` and set each variable of :data:`OFFLINE` named in ``env``
    that is not set yet; return :data:`REPO`."""
    sys.path.insert(0, str(REPO))
    for name in env:
        os.environ.setdefault(name, OFFLINE[name])
    return REPO
