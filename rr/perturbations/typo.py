"""Typo query perturbations: QWERTY-neighbour character swaps (and RARE's character deletions).

The query-level paper (arXiv 2507.06956, §3.2) perturbs 10% or 25% of a query's words with
TextAttack, "replacing characters in the query based on their proximity on a QWERTY keyboard",
never touching a stop word, and draws 5 perturbed variants per query. RARE (arXiv, App. C.1,
"character-level noise") composes ``WordSwapQWERTY`` with ``WordSwapRandomCharacterDeletion``,
samples up to 5 variants and keeps the one most similar to the original under an embedder.

The rule implemented here, for a query of ``n`` words (``\\w[\\w'’-]*`` tokens, stop words
included, as TextAttack's ``AttackedText.words`` counts them):

* the number of words to perturb is ``max(1, floor(rate * n))`` (TextAttack ``Augmenter``'s
  ``num_words_to_swap``): 1 word of an 8-word query at 10%, 2 at 25%;
* candidate words are those that are not stop words (NLTK's English list shipped in
  ``rr/perturbations/data``, compared case-insensitively), have at least 2 characters
  (TextAttack's word swaps skip 1-character words) and can take one of the operations;
  when fewer candidates than the target exist, all are perturbed and the shortfall is
  counted (``<name>:rate_capped``);
* each chosen word gets exactly one edit: ``qwerty`` replaces one of its letters by a
  keyboard neighbour (case kept), ``delete`` removes one of its characters; with several
  ``ops`` the operation is drawn uniformly among those applicable to the word;
* every draw comes from :func:`rr.hashing.rng_for` seeded by ``(seed, name, rate, ops,
  example id, candidate index)``, so a variant never depends on other examples or on
  global random state.

Backends: ``nlpaug`` (default) takes the neighbour table from nlpaug 1.1.11's QWERTY keyboard
model (``KeyboardAug``'s ``en`` model, letters only), while the choice of words, positions and
neighbours is ours (nlpaug samples from Python's global ``random`` and counts punctuation as
words, so its rate is not the paper's). ``textattack`` runs TextAttack's own ``Augmenter`` with
``WordSwapQWERTY`` / ``WordSwapRandomCharacterDeletion`` and ``StopwordModification``, seeding
Python's ``random`` per variant and restoring it afterwards. TextAttack 0.3.11 needs
``transformers<5`` and so lives in its own environment: generate a query file there with
``python -m rr.perturbations.generate typo --backend textattack`` (in its own environment) and run jobs with
``perturbation/query=file`` (see ``docs/query-level.md``).
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rr.hashing import rng_for
from rr.perturbations.base import VALUE, PerturbationTag, QueryVariant
from rr.records import Example, MetaKey
from rr.registry import component

if TYPE_CHECKING:
    from rr.runtime import Runtime

#: NLTK-layout data folder shipped with rr: ``NLTK_DATA`` for TextAttack.
NLTK_DATA_DIR = Path(__file__).parent / "data" / "nltk_data"
STOPWORDS_PATH = NLTK_DATA_DIR / "corpora" / "stopwords" / "english"

#: A word: a word character followed by word characters, apostrophes or hyphens.
WORD_RE = re.compile(r"\w[\w'’-]*")

OPS = ("qwerty", "delete")
BACKENDS = ("nlpaug", "textattack")


@lru_cache(maxsize=1)
def english_stopwords() -> frozenset[str]:
    """NLTK's English stop-word list (179 words, lower case), shipped in ``rr/perturbations/data``."""
    words = [w.strip() for w in STOPWORDS_PATH.read_text(encoding="utf-8").splitlines() if w.strip()]
    return frozenset(words)


@lru_cache(maxsize=1)
def nlpaug_neighbours() -> dict[str, tuple[str, ...]]:
    """QWERTY neighbours of each lower-case letter from nlpaug's ``en`` keyboard model.

    Digits and punctuation are left out (``include_numeric=False``, ``include_special_char=False``),
    so a typo is always a letter; each list is sorted, so draws are reproducible.
    """
    try:
        import nlpaug.augmenter.char as nac
    except ImportError as e:  # pragma: no cover - nlpaug is a core dependency
        raise ImportError("typo backend 'nlpaug' needs nlpaug (pip install nlpaug==1.1.11)") from e
    aug = nac.KeyboardAug(include_special_char=False, include_numeric=False, include_upper_case=False)
    table = {
        k: tuple(sorted(v for v in vs if v.isalpha() and v.islower() and v != k))
        for k, vs in aug.model.model.items()
        if k.isalpha() and k.islower()
    }
    return {k: v for k, v in sorted(table.items()) if v}


def n_words_to_perturb(n_words: int, rate: float) -> int:
    """``max(1, floor(rate * n_words))`` (TextAttack's ``Augmenter``); 0 for an empty query.

    A tolerance of 1e-9 absorbs float error (``0.29 * 100`` is 28.999999999999996).
    """
    if n_words <= 0:
        return 0
    return max(1, math.floor(rate * n_words + 1e-9))


def _ops_for(word: str, ops: Sequence[str], neighbours: dict[str, tuple[str, ...]]) -> list[str]:
    out = []
    for op in ops:
        if op == "qwerty" and any(c.lower() in neighbours for c in word) or op == "delete":
            out.append(op)
    return out


def _edit(word: str, op: str, rng: np.random.Generator, neighbours: dict[str, tuple[str, ...]]) -> str:
    if op == "delete":
        j = int(rng.integers(len(word)))
        return word[:j] + word[j + 1 :]
    positions = [j for j, c in enumerate(word) if c.lower() in neighbours]
    j = positions[int(rng.integers(len(positions)))]
    options = neighbours[word[j].lower()]
    new = options[int(rng.integers(len(options)))]
    if word[j].isupper():
        new = new.upper()
    return word[:j] + new + word[j + 1 :]


def typo_text(
    text: str,
    rate: float,
    rng: np.random.Generator,
    ops: Sequence[str] = ("qwerty",),
    neighbours: dict[str, tuple[str, ...]] | None = None,
    stopwords: frozenset[str] | None = None,
) -> tuple[str, int, int]:
    """Perturb ``text`` at word ``rate`` (see the module docstring for the rule).

    Args:
        text: The query.
        rate: Share of words to perturb, in (0, 1].
        rng: The variant's generator (from :func:`rr.hashing.rng_for`).
        ops: Edits to draw from: ``qwerty`` and/or ``delete``.
        neighbours: Lower-case letter -> QWERTY neighbours (default: nlpaug's table).
        stopwords: Words never touched, lower case (default: NLTK's English list).

    Returns:
        ``(perturbed text, words perturbed, words asked for)``; everything outside the
        perturbed words (spacing, punctuation, other words) is kept byte for byte.
    """
    neighbours = nlpaug_neighbours() if neighbours is None else neighbours
    stopwords = english_stopwords() if stopwords is None else stopwords
    spans = [(m.start(), m.end()) for m in WORD_RE.finditer(text)]
    target = n_words_to_perturb(len(spans), rate)
    eligible = [
        i
        for i, (a, b) in enumerate(spans)
        if b - a >= 2 and text[a:b].lower() not in stopwords and _ops_for(text[a:b], ops, neighbours)
    ]
    k = min(target, len(eligible))
    chosen = sorted(eligible[int(j)] for j in rng.choice(len(eligible), size=k, replace=False)) if k else []
    pieces, last = [], 0
    for i in chosen:
        a, b = spans[i]
        word = text[a:b]
        applicable = _ops_for(word, ops, neighbours)
        op = applicable[int(rng.integers(len(applicable)))] if len(applicable) > 1 else applicable[0]
        pieces += [text[last:a], _edit(word, op, rng, neighbours)]
        last = b
    pieces.append(text[last:])
    return "".join(pieces), k, target


def textattack_typo(text: str, rate: float, seed: int, ops: Sequence[str] = ("qwerty",)) -> str | None:
    """One TextAttack augmentation of ``text`` (``None`` when TextAttack produced none).

    Uses ``Augmenter(transformation, [RepeatModification(), StopwordModification(...)],
    pct_words_to_swap=rate, transformations_per_example=1)`` with ``WordSwapQWERTY()`` and/or
    ``WordSwapRandomCharacterDeletion()`` (a ``CompositeTransformation`` for both). Stop words
    are the shipped NLTK list in lower, capitalised and upper case (TextAttack compares them
    case-sensitively). Python's ``random`` is seeded with ``seed`` for the call and restored.

    Raises:
        ImportError: TextAttack is not importable here (it needs ``transformers<5``; see
            ``docs/query-level.md`` for the two-environment route).
    """
    augmenter = _textattack_augmenter(float(rate), tuple(ops))
    state = random.getstate()
    try:
        random.seed(seed)
        out = augmenter.augment(text)
    finally:
        random.setstate(state)
    return out[0] if out else None


@lru_cache(maxsize=8)
def _textattack_augmenter(rate: float, ops: tuple[str, ...]) -> Any:
    import os

    os.environ.setdefault("NLTK_DATA", str(NLTK_DATA_DIR))
    try:
        from textattack.augmentation import Augmenter
        from textattack.constraints.pre_transformation import RepeatModification, StopwordModification
        from textattack.transformations import (
            CompositeTransformation,
            WordSwapQWERTY,
            WordSwapRandomCharacterDeletion,
        )
    except Exception as e:
        raise ImportError(
            "typo backend 'textattack' needs textattack==0.3.11, which requires transformers<5 and so "
            "cannot share rr's environment: generate the queries in a separate environment with "
            "`python -m rr.perturbations.generate typo --backend textattack ...` and run with "
            f"perturbation/query=file (see docs/query-level.md). Import failed: {e}"
        ) from e
    parts = [WordSwapQWERTY() if op == "qwerty" else WordSwapRandomCharacterDeletion() for op in ops]
    transformation = parts[0] if len(parts) == 1 else CompositeTransformation(parts)
    stop = english_stopwords()
    stop_cased = set(stop) | {w.capitalize() for w in stop} | {w.upper() for w in stop}
    return Augmenter(
        transformation=transformation,
        constraints=[RepeatModification(), StopwordModification(stopwords=stop_cased)],
        pct_words_to_swap=rate,
        transformations_per_example=1,
    )


def variant_seed(seed: int, name: str, rate: float, ops: Sequence[str], example_id: str, index: int) -> int:
    """The integer seed of one candidate (also used to seed TextAttack's ``random``)."""
    return int(rng_for(seed, name, rate, list(ops), example_id, index).integers(2**63 - 1))


@component("perturbation/query", "typo")
class TypoPerturbation:
    """Typos at a word rate: ``n`` variants per query, tagged ``<name>@<rate>#<i>`` (i = 1..n).

    Args:
        rate: Share of each query's words to perturb (paper: 0.1 and 0.25).
        n: Variants kept per query (paper: 5; RARE: 1).
        ops: ``[qwerty]`` (the query-level paper) or ``[qwerty, delete]`` (RARE's character level).
        backend: ``nlpaug`` (in process, default) or ``textattack`` (needs TextAttack importable;
            normally used through ``rr perturb-queries`` in its own environment).
        candidates: Candidates drawn per query before selection (``None`` = ``n``). With more
            candidates than ``n`` the ``n`` most similar to the original under ``embedder``
            are kept (RARE: 5 candidates, keep 1).
        embedder: sentence-transformers model for the selection (``packaged:all-MiniLM-L6-v2``).
        include_original: Also emit each unperturbed query (tag ``none``), so one job holds
            the paired original and perturbed rows.
        name: Tag prefix (``typo`` -> ``typo@0.25#3``).

    A candidate identical to its original (no eligible word, or TextAttack returned nothing)
    is never emitted: it is counted as ``<name>:unchanged`` and dropped, so that query has fewer
    variants. Identical variants of one query are kept (counted ``<name>:duplicate_variant``).
    """

    def __init__(
        self,
        rate: float = 0.1,
        n: int = 5,
        ops: list[str] = ["qwerty"],  # noqa: B006 (config default; copied, never mutated)
        backend: str = "nlpaug",
        candidates: int | None = None,
        embedder: str = "packaged:all-MiniLM-L6-v2",
        include_original: bool = True,
        name: str = "typo",
    ) -> None:
        if not 0 < rate <= 1:
            raise ValueError(f"typo: rate must be in (0, 1], got {rate}")
        if n < 1:
            raise ValueError(f"typo: n must be >= 1, got {n}")
        bad = [op for op in ops if op not in OPS]
        if bad or not ops:
            raise ValueError(f"typo: ops must be a non-empty subset of {OPS}, got {list(ops)}")
        if backend not in BACKENDS:
            raise ValueError(f"typo: backend must be one of {BACKENDS}, got {backend!r}")
        if candidates is not None and candidates < n:
            raise ValueError(f"typo: candidates ({candidates}) must be >= n ({n})")
        self.rate = float(rate)
        self.n = int(n)
        self.ops = tuple(ops)
        self.backend = backend
        self.candidates = int(candidates) if candidates is not None else self.n
        self.embedder = embedder
        self.include_original = include_original
        self.name = name

    def tag(self, i: int) -> str:
        """The ``query_perturbation`` value of the ``i``-th variant (1-based)."""
        return PerturbationTag(self.name, {VALUE: self.rate}, i).format()

    def candidate(self, example: Example, index: int, seed: int) -> tuple[str, int, int]:
        """Candidate ``index`` (0-based) of ``example``: ``(text, words perturbed, words asked)``."""
        s = variant_seed(seed, self.name, self.rate, self.ops, example.id, index)
        if self.backend == "textattack":
            out = textattack_typo(example.question, self.rate, s, self.ops)
            return (out if out is not None else example.question), -1, -1
        return typo_text(example.question, self.rate, np.random.default_rng(s), self.ops)

    def perturb(
        self, examples: Sequence[Example], seed: int, count: Callable[[str, int], None] | None = None
    ) -> list[QueryVariant]:
        """The variants of ``examples`` (originals first when ``include_original``), without a Runtime."""

        def tally(key: str, n: int = 1) -> None:
            if count is not None and n:
                count(f"{self.name}:{key}", n)

        per_example: list[list[str]] = []
        for ex in examples:
            texts = []
            for i in range(self.candidates):
                text, done, asked = self.candidate(ex, i, seed)
                if text == ex.question:
                    tally("unchanged")
                    continue
                if done >= 0:
                    tally("rate_capped", int(done < asked))
                texts.append(text)
            per_example.append(texts)
        if self.candidates > self.n:
            from rr.perturbations.selection import most_similar

            per_example = most_similar([ex.question for ex in examples], per_example, self.n, self.embedder)
        out = [QueryVariant(ex, "none") for ex in examples] if self.include_original else []
        for ex, texts in zip(examples, per_example, strict=True):
            tally("duplicate_variant", len(texts) - len(set(texts)))
            for i, text in enumerate(texts, 1):
                meta = {**ex.meta, MetaKey.ORIGINAL_QUESTION: ex.question}
                out.append(QueryVariant(replace(ex, question=text, meta=meta), self.tag(i)))
        return out

    def variants(self, examples: Sequence[Example], rt: Runtime) -> list[QueryVariant]:
        return self.perturb(examples, rt.seed, rt.count)
