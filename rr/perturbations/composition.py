"""RGB's context compositions (Chen et al. 2024): noise ratio, negative rejection, information
integration and counterfactual documents, as document perturbations.

Each option replaces a cell's documents by a context of ``n`` documents (RGB uses 5) built from
the example's *passage pools*:

* **From ``Example.meta``** (``pool="meta"``): the RGB loader (:mod:`rr.data.rgb`) stores the
  row's passages under :data:`~rr.data.rgb.POSITIVE`, :data:`~rr.data.rgb.NEGATIVE`,
  :data:`~rr.data.rgb.POSITIVE_GROUPS` (integration) and :data:`~rr.data.rgb.COUNTERFACTUAL`
  (counterfactual); any dataset may fill these keys.
* **From the retrieved documents** (``pool="retrieved"``): the cell's top-k (set ``grid.k`` to the
  pool size, e.g. 20) is split by gold-answer presence with
  :func:`rr.answers.has_answer`: a document is *positive* when it contains any gold
  alternative, *negative* when it contains none; for multi-part questions a document is positive
  for every answer group one of whose alternatives it contains. This is how the bundled mini data
  (which has no RGB pools) gets RGB's testbeds; answer-free top-ranked documents are "relevant
  but without the answer", which is RGB's definition of noise.
* ``pool="auto"`` (default): ``meta`` when the example has the keys, else ``retrieved``.

Composition follows RGB's ``processdata`` (evalue.py): ``neg = ceil(n * ratio)`` negatives and
``n - neg`` positives; when a pool is short, the other pool fills in (ratio < 1), so a context
may hold a different share than asked -- counted. Ratio 1.0 is **negative rejection** (only
negatives; the expected output is a refusal). Examples with two or more answer groups get
**information integration**: one positive per group first, then round-robin over the groups
(RGB's ``_int`` procedure). Picks are drawn with the job seed (``rng_for(seed, example id, ...)``);
``pick="first"`` takes pools in order instead (RGB's code for noise data). The context is then
shuffled with the seed (RGB shuffles), and the cell's ``order`` is applied on top of that shuffle
(``original`` keeps it). Closed-book cells (k = 0) pass through unchanged with
``doc_perturbation = "none"``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from rr.answers import has_answer, normalize_answer
from rr.context import RankedDoc, order_indices
from rr.data.rgb import COUNTERFACTUAL, FAKE_ANSWER, NEGATIVE, POSITIVE, POSITIVE_GROUPS
from rr.hashing import rng_for
from rr.perturbations.base import VALUE, PerturbationTag
from rr.records import Example, Passage
from rr.registry import component

if TYPE_CHECKING:
    import numpy as np

    from rr.runtime import Runtime
    from rr.strategies.base import CellInput

POOLS = ("auto", "meta", "retrieved")
PICKS = ("sample", "first")


@dataclass
class Pools:
    """An example's passage pools: ``positive``, ``negative`` and positives per answer group."""

    positive: list[Passage]
    negative: list[Passage]
    groups: list[list[Passage]]
    source: str


def _groups_of(ex: Example) -> list[list[str]]:
    return [list(g) for g in ex.answer_groups] if ex.answer_groups else [list(ex.answers)]


def pools_for(inp: CellInput, pool: str = "auto") -> Pools:
    """The passage pools of an input (see the module docstring).

    Meta pools get ids ``<example id>/pos/<i>`` and ``<example id>/neg/<i>`` (the ids of
    :class:`~rr.data.rgb.RGBCorpus`); retrieved pools keep the corpus ids, in rank order.
    """
    if pool not in POOLS:
        raise ValueError(f"pool must be one of {POOLS}, got {pool!r}")
    ex = inp.example
    has_meta = POSITIVE in ex.meta or NEGATIVE in ex.meta
    if pool == "meta" and not has_meta:
        raise ValueError(
            f"example {ex.id!r} has no passage pools in meta ({POSITIVE!r}, {NEGATIVE!r}); use pool=retrieved"
        )
    if pool == "meta" or (pool == "auto" and has_meta):
        pos = [Passage(f"{ex.id}/pos/{i}", t) for i, t in enumerate(ex.meta.get(POSITIVE, []))]
        neg = [Passage(f"{ex.id}/neg/{i}", t) for i, t in enumerate(ex.meta.get(NEGATIVE, []))]
        if POSITIVE_GROUPS in ex.meta:
            groups, i = [], 0
            for g in ex.meta[POSITIVE_GROUPS]:
                groups.append(pos[i : i + len(g)])
                i += len(g)
        else:
            groups = [pos]
        return Pools(pos, neg, groups, "meta")
    docs = sorted(inp.docs, key=lambda d: d.rank)
    answer_groups = _groups_of(ex)
    flat = [a for g in answer_groups for a in g]
    pos = [d.passage for d in docs if has_answer(d.passage.text, flat)]
    neg = [d.passage for d in docs if not has_answer(d.passage.text, flat)]
    groups = [[p for p in pos if has_answer(p.text, g)] for g in answer_groups]
    return Pools(pos, neg, groups, "retrieved")


def _take(items: list[Passage], m: int, rng: np.random.Generator, pick: str) -> list[Passage]:
    """``m`` items: the first ``m`` (``pick="first"``) or a seeded draw without replacement."""
    m = max(0, min(m, len(items)))
    if pick == "first":
        return items[:m]
    return [items[i] for i in rng.choice(len(items), size=m, replace=False).tolist()]


def _finish(inp: CellInput, passages: list[Passage], seed: int, tag: str, extra: dict[str, Any]) -> CellInput:
    """Shuffle with the seed (RGB), apply the cell's order, rank 1..n in the shuffled order."""
    ex, cell = inp.example, inp.cell
    perm = rng_for(seed, ex.id, "compose", tag, cell.k).permutation(len(passages)).tolist()
    ranked = [RankedDoc(passages[j], r + 1) for r, j in enumerate(perm)]
    ordered = tuple(ranked[i] for i in order_indices(len(ranked), cell.order, seed, ex.id, cell.k))
    return replace(inp, cell=replace(cell, doc_perturbation=tag), docs=ordered, extra={**inp.extra, **extra})


def _closed_book(inp: CellInput) -> CellInput:
    return replace(inp, cell=replace(inp.cell, doc_perturbation="none"))


@component("perturbation/doc", "noise_ratio")
class NoiseRatio:
    """RGB noise robustness (``ratio`` < 1), negative rejection (``ratio`` = 1) and information
    integration (examples with several answer groups); see the module docstring.

    Adds the columns ``n_positive_docs`` and ``n_negative_docs`` (what the context really holds).

    Args:
        ratio: Share of negative documents in [0, 1] (RGB: 0, 0.2, 0.4, 0.6, 0.8; 1 = rejection).
        n: Documents per context (RGB: 5).
        pool: ``auto``, ``meta`` or ``retrieved`` (where positives and negatives come from).
        pick: ``sample`` (seeded draw) or ``first`` (pool order, RGB's code for noise data).
    """

    def __init__(self, ratio: float = 0.0, n: int = 5, pool: str = "auto", pick: str = "sample") -> None:
        if not 0.0 <= ratio <= 1.0:
            raise ValueError(f"noise_ratio.ratio must be in [0, 1], got {ratio}")
        if n <= 0:
            raise ValueError(f"noise_ratio.n must be positive, got {n}")
        if pool not in POOLS or pick not in PICKS:
            raise ValueError(f"noise_ratio: pool must be one of {POOLS} and pick one of {PICKS}")
        self.ratio = float(ratio)
        self.n = n
        self.pool = pool
        self.pick = pick
        self.name = PerturbationTag("noise_ratio", {VALUE: self.ratio}).format()

    def compose(self, inp: CellInput, seed: int, rt: Runtime | None = None) -> tuple[list[Passage], dict]:
        """The context's passages (before shuffling) and the columns it adds; counts shortfalls."""

        def count(what: str) -> None:
            if rt is not None:
                rt.count(f"noise_ratio:{what}")

        pools = pools_for(inp, self.pool)
        rng = rng_for(seed, inp.example.id, "noise_ratio", self.ratio, self.n, inp.cell.k)
        neg_num = math.ceil(self.n * self.ratio - 1e-9)
        pos_num = self.n - neg_num
        groups = [g for g in pools.groups if g]
        if len(pools.groups) > 1 and pos_num > 0:  # information integration (RGB's _int)
            if len(groups) < len(pools.groups):
                count("answer_group_without_positive")
            shuffled = [_take(g, len(g), rng, self.pick) for g in groups]
            pos: list[Passage] = list(dict.fromkeys(g[0] for g in shuffled))  # a doc may serve two groups
            for i in range(1, max((len(g) for g in shuffled), default=0)):
                for g in shuffled:
                    if len(pos) >= pos_num:
                        break
                    if len(g) > i and g[i] not in pos:
                        pos.append(g[i])
            neg = _take(pools.negative, self.n - len(pos), rng, self.pick)
        else:
            if neg_num > len(pools.negative):
                count("fewer_negatives_than_ratio")
                neg_num = len(pools.negative)
                pos_num = self.n - neg_num if self.ratio < 1.0 else 0
            elif pos_num > len(pools.positive):
                count("fewer_positives_than_ratio")
                pos_num = len(pools.positive)
                neg_num = self.n - pos_num
            pos = _take(pools.positive, pos_num, rng, self.pick)
            neg = _take(pools.negative, neg_num, rng, self.pick)
        if len(pos) + len(neg) < self.n:
            count("fewer_than_n_docs")
        return pos + neg, {"n_positive_docs": len(pos), "n_negative_docs": len(neg)}

    def apply(self, inputs: Sequence[CellInput], rt: Runtime) -> list[CellInput]:
        out = []
        for inp in inputs:
            if inp.cell.k == 0:
                out.append(_closed_book(inp))
                continue
            passages, extra = self.compose(inp, rt.seed, rt)
            out.append(_finish(inp, passages, rt.seed, self.name, extra))
        return out


# ----------------------------------------------------------------------------- counterfactual

_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)


def answer_type(answer: str) -> str:
    """A coarse type of an answer string, so a fake answer can be of the same kind.

    ``year`` (4 digits), ``date`` (a month name and a number), ``number`` (digits with optional
    separators, sign, decimals, percent or currency), ``yesno``, else ``text``.
    """
    a = answer.strip().lower()
    if re.fullmatch(r"(1[0-9]|20)\d\d", a):
        return "year"
    if re.search(rf"\b({_MONTHS})\b", a) and re.search(r"\d", a):
        return "date"
    if re.fullmatch(r"[-+$€£]?\s?\d[\d,. ]*(%| ?(million|billion|thousand|percent))?", a):
        return "number"
    if a in ("yes", "no"):
        return "yesno"
    return "text"


def replace_answer(text: str, answers: Sequence[str], fake: str) -> str:
    """``text`` with every occurrence of every answer alternative (longest first, case-insensitive,
    not inside a word) replaced by ``fake``."""
    for a in sorted({a for a in answers if a.strip()}, key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(a)}(?!\w)", fake, text, flags=re.IGNORECASE)
    return text


@component("perturbation/doc", "counterfactual")
class Counterfactual:
    """RGB counterfactual robustness: answer-bearing documents whose answer is replaced by a
    wrong one, plus optional noise and correct documents (RGB's ``_fact`` composition).

    * Meta pools (RGB ``en_fact.json``): ``positive_wrong`` passages and RGB's ``fakeanswer``.
    * Retrieved pools (any other data): the positive documents with every gold alternative
      replaced (:func:`replace_answer`) by a fake answer drawn with the seed from the *other*
      examples' answers of the same :func:`answer_type` in the job (any other answer when none
      has the type, counted as ``counterfactual:fake_of_other_type``). Documents that still
      contain a gold answer after replacement (the normalised match found it but the literal
      one did not) are left out (``counterfactual:answer_not_replaceable``). Multi-group
      examples and examples without a usable document are dropped from the k > 0 cells
      (``counterfactual:dropped_*``): their context would not be counterfactual.

    Adds the columns ``fake_answer`` and ``n_counterfactual_docs``.

    Args:
        n: Documents per context (RGB: 5).
        ratio: Share of negative (noise) documents (RGB's ``noise_rate``).
        correct_ratio: Share of *correct* positive documents (RGB's ``correct_rate``).
        pool: ``auto``, ``meta`` or ``retrieved``.
    """

    def __init__(
        self, n: int = 5, ratio: float = 0.0, correct_ratio: float = 0.0, pool: str = "auto"
    ) -> None:
        if not (0.0 <= ratio <= 1.0 and 0.0 <= correct_ratio <= 1.0 and ratio + correct_ratio <= 1.0):
            raise ValueError("counterfactual: ratio and correct_ratio must be in [0, 1] with sum <= 1")
        if pool not in POOLS:
            raise ValueError(f"counterfactual.pool must be one of {POOLS}, got {pool!r}")
        self.n = n
        self.ratio = float(ratio)
        self.correct_ratio = float(correct_ratio)
        self.pool = pool
        shares = {"noise": self.ratio, "correct": self.correct_ratio}
        self.name = PerturbationTag("counterfactual", {k: v for k, v in shares.items() if v}).format()

    def _fake_answers(self, inputs: Sequence[CellInput], seed: int, rt: Runtime) -> dict[str, str]:
        examples = {i.example.id: i.example for i in inputs}
        by_type: dict[str, list[str]] = {}
        for ex in examples.values():
            if ex.answers:
                by_type.setdefault(answer_type(ex.answers[0]), []).append(ex.answers[0])
        fakes = {}
        for ex in examples.values():
            if FAKE_ANSWER in ex.meta:
                fakes[ex.id] = str(ex.meta[FAKE_ANSWER])
                continue
            golds = {normalize_answer(a) for a in ex.answers}
            same = [
                a for a in by_type.get(answer_type(ex.answers[0]), []) if normalize_answer(a) not in golds
            ]
            cands = sorted(set(same))
            if not cands:
                cands = sorted({a for t in by_type.values() for a in t if normalize_answer(a) not in golds})
                if cands:
                    rt.count("counterfactual:fake_of_other_type")
            if cands:
                fakes[ex.id] = cands[int(rng_for(seed, ex.id, "fake_answer").integers(len(cands)))]
        return fakes

    def apply(self, inputs: Sequence[CellInput], rt: Runtime) -> list[CellInput]:
        fakes = self._fake_answers(inputs, rt.seed, rt)
        out = []
        for inp in inputs:
            ex = inp.example
            if inp.cell.k == 0:
                out.append(_closed_book(inp))
                continue
            pools = pools_for(inp, self.pool)
            if pools.source == "meta" and COUNTERFACTUAL in ex.meta:
                wrong = [Passage(f"{ex.id}/cf/{i}", t) for i, t in enumerate(ex.meta[COUNTERFACTUAL])]
                right = pools.positive
            else:
                if ex.answer_groups and len(ex.answer_groups) > 1:
                    rt.count("counterfactual:dropped_multi_group_example")
                    continue
                if ex.id not in fakes:
                    rt.count("counterfactual:dropped_no_fake_answer")
                    continue
                wrong, right = [], []
                for p in pools.positive:
                    text = replace_answer(p.text, ex.answers, fakes[ex.id])
                    if has_answer(text, ex.answers):
                        rt.count("counterfactual:answer_not_replaceable")
                        continue
                    wrong.append(Passage(f"{p.id}/cf", text, p.title))
                    right.append(p)
            if not wrong:
                rt.count("counterfactual:dropped_no_answer_document")
                continue
            rng = rng_for(
                rt.seed, ex.id, "counterfactual", self.n, self.ratio, self.correct_ratio, inp.cell.k
            )
            neg_num = math.ceil(self.n * self.ratio - 1e-9)
            correct_num = math.ceil(self.n * self.correct_ratio - 1e-9)
            pos_num = self.n - neg_num - correct_num
            idx = sorted(rng.choice(len(wrong), size=min(len(wrong), pos_num), replace=False).tolist())
            docs = [wrong[i] for i in idx]
            remain = [right[i] for i in range(len(right)) if i not in idx]
            if correct_num > 0 and remain:
                docs += _take(remain, correct_num, rng, "sample")
            docs += pools.negative[:neg_num]
            extra = {"fake_answer": fakes.get(ex.id, ""), "n_counterfactual_docs": len(idx)}
            out.append(_finish(inp, docs, rt.seed, self.name, extra))
        return out
