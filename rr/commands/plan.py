"""``rr plan``: what a job (or sweep) would cost, without calling any model.

The planner runs the real pipeline (data, retrieval, cells, perturbations, strategies, window
fitting with the real tokenizer) with a stand-in for the model: :class:`PlanningLLM` renders
and keys every request exactly as :class:`~rr.generation.client.LLM` does, deduplicates,
looks each unique request up in the real generation cache (read only), counts the prompt
tokens of the requests that would reach the model, and returns placeholder text for them so
that the next steps of multi-step strategies still run. Nothing is generated and nothing is
written to the generation cache (retrieval runs are computed and cached as in a real job:
they are real work the job reuses).

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

Power (:mod:`rr.analysis.power`): the expected interval half-width of accuracy, NDR, RSR and ROR at the
plan's number of examples, from assumed rates or a pilot's score table, and the examples needed
for ``--target-halfwidth``. Prompts longer than the context window even without documents are
not sent by the job (``over_window`` rows): the plan reports them and counts none of their tokens.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from rr.analysis.power import (
    DEFAULT_TARGET,
    PowerRow,
    examples_needed,
    parse_rates,
    power_from_pilot,
    power_from_rates,
    z_value,
)
from rr.generation.base import Generator
from rr.generation.cache import GenerationCache
from rr.generation.client import LLM
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
    from rr.config import instantiate

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
    from rr.config import instantiate

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

    def gpu_hours(self, prompt_tps: float, generated_tps: float) -> float:
        return (self.prompt_tokens / prompt_tps + self.new_tokens / generated_tps) / 3600


class PlanningLLM(LLM):
    """An :class:`LLM` that records what it would send and calls no model.

    Args:
        generator: The backend (only its tokenizer is used: ``render``, ``count_tokens``).
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
    ) -> None:
        super().__init__(generator, cache, show_progress=False)
        self.steps: list[PlanStep] = steps if steps is not None else []
        self.planned: set[str] = planned if planned is not None else set()
        self.mean_new_tokens = mean_new_tokens
        self.placeholder = placeholder
        self.exact_tokens = exact_tokens
        self.fit_exactly = exact_tokens  # else window fitting decides from its estimates alone

    def sibling(self, generator: Generator, cache: GenerationCache) -> LLM:
        return PlanningLLM(
            generator,
            cache,
            self.steps,
            self.mean_new_tokens,
            self.placeholder,
            self.planned,
            self.exact_tokens,
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
        s = self.stats
        s.requests += len(requests)
        s.unique_requests += len(prepared.first)
        s.cache_hits += len(cached)
        s.over_window += len(prepared.too_long)
        s.seconds += time.perf_counter() - t0
        return self.generations(prepared, cached)


@dataclass
class JobPlan:
    """The plan of one job: its steps, counters and how long planning took."""

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


def plan_job(
    cfg: DictConfig,
    mean_new_tokens: float | None = None,
    overrides: list[str] | None = None,
    planned: set[str] | None = None,
    exact_tokens: bool = False,
) -> JobPlan:
    """Run the pipeline of ``cfg`` with a :class:`PlanningLLM`; outputs go to a temporary folder.

    ``planned``: request keys planned by earlier jobs of the same sweep (updated in place).
    ``exact_tokens``: count every prompt exactly (else window fitting's estimates are used
    where it made them; see the module docstring).
    """
    from rr.pipeline import run_job

    t0, c0 = time.perf_counter(), time.process_time()
    cfg = cfg.copy()
    with open_dict(cfg):
        cfg.logger = {}  # never log a plan
        cfg.progress = False
    steps: list[PlanStep] = []

    def make_llm(generator: Generator, cache: GenerationCache) -> LLM:
        return PlanningLLM(
            generator, cache, steps, mean_new_tokens, planned=planned, exact_tokens=exact_tokens
        )

    with tempfile.TemporaryDirectory(prefix="rr-plan-") as tmp:
        result = run_job(cfg, tmp, make_llm=make_llm)
    s = result.summary
    return JobPlan(
        job_id=s["job_id"],
        name=str(s.get("name")),
        overrides=list(overrides or []),
        examples=int(s["examples"]),
        rows=int(s["rows"]),
        steps=steps,
        counters=dict(s.get("counters", {})),
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


def compose_jobs(
    overrides: list[str], multirun: bool, config_dir: str | None = None
) -> list[tuple[list[str], DictConfig]]:
    """The composed config of each job ``rr [-m] overrides`` would run."""
    from hydra import compose

    from rr.config import hydra_context
    from rr.resume import sweep_jobs

    out = []
    with hydra_context(config_dir):
        if multirun:
            # the sweeper's params (sweep=NAME files) come from a compose without the swept values
            from hydra.core.override_parser.overrides_parser import OverridesParser

            parsed = OverridesParser.create().parse_overrides(overrides)
            fixed = [str(o.input_line) for o in parsed if not o.is_sweep_override()]
            hcfg = compose("config", overrides=fixed, return_hydra_config=True)
            jobs = sweep_jobs(overrides, hcfg.hydra.sweeper.get("params"))
        else:
            jobs = [overrides]
        for job in jobs:
            out.append((job, compose("config", overrides=job)))
    return out


def plan_main(argv: list[str]) -> int:
    """``rr plan [options] [-m] OVERRIDES...``: requests, tokens and GPU-hours, no model calls."""
    import argparse

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    ap = argparse.ArgumentParser(
        prog="rr plan",
        description=plan_main.__doc__,
        epilog="Example: rr plan experiment=cao2025 dataset=mini dataset.n=null corpus=wiki_offline "
        "'retriever=[bm25,dense]'",
    )
    ap.add_argument("-m", "--multirun", action="store_true", help="plan every job of the sweep")
    ap.add_argument("--prompt-tps", type=float, default=PROMPT_TPS, help="prefill tokens/s per GPU")
    ap.add_argument("--generated-tps", type=float, default=GENERATED_TPS, help="decode tokens/s per GPU")
    ap.add_argument(
        "--mean-new-tokens",
        type=float,
        default=None,
        help="expected new tokens per request (default: max_new_tokens, an upper bound)",
    )
    ap.add_argument(
        "--exact-tokens",
        action="store_true",
        help="count every prompt's tokens exactly (default: use window fitting's estimates from "
        "per-document counts where it made them; exact for the packaged SmolLM2 on the paper's prompts)",
    )
    ap.add_argument("--json", type=Path, default=None, help="also write the plan to this JSON file")
    ap.add_argument(
        "--encode-pps",
        type=float,
        default=ENCODE_PPS,
        help="corpus-encoding passages/s per GPU for dense retrievers (default %(default)g: a rough "
        "figure for bge-large on one A100/H100; rr encode's encode.json measures yours)",
    )
    ap.add_argument(
        "--retrieval-only",
        action="store_true",
        help="only the corpus / index table: plan no generation (runs no retrieval, encodes nothing)",
    )
    power = ap.add_argument_group(
        "power", "expected 95%% interval half-widths at the planned number of examples (rr.analysis.power)"
    )
    power.add_argument(
        "--target-halfwidth",
        type=float,
        default=DEFAULT_TARGET,
        help="half-width to reach: examples needed for it (default %(default)s)",
    )
    power.add_argument(
        "--assumed-rate",
        action="append",
        default=[],
        metavar="[METRIC=]P",
        help="assumed accuracy / ndr / rsr / ror, repeatable (default 0.5 for all: the worst case, "
        "so the half-widths are upper bounds); ignored with --pilot",
    )
    power.add_argument(
        "--pilot",
        default=None,
        help="a pilot's job or sweep folder, or scores.parquet: project rr report's example-level "
        "bootstrap intervals to the planned size",
    )
    power.add_argument("--confidence", type=float, default=0.95, help="interval level (default 0.95)")
    power.add_argument(
        "--resamples", type=int, default=1000, help="bootstrap resamples of the pilot (default 1000)"
    )
    ap.add_argument("overrides", nargs="*", help="Hydra overrides, as for `rr`")
    a = ap.parse_args(argv)
    from rr.results import load as load_scores

    try:  # bad power options fail before the (possibly long) planning
        rates = parse_rates(a.assumed_rate)
        examples_needed(1.0, 1, a.target_halfwidth)
        z_value(a.confidence)
        pilot = load_scores(a.pilot) if a.pilot else None
    except (ValueError, FileNotFoundError) as e:
        print(f"rr plan: {e}", file=sys.stderr)
        return 2

    t0 = time.perf_counter()
    console = Console(width=None if Console().is_terminal else 160)
    jobs = compose_jobs(a.overrides, a.multirun)
    from rr.preflight import check_resources

    for _, cfg in jobs:  # a model, dataset or file that is not here: one line before any planning
        check_resources(cfg, roots=("retriever", "corpus") if a.retrieval_only else None)
    retrieval = plan_jobs_retrieval(jobs, a.encode_pps)  # one row per distinct (corpus, retriever)
    print_retrieval(console, retrieval, a.encode_pps)
    if a.retrieval_only:
        if a.json:
            a.json.write_text(json.dumps({"retrieval": [asdict(r) for r in retrieval]}, indent=1))
        return 0
    planned: set[str] = set()  # jobs of a sweep share the cache: later jobs hit earlier ones' requests
    plans = [plan_job(cfg, a.mean_new_tokens, job, planned, a.exact_tokens) for job, cfg in jobs]
    wall = time.perf_counter() - t0
    all_steps = [s for p in plans for s in p.steps]
    for p in plans:
        table = Table(
            title=escape(
                f"rr plan: job {p.job_id} ({p.name}, {p.examples} examples, {p.rows} rows) {' '.join(p.overrides)}"
            )
        )
        for col in (
            "step",
            "model",
            "requests",
            "unique",
            "cached",
            "to generate",
            "prompt tokens",
            "prompts estimated",
            "new tokens",
            "over window",
            "GPU-h",
        ):
            table.add_column(col, justify="left" if col in ("step", "model") else "right")
        for s in [*p.steps, total(p.steps)]:
            table.add_row(
                escape(s.step + (" (estimate)" if s.estimate and s.step != "total" else "")),
                escape(s.model),
                *(
                    f"{v:,}"
                    for v in (
                        s.requests,
                        s.unique,
                        s.cached,
                        s.to_generate,
                        s.prompt_tokens,
                        s.estimated_prompts,
                        s.new_tokens,
                        s.over_window,
                    )
                ),
                f"{s.gpu_hours(a.prompt_tps, a.generated_tps):.3f}",
            )
        console.print(table)
        if p.counters:
            console.print(
                escape("counters (placeholder outputs take fallback paths): " + json.dumps(p.counters))
            )
    grand = total(all_steps)
    new_basis = (
        f"{a.mean_new_tokens:g} per request"
        if a.mean_new_tokens is not None
        else "max_new_tokens (upper bound)"
    )
    console.print(
        f"{len(plans)} job(s): {grand.requests:,} requests, {grand.to_generate:,} to generate, "
        f"{grand.prompt_tokens:,} prompt tokens, {grand.new_tokens:,} new tokens ({new_basis}), "
        f"{grand.gpu_hours(a.prompt_tps, a.generated_tps):.3f} GPU-hours at {a.prompt_tps:g} prefill and "
        f"{a.generated_tps:g} decode tokens/s; planned in {wall:.1f}s"
    )
    console.print(
        "prompt tokens: every prompt counted exactly (--exact-tokens)"
        if a.exact_tokens
        else f"prompt tokens: {grand.to_generate - grand.estimated_prompts:,} prompts counted exactly, "
        f"{grand.estimated_prompts:,} estimated from per-document counts by window fitting "
        "(--exact-tokens counts all)"
    )
    if grand.over_window:
        console.print(
            f"{grand.over_window:,} prompt(s) exceed the context window even without documents: the job "
            "will not send them (empty prediction, over_window rows; strict_window=true fails it), and "
            "their tokens are not counted above"
        )
    if grand.estimate:
        console.print(
            "steps marked (estimate) consume earlier outputs, which the plan replaces by placeholders"
        )
    powers = []
    for n in sorted({p.examples for p in plans}):
        if pilot is not None:
            rows, notes = power_from_pilot(
                pilot, n, a.target_halfwidth, confidence=a.confidence, n_resamples=a.resamples
            )
        else:
            rows, notes = power_from_rates(rates, n, a.target_halfwidth, a.confidence), []
        print_power(console, rows, notes, a.confidence, a.pilot)
        powers += [asdict(r) for r in rows]
    if a.json:
        a.json.write_text(
            json.dumps(
                {
                    "jobs": [asdict(p) for p in plans],
                    "total": asdict(grand),
                    "gpu_hours": grand.gpu_hours(a.prompt_tps, a.generated_tps),
                    "prompt_tps": a.prompt_tps,
                    "generated_tps": a.generated_tps,
                    "mean_new_tokens": a.mean_new_tokens,
                    "prompt_token_counts": "exact" if a.exact_tokens else "estimate where fitting made one",
                    "seconds": round(wall, 3),
                    "power": powers,
                    "retrieval": [asdict(r) for r in retrieval],
                },
                indent=1,
            )
        )
    return 0


def _size(n: int | None) -> str:
    """Bytes as a readable size (``"479 kB"``, ``"81.9 GB"``); ``"-"`` for unknown."""
    if n is None:
        return "-"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def print_retrieval(console: Any, rows: list[RetrievalPlan], encode_pps: float) -> None:
    """The corpus / index table of :func:`plan_main` (one row per distinct corpus and retriever)."""
    from rich.markup import escape
    from rich.table import Table

    if not rows:
        return
    table = Table(title=f"rr plan: corpus and index (dense encoding at {encode_pps:g} passages/s per GPU)")
    for col in (
        "retriever",
        "passages",
        "dim",
        "embeddings",
        "encoded",
        "to encode",
        "storage",
        "index",
        "index memory",
        "encode GPU-h",
    ):
        table.add_column(col, justify="left" if col in ("retriever", "storage", "index") else "right")
    for r in rows:
        table.add_row(
            escape(r.retriever),
            f"{r.passages:,}",
            "-" if r.dim is None else str(r.dim),
            _size(r.embedding_bytes),
            "-" if r.encoded is None else f"{r.encoded:,}",
            "-" if r.to_encode is None else f"{r.to_encode:,}",
            r.storage or "-",
            escape(r.index or "-"),
            _size(r.index_bytes),
            "-" if r.encode_gpu_hours is None else f"{r.encode_gpu_hours:.3f}",
        )
    console.print(table)
    if any(r.storage == "blocks" and r.index == "flat" for r in rows):
        console.print(
            "index memory of exact search over blocks: one block in memory at a time (the rest stays on disk)"
        )


def print_power(
    console: Any, rows: list[PowerRow], notes: list[str], confidence: float, pilot: str | None
) -> None:
    """The power table of :func:`plan_main` (one row per metric, per system of a pilot)."""
    from rich.markup import escape
    from rich.table import Table

    if not rows:
        for note in notes:
            console.print(escape(note))
        return
    n = rows[0].n_planned
    basis = (
        f"pilot {pilot}: rr report's example-level bootstrap, half-width x sqrt(n_pilot / {n})"
        if pilot
        else "assumed rates, Wald z*sqrt(p(1-p)/n) (an upper bound for NDR / RSR / ROR)"
    )
    table = Table(title=escape(f"power at {n:,} examples: {confidence:.0%} interval half-widths ({basis})"))
    target = f"examples for ±{rows[0].target:g}"
    if pilot:
        columns = [
            "system",
            "metric",
            "pilot value",
            "pilot examples",
            "pilot half-width",
            "half-width",
            target,
        ]
    else:
        columns = ["metric", "assumed rate", "half-width", target]
    for col in columns:
        table.add_column(col, justify="left" if col in ("system", "metric") else "right")
    for r in rows:
        needed = "-" if r.n_needed is None else f"{r.n_needed:,}"
        if pilot:
            pilot_cells = [f"{r.n_basis:,}", f"±{r.halfwidth_basis:.4f}"]
            table.add_row(
                escape(r.system), r.metric, f"{r.value:.3f}", *pilot_cells, f"±{r.halfwidth:.4f}", needed
            )
        else:
            table.add_row(r.metric, f"{r.value:.3f}", f"±{r.halfwidth:.4f}", needed)
    console.print(table)
    for note in notes:
        console.print(escape(note))


def plan_summary(plans: list[JobPlan]) -> dict[str, Any]:
    """Totals of several job plans as a plain dict (for benchmarks and notebooks)."""
    t = total([s for p in plans for s in p.steps])
    return {**asdict(t), "jobs": len(plans), "seconds": round(sum(p.seconds for p in plans), 3)}
