"""How long a step takes on this machine's CPU: one short timed probe and the range it implies.

A backend that times its batches (:class:`TimesBatches`: the HF backend, and vLLM, which derives
from it) appends one :class:`BatchTiming` per batch: its rows, the prompt tokens its prefill
computed, the seconds to the first new token and the decode steps and seconds after it.
:func:`probe` generates a few prompts of a step once (their outputs are dropped, nothing is cached)
and keeps what they took with what the machine was doing then (its load average and usable cores):
a :class:`Probe`. :meth:`Probe.step_range` extrapolates to a whole step as a range, each end stated:

* low: prefill of the prompt tokens the backend computes once neighbouring prompts' shared prefixes
  are reused (where it reuses them), every batch decoding as many steps as the probe's did, a decode
  step's cost the lesser of all-fixed and all-per-row;
* high: prefill of every prompt token (padded, where the backend pads), every batch decoding to
  ``max_new_tokens``, a decode step's cost the greater of the two.

Nothing is recorded between processes: ``rr plan`` probes once per model, a job once per model
before its first long CPU step (:meth:`rr.generation.client.LLM.foresee`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True)
class BatchTiming:
    """What one generated batch took.

    Attributes:
        rows: Prompts in the batch.
        padded_tokens: Prompt tokens its prefill computed (rows x the longest prompt; with prefix
            reuse, the tokens not reused).
        prefill_s: Seconds from the call to the first new token of every row.
        steps: Decode steps after the first token (the batch runs until its last row ends).
        decode_s: Seconds of those steps.
        max_new_tokens: The batch's token budget.
    """

    rows: int
    padded_tokens: int
    prefill_s: float
    steps: int
    decode_s: float
    max_new_tokens: int


def usable_cores() -> int:
    """Cores this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def load_average() -> float | None:
    """The machine's 1-minute load average (``None`` where the system has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


@runtime_checkable
class TimesBatches(Protocol):
    """A backend that times its batches (prefill and decode apart) and says where it runs."""

    #: One :class:`BatchTiming` per batch generated so far (the caller may clear it).
    batch_timings: list[BatchTiming]
    batch_size: int

    def runs_on_cpu(self) -> bool:
        """Whether it generates on the CPU (without loading the model)."""
        ...

    def load(self) -> Any:
        """Load the model (once; later calls return it)."""
        ...


#: Most prompts of a probe (one batch of them), and its new tokens at most.
PROBE_PROMPTS = 8
PROBE_TOKENS = 16


@dataclass(frozen=True)
class Probe:
    """What a few prompts of a step took on this machine (:func:`probe`).

    Attributes:
        step: The step its prompts came from.
        prompts: Prompts generated.
        rows: Rows of its largest batch.
        prompt_tokens: Prompt tokens its prefill computed.
        prefill_s: Seconds of its prefill.
        steps: Decode steps per batch (the mean over its batches).
        decode_s: Seconds of one decode step of a batch of ``rows`` rows.
        budget: Its new tokens at most (``steps < budget - 1``: its answers ended before it).
        load: The machine's 1-minute load average as it ran (``None``: unknown).
        cores: Cores this process may run on.
        load_s: Seconds loading the model and its first call took (0 when it was loaded before).
    """

    step: str
    prompts: int
    rows: int
    prompt_tokens: int
    prefill_s: float
    steps: float
    decode_s: float
    budget: int
    load: float | None
    cores: int
    load_s: float = 0.0

    def step_range(
        self,
        lengths: Sequence[int],
        max_new_tokens: int,
        rows: int,
        shared: Sequence[int] | None = None,
        padded: bool = True,
    ) -> tuple[float, float]:
        """``(low, high)`` seconds of generating prompts of ``lengths`` tokens in batches of ``rows``
        (longest first) with ``max_new_tokens``.

        Prefill: the probe's seconds per computed token, times (low) the tokens left once ``shared``
        (each prompt's tokens reused from the one before it, :func:`shared_prefix_tokens`; ``None``:
        none) are taken off, (high) every token, padded to each batch's longest with ``padded``.
        Decode: a step of a batch of ``r`` rows costs the probe's step of ``k`` rows times ``r / k``
        (all of it per row) or times 1 (all of it fixed), whichever is less (low) or more (high);
        low: as many steps as the probe's batch decoded, high: ``max_new_tokens - 1``.
        """
        if not lengths:
            return 0.0, 0.0
        per_token = self.prefill_s / max(self.prompt_tokens, 1)
        ordered = sorted(lengths, reverse=True)
        batches = [ordered[i : i + max(rows, 1)] for i in range(0, len(ordered), max(rows, 1))]
        computed = (
            sum(n - min(s, n) for n, s in zip(lengths, shared, strict=True)) if shared else sum(lengths)
        )
        tokens = sum(len(b) * b[0] for b in batches) if padded else sum(lengths)
        widths = [len(b) / max(self.rows, 1) for b in batches]
        most = max(max_new_tokens - 1, 0)
        low = computed * per_token + min(self.steps, most) * self.decode_s * sum(min(w, 1.0) for w in widths)
        high = tokens * per_token + most * self.decode_s * sum(max(w, 1.0) for w in widths)
        return low, max(low, high)

    def words(self) -> str:
        """``"measured on 8 prompts of vanilla:answer (12 s after 3 s loading the model), at load 3.2 on
        2 cores"``."""
        load = "at an unknown load" if self.load is None else f"at load {self.load:.1f}"
        took = format_seconds(
            self.prefill_s + self.steps * self.decode_s * math.ceil(self.prompts / self.rows)
        )
        loading = f" after {format_seconds(self.load_s)} loading the model" if self.load_s >= 1 else ""
        return f"measured on {self.prompts} prompts of {self.step} ({took}{loading}), {load} on {self.cores} cores"


def probe(gen: Any, step: str, prompts: list[str], params: Any) -> Probe | None:
    """Load ``gen`` (a :class:`TimesBatches`; a no-op once loaded) and warm it up on one prompt (timed
    together: the probe's ``load_s``), then generate ``prompts`` (one batch: at
    most :data:`PROBE_PROMPTS`, for at most :data:`PROBE_TOKENS` new tokens) and time them; every
    output, timing and prefix-reuse count (``prefix_counts``, in the job's summary) is dropped.
    ``None`` when the backend timed nothing."""
    import time

    params = replace(params, max_new_tokens=min(params.max_new_tokens, PROBE_TOKENS))
    before = len(gen.batch_timings)
    counts = dict(getattr(gen, "prefix_counts", None) or {})  # the job's prefix-reuse statistics
    t0 = time.perf_counter()
    gen.load()
    gen.generate(prompts[:1], replace(params, max_new_tokens=2))  # the first call's one-off costs
    load_s = time.perf_counter() - t0
    load = load_average()
    del gen.batch_timings[before:]
    gen.generate(prompts[:PROBE_PROMPTS], params)
    timed = list(gen.batch_timings[before:])
    del gen.batch_timings[before:]  # not the step's own work
    if counts:
        gen.prefix_counts.update(counts)
    steps = sum(t.steps for t in timed)
    if not timed or sum(t.prefill_s for t in timed) <= 0:
        return None
    return Probe(
        step=step,
        prompts=min(len(prompts), PROBE_PROMPTS),
        rows=max(t.rows for t in timed),
        prompt_tokens=sum(t.padded_tokens for t in timed),
        prefill_s=sum(t.prefill_s for t in timed),
        steps=steps / len(timed),
        decode_s=sum(t.decode_s for t in timed) / steps if steps else 0.0,
        budget=params.max_new_tokens,
        load=load,
        cores=usable_cores(),
        load_s=load_s,
    )


def probe_prompts(prompts: Sequence[str], lengths: Sequence[int], rows: int) -> list[str]:
    """The prompts a probe of a step generates: one batch (``rows``, at most :data:`PROBE_PROMPTS`)
    of those around the median length."""
    order = sorted(range(len(prompts)), key=lambda i: lengths[i])
    m = min(rows, PROBE_PROMPTS, len(order))
    start = max(0, min(len(order) // 2 - m // 2, len(order) - m))
    return [prompts[i] for i in order[start : start + m]]


#: Tokens per KV-cache block assumed for prefix reuse (vLLM reuses whole blocks).
PREFIX_BLOCK = 16


def shared_prefix_tokens(prompts: list[str], tokens: list[int], block: int = PREFIX_BLOCK) -> list[int]:
    """Tokens of each prompt (sorted order, as a prefix-caching backend sends them) that it shares with
    the prompt before it: its characters in common as a share of the prompt's characters times its
    tokens, rounded down to a multiple of ``block``. The first prompt shares nothing. (Cao et al.'s
    grid: the k = 1 original-order prompt is the start of the k = 2 one, a reversed order shares only
    the template.)"""
    out = [0] * len(prompts)
    for i in range(1, len(prompts)):
        j = len(os.path.commonprefix([prompts[i - 1], prompts[i]]))
        out[i] = int(tokens[i] * j / max(len(prompts[i]), 1)) // block * block
    return out


def cpu_step_range(
    gen: Any, found: Probe, prompts: list[str], lengths: list[int], max_new: int, flush_every: int
) -> tuple[float, float]:
    """:meth:`Probe.step_range` of ``prompts`` (in the order they are sent) as ``gen`` batches them:
    vLLM (``batches_whole_call``) one call per ``flush_every`` reusing any earlier prompt's whole
    blocks; the HF backend batches of ``batch_size``, reusing the previous prompt's tokens with
    ``prefix_cache`` (``reuses_prefixes``)."""
    whole = getattr(gen, "batches_whole_call", False)
    shared = None
    if whole:
        shared = shared_prefix_tokens(prompts, lengths)
    elif getattr(gen, "reuses_prefixes", False):
        shared = shared_prefix_tokens(prompts, lengths, block=1)
    return found.step_range(
        lengths, max_new, flush_every if whole else gen.batch_size, shared, padded=not whole
    )


def format_seconds(s: float) -> str:
    """``"45 s"``, ``"12 min"``, ``"3.4 h"``."""
    if not math.isfinite(s):
        return "?"
    if s < 90:
        return f"{s:.0f} s"
    if s < 90 * 60:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def format_range(low: float, high: float) -> str:
    """``"~8–15 min"``, ``"~40 s–2 min"``; ``"~12 min"`` when both ends read alike."""
    a, b = format_seconds(low), format_seconds(high)
    if a == b:
        return f"~{b}"
    if a.split()[-1] == b.split()[-1]:
        return f"~{a.split()[0]}–{b}"
    return f"~{a}–{b}"
