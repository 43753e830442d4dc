"""``rr plan``: what a job (or sweep) would cost, printed for a person; no model is called but for one
short probe of each model that generates on this machine's CPU (its outputs are not cached).

The costing itself is :mod:`rr.cost` (:func:`~rr.cost.cost_job` runs the real pipeline with a
model stand-in); this module parses the command line, refuses a job its GPUs cannot hold
(:func:`check_fits`) and prints the tables. Power (:mod:`rr.analysis.power`): the expected interval
half-width of accuracy, NDR, RSR and ROR at the plan's number of examples, from assumed rates, the
rates a finished run of the job measured, or a pilot's score table, and the examples needed for
``--target-halfwidth``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from rr.analysis.power import (
    DEFAULT_TARGET,
    PowerRow,
    examples_needed,
    parse_rates,
    power_from_pilot,
    power_from_rates,
    z_value,
)
from rr.cost import (
    ENCODE_PPS,
    GENERATED_TPS,
    PROMPT_TPS,
    CpuProbes,
    JobCost,
    RetrievalPlan,
    compose_jobs,
    cost_job,
    dataset_size,
    job_weights,
    launcher_gpus,
    plan_jobs_retrieval,
    total,
)
from rr.generation.throughput import format_range
from rr.model_identity import recorded_identities

#: Memory of one GPU (GB) assumed for the GPUs a launcher requests: an 80 GB H100 or A100.
GPU_MEMORY_GB = 80.0


@recorded_identities()  # reads jobs: asks no API server who its model is (issue 52)
def plan_main(argv: list[str]) -> int:
    """``rr plan [options] [-m] OVERRIDES...``: requests, tokens, GPU-hours and CPU time here.

    The steps, each a function below: parse the options -> check the power options (before the
    possibly long costing) -> compose the jobs and check their resources -> cost retrieval ->
    cost each job (a few real prompts of each CPU model timed once on this machine) -> print the
    job tables and totals -> power -> write the JSON.
    """
    a = parse_args(argv)
    try:  # bad power options fail before the (possibly long) planning
        rates, pilot = check_power_options(a)
    except (ValueError, FileNotFoundError) as e:
        print(f"rr plan: {e}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    console = make_console()
    launcher = launcher_gpus(a.overrides, a.multirun)
    jobs = compose_checked(a.overrides, a.multirun, a.retrieval_only, launcher, a.gpu_memory_gb)
    retrieval = plan_jobs_retrieval(jobs, a.encode_pps)  # one row per distinct (corpus, retriever)
    print_retrieval(console, retrieval, a.encode_pps)
    if a.retrieval_only:
        if a.json:
            a.json.write_text(json.dumps({"retrieval": [asdict(r) for r in retrieval]}, indent=1))
        return 0
    probes = None if a.no_probe else CpuProbes()
    costs = cost_jobs(jobs, a.mean_new_tokens, a.exact_tokens, probes)
    for c, (_, cfg) in zip(costs, jobs, strict=True):
        c.gpus = job_gpus(cfg, launcher)
    wall = time.perf_counter() - t0
    for c in costs:
        print_job(console, c, a.prompt_tps, a.generated_tps)
    print_totals(console, costs, a, wall)
    print_cpu_time(console, costs)
    powers = power_tables(console, costs, a, rates, pilot, jobs)
    if a.json:
        a.json.write_text(json.dumps(plan_json(costs, a, wall, powers, retrieval), indent=1))
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    """``rr plan``'s options and overrides."""
    ap = argparse.ArgumentParser(
        prog="rr plan",
        description=plan_main.__doc__.split("\n")[0] if plan_main.__doc__ else None,
        epilog="Example: rr plan experiment=cao2025 dataset=mini dataset.n=null corpus=wiki_offline "
        "'retriever=[bm25,dense]'",
    )
    ap.add_argument("-m", "--multirun", action="store_true", help="plan every job of the sweep")
    ap.add_argument(
        "--gpu-memory-gb",
        type=float,
        default=GPU_MEMORY_GB,
        help="memory of each GPU a launcher requests (default %(default)g: an 80 GB H100 / A100); a job "
        "whose weights exceed its GPUs' memory is refused",
    )
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
        "--no-probe",
        action="store_true",
        help="generate nothing: no CPU-time estimate (by default a model that runs on this machine's CPU "
        "generates a few prompts once, uncached, and each step's CPU time is estimated from them)",
    )
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
    return ap.parse_args(argv)


def check_power_options(a: argparse.Namespace) -> tuple[dict[str, float], Any]:
    """The assumed rates and the pilot's score table (``None`` without ``--pilot``); raises
    ``ValueError`` / ``FileNotFoundError`` on a bad option."""
    from rr.results import load as load_scores

    rates = parse_rates(a.assumed_rate)
    examples_needed(1.0, 1, a.target_halfwidth)
    z_value(a.confidence)
    pilot = load_scores(a.pilot) if a.pilot else None
    return rates, pilot


def make_console() -> Any:
    """A rich console (160 columns when not a terminal, so tables in logs stay whole)."""
    from rich.console import Console

    return Console(width=None if Console().is_terminal else 160)


def compose_checked(
    overrides: list[str],
    multirun: bool,
    retrieval_only: bool,
    launcher: int | None = None,
    gpu_memory_gb: float = GPU_MEMORY_GB,
) -> list[tuple[list[str], DictConfig]]:
    """The jobs of ``rr [-m] overrides``; on a ``launcher`` that requests GPUs (its ``gpus_per_node``),
    a job whose models' weights cannot fit the GPUs it requests (:func:`check_fits`), or a model,
    dataset or file that is not here, fails in one line before any planning."""
    from rr.preflight import check_resources

    jobs = compose_jobs(overrides, multirun)
    for job, cfg in jobs:
        if launcher and not retrieval_only:
            check_fits(job, cfg, job_gpus(cfg, launcher), gpu_memory_gb)
        check_resources(cfg, roots=("retriever", "corpus") if retrieval_only else None)
    return jobs


def job_gpus(cfg: DictConfig, launcher: int | None) -> int:
    """The GPUs ``cfg``'s job requests: on a ``launcher`` that requests GPUs, its ``resources.gpus``
    if set, else the launcher's ``gpus_per_node`` (:func:`rr.commands.slurm.shaped_params`); elsewhere
    ``resources.gpus`` (what it would request), else 1."""
    from omegaconf import OmegaConf

    from rr.commands.slurm import shaped_params

    own = OmegaConf.select(cfg, "resources.gpus", default=None)
    if launcher:
        return int(shaped_params({"gpus_per_node": launcher}, own)["gpus_per_node"])
    return int(own) if own else 1


def check_fits(job: list[str], cfg: DictConfig, gpus: int, gpu_memory_gb: float) -> None:
    """Raise a one-line :class:`~rr.errors.UserError` when the weights of the models ``cfg`` loads
    (:func:`~rr.cost.job_weights`, at their dtype) exceed ``gpus`` x ``gpu_memory_gb``."""
    from rr.errors import UserError

    weights = job_weights(cfg)
    need = sum(w.bytes for w in weights) / 1e9
    have = gpus * gpu_memory_gb
    if need <= have:
        return
    models = " + ".join(
        f"{w.key}.model={w.model}: {w.parameters / 1e9:.3g} B parameters ({w.source}) at {w.dtype}, "
        f"{w.bytes / 1e9:.0f} GB"
        for w in weights
    )
    least = math.ceil(need / gpu_memory_gb)
    raise UserError(
        f"job {' '.join(job) or '(defaults)'}: its weights need ~{need:.0f} GB ({models}), more than the "
        f"{gpus} GPU(s) x {gpu_memory_gb:g} GB it requests; request resources.gpus={least} (vllm: with "
        f"generator.tensor_parallel_size={least}), a smaller dtype or a quantization, or pass "
        "--gpu-memory-gb for larger GPUs"
    )


def cost_jobs(
    jobs: list[tuple[list[str], DictConfig]],
    mean_new_tokens: float | None,
    exact_tokens: bool,
    probes: CpuProbes | None = None,
) -> list[JobCost]:
    """:func:`~rr.cost.cost_job` of each job, in order; the jobs of a sweep share the cache, so later
    jobs hit earlier ones' requests, and one probe per model."""
    planned: set[str] = set()
    return [cost_job(cfg, mean_new_tokens, job, planned, exact_tokens, probes) for job, cfg in jobs]


def print_job(console: Any, c: JobCost, prompt_tps: float, generated_tps: float) -> None:
    """One job's table: a row per generation step and the total, then its counters."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(
        title=escape(
            f"rr plan: job {c.job_id} ({c.name}, {c.examples} examples, {c.rows} rows) {' '.join(c.overrides)}"
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
        "CPU time",
    ):
        table.add_column(col, justify="left" if col in ("step", "model") else "right")
    step_total = total(c.steps)
    step_total.cpu_seconds = c.cpu_range
    for s in [*c.steps, step_total]:
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
            f"{s.gpu_hours(prompt_tps, generated_tps):.3f}",
            "-" if s.cpu_seconds is None else format_range(*s.cpu_seconds),
        )
    console.print(table)
    if c.counters:
        console.print(escape("counters (placeholder outputs take fallback paths): " + json.dumps(c.counters)))


def print_totals(console: Any, costs: list[JobCost], a: argparse.Namespace, wall: float) -> None:
    """The sweep's totals and the notes on how prompt tokens were counted."""
    grand = total([s for c in costs for s in c.steps])
    new_basis = (
        f"{a.mean_new_tokens:g} per request"
        if a.mean_new_tokens is not None
        else "max_new_tokens (upper bound)"
    )
    console.print(
        f"{len(costs)} job(s): {grand.requests:,} requests, {grand.to_generate:,} to generate, "
        f"{grand.prompt_tokens:,} prompt tokens, {grand.new_tokens:,} new tokens ({new_basis}), "
        f"{grand.gpu_hours(a.prompt_tps, a.generated_tps):.3f} GPU-hours at {a.prompt_tps:g} prefill and "
        f"{a.generated_tps:g} decode tokens/s; planned in {wall:.1f}s"
    )
    shapes: dict[int, list[JobCost]] = {}
    for c in costs:
        shapes.setdefault(c.gpus or 1, []).append(c)
    console.print(
        "GPU-hours per resource shape: "
        + "; ".join(
            f"{n}×GPU: {total([s for c in cs for s in c.steps]).gpu_hours(a.prompt_tps, a.generated_tps):.3g} "
            f"GPU-h ({len(cs)} job{'s' if len(cs) != 1 else ''})"
            for n, cs in sorted(shapes.items())
        )
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


def print_cpu_time(console: Any, costs: list[JobCost]) -> None:
    """Each job's CPU time of generation on this machine, as a range, and what it was measured on."""
    from rich.markup import escape

    for c in costs:
        cpu = c.cpu_range
        if cpu is None or not any(s.to_generate for s in c.steps):
            continue
        bases = "; ".join(sorted({s.cpu_basis for s in c.steps if s.cpu_basis}))
        console.print(
            escape(
                f"job {c.job_id}: generation on this machine's CPU {format_range(*cpu)} ({bases}; low end: "
                "shared prefixes reused and answers as long as the probe's, high end: every answer to "
                "max_new_tokens)"
            )
        )


def power_tables(
    console: Any,
    costs: list[JobCost],
    a: argparse.Namespace,
    rates: dict[str, float],
    pilot: Any,
    jobs: list[tuple[list[str], DictConfig]] | None = None,
) -> list[dict[str, Any]]:
    """Print the power table at each planned number of examples, with a note where the examples
    needed exceed what the dataset holds; return its rows as dicts."""
    powers = []
    configs = {c.examples: cfg for c, (_, cfg) in zip(costs, jobs or [], strict=False)}
    measured = measured_rates(costs, jobs or [], list(rates)) if pilot is None else {}
    given: set[str] = set()  # the metrics --assumed-rate names (P alone: all of them)
    for spec in a.assumed_rate:
        name = spec.rpartition("=")[0]
        given |= {name} if name else set(rates)
    for n in sorted({c.examples for c in costs}):
        sources: dict[str, str] = {}
        if pilot is not None:
            rows, notes = power_from_pilot(
                pilot, n, a.target_halfwidth, confidence=a.confidence, n_resamples=a.resamples
            )
        else:
            used = dict(rates)
            for m in rates:
                if m in given:
                    sources[m] = "--assumed-rate"
                elif m in measured.get(n, {}):
                    used[m], sources[m] = measured[n][m]
                else:
                    sources[m] = f"assumed ({rates[m]:g}: the worst case)"
            rows, notes = power_from_rates(used, n, a.target_halfwidth, a.confidence), []
        held = None
        if n in configs and any(r.n_needed is not None and r.n_needed > n for r in rows):
            held, name = dataset_size(configs[n])
            notes = [*notes, *beyond_dataset(rows, held, name)]
        print_power(console, rows, notes, a.confidence, a.pilot, sources)
        powers += [{**asdict(r), "dataset_examples": held, "rate_from": sources.get(r.metric)} for r in rows]
    return powers


def measured_rates(
    costs: list[JobCost], jobs: list[tuple[list[str], DictConfig]], metrics: list[str]
) -> dict[int, dict[str, tuple[float, str]]]:
    """Planned examples -> metric -> (rate, which job measured it), from the finished runs of the planned
    jobs found in their output roots: of the values of each of ``metrics`` in the job's summary and its
    robustness rows, the one nearest 0.5 (the widest interval)."""
    from rr.jobfolder import read_summary
    from rr.resume import job_folders

    ids = {c.job_id: c.examples for c in costs}
    roots = {str(cfg.paths.output_root) for _, cfg in jobs}
    found: dict[int, dict[str, tuple[float, str]]] = {}
    for root in sorted(r for r in roots if Path(r).is_dir()):
        for folder in job_folders(root):
            summary = read_summary(folder)
            if summary is None or summary.job_id not in ids:
                continue
            plural = "" if summary.examples == 1 else "s"
            which = f"measured by job {summary.job_id} ({summary.examples} example{plural})"
            for metric in metrics:
                vs = [
                    getattr(summary, metric, None),
                    *(getattr(row, metric, None) for row in summary.metrics),
                ]
                known = [float(v) for v in vs if isinstance(v, int | float) and math.isfinite(v)]
                if known:
                    rate = min(known, key=lambda v: abs(v - 0.5))
                    found.setdefault(ids[summary.job_id], {}).setdefault(metric, (rate, which))
    return found


def beyond_dataset(rows: list[PowerRow], held: int, name: str) -> list[str]:
    """One line per metric whose examples needed exceed the ``held`` examples of the dataset."""
    from rr.analysis.power import project_halfwidth

    return [
        f"{r.metric}{'' if r.system == 'assumed' else f' ({r.system})'}: {r.n_needed:,} examples needed for "
        f"±{r.target:g}, more than the {held:,} that dataset {name} holds; with all {held:,} the half-width "
        f"would be ±{project_halfwidth(r.halfwidth_basis, r.n_basis, held):.4f}"
        for r in rows
        if r.n_needed is not None and r.n_needed > held
    ]


def plan_json(
    costs: list[JobCost],
    a: argparse.Namespace,
    wall: float,
    powers: list[dict[str, Any]],
    retrieval: list[RetrievalPlan],
) -> dict[str, Any]:
    """What ``--json`` writes: every job's cost, the total, the throughputs, power and retrieval."""
    grand = total([s for c in costs for s in c.steps])
    return {
        "jobs": [asdict(c) for c in costs],
        "total": asdict(grand),
        "gpu_hours": grand.gpu_hours(a.prompt_tps, a.generated_tps),
        "prompt_tps": a.prompt_tps,
        "generated_tps": a.generated_tps,
        "mean_new_tokens": a.mean_new_tokens,
        "prompt_token_counts": "exact" if a.exact_tokens else "estimate where fitting made one",
        "seconds": round(wall, 3),
        "power": powers,
        "retrieval": [asdict(r) for r in retrieval],
        "cpu_seconds": [c.cpu_range for c in costs],
    }


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
    console: Any,
    rows: list[PowerRow],
    notes: list[str],
    confidence: float,
    pilot: str | None,
    sources: dict[str, str] | None = None,
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
        else "Wald z*sqrt(p(1-p)/n) at each metric's rate (an upper bound for NDR / RSR / ROR)"
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
        columns = ["metric", "rate", "rate from", "half-width", target]
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
            source = escape((sources or {}).get(r.metric, "assumed"))
            table.add_row(r.metric, f"{r.value:.3f}", source, f"±{r.halfwidth:.4f}", needed)
    console.print(table)
    for note in notes:
        console.print(escape(note))
