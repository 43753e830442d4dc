"""The one door to a model: render, key, deduplicate, serve from cache, batch the rest."""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace

from tqdm.auto import tqdm

from rr.generation.base import Generator
from rr.generation.cache import GenerationCache
from rr.generation.throughput import (
    Probe,
    TimesBatches,
    cpu_step_range,
    format_range,
    format_seconds,
    probe,
    probe_prompts,
)
from rr.hashing import content_hash
from rr.records import Generation, Request

log = logging.getLogger(__name__)


class PromptTooLongError(ValueError):
    """A prompt plus its ``max_new_tokens`` does not fit the model's context window
    (raised only with ``strict_window=true``; by default such prompts are not sent)."""


@dataclass
class LLMStats:
    """Counters reported in ``summary.json`` (``over_window``: distinct prompts not sent
    because prompt + ``max_new_tokens`` exceeded the context window)."""

    requests: int = 0
    unique_requests: int = 0
    cache_hits: int = 0
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    over_window: int = 0
    steps: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class PreparedStep:
    """A step's requests as :meth:`LLM.prepare` leaves them: rendered, keyed, deduplicated and
    checked against the context window (what a real and a planned step share).

    Attributes:
        requests: The step's requests, in order.
        prompts: Each request's rendered prompt, same order.
        keys: Each request's cache key, same order.
        first: Each distinct key -> the index of its first request (in first-seen order).
        too_long: Keys whose prompt plus ``max_new_tokens`` exceeds the window (never sent).
    """

    requests: list[Request]
    prompts: list[str]
    keys: list[str]
    first: dict[str, int]
    too_long: set[str]

    def fitting(self) -> list[str]:
        """The distinct keys whose prompt fits the window, in first-seen order."""
        return [k for k in self.first if k not in self.too_long]

    def prompt(self, key: str) -> str:
        """The rendered prompt of ``key``."""
        return self.prompts[self.first[key]]

    def request(self, key: str) -> Request:
        """The (first) request of ``key``."""
        return self.requests[self.first[key]]


class LLM:
    """Cached, deduplicating front of a :class:`Generator`.

    Every request of a step is rendered to its exact prompt, keyed by
    ``hash(model identity, prompt, decoding params)``, deduplicated, and looked up in the
    cache; only the misses reach the backend, sorted by prompt text so that prompts sharing
    a prefix are adjacent (vLLM's prefix cache reuses them), in chunks of ``flush_every``
    that are written to the cache as soon as they return (a killed job loses at most one chunk).

    No prompt that cannot fit is sent: a prompt whose tokens plus its ``max_new_tokens`` exceed
    the context window (window fitting dropped every document and it is still too long, or a
    prompt that is never fitted: closed-book, a second step, a judge) gets an empty
    :class:`Generation` flagged ``over_window`` without a model call and is not cached; with
    ``strict_window`` the step raises :class:`PromptTooLongError` before any of its model calls.

    Args:
        generator: The backend.
        cache: Its cache (must have been built with ``generator.identity()``).
        flush_every: Prompts per backend call / cache write.
        show_progress: One progress bar per step, over the prompts that reach the model.
        strict_window: Raise instead of skipping a prompt that does not fit the window.
        warn_after_s: On a CPU backend that times its batches, a step predicted to take longer
            than this says so in one line before it starts (:meth:`foresee`); ``None``: never.
        plan_hint: The command that shows the job's cost, named in that line.
    """

    #: Texts whose token counts :meth:`count_tokens_cached` keeps (oldest forgotten first).
    TOKEN_MEMO_SIZE = 1 << 18
    #: Window fitting settles which documents fit with exact counts (a planner may estimate).
    fit_exactly = True
    #: Whether it calls the model (``False`` for a planner: ``rr plan``).
    calls_model = True
    #: Set by a job that resumes a cut-off run: each step logs ``resuming: N of M requests cached``.
    resuming = False

    def __init__(
        self,
        generator: Generator,
        cache: GenerationCache,
        flush_every: int = 64,
        show_progress: bool = True,
        strict_window: bool = False,
        warn_after_s: float | None = None,
        plan_hint: str = "rr plan ...",
    ) -> None:
        self.generator = generator
        self.cache = cache
        self.flush_every = flush_every
        self.show_progress = show_progress
        self.strict_window = strict_window
        self.warn_after_s = warn_after_s
        self.plan_hint = plan_hint
        self.identity = generator.identity()
        self.stats = LLMStats()
        # hash(text) -> token count, oldest first. An OrderedDict: evicting a plain dict's first
        # key (del d[next(iter(d))]) scans every slot deleted before it, quadratic once the memo is
        # full (a 3,610-question Cao job: 0.25 -> 0.83 ms of rr's CPU per request).
        self._token_memo: OrderedDict[int, int] = OrderedDict()
        self._noted: dict[int, tuple[int, bool]] = {}  # hash(request) -> window fitting's (tokens, exact)
        self._started = time.perf_counter()
        self._foreseen_s = 0.0  # predicted seconds of the steps foreseen so far (the job's warning)
        self._job_warned = False
        self._probe: Probe | None = None  # the backend's probe, timed before its first long CPU step

    def sibling(self, generator: Generator, cache: GenerationCache) -> LLM:
        """An LLM of the same kind and settings for another model (judges, rewriters)."""
        return LLM(
            generator,
            cache,
            flush_every=self.flush_every,
            show_progress=self.show_progress,
            strict_window=self.strict_window,
            warn_after_s=self.warn_after_s,
            plan_hint=self.plan_hint,
        )

    def key(self, prompt: str, request: Request) -> str:
        return content_hash({"model": self.identity, "prompt": prompt, "params": request.params.key_fields()})

    def render(self, request: Request) -> str:
        return self.generator.render(request)

    def count_tokens(self, prompts: list[str]) -> list[int]:
        """Exact token count of each rendered prompt (the backend's tokenizer)."""
        return self.generator.count_tokens(prompts)

    def count_tokens_cached(self, texts: list[str]) -> list[int]:
        """:meth:`count_tokens`, remembered per text: for texts that recur, such as a document
        formatted for a prompt (the same in every k, order and strategy of an example).

        Keyed by Python's 64-bit string hash; at most :attr:`TOKEN_MEMO_SIZE` texts are kept.
        """
        memo = self._token_memo
        keys = [hash(t) for t in texts]
        found = {k: memo[k] for k in keys if k in memo}
        todo = {k: t for k, t in zip(keys, texts, strict=True) if k not in found}
        if todo:
            for k, n in zip(todo, self.generator.count_tokens(list(todo.values())), strict=True):
                found[k] = n
                self._remember_tokens(k, n)
        return [found[k] for k in keys]

    def count_tokens_keyed(self, key: Hashable, text: Callable[[], str]) -> int:
        """The token count of ``text()``, remembered under ``key``: ``text`` is only called for a
        new key. For texts that recur and cost more to build than to look up, such as a prompt
        rendered without its documents (the same for every order of an example's documents).
        Shares :meth:`count_tokens_cached`'s memo (keyed by the 64-bit hash of ``key``)."""
        h = hash(("keyed", key))
        if h not in self._token_memo:
            self._remember_tokens(h, self.generator.count_tokens([text()])[0])
        return self._token_memo[h]

    def _remember_tokens(self, h: int, n: int) -> None:
        """Store a count in the token memo, forgetting the oldest beyond :attr:`TOKEN_MEMO_SIZE`."""
        memo = self._token_memo
        memo[h] = n
        while len(memo) > self.TOKEN_MEMO_SIZE:
            memo.popitem(last=False)

    def note_prompt_tokens(self, request: Request, tokens: int, exact: bool) -> None:
        """Told by window fitting the token count of each request's prompt it built: exact, or
        its estimate (:class:`~rr.context.WindowEstimate`) when the prompt was not counted whole
        (then only where its upper bound fits, or, for the planner, as its count). :meth:`over_window`
        and the planner (:class:`~rr.cost.PlanningLLM`) use it."""
        self._noted[hash(request)] = (tokens, exact)

    def over_window(self, requests: list[Request], prompts: list[str], step: str) -> list[bool]:
        """Whether each request's prompt plus its ``max_new_tokens`` exceeds the context window.

        A prompt window fitting built is judged by the count it noted (exact, or an estimate it
        took as fitting); any other prompt is counted exactly (memoized). With
        ``strict_window`` the first prompt that does not fit raises :class:`PromptTooLongError`.
        """
        window = self.context_window
        tokens: list[int | None] = [self._noted.get(hash(r), (None, False))[0] for r in requests]
        todo = [i for i, t in enumerate(tokens) if t is None]
        for i, n in zip(todo, self.count_tokens_cached([prompts[i] for i in todo]), strict=True):
            tokens[i] = n
        over = [int(t or 0) + r.params.max_new_tokens > window for t, r in zip(tokens, requests, strict=True)]
        if self.strict_window and any(over):
            i = over.index(True)
            raise PromptTooLongError(
                f"step {step}: a prompt of {tokens[i]} tokens plus max_new_tokens="
                f"{requests[i].params.max_new_tokens} exceeds the context window of {window} tokens "
                f"({sum(over)} of {len(over)} prompts of the step); it begins {prompts[i][:80]!r}. "
                "Shorten the question, raise generator.context_window, or set strict_window=false "
                "to skip such prompts (empty prediction, over_window=true in the score table)"
            )
        return over

    @property
    def context_window(self) -> int:
        return self.generator.context_window

    def prepare(self, requests: list[Request], step: str) -> PreparedStep:
        """Render and key ``requests``, deduplicate them and mark those that do not fit the window
        (:meth:`over_window`, which raises with ``strict_window``): the start of every step."""
        prompts = [self.render(r) for r in requests]
        keys = [self.key(p, r) for p, r in zip(prompts, requests, strict=True)]
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        uniq = list(first)
        flags = self.over_window([requests[first[k]] for k in uniq], [prompts[first[k]] for k in uniq], step)
        too_long = {k for k, o in zip(uniq, flags, strict=True) if o}
        return PreparedStep(requests, prompts, keys, first, too_long)

    def generations(self, prepared: PreparedStep, hits: set[str]) -> list[Generation]:
        """The step's outputs, one per request: an empty one flagged ``over_window`` for a prompt
        that does not fit, the cached completion (``cached`` when its key is in ``hits``), else
        :meth:`uncached`'s; each with its rendered prompt."""
        out = []
        for k, prompt in zip(prepared.keys, prepared.prompts, strict=True):
            if k in prepared.too_long:
                out.append(Generation(text="", key=k, over_window=True, prompt=prompt))
                continue
            c = self.cache.get(k)
            out.append(
                replace(self.uncached(k), prompt=prompt)
                if c is None
                else Generation(
                    text=c.text,
                    key=k,
                    prompt_tokens=c.prompt_tokens,
                    completion_tokens=c.completion_tokens,
                    cached=k in hits,
                    prompt=prompt,
                )
            )
        return out

    def uncached(self, key: str) -> Generation:
        """The output of a request that fits the window and is not cached after its step: there is
        none here, since :meth:`generate` caches every completion (a planner returns a placeholder)."""
        raise RuntimeError(f"request {key} was generated but is not in the generation cache")

    def foresee(self, step: str, prepared: PreparedStep, misses: list[str]) -> None:
        """Before a step of more than one batch on a CPU backend that times its batches: estimate its
        wall time and, when the middle of the range is above :attr:`warn_after_s`, say so in one line
        (the range, what it was measured on, :attr:`plan_hint`).

        The estimate comes from one probe per backend (:func:`~rr.generation.throughput.probe`: a
        batch of the step's median-length prompts for a few new tokens, outputs dropped), timed
        before the first step that needs it (:meth:`~rr.generation.throughput.Probe.step_range`).
        Steps each under the threshold that are over it together say so once.
        """
        gen = self.generator
        if self.warn_after_s is None or not isinstance(gen, TimesBatches) or len(misses) <= gen.batch_size:
            return
        if not gen.runs_on_cpu():
            return
        prompts = [prepared.prompt(k) for k in sorted(misses, key=prepared.prompt)]  # as sent
        lengths = self.count_tokens_cached(prompts)
        if self._probe is None:
            params = prepared.request(misses[0]).params
            self._probe = probe(gen, step, probe_prompts(prompts, lengths, gen.batch_size), params)
            if self._probe is None:
                return
        max_new = max(prepared.request(k).params.max_new_tokens for k in misses)
        low, high = cpu_step_range(gen, self._probe, prompts, lengths, max_new, self.flush_every)
        seconds = (low + high) / 2
        basis = f"{self._probe.words()}; high end: every answer to max_new_tokens"
        so_far = max(self._foreseen_s, time.perf_counter() - self._started)
        self._foreseen_s = so_far + seconds
        if seconds <= self.warn_after_s < so_far + seconds and not self._job_warned:
            # steps under the threshold each, over it together: said once per job
            self._job_warned = True
            log.warning(
                "%s: the job is expected to take ~%s of generation on the CPU with this step's %s "
                "(%d prompts; %s), over the %s a step may take before a warning; `%s` shows the cost of "
                "every step before running it",
                step,
                format_seconds(so_far + seconds),
                format_range(low, high),
                len(misses),
                basis,
                format_seconds(self.warn_after_s),
                self.plan_hint,
            )
        if seconds > self.warn_after_s:
            self._job_warned = True
            log.warning(
                "%s: %d prompts to generate on the CPU, expected %s (%s); `%s` shows the cost of "
                "every step before running it",
                step,
                len(misses),
                format_range(low, high),
                basis,
                self.plan_hint,
            )

    def generate(self, requests: list[Request], step: str = "generate") -> list[Generation]:
        """One :class:`Generation` per request, same order; identical requests are sent once."""
        t0 = time.perf_counter()
        prepared = self.prepare(requests, step)
        self.cache.prefetch(prepared.fitting())  # one bulk lookup: the shard indexes are searched once
        hits = {k for k in prepared.fitting() if self.cache.get(k) is not None}
        misses = sorted((k for k in prepared.fitting() if k not in hits), key=prepared.prompt)
        if self.resuming and hits:
            log.info("resuming: %d of %d requests cached (step %s)", len(hits), len(hits) + len(misses), step)
        # Same params within a chunk: group misses by their decoding parameters.
        by_params: dict[str, list[str]] = {}
        for k in misses:
            by_params.setdefault(content_hash(prepared.request(k).params.key_fields(), 16), []).append(k)
        bar = tqdm(
            total=len(misses),
            desc=f"{step} [{self.generator.name}]",
            unit="prompt",
            disable=not self.show_progress or not misses,
        )
        self.foresee(step, prepared, misses)
        for group in by_params.values():
            params = prepared.request(group[0]).params
            for start in range(0, len(group), self.flush_every):
                chunk = group[start : start + self.flush_every]
                completions = self.generator.generate(
                    [prepared.prompt(k) for k in chunk], params, progress=bar
                )
                self.cache.put_many(zip(chunk, completions, strict=True))
        bar.close()
        out = self.generations(prepared, hits)
        dt = time.perf_counter() - t0
        s = self.stats
        s.requests += len(requests)
        s.unique_requests += len(prepared.first)
        s.cache_hits += len(hits)
        s.model_calls += len(misses)
        s.over_window += len(prepared.too_long)
        fresh = [c for c in (self.cache.get(k) for k in misses) if c is not None]
        s.prompt_tokens += sum(c.prompt_tokens for c in fresh)
        s.completion_tokens += sum(c.completion_tokens for c in fresh)
        s.seconds += dt
        s.steps.append(
            {
                "step": step,
                "requests": len(requests),
                "unique": len(prepared.first),
                "cache_hits": len(hits),
                "model_calls": len(misses),
                "over_window": len(prepared.too_long),
                "seconds": round(dt, 3),
            }
        )
        log.info(
            "%s: %d requests, %d unique, %d cached, %d model calls (%.1fs)",
            step,
            len(requests),
            len(prepared.first),
            len(hits),
            len(misses),
            dt,
        )
        return out
