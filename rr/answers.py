"""Answer strings: SQuAD-style normalisation, string-match metrics and RGB's refusal sentence.

A contract module: judges (:mod:`rr.judges`), data loaders (:mod:`rr.data.mini`), perturbations
and the simulated reader (:mod:`rr.generation.simulated`) all use it, and it imports nothing of rr.

:func:`normalize_answer` is exactly ``normalize_answer`` of the official SQuAD v1.1 evaluation
script: lowercase, drop ASCII punctuation (``string.punctuation``, so "Saint-Denis" becomes
"saintdenis"), drop the articles a/an/the as whole words, collapse whitespace. Its whole words are
those of the third-party ``regex`` module, as in BERGEN's ``normalize`` and lost-in-the-middle's
``normalize_answer`` (both ``regex.sub(r"\b(a|an|the)\b", ...)``): ``re``'s ``\b`` differs on
combining marks (a decomposed "thé" is one word), connector punctuation (full-width ``＿``) and
non-decimal digits (superscript ``²`` is not a word character), tests/test_scoring_parity.py.

Every metric takes a prediction and a list of gold strings and maximises over the golds. A gold
that normalises to ``""`` (e.g. ``""`` or ``"The"``) never matches anything, in every metric: it
would otherwise be a substring of every prediction and make an empty prediction an exact match.
This is the one deviation from the SQuAD script (whose EM counts ``"" == ""`` as a match); on
ordinary golds the values are identical.
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

import regex  # locked through transformers (locks/rr.txt); the official scorers' engine

#: The exact refusal RGB's instruction asks for (Chen et al. 2024, Fig. 3); the refusal judge
#: (:mod:`rr.judges.refusal`) and the simulated reader share it.
RGB_REFUSAL = "I can not answer the question because of the insufficient information in documents."

_DROP_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = regex.compile(r"\b(a|an|the)\b")  # regex's word boundaries, not re's (module docstring)


def normalize_answer(s: str) -> str:
    """Lowercase, remove punctuation, remove articles (a/an/the), collapse whitespace (SQuAD v1.1)."""
    text = s.lower().translate(_DROP_PUNCTUATION)  # = "".join(ch for ch in text if ch not in punctuation)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


@lru_cache(maxsize=1 << 15)
def _normalized_passage(text: str) -> str:
    return normalize_answer(text)


def _normalized_golds(golds: Iterable[str]) -> list[str]:
    """Normalised golds, without those that normalise to ``""`` (they never match)."""
    if isinstance(golds, str):
        raise TypeError(f"golds must be a list of strings, not the string {golds!r}")
    return [g for g in (normalize_answer(x) for x in golds) if g]


def exact_match(pred: str, golds: Iterable[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold, else 0.0 (0.0 for no golds)."""
    p = normalize_answer(pred)
    return float(any(p == g for g in _normalized_golds(golds)))


def token_f1(pred: str, golds: Iterable[str]) -> float:
    """SQuAD token-level F1 in [0, 1], maximised over golds (0.0 for no golds).

    Tokens are the whitespace-split words of the normalised strings; overlap counts
    multiplicities (bag-of-words intersection).
    """
    pred_tokens = normalize_answer(pred).split()
    best = 0.0
    for gold in _normalized_golds(golds):
        gold_tokens = gold.split()
        same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
        if same == 0:
            continue
        precision, recall = same / len(pred_tokens), same / len(gold_tokens)
        best = max(best, 2 * precision * recall / (precision + recall))
    return best


def substring_match(pred: str, golds: Iterable[str]) -> float:
    """1.0 if any normalised gold is a substring of the normalised prediction, else 0.0.

    The "Match" accuracy of Mallen et al. (2023). Plain substring (no word boundaries), as in
    the papers: gold "1" matches prediction "1998". Empty golds never match; no golds gives 0.0.
    """
    return float(has_answer(pred, golds))


def has_answer(text: str, golds: Iterable[str]) -> bool:
    """Whether any normalised gold is a substring of the normalised ``text``.

    Used for answer recall of retrieved documents (``text`` is a passage). Empty golds never match.
    """
    t = normalize_answer(text)
    return any(g in t for g in _normalized_golds(golds))


def has_answer_in(texts: Iterable[str], golds: Iterable[str]) -> bool:
    """``has_answer(" ".join(texts), golds)``, normalising each text once per process.

    For the answer-in-documents checks that look at the same passages in many cells. Equal to
    the joined form because normalisation acts per character and per whole word (a space is a
    word boundary, like a string's edge), so the normalised join is the join of the non-empty
    normalised texts; a gold may still span two texts, as in the joined form.
    """
    joined = " ".join(t for t in map(_normalized_passage, texts) if t)
    return any(g in joined for g in _normalized_golds(golds))
