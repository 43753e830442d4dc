"""The strategy protocol and the records it consumes and produces."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from rr.context import RankedDoc, WindowEstimate, fit_prompt
from rr.generation.client import LLM, PromptTooLongError
from rr.prompts import render
from rr.prompts.answer import extract_answer
from rr.records import Example, Generation, Request

if TYPE_CHECKING:
    from rr.runtime import Runtime


@dataclass(frozen=True)
class Cell:
    """One point of a job's grid. ``k == 0`` means no retrieval (``retriever``/``order`` = ``none``)."""

    retriever: str
    k: int
    order: str
    query_perturbation: str = "none"
    doc_perturbation: str = "none"


@dataclass(frozen=True)
class CellInput:
    """An example in a cell: its question and the documents to show, in prompt order.

    ``extra`` holds score-table columns a document perturbation adds (e.g. ``doc_similarity``).
    """

    example: Example
    cell: Cell
    docs: tuple[RankedDoc, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StrategyOutput:
    """A strategy's result for one :class:`CellInput`.

    Attributes:
        raw_output: The model's full final-step output.
        prediction: The extracted answer.
        marker_found: Whether the ``Answer:`` marker was found (else a counted fallback).
        docs_used: Documents in the final prompt, in prompt order (after window fitting).
        extra: Strategy-specific columns for the score table.
        over_window: A prompt of this output (any step) did not fit the context window and
            was not sent (its output is empty: :class:`~rr.records.Generation`'s ``over_window``).
        prompt: The final step's prompt exactly as rendered for the model (the score table's
            ``prompt``; ``Generation.prompt``).
    """

    raw_output: str
    prediction: str
    marker_found: bool
    docs_used: tuple[RankedDoc, ...]
    extra: dict[str, Any] = field(default_factory=dict)
    over_window: bool = False
    prompt: str = ""


@runtime_checkable
class Strategy(Protocol):
    """Turns cell inputs into predictions with whole-batch model calls (never per example).

    The model under test is ``rt.llm``; fallbacks are reported with ``rt.count``.
    """

    name: str
    #: ``False``: the strategy never shows documents, so it gets only the closed-book (k = 0) cell.
    uses_retrieval: bool

    def run(self, inputs: Sequence[CellInput], rt: Runtime) -> list[StrategyOutput]:
        """One output per input, same order."""
        ...


class PromptStrategy:
    """Base of the prompting strategies: the prompt template, how a document is shown, the k = 0
    template and the ``strategy`` column's name. Subclasses take ``**kwargs`` for these and declare
    only what they add (their config schema still lists and checks all of them).

    Args:
        template: The RAG prompt template (``rr/prompts/templates``).
        name: Value of the score table's ``strategy`` column.
        doc_format: How a document is shown as a ``Context``: ``{title}`` and ``{text}``.
        closed_book_template: Template for k = 0 cells (the non-RAG baseline f(q, 0)).
    """

    uses_retrieval = True

    def __init__(
        self,
        template: str,
        name: str,
        doc_format: str = "{title}\n{text}",
        closed_book_template: str = "non_rag_qa.j2",
    ) -> None:
        self.template = template
        self.name = name
        self.doc_format = doc_format
        self.closed_book_template = closed_book_template


def answered(
    g: Generation,
    docs: Sequence[RankedDoc] = (),
    extra: dict[str, Any] | None = None,
    over_window: bool | None = None,
) -> StrategyOutput:
    """The output of a final-step generation ``g``: its answer extracted (``Answer:`` marker, else a
    counted fallback), the documents of its prompt, ``extra`` columns; ``over_window`` defaults to ``g``'s."""
    prediction, found = extract_answer(g.text)
    return StrategyOutput(
        g.text,
        prediction,
        found,
        tuple(docs),
        dict(extra or {}),
        over_window=g.over_window if over_window is None else over_window,
        prompt=g.prompt,
    )


def split_closed_book(
    inputs: Sequence[CellInput],
    closed_book: Callable[[list[CellInput]], Sequence[StrategyOutput]],
    rag: Callable[[list[CellInput]], Sequence[StrategyOutput]],
) -> list[StrategyOutput]:
    """Answer the k = 0 inputs with ``closed_book`` and the k > 0 ones with ``rag``, merged in input order.

    ``closed_book`` is called first, then ``rag``, each once, also with an empty list (a step of
    no requests still shows in ``summary.json``'s steps). Each returns one output per input it
    is given, in the same order.
    """
    closed = [i for i, x in enumerate(inputs) if x.cell.k == 0]
    retrieved = [i for i, x in enumerate(inputs) if x.cell.k > 0]
    out: dict[int, StrategyOutput] = {}
    out.update(zip(closed, closed_book([inputs[i] for i in closed]), strict=True))
    out.update(zip(retrieved, rag([inputs[i] for i in retrieved]), strict=True))
    return [out[i] for i in range(len(inputs))]


def truncate_words(text: str, max_words: int | None) -> str:
    """The first ``max_words`` whitespace-separated words of ``text`` (``None``: unchanged).

    BERGEN (Rau et al. 2024), used by the query-level paper (§4.2), truncates each document to
    100 words before it enters the prompt.
    """
    if max_words is None:
        return text
    words = text.split()
    return text if len(words) <= max_words else " ".join(words[:max_words])


def format_doc(doc: RankedDoc, template: str, max_words: int | None = None) -> str:
    """A document as it appears in the prompt: ``template`` with ``{title}`` and ``{text}``
    (the text cut to ``max_words`` words when given)."""
    return _format_doc(template, doc.passage.title, doc.passage.text, max_words)


@lru_cache(maxsize=1 << 16)  # the same passage appears in every k, order and strategy of its example
def _format_doc(template: str, title: str, text: str, max_words: int | None) -> str:
    return template.format(title=title, text=truncate_words(text, max_words)).strip()


def fit_request(
    llm: LLM,
    docs: Sequence[RankedDoc],
    texts: Sequence[str],
    make: Callable[[list[str]], Request],
    skeleton_key: Hashable | None = None,
) -> tuple[Request, list[RankedDoc]]:
    """The request over the best-ranked ``docs`` that fit the model's window, and those docs.

    Documents are dropped lowest-rank first until prompt + ``max_new_tokens`` fit the context
    window (Cao et al. 2025, §4.3; :func:`~rr.context.fit_prompt`). The prompt is not tokenized
    whole when its estimate from parts (each document's memoized count plus the prompt rendered
    with empty documents, :class:`~rr.context.WindowEstimate`) is clearly within the window.

    Args:
        llm: The model's client (tokenizer, window, token-count memo).
        docs: Documents in prompt order.
        texts: Each document as it appears in the prompt (formatted), same order.
        make: Builds the request from the texts of the documents to show, in prompt order
            (``make([""] * m)`` is the prompt's skeleton with ``m`` empty documents).
        skeleton_key: Identifies ``make``'s skeletons across calls (e.g. template and question),
            so that their token counts are looked up instead of rendered again; ``None``: not shared.
    """
    position = {id(d): i for i, d in enumerate(docs)}
    built: dict[tuple[int, ...], Request] = {}

    def request(ds: Sequence[RankedDoc]) -> Request:
        key = tuple(position[id(d)] for d in ds)
        if key not in built:
            built[key] = make([texts[i] for i in key])
        return built[key]

    skeletons: dict[int, int] = {}

    def skeleton_tokens(m: int) -> int:
        if m not in skeletons:
            skeletons[m] = (
                llm.count_tokens_cached([llm.render(make([""] * m))])[0]
                if skeleton_key is None
                else llm.count_tokens_keyed((skeleton_key, m), lambda: llm.render(make([""] * m)))
            )
        return skeletons[m]

    estimate = WindowEstimate(llm.count_tokens_cached(list(texts)), skeleton_tokens)
    budget = llm.context_window - llm.generator.default_params().max_new_tokens
    # whole prompts recur too (the top-m of k = 75 and k = 100 in original order): memoized counts
    fit = fit_prompt(
        docs,
        lambda ds: llm.render(request(ds)),
        llm.count_tokens_cached,
        budget,
        estimate,
        estimate_only=not llm.fit_exactly,
    )
    if llm.strict_window and len(fit.kept) < len(docs) and fit.tokens <= budget:  # (not even the
        # question fitting is the over-window error of the step, raised before its model calls)
        raise PromptTooLongError(
            f"{len(docs)} documents do not fit the context window of {llm.context_window} tokens with "
            f"max_new_tokens={llm.generator.default_params().max_new_tokens} ({len(fit.kept)} fit): the cell would "
            "not be filled at its k. Raise generator.context_window, lower grid.k, or set strict_window=false "
            "to drop the lowest-ranked documents (Cao et al. 2025, §4.3; the cells are then named as not filled)"
        )
    fitted = request(fit.kept)
    llm.note_prompt_tokens(fitted, fit.tokens, fit.exact)
    return fitted, fit.kept


def fitted_request(
    llm: LLM,
    template: str,
    docs: Sequence[RankedDoc],
    doc_format: str,
    max_doc_words: int | None = None,
    **variables: Any,
) -> tuple[Request, list[RankedDoc]]:
    """A request rendering ``template`` over ``docs`` (as ``sources``), fitted to the model's window.

    Documents are dropped lowest-rank first until prompt + ``max_new_tokens`` fit the
    context window (Cao et al. 2025, §4.3; :func:`fit_request`).
    """
    params = llm.generator.default_params()

    def make(sources: list[str]) -> Request:
        return Request.user(render(template, sources=sources, **variables), params)

    try:  # the skeleton depends on the template and its variables only
        key: Hashable | None = ("fitted_request", template, tuple(sorted(variables.items())))
        hash(key)
    except TypeError:
        key = None
    return fit_request(llm, docs, [format_doc(d, doc_format, max_doc_words) for d in docs], make, key)
