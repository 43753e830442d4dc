"""What a job (or sweep) would cost, before running it (the library behind ``rr plan``).

:func:`cost_job` runs the real pipeline (data, retrieval, cells, perturbations, strategies, window
fitting with the real tokenizer) with a stand-in for the model: :class:`PlanningLLM` renders
and keys every request exactly as :class:`~rr.generation.client.LLM` does, deduplicates,
looks each unique request up in the real generation cache (read only), counts the prompt
tokens of the requests that would reach the model, and returns placeholder text for them so
that the next steps of multi-step strategies still run. Nothing is written to the generation
cache (retrieval runs are computed and cached as in a real job: they are real work the job
reuses). With a :class:`CpuProbes` a few real prompts of each model that generates on this
machine's CPU are generated once (not cached) and each step's CPU time is estimated from them, as a
range (:class:`~rr.generation.throughput.Probe`).

Prompt tokens: by default window fitting decides from its estimate from parts
(:class:`~rr.context.WindowEstimate`: the prompt rendered with empty documents, plus each
document's own count, memoized, plus one separator token per document) which documents fit,
without tokenizing any prompt whole, and the planner reports that estimate as the prompt's
tokens (``estimated_prompts`` per step); other prompts (closed-book, judges) are counted
exactly. ``exact_tokens=True`` (``rr plan --exact-tokens``) fits windows exactly as the job
will and counts every prompt. Accuracy with the packaged SmolLM2 tokenizer on the paper grid
(``experiment=cao2025 dataset=mini retriever=[bm25] judge=match``): at n = 10, 40 and 100 the
estimate gives the same requests as exact fitting and the same prompt tokens (2,140,761,
8,315,688 and 20,986,778: relative error 0), 7-9x faster; templates that put a document
after a space (SURE, RARE) over-estimate by 1-3 tokens per document (``docs/scale-out.md``).

Counts of steps that consume earlier outputs (the second step of two-step strategies, LLM
judges) are estimates: they see placeholders instead of real outputs. A step whose prompts
contain the placeholder is flagged ``estimate``; strategies that parse earlier outputs (e.g.
a selection of documents) take their fallback path on placeholders, which their counters
report.

Expected generated tokens are ``max_new_tokens`` per request (an upper bound) or a given
mean; GPU-hours = prompt tokens / prefill throughput + generated tokens / decode throughput,
both in tokens per second per GPU (defaults are rough figures for an 8B model under vLLM on
one H100; calibrate them with ``benchmarks/``).

Prompts longer than the context window even without documents are
not sent by the job (``over_window`` rows): the plan reports them and counts none of their tokens.

What a job's models weigh on its GPUs: :func:`job_weights` (parameters from each model's cached
``config.json``, else the size its name states, at its dtype); the GPUs a sweep's launcher requests:
:func:`launcher_gpus`.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from rr.generation.base import Generator
from rr.generation.cache import GenerationCache
from rr.generation.client import LLM, PreparedStep
from rr.generation.throughput import Probe, TimesBatches, cpu_step_range, probe, probe_prompts
from rr.hashing import content_hash
from rr.records import Generation, Request
from rr.retrieval.base import CorpusEncoder

#: Text returned for requests that would reach the model (has an ``Answer:`` marker, so
#: answer extraction proceeds as on a real output).
PLACEHOLDER = "Answer: [rr plan placeholder]"

#: Default throughputs per GPU (tokens/s): prefill (prompt tokens) and decode (new tokens).
PROMPT_TPS = 20_000.0
GENERATED_TPS = 2_500.0
#: Default corpus-encoding throughput per GPU (passages/s): a rough figure for a large
#: encoder (bge-large, fp16, ~100-word passages) on one A100/H100-class GPU; calibrate it with
#: the ``passages_per_s`` that ``rr encode`` writes to ``encode.json``.
ENCODE_PPS = 1_000.0


@dataclass
class RetrievalPlan:
    """What indexing a job's corpus costs for one retriever (``rr plan``).

    Attributes:
        retriever: The retriever's name.
        passages: Passages in the corpus.
        dim: Embedding dimension (dense retrievers; ``None`` otherwise).
        embedding_bytes: float32 embeddings of every passage.
        encoded: Passages whose embeddings are already cached.
        to_encode: Passages still to encode.
        storage: ``"memory"`` (one array, in-memory index) or ``"blocks"`` (on-disk store).
        blocks: Blocks of the on-disk store (``None`` for the in-memory path).
        index: ``"flat"`` (exact) or the approximate index's faiss spec.
        index_bytes: Memory the search needs for the embeddings or index.
        encode_gpu_hours: ``to_encode`` / the encoding throughput.
    """

    retriever: str
    passages: int
    dim: int | None = None
    embedding_bytes: int | None = None
    encoded: int | None = None
    to_encode: int | None = None
    storage: str | None = None
    blocks: int | None = None
    index: str | None = None
    index_bytes: int | None = None
    encode_gpu_hours: float | None = None


def plan_retrieval(
    cfg: DictConfig, encode_pps: float = ENCODE_PPS, corpus: Any = None
) -> list[RetrievalPlan]:
    """The corpus and index costs of ``cfg``'s retrievers; encodes and searches nothing.

    Dense retrievers (anything with ``storage_plan``) report embedding bytes, what is already
    encoded, index memory and encode GPU-hours; other retrievers report the passage count.
    ``corpus``: the loaded corpus of ``cfg`` (loaded here when ``None``).
    """
    from rr.config.instantiation import instantiate

    if not cfg.get("retriever"):
        return []
    corpus = corpus if corpus is not None else instantiate(cfg.corpus).load()
    out = []
    for node in cfg.retriever.values():
        retriever = instantiate(node)
        if not isinstance(retriever, CorpusEncoder):
            out.append(RetrievalPlan(retriever.name, len(corpus)))
            continue
        st = retriever.storage_plan(corpus, str(cfg.paths.cache_dir))
        out.append(RetrievalPlan(retriever.name, **st, encode_gpu_hours=st["to_encode"] / encode_pps / 3600))
    return out


def plan_jobs_retrieval(jobs: list[tuple[list[str], DictConfig]], encode_pps: float) -> list[RetrievalPlan]:
    """:func:`plan_retrieval` over a sweep's jobs: one row per distinct (corpus, retriever),
    each distinct corpus loaded once."""
    from rr.config.instantiation import instantiate

    def ident(node: Any) -> str:
        return json.dumps(OmegaConf.to_container(node, resolve=True), sort_keys=True, default=str)

    corpora: dict[str, Any] = {}
    rows: dict[tuple[str, str, str], RetrievalPlan] = {}
    for _, cfg in jobs:
        retrievers = cfg.get("retriever") or {}
        if not retrievers:
            continue
        c = ident(cfg.corpus)
        todo = {key: node for key, node in retrievers.items() if (c, key, ident(node)) not in rows}
        if not todo:
            continue
        if c not in corpora:
            corpora[c] = instantiate(cfg.corpus).load()
        sub = cfg.copy()
        with open_dict(sub):
            sub.retriever = todo
        for (key, node), row in zip(todo.items(), plan_retrieval(sub, encode_pps, corpora[c]), strict=True):
            rows[(c, key, ident(node))] = row
    return list(rows.values())


@dataclass
class PlanStep:
    """The cost of one generation step.

    Attributes:
        step: Step name (``vanilla:answer``, ``closed_book``, ...).
        model: Model id of the step's generator.
        requests: Requests made by the step.
        unique: Distinct requests (same model, prompt and decoding parameters).
        cached: Distinct requests already in the generation cache.
        to_generate: Distinct requests that would reach the model (``unique - cached``).
        prompt_tokens: Prompt tokens of those requests (real tokenizer, chat template applied).
        new_tokens: Expected generated tokens of those requests.
        estimate: Whether the step's prompts contain placeholder outputs of earlier steps.
        estimated_prompts: Of the requests to generate, those whose prompt tokens are window
            fitting's estimate from parts rather than an exact count of the whole prompt.
        over_window: Distinct requests that will not be sent because prompt + ``max_new_tokens``
            exceed the context window (not in ``to_generate``; their tokens are not counted).
        cpu_seconds: ``(low, high)`` seconds of generating ``to_generate`` on this machine's CPU
            (:meth:`~rr.generation.throughput.Probe.step_range`; ``None``: not on the CPU, or not probed).
        cpu_basis: What ``cpu_seconds`` was measured on (:meth:`~rr.generation.throughput.Probe.words`).
    """

    step: str
    model: str
    requests: int = 0
    unique: int = 0
    cached: int = 0
    to_generate: int = 0
    prompt_tokens: int = 0
    new_tokens: int = 0
    estimate: bool = False
    estimated_prompts: int = 0
    over_window: int = 0
    cpu_seconds: tuple[float, float] | None = None
    cpu_basis: str = ""

    def gpu_hours(self, prompt_tps: float, generated_tps: float) -> float:
        return (self.prompt_tokens / prompt_tps + self.new_tokens / generated_tps) / 3600


@dataclass
class CpuProbes:
    """One timed probe per model of a plan that generates on this machine's CPU
    (:func:`~rr.generation.throughput.probe`: a batch of its first step's median-length prompts for a
    few new tokens, after loading the model; nothing is cached), shared by every job of the plan, and
    each step's CPU time estimated from it as a range (:meth:`~rr.generation.throughput.Probe.step_range`).

    Attributes:
        probes: Model identity hash -> its probe (``None``: the backend timed nothing).
        seconds: Seconds spent probing, model loads included.
    """

    probes: dict[str, Probe | None] = field(default_factory=dict)
    seconds: float = 0.0

    def estimate(self, llm: LLM, step: str, prepared: PreparedStep, tokens: dict[str, int]) -> Probe | None:
        """The probe of ``llm``'s model (timed on this step's prompts the first time; ``tokens``: key
        -> prompt tokens of the requests to generate); ``None`` off the CPU or when nothing was timed."""
        gen = llm.generator
        if not isinstance(gen, TimesBatches) or not gen.runs_on_cpu():
            return None
        key = content_hash(llm.identity, 16)
        if key not in self.probes:
            order = sorted(tokens, key=lambda k: tokens[k])
            chosen = probe_prompts(
                [prepared.prompt(k) for k in order], [tokens[k] for k in order], gen.batch_size
            )
            t0 = time.perf_counter()
            self.probes[key] = probe(gen, step, chosen, prepared.request(order[0]).params)
            self.seconds += time.perf_counter() - t0
        return self.probes[key]


class PlanningLLM(LLM):
    """An :class:`LLM` that records what it would send and sends nothing.

    Args:
        generator: The backend (its tokenizer: ``render``, ``count_tokens``; with ``probes``, a
            few real prompts per model, never cached).
        cache: The generation cache to look requests up in (never written).
        steps: Where :class:`PlanStep` records are appended (shared with :meth:`sibling`\\ s).
        planned: Keys of requests already planned (by earlier steps, or earlier jobs of a
            sweep sharing the cache); they count as cached, as they will be when the jobs run
            one after another (with parallel launchers this is an upper bound on hits).
        mean_new_tokens: Expected new tokens per request; ``None`` = each request's
            ``max_new_tokens`` (an upper bound).
        placeholder: Text returned for requests that are not cached.
        exact_tokens: Fit windows and count every prompt exactly, as the job will; else window
            fitting decides from its estimates alone (:func:`~rr.context.fit_prompt`'s
            ``estimate_only``) and reports them (:meth:`note_prompt_tokens`).
        probes: How each step's CPU time on this machine is estimated (:class:`CpuProbes`);
            ``None``: it is not.
    """

    #: No model is called: the pipeline skips what only a real run's outputs are for (planted values).
    calls_model = False

    def __init__(
        self,
        generator: Generator,
        cache: GenerationCache,
        steps: list[PlanStep] | None = None,
        mean_new_tokens: float | None = None,
        placeholder: str = PLACEHOLDER,
        planned: set[str] | None = None,
        exact_tokens: bool = False,
        probes: CpuProbes | None = None,
        flush_every: int = 64,
    ) -> None:
        super().__init__(generator, cache, flush_every=flush_every, show_progress=False)
        self.steps: list[PlanStep] = steps if steps is not None else []
        self.planned: set[str] = planned if planned is not None else set()
        self.mean_new_tokens = mean_new_tokens
        self.placeholder = placeholder
        self.exact_tokens = exact_tokens
        self.fit_exactly = exact_tokens  # else window fitting decides from its estimates alone
        self.probes = probes

    def sibling(self, generator: Generator, cache: GenerationCache) -> LLM:
        return PlanningLLM(
            generator,
            cache,
            self.steps,
            self.mean_new_tokens,
            self.placeholder,
            self.planned,
            self.exact_tokens,
            self.probes,
            self.flush_every,
        )

    def count_tokens(self, prompts: list[str]) -> list[int]:
        # window fitting and the step totals count the same prompts: remember them
        return self.count_tokens_cached(prompts)

    def uncached(self, key: str) -> Generation:
        """A request not in the cache is not generated: :attr:`placeholder` stands for its text."""
        return Generation(self.placeholder, key, 0, 0, cached=False)

    def generate(self, requests: list[Request], step: str = "generate") -> list[Generation]:
        """Record the step (:class:`PlanStep`) and return cached texts, else :attr:`placeholder`."""
        t0 = time.perf_counter()
        prepared = self.prepare(requests, step)  # prompts that do not fit are never sent: no tokens counted
        self.cache.prefetch(k for k in prepared.fitting() if k not in self.planned)
        cached = {k for k in prepared.fitting() if k in self.planned or self.cache.get(k) is not None}
        todo = [k for k in prepared.fitting() if k not in cached]
        self.planned.update(todo)
        todo_prompts = [prepared.prompt(k) for k in todo]
        known: dict[int, int] = {}  # todo index -> tokens noted by window fitting
        estimated = 0
        for i, k in enumerate(todo):
            tokens, exact = self._noted.get(hash(prepared.request(k)), (0, None))
            if exact or (exact is False and not self.exact_tokens):
                known[i] = tokens
                estimated += not exact
        counted = self.count_tokens([p for i, p in enumerate(todo_prompts) if i not in known])[::-1]
        n_prompt = [known[i] if i in known else counted.pop() for i in range(len(todo_prompts))]
        new = [
            self.mean_new_tokens
            if self.mean_new_tokens is not None
            else prepared.request(k).params.max_new_tokens
            for k in todo
        ]
        self.steps.append(
            PlanStep(
                step=step,
                model=str(self.identity.get("model_id", "?")),
                requests=len(requests),
                unique=len(prepared.first),
                cached=len(cached),
                to_generate=len(todo),
                prompt_tokens=sum(n_prompt),
                new_tokens=round(sum(new)),
                estimate=any(self.placeholder in p for p in prepared.prompts),
                estimated_prompts=estimated,
                over_window=len(prepared.too_long),
            )
        )
        by_key = dict(zip(todo, n_prompt, strict=True))
        found = (
            self.probes.estimate(self, step, prepared, by_key) if self.probes is not None and todo else None
        )
        if found is not None:
            order = sorted(todo, key=prepared.prompt)  # the order the job sends them in
            lengths = [by_key[k] for k in order]
            max_new = max(prepared.request(k).params.max_new_tokens for k in todo)
            prompts = [prepared.prompt(k) for k in order]
            self.steps[-1].cpu_seconds = cpu_step_range(
                self.generator, found, prompts, lengths, max_new, self.flush_every
            )
            self.steps[-1].cpu_basis = found.words()
        s = self.stats
        s.requests += len(requests)
        s.unique_requests += len(prepared.first)
        s.cache_hits += len(cached)
        s.over_window += len(prepared.too_long)
        s.seconds += time.perf_counter() - t0
        return self.generations(prepared, cached)


@dataclass
class JobCost:
    """What one job will cost: its steps, counters and how long costing it took (not to be confused
    with :class:`rr.pipeline.JobPlan`, what a job will do).

    Attributes:
        gpus: GPUs the job requests (the launcher's ``gpus_per_node``; ``None``: none named, on a
            launcher that requests none, or outside a multirun).
    """

    job_id: str
    name: str
    overrides: list[str]
    examples: int
    rows: int
    steps: list[PlanStep]
    counters: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    exact_tokens: bool = False
    gpus: int | None = None

    @property
    def cpu_range(self) -> tuple[float, float] | None:
        """``(low, high)`` seconds of every step's generation on this machine's CPU (``None``: a step
        that generates has no estimate)."""
        if not self.steps or any(s.cpu_seconds is None for s in self.steps if s.to_generate):
            return None
        ranges = [s.cpu_seconds or (0.0, 0.0) for s in self.steps]
        return sum(r[0] for r in ranges), sum(r[1] for r in ranges)


def cost_job(
    cfg: DictConfig,
    mean_new_tokens: float | None = None,
    overrides: list[str] | None = None,
    planned: set[str] | None = None,
    exact_tokens: bool = False,
    probes: CpuProbes | None = None,
) -> JobCost:
    """Run the pipeline of ``cfg`` with a :class:`PlanningLLM`; outputs go to a temporary folder.

    ``planned``: request keys planned by earlier jobs of the same sweep (updated in place).
    ``exact_tokens``: count every prompt exactly (else window fitting's estimates are used
    where it made them; see the module docstring). ``probes``: estimate each step's CPU time on
    this machine (:class:`CpuProbes`; shared by a sweep's jobs).
    The job's own progress bars (corpus encoding) show when ``cfg.progress`` is on.
    """
    from rr.config.settings import job_settings
    from rr.pipeline import run_job

    t0, c0 = time.perf_counter(), time.process_time()
    cfg = cfg.copy()
    with open_dict(cfg):
        cfg.logger = {}  # never log a plan
    steps: list[PlanStep] = []

    def make_llm(generator: Generator, cache: GenerationCache) -> LLM:
        return PlanningLLM(
            generator,
            cache,
            steps,
            mean_new_tokens,
            planned=planned,
            exact_tokens=exact_tokens,
            probes=probes,
            flush_every=job_settings(cfg).flush_every,
        )

    with tempfile.TemporaryDirectory(prefix="rr-plan-") as tmp:
        result = run_job(cfg, tmp, make_llm=make_llm)
    s = result.summary
    return JobCost(
        job_id=s.job_id,
        name=str(s.name),
        overrides=list(overrides or []),
        examples=int(s.examples or 0),
        rows=int(s.rows or 0),
        steps=steps,
        counters=dict(s.counters),
        seconds=round(time.perf_counter() - t0, 3),
        cpu_seconds=round(time.process_time() - c0, 3),
        exact_tokens=exact_tokens,
    )


def total(steps: list[PlanStep]) -> PlanStep:
    """The sum of ``steps`` (``unique`` summed per step: distinct requests of each step)."""
    t = PlanStep(step="total", model="")
    for s in steps:
        for f in (
            "requests",
            "unique",
            "cached",
            "to_generate",
            "prompt_tokens",
            "new_tokens",
            "estimated_prompts",
            "over_window",
        ):
            setattr(t, f, getattr(t, f) + getattr(s, f))
        t.estimate = t.estimate or s.estimate
    return t


def dataset_size(cfg: DictConfig) -> tuple[int, str]:
    """How many examples ``cfg``'s dataset holds (all of them: ``n`` unset, after its own filters),
    and its name."""
    from rr.config.instantiation import instantiate

    node = cfg.dataset.copy()
    with open_dict(node):
        node.n = None
    dataset = instantiate(node)
    return len(dataset.load()), str(dataset.name)


def compose_jobs(
    overrides: list[str], multirun: bool, config_dir: str | None = None
) -> list[tuple[list[str], DictConfig]]:
    """The composed config of each job ``rr [-m] overrides`` would run."""
    return compose_many_jobs([overrides], multirun, config_dir)[0]


def compose_many_jobs(
    command_lines: list[list[str]], multirun: bool, config_dir: str | None = None
) -> list[list[tuple[list[str], DictConfig]]]:
    """:func:`compose_jobs` of each command line, in one Hydra session (composing many is faster so)."""
    from hydra import compose

    from rr.config.composition import hydra_context
    from rr.resume import sweep_jobs

    result = []
    with hydra_context(config_dir):
        for overrides in command_lines:
            if multirun:
                # the sweeper's params (sweep=NAME files) come from a compose without the swept values
                hcfg = compose("config", overrides=fixed_overrides(overrides), return_hydra_config=True)
                jobs = sweep_jobs(overrides, hcfg.hydra.sweeper.get("params"))
            else:
                jobs = [overrides]
            result.append([(job, compose("config", overrides=job)) for job in jobs])
    return result


def fixed_overrides(overrides: list[str]) -> list[str]:
    """The overrides of a multirun command line that are not swept (``a=1,2`` left out)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(overrides)
    return [str(o.input_line) for o in parsed if not o.is_sweep_override()]


def launcher_gpus(overrides: list[str], multirun: bool, config_dir: str | None = None) -> int | None:
    """GPUs per job that the launcher of ``rr -m overrides`` requests (``hydra.launcher.gpus_per_node``,
    before a job's ``resources.gpus``); ``None`` outside a multirun or for a launcher that requests none."""
    from hydra import compose

    from rr.config.composition import hydra_context

    if not multirun:
        return None
    with hydra_context(config_dir):
        hcfg = compose("config", overrides=fixed_overrides(overrides), return_hydra_config=True)
    gpus = OmegaConf.select(hcfg, "hydra.launcher.gpus_per_node", default=None)
    return int(gpus) if gpus else None


#: Bytes per weight at a generator's ``dtype`` (``auto``: 16 bits, what a GPU loads) and, for vLLM, its
#: ``quantization`` (fp8: 8 bits; AWQ, GPTQ, bitsandbytes: 4).
DTYPE_BYTES = {"float32": 4.0, "float16": 2.0, "bfloat16": 2.0, "auto": 2.0}
QUANTIZED_BYTES = {"fp8": 1.0, "awq": 0.5, "gptq": 0.5, "bitsandbytes": 0.5}
#: The size a model's name states: ``8B``, ``135M``, ``8x7B`` (the size table of names without a config here).
_SIZE_IN_NAME = re.compile(r"(?<![\d.])(?:(\d+)x)?(\d+(?:\.\d+)?)([bm])(?![a-z])", re.I)
#: Generator targets whose weights a job loads on its own devices.
_LOCAL_GENERATORS = ("rr.generation.hf.", "rr.generation.vllm.")


def parameters_from_config(config: dict[str, Any]) -> int | None:
    """A decoder-only transformer's parameter count from its ``config.json`` (embeddings, attention
    with grouped query heads, a gated MLP per expert, norms; ``None`` without the sizes it needs):
    8.03 B for Llama-3.1-8B, 134.5 M for SmolLM2-135M."""
    c = config.get("text_config") or config
    try:
        h, layers, vocab = int(c["hidden_size"]), int(c["num_hidden_layers"]), int(c["vocab_size"])
    except (KeyError, TypeError, ValueError):
        return None
    ffn = int(c.get("intermediate_size") or 4 * h)
    heads = int(c.get("num_attention_heads") or 1)
    kv = int(c.get("num_key_value_heads") or heads)
    head_dim = int(c.get("head_dim") or h // heads)
    experts = int(c.get("num_local_experts") or c.get("num_experts") or 1)
    attention = 2 * h * heads * head_dim + 2 * h * kv * head_dim
    embeddings = vocab * h * (1 if c.get("tie_word_embeddings") else 2)
    return layers * (attention + experts * 3 * h * ffn + 2 * h) + embeddings + h


def model_parameters(model: str, revision: str | None = None) -> tuple[int, str] | None:
    """A model's parameter count and where it comes from: its ``config.json`` (a local folder, or the
    hub cache: nothing is downloaded), else the size its name states (``Llama-3.3-70B``: 70 B);
    ``None`` when neither says."""
    from huggingface_hub import try_to_load_from_cache

    path: Any = Path(model) / "config.json"
    if not path.is_file() and "/" in model and not model.startswith("packaged:"):
        path = try_to_load_from_cache(model, "config.json", revision=revision)
    if isinstance(path, str | Path) and Path(path).is_file():
        try:
            n = parameters_from_config(json.loads(Path(path).read_text()))
        except (OSError, ValueError):
            n = None
        if n:
            return n, "its config.json"
    for experts, size, unit in _SIZE_IN_NAME.findall(model.rsplit("/", 1)[-1].removeprefix("packaged:")):
        return int(
            float(size) * (1e9 if unit.lower() == "b" else 1e6) * int(experts or 1)
        ), "the size in its name"
    return None


@dataclass(frozen=True)
class ModelWeights:
    """The weights a job loads onto its devices for one model (:func:`job_weights`).

    Attributes:
        key: The config key of its generator (``generator``, ``judge.generator``).
        model: The model setting.
        dtype: What it is loaded as (its ``dtype``, or its vLLM ``quantization``).
        parameters: Its parameter count.
        source: Where ``parameters`` comes from (:func:`model_parameters`).
        bytes: ``parameters`` x the bytes per weight of ``dtype``.
    """

    key: str
    model: str
    dtype: str
    parameters: int
    source: str
    bytes: float


def job_weights(cfg: DictConfig) -> list[ModelWeights]:
    """The weights of every ``hf`` and ``vllm`` generator of ``cfg`` (the model under test, judges,
    rewriters: a job holds them together), where their size is known."""
    from rr.preflight import component_nodes

    found = []
    for key, node in component_nodes(cfg):
        model = node.get("model")
        if not str(node["_target_"]).startswith(_LOCAL_GENERATORS) or not isinstance(model, str):
            continue
        size = model_parameters(model, node.get("revision"))
        if size is None:
            continue
        quant = node.get("quantization")
        dtype = str(quant) if quant in QUANTIZED_BYTES else str(node.get("dtype") or "auto")
        per = QUANTIZED_BYTES.get(dtype) or DTYPE_BYTES.get(dtype, 2.0)
        found.append(ModelWeights(key, model, dtype, size[0], size[1], size[0] * per))
    return found
