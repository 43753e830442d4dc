"""Context building: slice the top-k of a cached run, order it, and fit it to the context window."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

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


#: Tokens assumed per document beyond its own text and an empty document's rendering: where a
#: template puts the document between newlines, the empty rendering merges the two newlines
#: into one token that the real prompt spends as two. Measured with the SmolLM2 tokenizer on
#: every prompt of the Cao et al. grid: exactly 1 per document for ``rag_qa.j2``, ``s2a.j2``
#: and ``ownknow.j2`` (see :class:`WindowEstimate`).
SEPARATOR_TOKENS = 1
#: Safety margin of the no-count fast path, per document and per prompt: the estimate plus this
#: margin must bound the real count (boundary effects of tokenizers are a token or two per
#: document edge; none was seen beyond :data:`SEPARATOR_TOKENS`).
SLACK_PER_DOC = 2
SLACK = 8


@dataclass(frozen=True)
class WindowEstimate:
    """A prompt's token count estimated from its parts, without tokenizing the whole prompt.

    For a prompt holding documents ``S`` (in any order), the estimate is
    ``skeleton_tokens(|S|) + sum(doc_tokens[i] + SEPARATOR_TOKENS for i in S)``: the exact
    count of the prompt rendered with ``|S|`` empty documents (template, question, labels such
    as ``Context 12``, chat template) plus each document's own exact count, as tokenized alone.
    Tokenizers split text into pieces at whitespace and punctuation before merging, so the
    counts add up except at the edges of each document; on the Cao et al. prompts with the
    SmolLM2 tokenizer the estimate is exact (``benchmarks/README.md``). Only its upper bound
    (:meth:`upper`) ever decides that a prompt fits without counting it; elsewhere it is a
    starting point for exact counts.

    Attributes:
        doc_tokens: Exact token count of each document as it appears in the prompt (formatted),
            tokenized alone; same order as the documents given to :func:`fit_to_window`.
        skeleton_tokens: ``m -> `` exact token count of the prompt with ``m`` empty documents.
    """

    doc_tokens: Sequence[int]
    skeleton_tokens: Callable[[int], int]

    def tokens(self, indices: Sequence[int]) -> int:
        """Estimated tokens of the prompt holding the documents at ``indices``."""
        return self.skeleton_tokens(len(indices)) + sum(
            self.doc_tokens[i] + SEPARATOR_TOKENS for i in indices
        )

    def upper(self, indices: Sequence[int]) -> int:
        """:meth:`tokens` plus the safety margin: taken as a bound on the exact count."""
        return self.tokens(indices) + SLACK_PER_DOC * len(indices) + SLACK

    def most_docs(self, best_first: Sequence[int], budget: int) -> int:
        """The largest ``m`` with ``tokens(best_first[:m]) <= budget`` (0 if none).

        Starts from the guess that takes the skeleton of all documents for every ``m`` (it has
        the most labels) and walks up with exact skeletons: a few calls of ``skeleton_tokens``.
        """
        n = len(best_first)
        cost = list(accumulate((self.doc_tokens[i] + SEPARATOR_TOKENS for i in best_first), initial=0))
        m = max(bisect_right(cost, budget - self.skeleton_tokens(n)) - 1, 0)
        while m < n and self.tokens(best_first[: m + 1]) <= budget:
            m += 1
        while m > 0 and self.tokens(best_first[:m]) > budget:  # only if skeletons shrink with m
            m -= 1
        return m


@dataclass(frozen=True)
class FittedPrompt:
    """What :func:`fit_prompt` returns.

    Attributes:
        prompt: The rendered prompt over ``kept``; ``None`` where it was not needed (the
            estimated paths): ``render(kept)``.
        kept: The documents kept, in prompt order.
        tokens: Its token count: exact when ``exact``, else the estimate (:meth:`WindowEstimate.tokens`).
        exact: Whether ``tokens`` was counted on the whole prompt.
    """

    prompt: str | None
    kept: list[RankedDoc]
    tokens: int
    exact: bool


def fit_prompt(
    docs: Sequence[RankedDoc],
    render: Callable[[Sequence[RankedDoc]], str],
    count_tokens: Callable[[list[str]], list[int]],
    budget: int,
    estimate: WindowEstimate | None = None,
    estimate_only: bool = False,
) -> FittedPrompt:
    """Drop the lowest-ranked documents until the rendered prompt fits ``budget`` tokens (§4.3).

    The result keeps the ``m`` best-ranked documents, in their prompt order, for the largest
    ``m`` whose rendered prompt has at most ``budget`` tokens (none when even one document is
    too many; the prompt is then rendered without documents). The count of a real prompt grows
    with every document it holds (each adds its text), which is what makes the search below
    return that ``m``.

    Cost: with ``estimate``, a prompt whose estimate plus safety margin is within ``budget``
    is returned without counting it whole (most prompts when the window is large). Otherwise
    the estimate (or, without one, the exact count of the whole prompt less each document's
    own count) points at a candidate ``m`` and exact counts of whole prompts settle it:
    typically two (``m`` fits, ``m + 1`` does not).

    ``estimate_only`` (for ``rr plan``, never for a job) takes the estimate's ``m``
    (:meth:`WindowEstimate.most_docs`) without counting anything: the job's ``m`` wherever the
    estimate is exact, as it is for the paper's templates with the SmolLM2 tokenizer.

    Args:
        docs: Documents in prompt order.
        render: Renders the prompt for a list of documents (in the given order).
        count_tokens: Exact token counts of rendered prompts.
        budget: Maximum prompt tokens (context window minus the tokens to generate).
        estimate: Token estimate from the prompt's parts (:class:`WindowEstimate`), aligned with ``docs``.
        estimate_only: Decide from ``estimate`` alone (requires it).

    Returns:
        The documents kept, the prompt's token count (exact, or the estimate) and the prompt
        where it was rendered.
    """
    if estimate_only and estimate is None:
        raise ValueError("fit_prompt: estimate_only needs an estimate")
    docs = list(docs)
    n = len(docs)
    best_first = sorted(range(n), key=lambda i: docs[i].rank)
    counted: dict[int, tuple[str, int]] = {}

    def top(m: int) -> list[RankedDoc]:
        keep = set(best_first[:m])
        return [d for i, d in enumerate(docs) if i in keep]

    def exact(m: int) -> int:
        if m not in counted:
            prompt = render(top(m))
            counted[m] = (prompt, count_tokens([prompt])[0])
        return counted[m][1]

    def fits(m: int) -> bool:
        """Whether the best ``m`` fit: the estimate's bound when it is within budget, else exact."""
        if estimate is not None and estimate.upper(best_first[:m]) <= budget:
            return True
        return exact(m) <= budget

    if estimate is not None:
        if estimate.upper(best_first) <= budget:  # the fast path: no whole prompt is tokenized
            return FittedPrompt(None, docs, estimate.tokens(best_first), exact=False)
        m = estimate.most_docs(best_first, budget)
        if estimate_only:
            kept = top(m)
            return FittedPrompt(None, kept, estimate.tokens(best_first[:m]), exact=False)
    else:
        whole = exact(n)
        if whole <= budget or not docs:
            return FittedPrompt(counted[n][0], docs, whole, exact=True)
        # estimate: drop the lowest-ranked documents' own counts from the whole count
        own = count_tokens([d.passage.text + d.passage.title for d in docs])
        m = n
        while m > 0 and whole - sum(own[i] for i in best_first[m:]) > budget:
            m -= 1
    # settle m: the best m fit and the best m + 1 do not
    if m > 0 and not fits(m):
        while m > 0 and not fits(m):
            m -= 1
    else:
        while m < n and fits(m + 1):
            m += 1
    if m in counted:
        prompt, tokens = counted[m]
        return FittedPrompt(prompt, top(m), tokens, exact=True)
    kept = top(m)
    if estimate is not None and m > 0:  # fits by the estimate's bound
        return FittedPrompt(None, kept, estimate.tokens(best_first[:m]), exact=False)
    exact(m)  # m = 0: no document fits
    return FittedPrompt(counted[m][0], kept, counted[m][1], exact=True)


def fit_to_window(
    docs: Sequence[RankedDoc],
    render: Callable[[Sequence[RankedDoc]], str],
    count_tokens: Callable[[list[str]], list[int]],
    budget: int,
    estimate: WindowEstimate | None = None,
) -> tuple[str, list[RankedDoc]]:
    """:func:`fit_prompt`'s prompt and kept documents."""
    fit = fit_prompt(docs, render, count_tokens, budget, estimate)
    return (render(fit.kept) if fit.prompt is None else fit.prompt), fit.kept
