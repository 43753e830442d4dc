"""Window fitting on real prompts with the packaged SmolLM2 tokenizer: the estimate from parts
never changes which documents a prompt keeps, and spares whole-prompt tokenization."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from rr.context import RankedDoc, order_indices
from rr.data.corpus import wiki_offline_passages
from rr.generation.cache import GenerationCache
from rr.generation.client import LLM
from rr.generation.hf import HFGenerator
from rr.prompts import render
from rr.records import Request
from rr.strategies.base import fitted_request, format_doc

QUESTION = "who wrote the novel on which the film was based?"
DOC_FORMAT = "{title}\n{text}"


@pytest.fixture(scope="module")
def docs() -> list[RankedDoc]:
    passages = wiki_offline_passages()
    return [RankedDoc(passages[i * 37], rank) for rank, i in enumerate(range(100), start=1)]


def _llm(tmp_path: Path, context_window: int, max_new_tokens: int = 100) -> LLM:
    gen = HFGenerator(context_window=context_window, max_new_tokens=max_new_tokens)
    return LLM(gen, GenerationCache(tmp_path, gen.identity(), writer="test"), show_progress=False)


def _rule(llm: LLM, template: str, docs: Sequence[RankedDoc]) -> list[RankedDoc]:
    """Cao et al. §4.3 literally: drop the worst-ranked document until the exact count fits."""
    params = llm.generator.default_params()
    budget = llm.context_window - params.max_new_tokens
    kept = list(docs)

    def tokens(ds: list[RankedDoc]) -> int:
        text = render(template, sources=[format_doc(d, DOC_FORMAT) for d in ds], question=QUESTION)
        return llm.count_tokens([llm.render(Request.user(text, params))])[0]

    while kept and tokens(kept) > budget:
        kept.remove(max(kept, key=lambda d: d.rank))
    return kept


@pytest.mark.parametrize(
    ("template", "context_window", "ks"),
    [
        ("rag_qa.j2", 2048, [1, 5, 12, 13, 14, 20, 30]),
        ("s2a.j2", 2048, [12, 13, 30]),
        ("rag_qa.j2", 8192, [61, 62, 63, 70]),
    ],
)
def test_kept_documents_equal_the_exact_rule(
    tmp_path: Path, docs: list[RankedDoc], template: str, context_window: int, ks: list[int]
) -> None:
    """And the planner's estimate-only fitting keeps the same documents (its estimate is exact here)."""
    llm = _llm(tmp_path, context_window)
    budget = context_window - 100
    for k in ks:
        for order in ("original", "reversed", "shuffled"):
            shown = [docs[i] for i in order_indices(k, order, 0, "q", k)]
            rule = _rule(llm, template, shown)
            for exactly in (True, False):
                llm.fit_exactly = exactly
                request, kept = fitted_request(llm, template, shown, DOC_FORMAT, question=QUESTION)
                assert kept == rule, (template, k, order, exactly)
                text = render(template, sources=[format_doc(d, DOC_FORMAT) for d in kept], question=QUESTION)
                assert request.messages == (("user", text),)
                assert llm.count_tokens([llm.render(request)])[0] <= budget or not kept


def test_prompts_clearly_within_the_window_are_not_tokenized_whole(
    tmp_path: Path, docs: list[RankedDoc]
) -> None:
    llm = _llm(tmp_path, context_window=32768)
    counted: list[str] = []
    count = llm.generator.count_tokens

    def spy(prompts: list[str]) -> list[int]:
        counted.extend(prompts)
        return count(prompts)

    llm.generator.count_tokens = spy  # type: ignore[method-assign]
    _, kept = fitted_request(llm, "rag_qa.j2", docs[:50], DOC_FORMAT, question=QUESTION)
    assert kept == docs[:50]
    # only the 50 documents alone and the prompt skeleton (50 empty documents) were counted
    assert len(counted) == 51 and max(count(counted)) < 1000
    # a second fit of the same documents in another order counts nothing new (memoized pieces)
    counted.clear()
    fitted_request(llm, "rag_qa.j2", docs[:50][::-1], DOC_FORMAT, question=QUESTION)
    assert counted == []


def test_estimate_is_exact_for_the_papers_template(tmp_path: Path, docs: list[RankedDoc]) -> None:
    """What the planner reports instead of counting: equal to the exact count on these prompts."""
    llm = _llm(tmp_path, context_window=32768)
    noted: list[tuple[Request, int, bool]] = []
    llm.note_prompt_tokens = lambda r, n, exact: noted.append((r, n, exact))  # type: ignore[method-assign]
    for k in (1, 5, 25, 50, 100):
        request, _ = fitted_request(llm, "rag_qa.j2", docs[:k], DOC_FORMAT, question=QUESTION)
        assert noted[-1][0] is request
    assert [exact for _, _, exact in noted] == [False] * 5
    assert [n for _, n, _ in noted] == llm.count_tokens([llm.render(r) for r, _, _ in noted])


def test_fast_count_equals_the_tokenizer_call(tmp_path: Path, docs: list[RankedDoc]) -> None:
    gen = HFGenerator()
    prompts = [
        gen.render(Request.user(render("rag_qa.j2", sources=[format_doc(d, DOC_FORMAT)], question=QUESTION)))
        for d in docs[:20]
    ]
    expected = [len(ids) for ids in gen.tokenizer(prompts, add_special_tokens=False)["input_ids"]]
    assert gen.count_tokens(prompts) == expected
    gen.tokenizer(prompts[:2], padding=True)  # leaves padding on in the Rust backend
    assert gen.tokenizer.backend_tokenizer.padding is not None
    assert gen.count_tokens(prompts) == expected  # then counted through the tokenizer call
