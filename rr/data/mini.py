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

Answerable filter (``answerable_only=True``, the default). The bundled corpus holds Wikipedia
*lead paragraphs* while FanOutQA's evidence is whole pages, so most gold answers are not in the
corpus at all; a run on them measures the corpus's gaps, not robustness. A question is kept when
every part of its answer is a *usable gold* found in an evidence passage:

* usable gold: normalised by the match judge's own :func:`~rr.answers.normalize_answer`,
  at least :data:`MIN_GOLD_CHARS` characters and not ``yes`` / ``no`` (short golds match by
  accident: "no" is a substring of "not", "4" of "1994");
* found: :func:`~rr.answers.has_answer_in` (the judge's substring match) on the text of a
  passage whose title is one of the question's evidence pages, for ``single_hop`` its one page;
  for ``multi_hop`` each answer part (each ``answer_group``) must be in *some* evidence passage in
  the corpus (parts may come from different pages; evidence pages missing from the corpus
  contribute nothing).

Counts (fanoutqa 1.1.1 dev, bundled corpus of 10,033 lead paragraphs): ``single_hop`` 497
questions, 86 with the answer in the gold passage, 78 after dropping yes/no and short golds;
``multi_hop`` 310 questions, 12 with every part in an evidence passage, 9 usable. The counts of a
load are in :attr:`MiniDataset.filter_counts` (and the job's ``summary.json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rr.answers import has_answer_in, normalize_answer
from rr.data.base import DataError, sample_examples
from rr.data.corpus import wiki_offline_passages
from rr.data.fanoutqa import dev_questions, fanoutqa_dev_path, leaves
from rr.records import Example, MetaKey
from rr.registry import component

MIN_GOLD_CHARS = 3
"""Shortest normalised gold the answerable filter keeps (``4``, ``+1`` and ``no`` match by accident)."""


def answer_text(value: Any) -> str:
    """A scalar answer as text: ``True`` -> ``yes``, ``8611.0`` -> ``8611``, strings stripped."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def usable_gold(answer: str) -> bool:
    """Whether ``answer`` normalises to at least :data:`MIN_GOLD_CHARS` characters and is not yes/no."""
    norm = normalize_answer(answer)
    return len(norm) >= MIN_GOLD_CHARS and norm not in ("yes", "no")


def answerable(example: Example, evidence: dict[str, str], usable_only: bool = True) -> bool:
    """Whether every answer part of ``example`` is a usable gold found in one evidence passage.

    Args:
        example: A mini example; its parts are ``answer_groups`` (one alternative list per part)
            or, without groups, ``answers`` as one part.
        evidence: Passage text by title, for the corpus's passages.
        usable_only: Only usable golds count (``False``: any gold, for the filter's counts).

    A part is found when one of its usable alternatives is a substring (judge normalisation) of
    the text of one of ``meta["gold_titles"]`` that is in ``evidence``.
    """
    texts = [evidence[t] for t in example.meta[MetaKey.GOLD_TITLES] if t in evidence]
    parts = example.answer_groups or [example.answers]
    return all(
        any(
            (usable_gold(a) or not usable_only) and has_answer_in([text], [a]) for a in part for text in texts
        )
        for part in parts
    )


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
        answerable_only: Keep only questions whose answer is in their evidence passages (see the
            module docstring: 78 single-hop, 9 multi-hop); ``False`` keeps all (497 / 310).

    Attributes:
        filter_counts: After :meth:`load`: ``questions`` (before the filter), ``answer_in_evidence``,
            ``answerable`` (kept by the filter, before sampling) and ``sampled``.
    """

    name = "mini"

    def __init__(
        self,
        variant: str = "single_hop",
        n: int | None = 50,
        seed: int = 0,
        scalar_answers_only: bool = True,
        answerable_only: bool = True,
    ) -> None:
        if variant not in ("single_hop", "multi_hop"):
            raise ValueError(f"dataset.variant must be 'single_hop' or 'multi_hop', got {variant!r}")
        self.variant = variant
        self.n = n
        self.seed = seed
        self.available: int | None = (
            None  # after load: answerable (filtered) examples there were to sample n from
        )
        self.scalar_answers_only = scalar_answers_only
        self.answerable_only = answerable_only
        self.filter_counts: dict[str, int] = {}

    def fingerprint(self) -> dict:
        return {
            "name": self.name,
            "variant": self.variant,
            "n": self.n,
            "seed": self.seed,
            "scalar_answers_only": self.scalar_answers_only,
            "answerable_only": self.answerable_only,
            MetaKey.SOURCE: "fanoutqa==1.1.1:dev",
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
        kept = list(unique.values())
        counts = {"questions": len(kept)}
        if self.answerable_only:
            evidence = {p.title: p.text for p in wiki_offline_passages()}
            in_evidence = [ex for ex in kept if answerable(ex, evidence, usable_only=False)]
            kept = [ex for ex in in_evidence if answerable(ex, evidence)]
            counts["answer_in_evidence"] = len(in_evidence)
        counts["answerable"] = len(kept)
        self.available = len(kept)
        sampled = sample_examples(kept, self.n, self.seed)
        self.filter_counts = {**counts, "sampled": len(sampled)}
        return sampled

    def _single_hop(self, path: Path) -> list[Example]:
        titles = {p.title for p in wiki_offline_passages()}
        out = []
        for qi, q in enumerate(dev_questions()):
            for leaf in leaves(q):
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
                sorted({leaf["evidence"]["title"] for leaf in leaves(q) if leaf.get("evidence")}),
            )
            for qi, q in enumerate(dev_questions())
        ]

    def _example(
        self, path: Path, qi: int, node: dict, gold_titles: list[str], parent: str | None = None
    ) -> Example:
        if not node.get("id") or not isinstance(node.get("question"), str) or "answer" not in node:
            raise DataError(f"{path}: question #{qi} (id {node.get('id')!r}) lacks id, question or answer")
        answers, groups = answer_parts(node["answer"])
        if not answers:
            raise DataError(f"{path}: question {node['id']!r} has an empty answer")
        meta: dict[str, Any] = {
            MetaKey.GOLD_TITLES: gold_titles,
            MetaKey.SOURCE: f"fanoutqa:dev:{self.variant}",
        }
        if parent:
            meta[MetaKey.PARENT_ID] = parent
        return Example(
            id=node["id"], question=node["question"].strip(), answers=answers, answer_groups=groups, meta=meta
        )
