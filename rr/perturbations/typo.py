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
``WordSwapQWERTY`` / ``WordSwapRandomCharacterDeletion`` / ``WordSwapEmbedding`` and
``StopwordModification``, seeding Python's ``random`` and numpy's global RNG per variant. TextAttack
0.3.11 needs ``transformers<5``, so it runs in its own environment (``make textattack`` creates
``.venv-textattack``) as a child process (:mod:`rr.perturbations.textattack_env.worker`); rr never
imports it (see ``docs/query-level.md``).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import subprocess
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

log = logging.getLogger(__name__)

#: NLTK-layout data folder shipped with rr: ``NLTK_DATA`` for TextAttack.
NLTK_DATA_DIR = Path(__file__).parent / "data" / "nltk_data"
STOPWORDS_PATH = NLTK_DATA_DIR / "corpora" / "stopwords" / "english"

#: A word: a word character followed by word characters, apostrophes or hyphens.
WORD_RE = re.compile(r"\w[\w'’-]*")

OPS = ("qwerty", "delete", "embedding")
#: Operations only TextAttack's backend has (RARE's word-level ``WordSwapEmbedding``).
TEXTATTACK_ONLY_OPS = ("embedding",)
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


#: Environment variable naming the Python of TextAttack's environment.
TEXTATTACK_PYTHON_ENV = "RR_TEXTATTACK_PYTHON"
#: The environment ``make textattack`` creates (next to rr's source tree).
DEFAULT_TEXTATTACK_VENV = Path(__file__).resolve().parents[2] / ".venv-textattack"
#: The script run in TextAttack's environment (standard library only until it imports TextAttack).
TEXTATTACK_WORKER = Path(__file__).parent / "textattack_env" / "worker.py"
#: The files of TextAttack's counter-fitted embeddings (``WordSwapEmbedding``), under its cache.
COUNTERFITTED_DIR = Path("word_embeddings") / "paragramcf"
COUNTERFITTED_FILES = ("paragram.npy", "wordlist.pickle", "nn.npy", "mse_dist.p", "cos_sim.p")


class TextAttackUnavailable(RuntimeError):
    """TextAttack's environment or data is missing, or its worker failed (one-line message)."""


def textattack_python() -> Path:
    """The Python of TextAttack's environment: ``$RR_TEXTATTACK_PYTHON``, else ``.venv-textattack``.

    Raises:
        TextAttackUnavailable: neither exists (the message says how to create it).
    """
    named = os.environ.get(TEXTATTACK_PYTHON_ENV)
    path = Path(named) if named else DEFAULT_TEXTATTACK_VENV / "bin" / "python"
    if not path.exists():
        where = f"${TEXTATTACK_PYTHON_ENV}={named}" if named else str(path)
        raise TextAttackUnavailable(
            f"typo backend 'textattack' runs TextAttack in its own environment, and {where} does not exist: "
            f"run `make textattack` in rr's source tree (creates .venv-textattack) or set "
            f"{TEXTATTACK_PYTHON_ENV} to a Python with textattack==0.3.11 (docs/query-level.md)"
        )
    return path


def missing_counterfitted_embeddings() -> list[str]:
    """Files of TextAttack's counter-fitted embeddings missing from its cache (``[]``: all there)."""
    from rr.perturbations.textattack_env.worker import ta_cache_dir

    folder = ta_cache_dir() / COUNTERFITTED_DIR
    return [str(folder / name) for name in COUNTERFITTED_FILES if not (folder / name).is_file()]


def require_counterfitted_embeddings() -> None:
    """Fail in one line when RARE's word-level recipe cannot run (no package ships its embeddings).

    Raises:
        TextAttackUnavailable: a file of ``$TA_CACHE_DIR/word_embeddings/paragramcf`` is missing.
    """
    if missing := missing_counterfitted_embeddings():
        raise TextAttackUnavailable(
            "typo ops [embedding] (RARE's word-level WordSwapEmbedding) needs TextAttack's counter-fitted "
            f"embeddings, which no package ships: {len(missing)} of {len(COUNTERFITTED_FILES)} files missing "
            f"(first: {missing[0]}); fetch them once on a networked machine with TextAttack "
            "(WordEmbedding.counterfitted_GLOVE_embedding()) and set TA_CACHE_DIR to that cache"
        )


def textattack_stopwords() -> list[str]:
    """The shipped NLTK stop words in lower, Capitalised and UPPER case (TextAttack compares them
    case-sensitively)."""
    stop = english_stopwords()
    return sorted(set(stop) | {w.capitalize() for w in stop} | {w.upper() for w in stop})


def textattack_typos(items: Sequence[tuple[str, float, Sequence[str], int]]) -> dict[str, Any]:
    """Augment ``items`` with TextAttack's own ``Augmenter``, in TextAttack's environment.

    One child process (:data:`TEXTATTACK_WORKER` under :func:`textattack_python`) answers the
    whole batch: ``Augmenter(transformation, [RepeatModification(), StopwordModification(...)],
    pct_words_to_swap=rate, transformations_per_example=1)`` with ``WordSwapQWERTY()``,
    ``WordSwapRandomCharacterDeletion()`` and/or ``WordSwapEmbedding(max_candidates=50)`` (a
    ``CompositeTransformation`` for several ``ops``), stop words from :func:`textattack_stopwords`.
    Python's ``random`` and numpy's global RNG are seeded with the item's seed and restored. The
    child gets ``PYTHONHASHSEED=0`` and no ``PYTHONPATH``; whatever TextAttack changes in its
    environment at import stays there.

    Args:
        items: ``(text, rate, ops, seed)`` per augmentation.

    Returns:
        ``{"outputs": [str | None per item], "textattack": version, "nltk_download_attempts": n}``
        (``None``: TextAttack produced no augmentation).

    Raises:
        TextAttackUnavailable: no TextAttack environment, missing embeddings for ``embedding``,
            or the worker failed (its last stderr line is in the message).
    """
    if any("embedding" in ops for _, _, ops, _ in items):
        require_counterfitted_embeddings()
    python = textattack_python()
    request = {
        "nltk_data": str(NLTK_DATA_DIR),
        "stopwords": textattack_stopwords(),
        "items": [{"text": t, "rate": float(r), "ops": list(o), "seed": int(s)} for t, r, o, s in items],
    }
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONHASHSEED"] = "0"
    proc = subprocess.run(
        [str(python), str(TEXTATTACK_WORKER)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise TextAttackUnavailable(
            f"typo backend 'textattack': {python} {TEXTATTACK_WORKER.name} failed: {last}"
        )
    answer: dict[str, Any] = json.loads(proc.stdout)
    if len(answer["outputs"]) != len(items):
        raise TextAttackUnavailable(
            f"typo backend 'textattack': the worker answered {len(answer['outputs'])} of {len(items)} items"
        )
    if answer.get("nltk_download_attempts"):  # the marker should prevent them; none reached the network
        log.warning("typo: TextAttack tried %d NLTK downloads (refused)", answer["nltk_download_attempts"])
    return answer


def variant_seed(seed: int, name: str, rate: float, ops: Sequence[str], example_id: str, index: int) -> int:
    """The integer seed of one candidate (also used to seed TextAttack's ``random``)."""
    return int(rng_for(seed, name, rate, list(ops), example_id, index).integers(2**63 - 1))


@component("perturbation/query", "typo")
class TypoPerturbation:
    """Typos at a word rate: ``n`` variants per query, tagged ``<name>@<rate>#<i>`` (i = 1..n).

    Args:
        rate: Share of each query's words to perturb (paper: 0.1 and 0.25).
        n: Variants kept per query (paper: 5; RARE: 1).
        ops: ``[qwerty]`` (the query-level paper), ``[qwerty, delete]`` (RARE's character level) or
            ``[embedding]`` (RARE's word level, ``WordSwapEmbedding(max_candidates=50)``: backend
            ``textattack`` and TextAttack's counter-fitted embeddings under ``$TA_CACHE_DIR``).
        backend: ``nlpaug`` (in process, default) or ``textattack`` (TextAttack's ``Augmenter`` in
            its own environment, ``make textattack``; see :func:`textattack_typos`).
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

    #: What each counter (``<name>:<counter>``) means, for the lines ``rr perturb-queries`` prints.
    COUNTERS = {
        "unchanged": "candidates identical to their question (no eligible word): dropped, so that question "
        "has fewer variants",
        "rate_capped": "variants with fewer edits than the rate asked for (too few eligible words)",
        "duplicate_variant": "variants identical to another variant of the same question: kept, so that "
        "question has fewer distinct variants than n",
    }

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
        if backend != "textattack" and (only := [op for op in ops if op in TEXTATTACK_ONLY_OPS]):
            raise ValueError(f"typo: ops {only} need backend: textattack, got backend {backend!r}")
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
        """Candidate ``index`` (0-based) of ``example``: ``(text, words perturbed, words asked)``.

        For the ``textattack`` backend the counts are ``-1`` (TextAttack does not report them) and
        each call starts TextAttack's environment: use :meth:`candidates_of` for batches.
        """
        return self.candidates_of([example], seed)[0][index]

    def candidates_of(self, examples: Sequence[Example], seed: int) -> list[list[tuple[str, int, int]]]:
        """All ``candidates`` of every example (one TextAttack call for the whole batch)."""
        seeds = [
            [variant_seed(seed, self.name, self.rate, self.ops, ex.id, i) for i in range(self.candidates)]
            for ex in examples
        ]
        if self.backend == "textattack":
            items = [
                (ex.question, self.rate, self.ops, s)
                for ex, row in zip(examples, seeds, strict=True)
                for s in row
            ]
            outputs = iter(textattack_typos(items)["outputs"]) if items else iter(())
            return [
                [((out if out is not None else ex.question), -1, -1) for out in (next(outputs) for _ in row)]
                for ex, row in zip(examples, seeds, strict=True)
            ]
        return [
            [typo_text(ex.question, self.rate, np.random.default_rng(s), self.ops) for s in row]
            for ex, row in zip(examples, seeds, strict=True)
        ]

    def perturb(
        self, examples: Sequence[Example], seed: int, count: Callable[[str, int], None] | None = None
    ) -> list[QueryVariant]:
        """The variants of ``examples`` (originals first when ``include_original``), without a Runtime."""

        def tally(key: str, n: int = 1) -> None:
            if count is not None and n:
                count(f"{self.name}:{key}", n)

        per_example: list[list[str]] = []
        for ex, candidates in zip(examples, self.candidates_of(examples, seed), strict=True):
            texts = []
            for text, done, asked in candidates:
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
