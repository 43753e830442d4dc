"""vLLM offline backend: one ``LLM.generate`` call per step, prefix-sorted, prefix caching on.

Written against vLLM 0.32 (the ``gpu`` extra): ``vllm.LLM(model, tensor_parallel_size, dtype,
gpu_memory_utilization, max_model_len, enable_prefix_caching, ...)``, ``SamplingParams`` with
``structured_outputs=StructuredOutputsParams(choice=[...])`` for constrained choices (the
``guided_*`` fields and ``GuidedDecodingParams`` were removed in vLLM 0.12) and
``prompt_logprobs`` for scoring. vllm is imported lazily: prompts are rendered and counted
with the model's HF tokenizer (exactly as the ``hf`` backend does, so both backends share
cache entries for the same model and revision); only generation needs vllm and a GPU.

Request building, ordering, parameter mapping and output parsing are the plain functions
below, tested without vllm; :meth:`VLLMGenerator.engine` and the ``generate`` call are the
only lines that need it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from rr.generation.base import Completion
from rr.generation.hf import HFGenerator
from rr.records import GenerationParams
from rr.registry import component

log = logging.getLogger(__name__)


def prefix_order(prompts: Sequence[str]) -> list[int]:
    """Indices of ``prompts`` in lexicographic order: prompts sharing a prefix become adjacent.

    vLLM's automatic prefix caching then finds the shared blocks of neighbouring requests
    (with documents before the question, the k = 5 original-order prompt is a prefix of the
    k = 10 one). Ties keep their input order.
    """
    return sorted(range(len(prompts)), key=lambda i: prompts[i])


def sampling_kwargs(
    params: GenerationParams,
    prompt_logprobs: int | None = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """``vllm.SamplingParams`` keyword arguments for ``params`` (greedy: temperature 0).

    The seed is passed only when sampling (it is part of the cache key only then);
    ``max_tokens`` overrides ``params.max_new_tokens`` (scoring uses 1).
    """
    kw: dict[str, Any] = {
        "max_tokens": params.max_new_tokens if max_tokens is None else max_tokens,
        "temperature": 0.0 if params.greedy else params.temperature,
        "top_p": 1.0 if params.greedy else params.top_p,
        "skip_special_tokens": True,
    }
    if not params.greedy and params.seed is not None:
        kw["seed"] = params.seed
    if params.stop:
        kw["stop"] = list(params.stop)
    if prompt_logprobs is not None:
        kw["prompt_logprobs"] = prompt_logprobs
    return kw


def token_prompts(token_ids: Sequence[Sequence[int]]) -> list[dict[str, list[int]]]:
    """vLLM ``TokensPrompt`` inputs: the exact token ids the ``hf`` backend would feed the model
    (the rendered prompt, chat template applied, no extra special tokens)."""
    return [{"prompt_token_ids": list(ids)} for ids in token_ids]


def parse_outputs(outputs: Sequence[Any]) -> list[Completion]:
    """:class:`Completion` per ``vllm.RequestOutput`` (first sample), same order."""
    out = []
    for o in outputs:
        first = o.outputs[0]
        out.append(
            Completion(
                text=first.text,
                prompt_tokens=len(o.prompt_token_ids or []),
                completion_tokens=len(first.token_ids),
            )
        )
    return out


def continuation_logprob(output: Any, n_prompt_tokens: int) -> float:
    """Sum of the log-probabilities of the prompt tokens after the first ``n_prompt_tokens``.

    ``output`` is a ``vllm.RequestOutput`` produced with ``prompt_logprobs`` set: its
    ``prompt_logprobs[i]`` maps token ids to objects with a ``logprob`` (``None`` at position 0)
    and always includes the actual prompt token ``prompt_token_ids[i]``.
    """
    ids = output.prompt_token_ids
    total = 0.0
    for i in range(n_prompt_tokens, len(ids)):
        entry = output.prompt_logprobs[i]
        if entry is None:
            raise ValueError(f"no prompt logprob at position {i} (position 0 has none)")
        total += float(entry[ids[i]].logprob)
    return total


@component("generator", "vllm")
class VLLMGenerator(HFGenerator):
    """A model served in-process by vLLM (GPU).

    Args:
        model: Hugging Face id or local path (``packaged:...`` works too: converted first).
        revision: Model revision; part of the cache key.
        tensor_parallel_size: GPUs the model is sharded over (8 for a 70B model on 8xH100).
        batch_size: Unused by vLLM, which schedules the whole step itself (accepted so that
            experiments setting it compose).
        dtype: ``auto``, ``bfloat16``, ``float16``, ``float32``.
        gpu_memory_utilization: Fraction of GPU memory vLLM may take (weights + KV cache).
        max_model_len: Context length vLLM allocates for (``None`` = the model's); also the
            window prompts are fitted to.
        enable_prefix_caching: Reuse the KV cache of shared prompt prefixes.
        max_new_tokens: Cao et al. (2025) Appendix B: at most 100 new tokens.
        temperature: 0 = greedy decoding (the papers' setting).
        top_p: Nucleus sampling when ``temperature > 0``.
        seed: Sampling seed (only used and keyed when sampling); also vLLM's engine seed.
        context_window: Prompt + output budget; ``None`` = ``max_model_len`` or the model's.
        use_chat_template: Apply the tokenizer's chat template.
        system_prompt: Optional system message before every request's messages.
        enforce_eager: Disable CUDA graphs (faster start, slower decoding).
        model_cache_dir: Where packaged models are converted (from ``paths.model_cache_dir``).
        trust_remote_code: Passed to the tokenizer and vLLM.
        name: Name in the score table's ``generator`` column (default: from ``model``).
    """

    def __init__(
        self,
        model: str = "packaged:smollm2-135m-instruct",
        revision: str | None = None,
        tensor_parallel_size: int = 1,
        batch_size: int = 8,
        dtype: str = "auto",
        gpu_memory_utilization: float = 0.9,
        max_model_len: int | None = None,
        enable_prefix_caching: bool = True,
        max_new_tokens: int = 100,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        context_window: int | None = None,
        use_chat_template: bool = True,
        system_prompt: str | None = None,
        enforce_eager: bool = False,
        model_cache_dir: str | None = None,
        trust_remote_code: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__(
            model=model,
            revision=revision,
            batch_size=batch_size,
            dtype=dtype,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            context_window=context_window or max_model_len,
            use_chat_template=use_chat_template,
            system_prompt=system_prompt,
            model_cache_dir=model_cache_dir,
            trust_remote_code=trust_remote_code,
            name=name,
        )
        self.tensor_parallel_size = tensor_parallel_size
        self.gpu_memory_utilization = gpu_memory_utilization
        self.max_model_len = max_model_len
        self.enable_prefix_caching = enable_prefix_caching
        self.enforce_eager = enforce_eager
        self._engine: Any = None

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``vllm.LLM`` for this config."""
        kw: dict[str, Any] = {
            "model": self._model_path(),
            "tokenizer": self._model_path(),
            "revision": self.revision,
            "tensor_parallel_size": self.tensor_parallel_size,
            "dtype": self.dtype,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "enable_prefix_caching": self.enable_prefix_caching,
            "enforce_eager": self.enforce_eager,
            "trust_remote_code": self.trust_remote_code,
            "seed": self.seed or 0,
        }
        if self.max_model_len is not None:
            kw["max_model_len"] = self.max_model_len
        return kw

    def engine(self) -> Any:
        """The ``vllm.LLM`` (created once, on first use)."""
        if self._engine is None:
            from vllm import LLM

            log.info("starting vLLM for %s (tp=%d)", self.model, self.tensor_parallel_size)
            self._engine = LLM(**self.engine_kwargs())
        return self._engine

    def load(self) -> Any:
        return self.engine()

    def _run(self, prompts: list[str], sampling: Any) -> list[Any]:
        """``engine.generate`` over ``prompts`` in prefix order; outputs in input order."""
        order = prefix_order(prompts)
        ids = self.tokenizer([prompts[i] for i in order], add_special_tokens=False)["input_ids"]
        outputs = self.engine().generate(token_prompts(ids), sampling, use_tqdm=False)
        result: list[Any] = [None] * len(prompts)
        for pos, i in enumerate(order):
            result[i] = outputs[pos]
        return result

    def generate(
        self, prompts: list[str], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        if not prompts:
            return []
        from vllm import SamplingParams

        out = parse_outputs(self._run(prompts, SamplingParams(**sampling_kwargs(params))))
        if progress is not None:
            progress.update(len(prompts))
        return out

    def choose(self, prompts: list[str], choices: list[str], params: GenerationParams) -> list[str]:
        """One of ``choices`` per prompt, decoding constrained to them (judge verdicts)."""
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        sampling = SamplingParams(
            **sampling_kwargs(params), structured_outputs=StructuredOutputsParams(choice=list(choices))
        )
        return [c.text for c in parse_outputs(self._run(prompts, sampling))]

    def score(self, prompts: list[str], continuations: list[str]) -> list[float]:
        """Log-probability of each continuation after its prompt (teacher forcing, ``prompt_logprobs``)."""
        from vllm import SamplingParams

        heads = self.count_tokens(prompts)
        sampling = SamplingParams(**sampling_kwargs(GenerationParams(), prompt_logprobs=0, max_tokens=1))
        outputs = self._run([p + c for p, c in zip(prompts, continuations, strict=True)], sampling)
        return [continuation_logprob(o, n) for o, n in zip(outputs, heads, strict=True)]
