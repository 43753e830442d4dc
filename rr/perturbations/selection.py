"""RARE's selection rule for perturbed queries: keep the candidates most similar to the original.

RARE (App. C.1) samples several candidates per query (5 typo variants, 3 LLM rewrites) and keeps
the one whose embedding is most similar to the original query's. Similarity is the cosine of
L2-normalised sentence-transformers embeddings (the packaged all-MiniLM-L6-v2 by default; RARE
does not name its embedder beyond "embedding model").
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np


@lru_cache(maxsize=4)
def embedder(model: str = "packaged:all-MiniLM-L6-v2") -> Any:
    """A :class:`~rr.retrieval.dense.DenseRetriever` used only for :meth:`encode` (loaded once)."""
    from rr.retrieval.dense import DenseRetriever

    return DenseRetriever(model=model, device="cpu", name=f"embedder:{model}")


def cosine_to_original(originals: Sequence[str], texts: Sequence[str], model: str) -> np.ndarray:
    """Cosine similarity of each ``texts[i]`` to ``originals[i]``, shape ``(len(texts),)``."""
    if len(originals) != len(texts):
        raise ValueError(f"{len(originals)} originals for {len(texts)} texts")
    if not texts:
        return np.zeros(0, dtype=np.float32)
    enc = embedder(model)
    uniq = list(dict.fromkeys([*originals, *texts]))
    emb = enc.encode(uniq)
    pos = {t: i for i, t in enumerate(uniq)}
    a = emb[[pos[t] for t in originals]]
    b = emb[[pos[t] for t in texts]]
    return np.sum(a * b, axis=1)


def rank_by_similarity(original_emb: np.ndarray, candidate_embs: np.ndarray, keep: int) -> list[int]:
    """Indices of the ``keep`` candidates with the highest cosine to the original, best first.

    Embeddings must be L2-normalised; ties keep the candidates' order (stable sort).
    """
    if len(candidate_embs) == 0:
        return []
    sims = candidate_embs @ original_emb
    order = np.argsort(-sims, kind="stable")
    return [int(i) for i in order[:keep]]


def most_similar(
    originals: Sequence[str], candidates: Sequence[Sequence[str]], keep: int, model: str
) -> list[list[str]]:
    """Per original, its (distinct) candidates ranked by similarity, cut to ``keep``.

    Args:
        originals: The original queries.
        candidates: Per original, its candidate rewrites (duplicates are merged first).
        keep: How many to keep per original.
        model: The sentence-transformers model (``packaged:...``, hub id or folder).
    """
    if len(originals) != len(candidates):
        raise ValueError(f"{len(originals)} originals for {len(candidates)} candidate lists")
    distinct = [list(dict.fromkeys(c)) for c in candidates]
    texts = list(dict.fromkeys([*originals, *(t for c in distinct for t in c)]))
    if not any(distinct):
        return [[] for _ in originals]
    emb = embedder(model).encode(texts)
    pos = {t: i for i, t in enumerate(texts)}
    out = []
    for orig, cands in zip(originals, distinct, strict=True):
        idx = rank_by_similarity(emb[pos[orig]], emb[[pos[t] for t in cands]], keep) if cands else []
        out.append([cands[i] for i in idx])
    return out
