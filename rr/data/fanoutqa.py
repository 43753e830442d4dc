"""FanOutQA's dev file as installed by the ``fanoutqa`` package: its path, questions and evidence pages.

Shared by the ``mini`` dataset (:mod:`rr.data.mini`, its questions) and the ``wiki_offline``
corpus (:mod:`rr.data.corpus`, which keeps every evidence page when it samples). The file is read
directly: importing ``fanoutqa`` pulls network-only dependencies.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from rr.data.packaged import package_file

_HINT = "pip install --no-deps fanoutqa==1.1.1 (see requirements-data.txt)"


def fanoutqa_dev_path() -> Path:
    return package_file("fanoutqa", "data/fanout-final-dev.json", _HINT)


@lru_cache(maxsize=1)
def dev_questions() -> list[dict[str, Any]]:
    return json.loads(fanoutqa_dev_path().read_text(encoding="utf-8"))


def leaves(node: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for sub in node.get("decomposition") or []:
        out.extend(leaves(sub) if sub.get("decomposition") else [sub])
    return out


def fanoutqa_evidence_titles() -> set[str]:
    """Titles of every evidence page of the dev set's sub-questions."""
    return {leaf["evidence"]["title"] for q in dev_questions() for leaf in leaves(q) if leaf.get("evidence")}
