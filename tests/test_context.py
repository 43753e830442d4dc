"""Document orders and the drop-the-lowest-ranked truncation rule (Cao et al. 2025, §4.3)."""

from __future__ import annotations

import pytest

from rr.context import RankedDoc, fit_to_window, order_indices
from rr.records import Passage


def test_original_and_reversed() -> None:
    assert order_indices(4, "original", 0, "q1", 4) == [0, 1, 2, 3]
    assert order_indices(4, "reversed", 0, "q1", 4) == [3, 2, 1, 0]


def test_shuffled_is_a_seeded_permutation() -> None:
    a = order_indices(10, "shuffled", 0, "q1", 10)
    assert sorted(a) == list(range(10))
    assert a != list(range(10))
    assert order_indices(10, "shuffled", 0, "q1", 10) == a  # same (seed, example, k) -> same order
    others = {tuple(order_indices(10, "shuffled", s, e, 10)) for s, e in [(1, "q1"), (0, "q2")]}
    assert tuple(a) not in others  # another seed or example -> another permutation


def test_shuffled_pinned() -> None:
    # Pinned so that a change of the RNG derivation (which would change every shuffled cell) is noticed.
    assert order_indices(6, "shuffled", 0, "example-1", 6) == [4, 5, 2, 1, 0, 3]


def test_unknown_order() -> None:
    with pytest.raises(ValueError, match="unknown document order 'sorted'"):
        order_indices(3, "sorted", 0, "q", 3)


def _docs(n: int) -> list[RankedDoc]:
    return [RankedDoc(Passage(f"p{r}", "w " * 10, ""), r) for r in range(1, n + 1)]


def _render(ds) -> str:  # 5 header words + 10 words per document
    return "header " * 5 + " ".join(d.passage.text for d in ds)


def _count(prompts: list[str]) -> list[int]:
    return [len(p.split()) for p in prompts]


def test_fits_untouched() -> None:
    docs = _docs(3)
    prompt, kept = fit_to_window(docs, _render, _count, budget=35)
    assert kept == docs and _count([prompt])[0] == 35


@pytest.mark.parametrize(("budget", "n_kept"), [(34, 2), (25, 2), (24, 1), (15, 1), (14, 0), (3, 0)])
def test_drops_lowest_ranked_until_it_fits(budget: int, n_kept: int) -> None:
    docs = _docs(3)
    shuffled = [docs[2], docs[0], docs[1]]  # prompt order: rank 3, rank 1, rank 2
    prompt, kept = fit_to_window(shuffled, _render, _count, budget)
    assert [d.rank for d in kept] == [r for r in (3, 1, 2) if r <= n_kept]  # order kept, worst ranks gone
    assert _count([prompt])[0] <= budget or not kept
