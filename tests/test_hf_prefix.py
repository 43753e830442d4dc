"""Prefix reuse in the HF backend (issue 38): the shared start of neighbouring prompts is computed
once, and the predictions are those of plain batched ``generate``, on the real packaged SmolLM2."""

from __future__ import annotations

from pathlib import Path

import pytest

from rr.generation.hf import HFGenerator
from rr.generation.hf_prefix import PrefixPrefill, common_prefix_length, distinct_prefix_tokens, prefix_order
from rr.records import GenerationParams, Request
from tests.conftest import compose_config

PARAMS = GenerationParams(max_new_tokens=12)

INSTRUCTION = (
    "Based on your own knowledge and retrieved contexts, answer the question in a concise manner "
    'without any explanation. Indicate your answer with "Answer:".'
)
DOCS = {
    "a": "Kowloon\nKowloon is an urban area in Hong Kong comprising the Kowloon Peninsula.",
    "b": "Victoria Harbour\nVictoria Harbour is a natural landform harbour in Hong Kong.",
    "c": "Genre\nGenre is any style or form of communication and art in any mode.",
}


def rag_prompt(gen: HFGenerator, docs: str, question: str) -> str:
    """A Cao et al.-shaped prompt: instruction, the documents in order, the question."""
    contexts = "\n".join(f" Context {i + 1}\n{DOCS[d]}" for i, d in enumerate(docs))
    return gen.render(Request.user(f"{INSTRUCTION}\n\nRetrieved contexts:\n{contexts}\n\n{question}"))


def the_grid(gen: HFGenerator) -> list[str]:
    """k = 1, 2, 3 in original, reversed and one shuffled order, two questions, closed-book too:
    the prefixes a job's prompts share (and some they do not)."""
    out = []
    for q in ("What city is Kowloon a part of?", "What genre is One Piece?"):
        for docs in ("a", "ab", "ba", "abc", "cba", "bac"):
            out.append(rag_prompt(gen, docs, q))
        out.append(gen.render(Request.user(q)))
    return out


@pytest.fixture(scope="module")
def plain() -> HFGenerator:
    return HFGenerator(batch_size=4, prefix_cache=False)


@pytest.fixture(scope="module")
def reusing() -> HFGenerator:
    return HFGenerator(batch_size=4)


def test_prefix_helpers_hand_worked() -> None:
    assert common_prefix_length([1, 2, 3], [1, 2, 4, 5]) == 2
    assert common_prefix_length([], [1]) == 0 and common_prefix_length([7], [7]) == 1
    ids = [[1, 2, 3, 4], [5, 6], [1, 2, 9], [1, 2, 3]]
    assert prefix_order(ids) == [3, 0, 2, 1]  # [1,2,3] < [1,2,3,4] < [1,2,9] < [5,6]
    # the prefix tree's nodes: 1,2,3 / +4 / +9 / 5,6 -> 3 + 1 + 1 + 2
    assert distinct_prefix_tokens(ids) == 7


def test_reused_prefixes_give_plain_generates_predictions(plain: HFGenerator, reusing: HFGenerator) -> None:
    prompts = the_grid(plain)
    want = plain.generate(prompts, PARAMS)
    got = reusing.generate(prompts, PARAMS)
    assert [c.text for c in got] == [c.text for c in want]
    assert [c.prompt_tokens for c in got] == [c.prompt_tokens for c in want]
    assert [c.completion_tokens for c in got] == [c.completion_tokens for c in want]
    assert all(c.text.strip() for c in got)  # a real answer, not an empty decode
    # what was computed: each prompt less what it shares with the one before it (sorted), counted
    # on all tokens but the last (the cache) plus the last token, which every row runs itself
    ids = [reusing.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
    order = prefix_order(ids)
    computed = sum(
        len(ids[i]) - 1 - (common_prefix_length(ids[order[j - 1]][:-1], ids[i][:-1]) if j else 0) + 1
        for j, i in enumerate(order)
    )
    stats = reusing.prefix_cache_stats()
    assert stats == {"queries": sum(map(len, ids)), "hits": sum(map(len, ids)) - computed}
    assert stats["hits"] > 0.4 * stats["queries"]  # the instruction and first documents, mostly
    assert sum(t.padded_tokens for t in reusing.batch_timings[-4:]) == computed  # timed as computed


def test_one_prompt_alone_and_a_one_token_prompt(plain: HFGenerator, reusing: HFGenerator) -> None:
    prompts = [rag_prompt(plain, "ab", "Where is Victoria Harbour?"), "Hi"]
    assert [c.text for c in reusing.generate(prompts, PARAMS)] == [
        c.text for c in plain.generate(prompts, PARAMS)
    ]
    assert [c.text for c in reusing.generate(prompts[:1], PARAMS)] == [
        c.text for c in plain.generate(prompts[:1], PARAMS)
    ]


def test_a_sliding_window_cache_is_not_reused() -> None:
    from transformers import AutoModelForCausalLM, LlamaConfig, MistralConfig

    small = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}
    mistral = AutoModelForCausalLM.from_config(MistralConfig(sliding_window=8, vocab_size=64, **small))
    llama = AutoModelForCausalLM.from_config(LlamaConfig(vocab_size=64, **small))
    assert not PrefixPrefill.supported(mistral)
    assert PrefixPrefill.supported(llama)


def test_the_bar_says_how_many_prompt_tokens_were_reused(reusing: HFGenerator) -> None:
    from tests.test_generation import _Bar

    prompts = [rag_prompt(reusing, d, "What city is Kowloon a part of?") for d in ("a", "ab", "abc")]
    bar = _Bar()
    reusing.generate(prompts, GenerationParams(max_new_tokens=4), progress=bar)
    shown = [text for kind, text in bar.events if kind == "postfix" and text.startswith("prefill 3/3")]
    assert shown and "prompt tokens reused" in shown[0] and not shown[0].startswith("prefill 3/3, 0 of")
    assert sum(n for kind, n in bar.events if kind == "update") == 3


def test_prefix_cache_is_a_throughput_setting_not_part_of_the_job_id(tmp_path: Path) -> None:
    from rr.config import job_id

    auto = compose_config(["generator=hf"], tmp_path)
    on = compose_config(["generator=hf", "generator.prefix_cache=true"], tmp_path)
    off = compose_config(["generator=hf", "generator.prefix_cache=false"], tmp_path)
    assert auto.generator.prefix_cache == "auto"
    assert on.generator.prefix_cache is True and off.generator.prefix_cache is False
    assert job_id(auto) == job_id(on) == job_id(off)


def test_prefix_cache_auto_is_on_for_cpu_and_off_for_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 45: prefix reuse was measured faster on the CPU only, so ``auto`` (the default) turns it
    on there and off on a CUDA device (the device given, or torch finding one: mocked here), until
    ``make gpu-check``'s line a5 has measured it on a GPU; true / false force it anywhere."""
    import torch

    from rr.generation.hf import resolve_prefix_cache

    assert [resolve_prefix_cache("auto", d) for d in ("cpu", "cuda", "cuda:1", "mps")] == [
        True,
        False,
        False,
        False,
    ]
    assert resolve_prefix_cache(True, "cuda") and not resolve_prefix_cache(False, "cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    default = HFGenerator()
    assert default.prefix_cache_setting == "auto" and default.prefix_cache and default.reuses_prefixes
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a node with a GPU: device null -> cuda
    assert default.prefix_cache is False and not default.reuses_prefixes
    assert HFGenerator(device="cuda:0").prefix_cache is False
    assert HFGenerator(device="cpu").prefix_cache is True  # the CPU on a GPU node: measured faster
    assert HFGenerator(device="cuda", prefix_cache=True).reuses_prefixes
    with pytest.raises(ValueError, match="true, false or auto"):
        HFGenerator(prefix_cache="yes")
