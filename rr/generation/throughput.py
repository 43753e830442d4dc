"""How fast a backend generates on this machine: batch timings, a throughput fitted from them,
the wall time of a step predicted from it, and a record of it in the cache.

A backend that times its batches (:class:`TimesBatches`: the HF backend) appends one
:class:`BatchTiming` per batch it generates: its rows, its padded prompt tokens (rows x the
longest prompt: what the prefill computes), the seconds until the first new token (prefill) and
the decode steps and seconds after it. :meth:`Throughput.from_timings` turns them into prefill
tokens per second and decode seconds per step per row; :func:`step_seconds` predicts a step's wall
time by forming the batches as :class:`~rr.generation.client.LLM` and the backend will (sorted by
prompt text, chunks of ``flush_every``, longest first within a chunk, batches of ``batch_size``).

Where the figures come from: ``rr plan`` measures them (a few real generations of the configured
model at the step's own prompt lengths, :mod:`rr.cost`), and every job records what its own batches
took; both are kept per model, device and thread count in a per-user folder of this machine
(:class:`ThroughputStore`, :func:`machine_dir`), so a job on CPU can say before a long step how long it will take.

A CPU shared with other processes runs a batch slower by how many threads compete for its cores
(issue 43: a record fitted at load 12 made an idle machine's job warn of ~9 min for a 1.5 min step).
Each timing therefore carries the machine's *contention* while it ran (:class:`ContentionSampler`:
runnable threads per usable core, at least 1); :meth:`Throughput.from_timings` fits the machine's
uncontended speed (every timing divided by its contention), and a prediction is made at the contention
expected when the work runs (:meth:`Throughput.at`, :func:`contention_now`): that of the batches just
timed, else the machine's now.
"""

from __future__ import annotations

import json
import logging
import math
import os
import platform
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from rr.atomic import atomic_write
from rr.hashing import content_hash

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BatchTiming:
    """What one generated batch took.

    Attributes:
        rows: Prompts in the batch.
        padded_tokens: Rows x the longest prompt's tokens (what the prefill computes).
        prefill_s: Seconds from the call to the first new token of every row.
        steps: Decode steps after the first token (the batch runs until its last row ends).
        decode_s: Seconds of those steps.
        max_new_tokens: The batch's token budget.
        contention: How many times slower than alone the machine ran it (runnable threads per usable
            core while it ran, at least 1: :class:`ContentionSampler`); ``None``: not known (a GPU,
            another process's engine, a record from before rr kept it), taken as 1.
    """

    rows: int
    padded_tokens: int
    prefill_s: float
    steps: int
    decode_s: float
    max_new_tokens: int
    contention: float | None = None

    def uncontended(self) -> BatchTiming:
        """This timing as the machine alone would have run it (its seconds divided by its contention)."""
        c = self.contention or 1.0
        return replace(self, prefill_s=self.prefill_s / c, decode_s=self.decode_s / c, contention=1.0)


def usable_cores() -> int:
    """Cores this process may run on."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def runnable_threads() -> int | None:
    """Threads runnable on this machine at this instant, the caller included (Linux: the running count
    of ``/proc/loadavg``; ``None`` where there is none)."""
    try:
        with open("/proc/loadavg") as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


def own_runnable_threads() -> int:
    """Threads of this process runnable at this instant (Linux: state ``R`` in ``/proc/self/task``),
    the caller included; 1 where they cannot be read."""
    n = 0
    try:
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/stat") as f:
                    n += f.read().rsplit(")", 1)[1].split()[0] == "R"
            except (OSError, IndexError):
                continue
    except OSError:
        return 1
    return max(n, 1)


def other_runnable_threads() -> int | None:
    """Threads of other processes runnable at this instant (``None`` where the system cannot say)."""
    total = runnable_threads()
    return None if total is None else max(total - own_runnable_threads(), 0)


def contention_of(others: float, threads: int) -> float:
    """How many times slower than alone ``threads`` CPU-bound threads run beside ``others`` runnable
    threads of other processes, the scheduler sharing the usable cores evenly among all of them: their
    count per core, at least 1 (2 threads beside 2 busy processes on 2 cores: 2)."""
    return max(1.0, (others + max(threads, 1)) / usable_cores())


class ContentionSampler:
    """The contention a stretch of work of ``threads`` threads met (:func:`contention_of`): the other
    processes' runnable threads sampled at its steps (at most one sample per ``every_s``; one sample
    reads ``/proc/loadavg`` and this process's thread states, well under a millisecond)."""

    def __init__(self, threads: int, every_s: float = 0.05) -> None:
        self.threads = threads
        self.every_s = every_s
        self.total = 0
        self.samples = 0
        self._last = -math.inf

    def sample(self) -> None:
        """Count the other processes' runnable threads now (unless sampled less than ``every_s`` ago)."""
        now = time.perf_counter()
        if now - self._last < self.every_s:
            return
        self._last = now
        n = other_runnable_threads()
        if n is not None:
            self.total += n
            self.samples += 1

    def contention(self) -> float | None:
        """The contention over the samples; ``None`` with no sample."""
        if not self.samples:
            return None
        return contention_of(self.total / self.samples, self.threads)


def contention_now(threads: int, samples: int = 20, interval_s: float = 0.01) -> float:
    """The contention a CPU job of ``threads`` threads would meet if it started now (:func:`contention_of`
    of the other processes' runnable threads, sampled ``samples`` times); 1 where it cannot be read."""
    sampler = ContentionSampler(threads, every_s=0.0)
    for i in range(samples):
        sampler.sample()
        if i + 1 < samples:
            time.sleep(interval_s)
    return sampler.contention() or 1.0


def contention_words(contention: float) -> str:
    """``"2.3x the time alone (other processes share the 2 cores)"``: what a contention means."""
    return f"{contention:.1f}x the time alone (other processes share the {usable_cores()} cores)"


def expected_contention(recent: Sequence[BatchTiming], threads: int) -> float:
    """The contention the next batches will meet: that of ``recent`` (batches this process just ran)
    where they know it, else the machine's now (:func:`contention_now`)."""
    c = median_contention(recent)
    return c if c is not None else contention_now(threads)


def median_contention(timings: Sequence[BatchTiming]) -> float | None:
    """The median contention of the timings that know theirs (``None``: none does)."""
    known = sorted(t.contention for t in timings if t.contention is not None)
    return known[len(known) // 2] if known else None


@runtime_checkable
class TimesBatches(Protocol):
    """A backend that times its batches (prefill and decode apart) and says where it runs."""

    #: One :class:`BatchTiming` per batch generated so far (the caller may clear it).
    batch_timings: list[BatchTiming]
    batch_size: int

    def throughput_key(self) -> dict:
        """What its speed depends on: model identity, device, dtype, threads (keys the record)."""
        ...

    def runs_on_cpu(self) -> bool:
        """Whether it generates on the CPU (without loading the model)."""
        ...

    def load(self) -> Any:
        """Load the model (once; later calls return it)."""
        ...


@dataclass(frozen=True)
class Throughput:
    """A backend's speed on this machine, fitted from batch timings.

    The cost of one batch of ``rows`` prompts padded to ``longest`` tokens, decoding ``steps``
    tokens after the first (:meth:`batch_seconds`)::

        prefill_s0 + rows * longest / prefill_tps
          + steps * (step_s0 + rows * step_s_per_row + rows * longest * step_s_per_token)

    A fixed part per batch (prefill) and per decode step, and a part per token and per row: on a
    CPU a decode step of 8 rows of a small model costs little more than one of 1 row, and a short
    prompt's prefill is mostly fixed cost, so a single timed prompt scaled by rows and tokens
    over-estimates a batched step several-fold (issue 36: the demo predicted at 2.3 h took 20 min).
    :meth:`from_timings` fits both lines by least squares when the timings differ in padded
    tokens (prefill) and in rows (decode); with one size only, the fixed parts are 0 (the ratio).

    Attributes:
        prefill_tps: Padded prompt tokens per second of prefill (beyond the fixed part).
        step_s_per_row: Seconds of one decode step per batch row (beyond the fixed part).
        steps_share: Decode steps per batch / its ``max_new_tokens - 1`` (how early batches end);
            1.0 = every batch runs to its budget.
        rows: Rows of the timed batches (how much was measured).
        source: ``"measured"`` (timed just now) or ``"recorded"`` (read from the cache).
        prefill_s0: Fixed seconds of a batch's prefill.
        step_s0: Fixed seconds of a decode step.
        step_s_per_token: Seconds of a decode step per prompt token in the batch (attention over the
            KV cache: a step of 8 rows of 500-token prompts costs more than one of 8 short ones).
        contention: The contention its predictions are made at (:meth:`at`).
        alone: Whether the figures above are the machine's alone: fitted from timings that knew their
            contention (each divided by it). A throughput from timings that did not (a record from
            before rr kept it, a backend that cannot tell) is taken as it was measured: :meth:`at`
            leaves it as it is.
    """

    prefill_tps: float
    step_s_per_row: float
    steps_share: float
    rows: int
    source: str = "measured"
    prefill_s0: float = 0.0
    step_s0: float = 0.0
    step_s_per_token: float = 0.0
    contention: float = 1.0
    alone: bool = False

    @classmethod
    def from_timings(cls, timings: Sequence[BatchTiming], source: str = "measured") -> Throughput | None:
        """The machine's uncontended throughput from ``timings``, each divided by its own contention
        (``None`` when there are none or they measured nothing)."""
        alone = any(t.contention is not None for t in timings)
        timings = [t.uncontended() for t in timings]
        prefill_s = sum(t.prefill_s for t in timings)
        tokens = sum(t.padded_tokens for t in timings)
        if not timings or prefill_s <= 0 or tokens <= 0:
            return None
        s0, per_token = affine_fit([(t.padded_tokens, t.prefill_s, 1.0) for t in timings])
        decoded = [t for t in timings if t.steps > 0]
        c0, per_row, per_kv = decode_fit(decoded)
        budget = sum(max(t.max_new_tokens - 1, 0) for t in timings)
        return cls(
            prefill_tps=1 / per_token,
            step_s_per_row=per_row,
            steps_share=sum(t.steps for t in timings) / budget if budget else 1.0,
            rows=sum(t.rows for t in timings),
            source=source,
            prefill_s0=s0,
            step_s0=c0,
            step_s_per_token=per_kv,
            alone=alone,
        )

    def at(self, contention: float | None) -> Throughput:
        """This throughput predicting at ``contention`` (``None``: 1, the machine alone); itself when
        its figures are not the machine's alone (:attr:`alone`)."""
        return replace(self, contention=max(contention or 1.0, 1.0)) if self.alone else self

    def batch_seconds(self, rows: int, longest: int, steps: float) -> float:
        """Predicted seconds of one batch of ``rows`` prompts padded to ``longest`` tokens."""
        return self.seconds(rows, rows * longest, steps)

    def seconds(self, rows: int, prefill_tokens: float, steps: float) -> float:
        """Predicted seconds of one batch of ``rows`` rows computing ``prefill_tokens`` prompt tokens."""
        alone = (
            self.prefill_s0
            + prefill_tokens / self.prefill_tps
            + steps * (self.step_s0 + rows * self.step_s_per_row + prefill_tokens * self.step_s_per_token)
        )
        return alone * self.contention


def decode_fit(timings: Sequence[BatchTiming]) -> tuple[float, float, float]:
    """``(fixed, per row, per padded token)`` seconds of a decode step, fitted to ``timings`` (each with
    ``steps > 0``) by least squares weighted by steps; a coefficient that comes out negative (noise,
    or too few distinct batches to tell the terms apart) is dropped and the rest refitted, down to
    :func:`affine_fit` on rows."""
    import numpy as np

    if not timings:
        return 0.0, 0.0, 0.0
    x = np.array([[1.0, t.rows, t.padded_tokens] for t in timings])
    y = np.array([t.decode_s / t.steps for t in timings])
    w = np.sqrt(np.array([float(t.steps) for t in timings]))
    keep = [0, 1, 2]
    while len(keep) > 2:
        coef, *_ = np.linalg.lstsq(x[:, keep] * w[:, None], y * w, rcond=None)
        if np.linalg.matrix_rank(x[:, keep]) == len(keep) and (coef >= 0).all():
            out = [0.0, 0.0, 0.0]
            for i, c in zip(keep, coef, strict=True):
                out[i] = float(c)
            return out[0], out[1], out[2]
        keep.remove(2)
    c0, per_row = affine_fit([(t.rows, t.decode_s / t.steps, float(t.steps)) for t in timings])
    return c0, per_row, 0.0


def affine_fit(points: Sequence[tuple[float, float, float]]) -> tuple[float, float]:
    """``(a, b)`` of ``y = a + b * x`` fitted to ``(x, y, weight)`` points by weighted least squares.

    With fewer than two distinct ``x``, or a fit with a negative ``a`` or a non-positive ``b`` (noise),
    the line through the origin: ``a = 0``, ``b = sum(w * y) / sum(w * x)`` (the ratio of the totals).
    ``(0, 0)`` for no points.
    """
    sw = sum(w for _, _, w in points)
    swx = sum(w * x for x, _, w in points)
    if not points or sw <= 0 or swx <= 0:
        return 0.0, 0.0
    ratio = sum(w * y for _, y, w in points) / swx
    mx, my = swx / sw, sum(w * y for _, y, w in points) / sw
    sxx = sum(w * (x - mx) ** 2 for x, _, w in points)
    if sxx <= 1e-12 * max(mx * mx, 1.0):
        return 0.0, ratio
    b = sum(w * (x - mx) * (y - my) for x, y, w in points) / sxx
    a = my - b * mx
    if a < 0 or b <= 0:
        return 0.0, ratio
    return a, b


#: Tokens per KV-cache block assumed for prefix reuse (vLLM reuses whole blocks).
PREFIX_BLOCK = 16


def shared_prefix_tokens(prompts: list[str], tokens: list[int], block: int = PREFIX_BLOCK) -> list[int]:
    """Tokens of each prompt (sorted order, as a prefix-caching backend sends them) that it shares with
    the prompt before it, the longest shared prefix with any earlier one: its characters in common
    as a share of the prompt's characters times its tokens, rounded down to a multiple of ``block``. The
    first prompt shares nothing. (Cao et al.'s grid: the k = 1 original-order prompt is the start of
    the k = 2 one, a reversed order shares only the template.)"""
    out = [0] * len(prompts)
    for i in range(1, len(prompts)):
        j = len(os.path.commonprefix([prompts[i - 1], prompts[i]]))
        out[i] = int(tokens[i] * j / max(len(prompts[i]), 1)) // block * block
    return out


def prefix_sharing(gen: Any, prompts: list[str], tokens: list[int]) -> tuple[list[int] | None, bool]:
    """How ``gen`` reuses the prefixes of ``prompts`` (in the order it is sent them), for
    :func:`step_seconds`: ``(shared, batched_prefixes)``. vLLM (``batches_whole_call``) reuses whole
    blocks of any earlier prompt; the HF backend with ``prefix_cache`` (``reuses_prefixes``) the
    previous prompt's tokens; other backends nothing (``None``)."""
    if getattr(gen, "batches_whole_call", False):
        return shared_prefix_tokens(prompts, tokens), False
    if getattr(gen, "reuses_prefixes", False):
        return shared_prefix_tokens(prompts, tokens, block=1), True
    return None, False


def step_seconds(
    lengths: Sequence[int],
    throughput: Throughput,
    batch_size: int,
    flush_every: int,
    max_new_tokens: int,
    steps_share: float | None = None,
    shared: Sequence[int] | None = None,
    batched_prefixes: bool = False,
) -> float:
    """Predicted wall seconds of generating prompts of ``lengths`` tokens, given in the order the
    client sends them (chunks of ``flush_every``; the backend sorts each chunk longest first and
    cuts it into batches of ``batch_size``).

    ``steps_share``: decode steps per batch as a share of ``max_new_tokens - 1`` (default: the
    throughput's own, measured on the same kind of prompts or recorded).
    ``shared``: for a backend that schedules each call whole and reuses prefixes (vLLM), the tokens
    each prompt shares with one computed before it: each chunk is one batch computing
    ``sum(lengths - shared)`` prompt tokens (no padding). With ``batched_prefixes`` (the HF backend's
    prefix reuse, :mod:`rr.generation.hf_prefix`) each chunk is cut in the order given into batches
    of ``batch_size``, each computing its rows' ``lengths - shared``.
    """
    share = throughput.steps_share if steps_share is None else steps_share
    steps = max(max_new_tokens - 1, 0) * min(max(share, 0.0), 1.0)
    total = 0.0
    if shared is not None and batched_prefixes:
        for c in range(0, len(lengths), max(flush_every, 1)):
            end = min(c + max(flush_every, 1), len(lengths))
            for b in range(c, end, max(batch_size, 1)):
                rows = range(b, min(b + max(batch_size, 1), end))
                new = sum(lengths[i] - min(shared[i], lengths[i]) for i in rows)
                total += throughput.seconds(len(rows), new, steps)
        return total
    if shared is not None:
        for c in range(0, len(lengths), max(flush_every, 1)):
            new = sum(
                n - min(s, n)
                for n, s in zip(lengths[c : c + flush_every], shared[c : c + flush_every], strict=True)
            )
            total += throughput.seconds(len(lengths[c : c + flush_every]), new, steps)
        return total
    for c in range(0, len(lengths), max(flush_every, 1)):
        chunk = sorted(lengths[c : c + flush_every], reverse=True)
        for b in range(0, len(chunk), max(batch_size, 1)):
            batch = chunk[b : b + batch_size]
            total += throughput.batch_seconds(len(batch), batch[0], steps)
    return total


def format_seconds(s: float) -> str:
    """``"45 s"``, ``"12 min"``, ``"3.4 h"``."""
    if not math.isfinite(s):
        return "?"
    if s < 90:
        return f"{s:.0f} s"
    if s < 90 * 60:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


#: Batch timings kept per record (the newest): what later fits pool with.
KEPT_TIMINGS = 256


def machine_dir() -> Path:
    """Where this machine's throughputs are kept, per user (not per output folder: a new folder on
    the same machine finds them): ``$RR_THROUGHPUT_DIR``, else ``$XDG_CACHE_HOME/rr/throughput`` or
    ``~/.cache/rr/throughput``."""
    if os.environ.get("RR_THROUGHPUT_DIR"):
        return Path(os.environ["RR_THROUGHPUT_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rr" / "throughput"


class ThroughputStore:
    """The last measured throughput per backend key (:meth:`TimesBatches.throughput_key` and this
    host), one small JSON file each under :func:`machine_dir` (``cache_dir/throughput/`` when a
    ``cache_dir`` is given)."""

    def __init__(self, cache_dir: str | Path | None = None) -> None:
        self.dir = machine_dir() if cache_dir is None else Path(cache_dir) / "throughput"

    def _path(self, key: dict) -> Path:
        return self.dir / f"{content_hash({**key, 'host': platform.node(), 'cpus': os.cpu_count()}, 16)}.json"

    def _record(self, key: dict) -> dict[str, Any]:
        """The record of ``key`` on this host (``{}``: none, or unreadable)."""
        try:
            data = json.loads(self._path(key).read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: dict) -> Throughput | None:
        """The recorded throughput of ``key`` on this host (``None``: none, or unreadable)."""
        try:
            return Throughput(**{**self._record(key)["throughput"], "source": "recorded"})
        except (KeyError, TypeError):
            return None

    def timings(self, key: dict) -> list[BatchTiming]:
        """The batch timings the recorded throughput of ``key`` was fitted on (newest last; ``[]``)."""
        try:
            return [BatchTiming(**t) for t in self._record(key).get("timings") or []]
        except (KeyError, TypeError):
            return []

    def start_s(self, key: dict) -> float | None:
        """The recorded seconds, on the machine alone, of loading ``key``'s model and the one-off
        cost of its first call (what a job pays before its first batch; ``None``: not recorded)."""
        value = self._record(key).get("start_s")
        try:
            return float(value) if value is not None else None
        except (TypeError, ValueError):
            return None

    def put(
        self,
        key: dict,
        throughput: Throughput,
        what: str,
        timings: Sequence[BatchTiming] = (),
        start_s: float | None = None,
    ) -> None:
        """Record ``throughput`` for ``key``, with the batch timings it was fitted on (the newest
        :data:`KEPT_TIMINGS`; later records pool theirs with them) and ``start_s`` (see
        :meth:`start_s`; ``None`` keeps the recorded one). Best effort: a read-only cache keeps nothing."""
        if start_s is None:
            start_s = self.start_s(key)
        record = {
            "key": key,
            "what": what,
            "throughput": asdict(replace(throughput, contention=1.0)),  # its figures are the machine's alone
            "timings": [asdict(t) for t in list(timings)[-KEPT_TIMINGS:]],
            "start_s": start_s,
        }
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            with atomic_write(self._path(key)) as f:
                f.write(json.dumps(record, indent=1))
        except OSError as e:
            log.debug("throughput not recorded in %s: %s", self.dir, e)
