"""Context building: slice the top-k of a cached run, order it, and fit it to the context window."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rr.hashing import rng_for
from rr.records import Passage

#: Document orders of Cao et al. (2025) §4.3.
ORDERS = ("original", "reversed", "shuffled")


def order_indices(n: int, order: str, seed: int, example_id: str, k: int) -> list[int]:
    """Positions ``0..n-1`` (0 = best-ranked) arranged in ``order``.

    ``original``: retrieval rank order; ``reversed``: best document last (next to the
    question); ``shuffled``: a permutation seeded by ``(seed, example_id, k)``, so it is the
    same in every run and for every retriever, and independent across examples and k.
    """
    if order == "original":
        return list(range(n))
    if order == "reversed":
        return list(range(n))[::-1]
    if order == "shuffled":
        return rng_for(seed, example_id, k, "shuffled").permutation(n).tolist()
    raise ValueError(f"unknown document order {order!r}; known: {', '.join(ORDERS)}")


@dataclass(frozen=True)
class RankedDoc:
    """A passage in a prompt, with the retrieval rank it came from (1 = best)."""

    passage: Passage
    rank: int


def fit_to_window(
    docs: Sequence[RankedDoc],
    render: Callable[[Sequence[RankedDoc]], str],
    count_tokens: Callable[[list[str]], list[int]],
    budget: int,
) -> tuple[str, list[RankedDoc]]:
    """Drop the lowest-ranked document until the rendered prompt fits ``budget`` tokens (§4.3).

    The remaining documents keep their relative order. Token counts are estimated from
    per-document counts to jump close to the answer, then verified on the real rendering.

    Args:
        docs: Documents in prompt order.
        render: Renders the prompt for a list of documents (in the given order).
        count_tokens: Token counts of rendered prompts.
        budget: Maximum prompt tokens (context window minus the tokens to generate).

    Returns:
        The rendered prompt and the documents kept (possibly none).
    """
    kept = list(docs)
    prompt = render(kept)
    total = count_tokens([prompt])[0]
    if total <= budget or not kept:
        return prompt, kept
    # Estimate: drop the lowest-ranked documents until the estimated size fits.
    by_rank = sorted(kept, key=lambda d: d.rank, reverse=True)
    doc_tokens = dict(
        zip(
            (d.rank for d in kept),
            count_tokens([d.passage.text + d.passage.title for d in kept]),
            strict=True,
        )
    )
    dropped: set[int] = set()
    estimate = total
    for d in by_rank:
        if estimate <= budget:
            break
        dropped.add(d.rank)
        estimate -= doc_tokens[d.rank]
    # The estimate can be off by a few tokens either way: re-add the best-ranked dropped
    # documents while the real prompt still fits, then drop more while it does not.
    while dropped:
        best_back = min(dropped)
        trial = [d for d in docs if d.rank not in dropped - {best_back}]
        if count_tokens([render(trial)])[0] <= budget:
            dropped.discard(best_back)
        else:
            break
    kept = [d for d in docs if d.rank not in dropped]
    prompt = render(kept)
    while kept and count_tokens([prompt])[0] > budget:
        worst = max(kept, key=lambda d: d.rank)
        kept = [d for d in kept if d is not worst]
        prompt = render(kept)
    return prompt, kept
