"""The bundled ``mini`` dataset, built from FanOutQA's dev set (Zhu et al. 2024, MIT / CC BY-SA).

FanOutQA ships ``fanoutqa/data/fanout-final-dev.json`` (310 multi-hop questions). Each is
decomposed into single-hop sub-questions, each with its answer and the Wikipedia page that
holds the evidence. The file is read directly: importing ``fanoutqa`` pulls network-only
dependencies.

Variants:
    ``single_hop``: the leaf sub-questions whose evidence page is in the bundled corpus
        (:mod:`rr.data.corpus`), so retrieval can find it; ``meta["gold_titles"]`` holds the page.
    ``multi_hop``: the top-level questions; their answers (dicts/lists of parts) become
        ASQA-style ``answer_groups`` (one group per part), ``meta["gold_titles"]`` all evidence pages.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from rr.data.base import DataError, sample_examples
from rr.data.packaged import package_file
from rr.records import Example
from rr.registry import component

_HINT = "pip install --no-deps fanoutqa==1.1.1 (see requirements-data.txt)"


def fanoutqa_dev_path() -> Path:
    return package_file("fanoutqa", "data/fanout-final-dev.json", _HINT)


@lru_cache(maxsize=1)
def _dev_questions() -> list[dict[str, Any]]:
    return json.loads(fanoutqa_dev_path().read_text(encoding="utf-8"))


def _leaves(node: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for sub in node.get("decomposition") or []:
        out.extend(_leaves(sub) if sub.get("decomposition") else [sub])
    return out


def fanoutqa_evidence_titles() -> set[str]:
    """Titles of every evidence page of the dev set's sub-questions."""
    return {
        leaf["evidence"]["title"] for q in _dev_questions() for leaf in _leaves(q) if leaf.get("evidence")
    }


def answer_text(value: Any) -> str:
    """A scalar answer as text: ``True`` -> ``yes``, ``8611.0`` -> ``8611``, strings stripped."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def answer_parts(value: Any) -> tuple[list[str], list[list[str]] | None]:
    """``(answers, answer_groups)`` for a FanOutQA answer: scalars give one answer and no groups;
    lists and dicts give one group per element / value (every part must be covered)."""
    if isinstance(value, dict):
        parts = [answer_text(v) for v in value.values()]
    elif isinstance(value, list):
        parts = [answer_text(v) for v in value]
    else:
        return [answer_text(value)], None
    parts = [p for p in parts if p]
    return list(dict.fromkeys(parts)), [[p] for p in parts]


@component("dataset", "mini")
class MiniDataset:
    """FanOutQA-derived questions over the bundled Wikipedia corpus (see module docstring).

    Args:
        variant: ``single_hop`` or ``multi_hop``.
        n: Number of examples to sample (``None`` = all: 509 single-hop, 310 multi-hop).
        seed: Sampling seed.
        scalar_answers_only: ``single_hop`` only: skip sub-questions whose answer is a list.
    """

    name = "mini"

    def __init__(
        self, variant: str = "single_hop", n: int | None = 50, seed: int = 0, scalar_answers_only: bool = True
    ) -> None:
        if variant not in ("single_hop", "multi_hop"):
            raise ValueError(f"dataset.variant must be 'single_hop' or 'multi_hop', got {variant!r}")
        self.variant = variant
        self.n = n
        self.seed = seed
        self.scalar_answers_only = scalar_answers_only

    def fingerprint(self) -> dict:
        return {
            "name": self.name,
            "variant": self.variant,
            "n": self.n,
            "seed": self.seed,
            "scalar_answers_only": self.scalar_answers_only,
            "source": "fanoutqa==1.1.1:dev",
        }

    def load(self) -> list[Example]:
        path = fanoutqa_dev_path()
        examples = self._single_hop(path) if self.variant == "single_hop" else self._multi_hop(path)
        # FanOutQA reuses a sub-question (same id, question and answer) under several parents:
        # keep its first occurrence; the same id with different content is an error.
        unique: dict[str, Example] = {}
        for ex in examples:
            first = unique.setdefault(ex.id, ex)
            if (first.question, first.answers) != (ex.question, ex.answers):
                raise DataError(f"{path}: question id {ex.id!r} is used for two different questions")
        return sample_examples(list(unique.values()), self.n, self.seed)

    def _single_hop(self, path: Path) -> list[Example]:
        from rr.data.corpus import wiki_offline_passages

        titles = {p.title for p in wiki_offline_passages()}
        out = []
        for qi, q in enumerate(_dev_questions()):
            for leaf in _leaves(q):
                ev = leaf.get("evidence") or {}
                if ev.get("title") not in titles:
                    continue
                if self.scalar_answers_only and isinstance(leaf.get("answer"), (list, dict)):
                    continue
                out.append(self._example(path, qi, leaf, [ev["title"]], parent=q["id"]))
        return out

    def _multi_hop(self, path: Path) -> list[Example]:
        return [
            self._example(
                path,
                qi,
                q,
                sorted({leaf["evidence"]["title"] for leaf in _leaves(q) if leaf.get("evidence")}),
            )
            for qi, q in enumerate(_dev_questions())
        ]

    def _example(
        self, path: Path, qi: int, node: dict, gold_titles: list[str], parent: str | None = None
    ) -> Example:
        if not node.get("id") or not isinstance(node.get("question"), str) or "answer" not in node:
            raise DataError(f"{path}: question #{qi} (id {node.get('id')!r}) lacks id, question or answer")
        answers, groups = answer_parts(node["answer"])
        if not answers:
            raise DataError(f"{path}: question {node['id']!r} has an empty answer")
        meta: dict[str, Any] = {"gold_titles": gold_titles, "source": f"fanoutqa:dev:{self.variant}"}
        if parent:
            meta["parent_id"] = parent
        return Example(
            id=node["id"], question=node["question"].strip(), answers=answers, answer_groups=groups, meta=meta
        )
