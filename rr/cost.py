"""What a job (or sweep) would cost, before running it (the library behind ``rr plan``).

:func:`cost_job` runs the real pipeline (data, retrieval, cells, perturbations, strategies, window
fitting with the real tokenizer) with a stand-in for the model: :class:`PlanningLLM` renders
and keys every request exactly as :class:`~rr.generation.client.LLM` does, deduplicates,
looks each unique request up in the real generation cache (read only), counts the prompt
tokens of the requests that would reach the model, and returns placeholder text for them so
that the next steps of multi-step strategies still run. Nothing is written to the generation
cache (retrieval runs are computed and cached as in a real job: they are real work the job
reuses). With a :class:`StepTiming` a few real prompts of each step are generated (not cached)
to predict its wall time on this machine.

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
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field, replace
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from rr.generation.base import Generator
from rr.generation.cache import GenerationCache
from rr.generation.client import LLM, PreparedStep
from rr.generation.throughput import (  # noqa: F401  (PREFIX_BLOCK, shared_prefix_tokens: re-exported)
    PREFIX_BLOCK,
    BatchTiming,
    Throughput,
    ThroughputStore,
    TimesBatches,
    contention_now,
    contention_words,
    median_contention,
    prefix_sharing,
    shared_prefix_tokens,
    step_seconds,
)
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
        seconds: Predicted wall seconds of generating ``to_generate`` on this machine (``None``:
            no throughput for its backend; see :func:`cost_job`'s ``calibrate``).
        timed_on: Where the throughput behind ``seconds`` comes from (``"8 prompts of this step"``,
            ``"recorded"``, ``""``).
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
    seconds: float | None = None
    timed_on: str = ""

    def gpu_hours(self, prompt_tps: float, generated_tps: float) -> float:
        return (self.prompt_tokens / prompt_tps + self.new_tokens / generated_tps) / 3600


#: New tokens of each calibration probe (enough decode steps to time a step's fixed and per-row cost).
CALIBRATION_TOKENS = 8


@dataclass
class StepTiming:
    """How ``rr plan`` predicts each step's wall time on this machine, shared by the planners of
    every model and job of a plan.

    For a backend that times its batches (:class:`~rr.generation.throughput.TimesBatches`: the HF
    backend, on CPU or GPU, and vLLM), unless ``budget_s`` is ``None``: the model is loaded (timed)
    and warmed up (a first call pays one-off costs that no later batch does); then,
    per step, its shortest and its longest prompt alone and one batch of the backend's ``batch_size``
    prompts around the median length are generated for :data:`CALIBRATION_TOKENS` tokens. Every
    batch timed for the backend (all steps so far) is pooled and
    :meth:`~rr.generation.throughput.Throughput.from_timings` fits prefill as a fixed cost per batch
    plus one per padded token and a decode step as a fixed cost plus one per row, so a step of
    short prompts (closed-book: no documents) is predicted from its own token counts, and a batch
    of 8 rows is not taken to cost 8 single prompts. If one batch of the step's own prompts with
    its own decoding parameters is predicted to fit in what is left of the budget, it is generated
    too and times how early the step's batches stop; else decode is taken to run to
    ``max_new_tokens`` (an upper bound). Nothing generated here is cached. The fit is recorded per machine
    (:class:`~rr.generation.throughput.ThroughputStore`, the user's cache) for the job's own
    check. ``--no-timing`` uses the throughput recorded by an earlier plan or job. A step's wall time is then
    :func:`~rr.generation.throughput.step_seconds` of its prompts' tokens as the job will batch them.

    Attributes:
        budget_s: Seconds this plan may spend timing, model loads included: every step's probes run,
            its own full batch only while the budget lasts (``None``: time nothing, use what is recorded).
        store: Recorded throughputs (``None``: none read or written).
        progress: Show a bar while timing.
        measured: (backend key, step) -> throughput measured by this plan and what it rests on.
        latest: Backend key -> its last measured throughput and what it rests on.
        load_s: Backend key -> seconds loading its model took, with the one-off cost of its first
            call (measured by this plan, else as recorded on this machine by an earlier plan).
        seconds: Seconds spent timing (model loads included).
        pool: Backend key -> every batch timed for it by this plan (warm-up excluded).
        contention_now: The machine's contention when a step was first predicted from a record
            (:func:`~rr.generation.throughput.contention_now`; sampled once per plan).
    """

    budget_s: float | None = 60.0
    store: ThroughputStore | None = None
    progress: bool = False
    measured: dict[tuple[str, str], tuple[Throughput, str]] = field(default_factory=dict)
    latest: dict[str, tuple[Throughput, str]] = field(default_factory=dict)
    load_s: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    pool: dict[str, list[BatchTiming]] = field(default_factory=dict)
    contention_now: float | None = None

    def predict(
        self, llm: LLM, step: str, prepared: PreparedStep, tokens: dict[str, int]
    ) -> tuple[float | None, str]:
        """Predicted wall seconds of generating the keys of ``tokens`` (key -> prompt tokens) and
        where the throughput comes from; ``(None, "")`` when there is none."""
        gen = llm.generator
        if not isinstance(gen, TimesBatches):
            return None, ""
        key = gen.throughput_key()
        backend = content_hash(key, 16)
        mkey = (backend, step)
        # Every step its own probes while the budget lasts (model loads included); after it, the fit
        # of the steps timed so far (the budget was a floor: every step was probed, 3 min for 60 s).
        spent = self.budget_s is not None and self.seconds >= self.budget_s and backend in self.latest
        if self.budget_s is not None and mkey not in self.measured and not spent:
            t0 = time.perf_counter()
            found = self.measure(gen, backend, step, prepared, tokens, self.budget_s - self.seconds)
            self.seconds += time.perf_counter() - t0
            if found is not None:
                self.measured[mkey] = found
                self.latest[backend] = (replace(found[0], steps_share=1.0), found[1])
                if self.store is not None:
                    pool = self.pool.get(backend, [])
                    start = self.load_s.get(backend)
                    if start is not None and found[0].alone:  # the machine's alone, as the throughput
                        start /= median_contention(pool) or 1.0
                    self.store.put(key, found[0], f"rr plan: {step}: {found[1]}", pool, start_s=start)
        recorded = self.store.get(key) if self.store is not None else None
        tp: Throughput
        if mkey in self.measured:
            tp, basis = self.measured[mkey]
        elif backend in self.latest:
            tp, basis = self.latest[backend][0], "the budget spent: as fitted on earlier steps"
        elif recorded is not None:
            tp, basis = recorded, "recorded by an earlier plan or job on this machine"
        else:
            return None, ""
        # At the machine's contention as this plan timed it, else as it is now (a record fitted while
        # other processes shared the cores is the machine's alone: from_timings divided it out).
        if tp.alone and gen.runs_on_cpu():
            contention = median_contention(self.pool.get(backend, []))
            if contention is None:
                if self.contention_now is None:
                    self.contention_now = contention_now(int(key.get("threads") or 1))
                contention = self.contention_now
            tp = tp.at(contention)
        if backend not in self.load_s and self.store is not None:
            # Not loaded by this plan: the model's load and first call as recorded on this machine
            recorded_start = self.store.start_s(key)
            if recorded_start is not None:
                self.load_s[backend] = recorded_start * (tp.contention if tp.alone else 1.0)
        if tp.contention >= 1.05:
            basis += f", at {contention_words(tp.contention)}"
        order = sorted(tokens, key=prepared.prompt)  # the order the job sends them in
        max_new = max(prepared.request(k).params.max_new_tokens for k in tokens)
        lengths = [tokens[k] for k in order]
        shared, batched = prefix_sharing(gen, [prepared.prompt(k) for k in order], lengths)
        seconds = step_seconds(
            lengths, tp, gen.batch_size, llm.flush_every, max_new, shared=shared, batched_prefixes=batched
        )
        return seconds, basis

    def measure(
        self,
        gen: Any,
        backend: str,
        step: str,
        prepared: PreparedStep,
        tokens: dict[str, int],
        budget: float,
    ) -> tuple[Throughput, str] | None:
        """Time the step's shortest and longest prompt alone and a batch around its median length
        for a few tokens, then one batch with the step's own parameters if it should fit in
        ``budget`` seconds; fit the backend's throughput on every batch timed for it so far."""
        from tqdm.auto import tqdm

        by_length = sorted(tokens, key=lambda k: tokens[k])
        mid = len(by_length) // 2
        m = min(gen.batch_size, len(by_length))
        window = by_length[max(0, min(mid - m // 2, len(by_length) - m)) :][:m]
        params = prepared.request(by_length[mid]).params
        probe = replace(params, max_new_tokens=min(params.max_new_tokens, CALIBRATION_TOKENS))
        singles = [by_length[0]] + ([by_length[-1]] if tokens[by_length[-1]] != tokens[by_length[0]] else [])
        # The batch second: a budget that ends after two probes still has rows to fit decode on (one
        # prompt alone, scaled by rows, over-estimates a batched step several-fold)
        probes = [[singles[0]]] + ([window] if m >= 2 else []) + [[k] for k in singles[1:]]
        bar = tqdm(
            total=sum(len(p) for p in probes),  # the step's own batch joins when it fits the budget
            desc=f"rr plan: timing {step} on this machine",
            unit="prompt",
            disable=not self.progress,
        )
        pool = self.pool.setdefault(backend, [])
        t_start = time.perf_counter()
        try:
            first_call = None
            if backend not in self.load_s:
                t0 = time.perf_counter()
                gen.load()
                self.load_s[backend] = time.perf_counter() - t0
                warm = replace(params, max_new_tokens=2)  # one-off costs of the first calls
                t0 = time.perf_counter()
                said = self._timed(gen, [prepared.prompt(by_length[0])], warm)
                # its wall time, or what its batches say they took if more (as spent() below)
                first_call = max(time.perf_counter() - t0, sum(t.prefill_s + t.decode_s for t in said))
                if m >= 2:
                    gen.generate([prepared.prompt(k) for k in window[:2]], warm)
            timed: list[BatchTiming] = []  # this call's batches

            def spent() -> float:  # the wall time, or what the batches say they took if more
                return max(time.perf_counter() - t_start, sum(t.prefill_s + t.decode_s for t in timed))

            for keys in probes:
                so_far = Throughput.from_timings(pool)
                so_far = so_far.at(median_contention(pool)) if so_far is not None else None
                steps = max(probe.max_new_tokens - 1, 0)
                cost = so_far.batch_seconds(len(keys), max(tokens[k] for k in keys), steps) if so_far else 0.0
                if so_far is not None and spent() + cost > budget:
                    break  # the budget would be spent: fit on what was timed
                timings = self._timed(gen, [prepared.prompt(k) for k in keys], probe)
                timed.extend(timings)
                pool.extend(timings)
                bar.update(len(keys))
            fitted = Throughput.from_timings(pool)
            if fitted is None:
                return None
            fitted = fitted.at(median_contention(pool))
            if first_call is not None:
                # The job pays the first call's one-off costs (allocations, kernels' first runs) in
                # its first batch: counted with the model's load (what that call would cost warm, less)
                usual = fitted.batch_seconds(1, tokens[by_length[0]], 1)
                self.load_s[backend] += max(first_call - usual, 0.0)
            steps = max(params.max_new_tokens - 1, 0)

            def what() -> str:
                return f"{len(pool)} batches ({sum(t.rows for t in pool)} prompts) timed here"

            left = budget - spent()
            # The step's own batch (how early its decoding stops), else 2 of its prompts when a whole
            # batch would overrun the budget: decode taken to run to max_new_tokens over-estimated
            # the demo's answers (100 new tokens allowed, about 30 used) 3-fold.
            own_keys = next(
                (
                    keys
                    for keys in (window, window[len(window) // 2 - 1 : len(window) // 2 + 1])
                    if len(keys) >= 2 and fitted.batch_seconds(len(keys), tokens[keys[-1]], steps) <= left
                ),
                None,
            )
            if m >= 2 and params.max_new_tokens > probe.max_new_tokens and own_keys is not None:
                bar.total += len(own_keys)
                bar.refresh()
                own = self._timed(gen, [prepared.prompt(k) for k in own_keys], params)
                bar.update(len(own_keys))
                pool.extend(own)
                share = Throughput.from_timings(own)
                refit = Throughput.from_timings(pool)
                if share is not None and refit is not None:
                    return replace(
                        refit, steps_share=share.steps_share
                    ), what() + ", this step's own included"
            # decode taken to run to max_new_tokens in every batch (an upper bound)
            return replace(fitted, steps_share=1.0), what() + " (decode: upper bound)"
        finally:
            bar.close()

    @staticmethod
    def _timed(gen: Any, prompts: list[str], params: Any) -> list[BatchTiming]:
        """The batch timings of ``gen.generate(prompts, params)`` (its outputs are dropped)."""
        before = len(gen.batch_timings)
        gen.generate(prompts, params)
        return list(gen.batch_timings[before:])


class PlanningLLM(LLM):
    """An :class:`LLM` that records what it would send and sends nothing.

    Args:
        generator: The backend (its tokenizer: ``render``, ``count_tokens``; with ``timing``, a
            few real prompts per step, never cached).
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
        timing: How each step's wall time on this machine is predicted (:class:`StepTiming`);
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
        timing: StepTiming | None = None,
        flush_every: int = 64,
    ) -> None:
        super().__init__(generator, cache, flush_every=flush_every, show_progress=False)
        self.steps: list[PlanStep] = steps if steps is not None else []
        self.planned: set[str] = planned if planned is not None else set()
        self.mean_new_tokens = mean_new_tokens
        self.placeholder = placeholder
        self.exact_tokens = exact_tokens
        self.fit_exactly = exact_tokens  # else window fitting decides from its estimates alone
        self.timing = timing

    def sibling(self, generator: Generator, cache: GenerationCache) -> LLM:
        return PlanningLLM(
            generator,
            cache,
            self.steps,
            self.mean_new_tokens,
            self.placeholder,
            self.planned,
            self.exact_tokens,
            self.timing,
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
        if self.timing is not None and todo:
            by_key = dict(zip(todo, n_prompt, strict=True))
            self.steps[-1].seconds, self.steps[-1].timed_on = self.timing.predict(
                self, step, prepared, by_key
            )
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
    with :class:`rr.pipeline.JobPlan`, what a job will do)."""

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
    timing_seconds: float = 0.0
    model_load_seconds: float = 0.0
    wall_seconds: float | None = None
    retrieval_seconds: float = 0.0

    @property
    def generation_seconds(self) -> float | None:
        """Predicted seconds of every step's generation (``None``: a step that generates has none)."""
        if any(s.seconds is None for s in self.steps if s.to_generate):
            return None
        return sum(s.seconds or 0.0 for s in self.steps)


def cost_job(
    cfg: DictConfig,
    mean_new_tokens: float | None = None,
    overrides: list[str] | None = None,
    planned: set[str] | None = None,
    exact_tokens: bool = False,
    timing: StepTiming | None = None,
) -> JobCost:
    """Run the pipeline of ``cfg`` with a :class:`PlanningLLM`; outputs go to a temporary folder.

    ``planned``: request keys planned by earlier jobs of the same sweep (updated in place).
    ``exact_tokens``: count every prompt exactly (else window fitting's estimates are used
    where it made them; see the module docstring). ``timing``: predict each step's wall time on
    this machine (:class:`StepTiming`; shared by a sweep's jobs); then ``wall_seconds`` = the
    pipeline without the model (this plan's own time, less timing, less the retrieval it computed and
    cached for the job: ``retrieval_seconds``) + model loads + generation.
    The job's own progress bars (corpus encoding) show when ``cfg.progress`` is on.
    """
    from rr.config.settings import job_settings
    from rr.pipeline import run_job

    t0, c0 = time.perf_counter(), time.process_time()
    cfg = cfg.copy()
    with open_dict(cfg):
        cfg.logger = {}  # never log a plan
    steps: list[PlanStep] = []
    timed0 = timing.seconds if timing is not None else 0.0

    def make_llm(generator: Generator, cache: GenerationCache) -> LLM:
        return PlanningLLM(
            generator,
            cache,
            steps,
            mean_new_tokens,
            planned=planned,
            exact_tokens=exact_tokens,
            timing=timing,
            flush_every=job_settings(cfg).flush_every,
        )

    with tempfile.TemporaryDirectory(prefix="rr-plan-") as tmp:
        result = run_job(cfg, tmp, make_llm=make_llm)
    s = result.summary
    seconds = time.perf_counter() - t0
    timed = (timing.seconds - timed0) if timing is not None else 0.0
    load = sum(timing.load_s.values()) if timing is not None else 0.0  # every model the job loads
    cost = JobCost(
        job_id=s.job_id,
        name=str(s.name),
        overrides=list(overrides or []),
        examples=int(s.examples or 0),
        rows=int(s.rows or 0),
        steps=steps,
        counters=dict(s.counters),
        seconds=round(seconds, 3),
        cpu_seconds=round(time.process_time() - c0, 3),
        exact_tokens=exact_tokens,
        timing_seconds=round(timed, 3),
        model_load_seconds=round(load, 3),
    )
    # Retrieval this plan computed is cached where the job reads it (its cache folder): a job run after
    # the plan does not pay it again (the demo: 25 s idle, 60 s loaded of dense encoding, 0.002 s in the job)
    if s.retrieval_runs_computed:
        cost.retrieval_seconds = round(float(s.timings_s.get("retrieve", 0.0)), 3)
    generation = cost.generation_seconds
    if timing is not None and generation is not None:
        generating = any(st.to_generate for st in steps)
        pipeline = seconds - timed - cost.retrieval_seconds
        cost.wall_seconds = round(pipeline + (load if generating else 0.0) + generation, 3)
    return cost


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
                from hydra.core.override_parser.overrides_parser import OverridesParser

                parsed = OverridesParser.create().parse_overrides(overrides)
                fixed = [str(o.input_line) for o in parsed if not o.is_sweep_override()]
                hcfg = compose("config", overrides=fixed, return_hydra_config=True)
                jobs = sweep_jobs(overrides, hcfg.hydra.sweeper.get("params"))
            else:
                jobs = [overrides]
            result.append([(job, compose("config", overrides=job)) for job in jobs])
    return result
