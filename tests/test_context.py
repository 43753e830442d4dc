"""Document orders and the drop-the-lowest-ranked truncation rule (Cao et al. 2025, §4.3)."""

from __future__ import annotations

import pytest

from rr.context import (
    SEPARATOR_TOKENS,
    SLACK,
    SLACK_PER_DOC,
    RankedDoc,
    WindowEstimate,
    fit_prompt,
    fit_to_window,
    order_indices,
)
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


def _estimate(n: int) -> WindowEstimate:
    """The word counter's estimate: 5 header words + 10 per document (+ SEPARATOR_TOKENS each)."""
    return WindowEstimate([10] * n, lambda m: 5)


def test_estimate_arithmetic() -> None:
    est = _estimate(3)
    assert (SEPARATOR_TOKENS, SLACK_PER_DOC, SLACK) == (1, 2, 8)
    assert est.tokens([0, 2]) == 5 + 2 * 11 and est.upper([0, 2]) == 27 + 2 * 2 + 8
    assert [est.most_docs([0, 1, 2], b) for b in (4, 5, 15, 16, 26, 27, 38, 100)] == [0, 0, 0, 1, 1, 2, 3, 3]


def _spy(counted: list[str]):
    def count(prompts: list[str]) -> list[int]:
        counted.extend(prompts)
        return _count(prompts)

    return count


def test_clearly_under_budget_counts_no_whole_prompt() -> None:
    docs, counted = _docs(3), []
    fit = fit_prompt(docs, _render, _spy(counted), budget=5 + 3 * 11 + 3 * 2 + 8, estimate=_estimate(3))
    assert counted == [] and fit.kept == docs and not fit.exact
    assert (
        fit.tokens == 5 + 3 * 11 and fit.prompt is None
    )  # the estimate (the exact count is 35), not rendered
    assert fit_to_window(docs, _render, _count, 5 + 3 * 11 + 3 * 2 + 8, _estimate(3)) == (_render(docs), docs)
    # one token less and the bound no longer holds: exact counts decide (all 3 still fit: 35 words)
    fit = fit_prompt(docs, _render, _spy(counted), budget=5 + 3 * 11 + 3 * 2 + 7, estimate=_estimate(3))
    assert fit.kept == docs and fit.exact and fit.tokens == 35
    assert [_count([p])[0] for p in counted] == [35]  # most_docs -> 3 (38 <= 46), then one exact count


@pytest.mark.parametrize(
    ("budget", "n_kept", "whole_counts"),
    [
        (35, 3, [25, 35]),  # estimate says 2 (27 <= 35 < 38): 2 fits exactly, and so does 3
        (34, 2, [25, 35]),  # 2 fits, 3 does not
        (26, 2, [25, 35]),  # bound of 2 is 39: counted
        (20, 1, [15, 25]),
        (14, 0, [15]),  # the estimate says 0 (16 > 14); 1 does not fit; 0 documents: prompt counted
        (3, 0, [15]),
    ],
)
def test_fallback_counts_around_the_estimate(budget: int, n_kept: int, whole_counts: list[int]) -> None:
    docs, counted = _docs(3), []
    shuffled = [docs[2], docs[0], docs[1]]
    fit = fit_prompt(shuffled, _render, _spy(counted), budget, _estimate(3))
    assert [d.rank for d in fit.kept] == [r for r in (3, 1, 2) if r <= n_kept]
    assert fit.exact and fit.tokens == 5 + 10 * n_kept and fit.prompt == _render(fit.kept)
    assert [_count([p])[0] for p in counted if p != _render([])] == whole_counts


@pytest.mark.parametrize("budget", range(0, 50))
def test_estimate_never_changes_the_kept_documents(budget: int) -> None:
    docs = _docs(4)
    shuffled = [docs[3], docs[1], docs[0], docs[2]]
    with_estimate = fit_to_window(shuffled, _render, _count, budget, _estimate(4))
    exact = fit_prompt(shuffled, _render, _count, budget)
    assert with_estimate == (exact.prompt, exact.kept) and exact.exact
    # the rule itself: drop the worst-ranked document while the prompt does not fit
    kept = list(shuffled)
    while kept and _count([_render(kept)])[0] > budget:
        kept.remove(max(kept, key=lambda d: d.rank))
    assert exact.kept == kept


def test_estimate_only_counts_nothing() -> None:
    """The planner's mode: the estimate's m, no whole prompt tokenized."""
    docs, counted = _docs(3), []
    fit = fit_prompt(docs, _render, _spy(counted), budget=30, estimate=_estimate(3), estimate_only=True)
    assert counted == [] and [d.rank for d in fit.kept] == [1, 2] and (fit.tokens, fit.exact) == (27, False)
    with pytest.raises(ValueError, match="needs an estimate"):
        fit_prompt(docs, _render, _count, 30, estimate_only=True)
