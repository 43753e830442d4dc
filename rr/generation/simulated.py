"""A simulated reader (``generator=simulated``): a generator backend with planted, known robustness.

It reads the *rendered prompt* as a model would and answers from what it finds, by documented
rules with planted parameters, so the whole pipeline (retrieval, cells, strategies, the client,
its cache and dedup, judges, metrics) runs at any size without a model, and the metrics it measures
have known true values (:func:`planted_scores`). The rules, the parameters and how the planted values
follow from them are in ``docs/simulated.md``.

Reading a prompt (:func:`read_prompt`): the prompt kind from its template's fixed text
(``non_rag_qa.j2`` closed-book, ``rag_qa.j2`` vanilla, ``ownknow.j2`` with its ``Previous Answer``,
``rgb_user.j2`` with RGB's system message); the question, parsed as a synthetic question
(:mod:`rr.data.synthetic`: entity and attribute); the documents, in prompt order (``Context i``
blocks, or RGB's one document per line); and in each document the statements of the asked
attribute: about the entity itself (an *answer*) or about a near-miss entity (a *distractor*).

Answering (:func:`decide`), with ``x = j / (m - 1)`` the position of document ``j`` of ``m``:

1. Knowledge: the reader *knows* an entity with probability ``knowledge`` (fixed per entity and
   reader seed). Closed-book it answers the true value if it knows, else a wrong guess.
2. Each answer document is *noticed* with probability ``w(x)``, the position curve
   (``position_first`` at x = 0, ``position_middle`` at 0.5, ``position_last`` at 1, quadratic in
   between: lost in the middle); each distractor with ``distractor * w(x)``.
3. Only answers noticed: the answer. Only distractors: the first distractor's value (wrong). Both:
   the one earlier in the prompt wins with probability ``(1 + order) / 2``, else the other kind's
   first. Nothing noticed: own knowledge (true value if known; else a wrong guess, or for RGB's
   prompt RGB's refusal).
4. OwnKnow prompts: with probability ``draft_trust`` the reader repeats its ``Previous Answer``.

Randomness: one uniform per document plus two per prompt, from a hash (SHAKE-128) of
``(reader_seed, prompt)``: the same prompt always gets the same answer, and different prompts
are independent given the entity's knowledge.
"""

from __future__ import annotations

import hashlib
import math
import re
import struct
import time
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from rr.answers import RGB_REFUSAL
from rr.data.synthetic import World, is_near_miss
from rr.errors import ConfigError, UserError
from rr.generation.base import Completion, ConfiguredDecoding, PlantedScores
from rr.hashing import content_hash
from rr.records import GenerationParams, Request
from rr.registry import component

#: Version of the reading and answering rules, part of the cache identity: bump it when they change.
READER_VERSION = 1
#: Prompt kinds the reader reads, by the templates that make them.
CLOSED, RAG, OWNKNOW, RGB = "closed", "rag", "ownknow", "rgb"
#: template file -> prompt kind (the templates whose prompts the reader can read).
READABLE_TEMPLATES = {"non_rag_qa.j2": CLOSED, "rag_qa.j2": RAG, "ownknow.j2": OWNKNOW, "rgb_user.j2": RGB}
#: Document roles.
NONE, ANSWER, DISTRACTOR = 0, 1, 2
#: :func:`decide`'s choices other than a document index.
FALLBACK, DRAFT = -1, -2

_CLOSED_MARK = "Answer the following question in a concise manner"
_RAG_MARK = "Retrieved contexts:\n"
_RAG_STARTS = (
    "Based on your own knowledge and retrieved contexts, answer",
    "Previously, you answer the question",
)
_DRAFT_MARK = " Previous Answer: "
_RGB_DOCS, _RGB_QUESTION = "Document:\n", "\n\nQuestion:\n"
_RGB_SYSTEM_MARK = "You are an accurate and reliable AI assistant"
_CONTEXT_HEADER = re.compile(r"^ Context \d+\n", re.MULTILINE)
_TURN = re.compile(r"<\|(system|user|assistant)\|>\n")


class UnreadablePromptError(UserError, ValueError):
    """A prompt the simulated reader cannot read (not one of its templates, or not a synthetic question)."""


@dataclass(frozen=True)
class Reading:
    """What the reader found in one prompt.

    Attributes:
        kind: ``closed``, ``rag``, ``ownknow`` or ``rgb``.
        entity, attribute: The question's.
        roles: Each document's role in prompt order (``NONE``, ``ANSWER``, ``DISTRACTOR``).
        values: The value each document states for the attribute (``""`` for ``NONE``).
        draft: OwnKnow's ``Previous Answer`` (``None`` for other kinds).
    """

    kind: str
    entity: str
    attribute: str
    roles: tuple[int, ...]
    values: tuple[str, ...]
    draft: str | None = None


def classify(text: str, entity: str, attribute: str) -> tuple[int, str]:
    """A document's role for (``entity``, ``attribute``) and the value it states (``""`` if none)."""
    near = None
    for s in World.read(text, attribute):
        if s.entity == entity:
            return ANSWER, s.value
        if near is None and is_near_miss(s.entity, entity):
            near = s.value
    return (DISTRACTOR, near) if near is not None else (NONE, "")


def _split_turns(prompt: str) -> dict[str, str]:
    parts = _TURN.split(prompt)
    if len(parts) == 1:
        return {"user": prompt}
    return {parts[i]: parts[i + 1].rstrip("\n") for i in range(1, len(parts) - 1, 2)}


def read_prompt(prompt: str) -> Reading:
    """Read a rendered prompt (see the module docstring).

    Raises:
        UnreadablePromptError: Not a prompt of :data:`READABLE_TEMPLATES`, or its question is not
            a synthetic one.
    """
    turns = _split_turns(prompt)
    user = turns.get("user", "")
    draft = None
    if user.startswith(_RGB_DOCS) and _RGB_QUESTION in user:
        kind = RGB
        section, question = user[len(_RGB_DOCS) :].rsplit(_RGB_QUESTION, 1)
        starts, pos = [], 0  # one document per non-empty line
        for line in section.split("\n"):
            if line.strip():
                starts.append(pos)
            pos += len(line) + 1
    elif user.startswith(_RAG_STARTS) and _RAG_MARK in user:
        section = user.split(_RAG_MARK, 1)[1]
        section, _, question = section.rstrip("\n").rpartition("\n")
        starts = [h.end() for h in _CONTEXT_HEADER.finditer(section)]
        kind = RAG
        if _DRAFT_MARK in question:
            kind = OWNKNOW
            question, draft = question.rsplit(_DRAFT_MARK, 1)
            draft = draft.strip().removesuffix(".")
    elif user.startswith(_CLOSED_MARK):
        kind, section, starts = CLOSED, "", []
        question = user.rstrip("\n").rpartition("\n")[2]
    else:
        raise UnreadablePromptError(
            "generator=simulated cannot read this prompt (it reads the prompts of "
            f"{', '.join(READABLE_TEMPLATES)}); it begins {user[:80]!r}"
        )
    parsed = World.parse_question(question)
    if parsed is None:
        raise UnreadablePromptError(
            f"generator=simulated reads only synthetic questions (dataset=synthetic); got {question.strip()[:80]!r}"
        )
    entity, attribute = parsed
    # one pass over the documents: each statement of the attribute, assigned to its document
    # by offset; per document the same rule as :func:`classify` (an answer first, else the first distractor)
    roles, values = [NONE] * len(starts), [""] * len(starts)
    for st in World.read(section, attribute) if starts else ():
        role = ANSWER if st.entity == entity else DISTRACTOR if is_near_miss(st.entity, entity) else NONE
        j = bisect_right(starts, st.offset) - 1
        if role == NONE or j < 0 or roles[j] == ANSWER or (role == DISTRACTOR and roles[j] == DISTRACTOR):
            continue
        roles[j], values[j] = role, st.value
    return Reading(kind, entity, attribute, tuple(roles), tuple(values), draft)


@dataclass(frozen=True)
class ReaderParams:
    """The planted parameters (see the module docstring and ``docs/simulated.md``)."""

    knowledge: float = 0.3
    position_first: float = 0.95
    position_middle: float = 0.55
    position_last: float = 0.85
    distractor: float = 0.5
    order: float = 0.5
    draft_trust: float = 0.5

    def check(self) -> None:
        for key, value in vars(self).items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise ConfigError(key, f"must be a probability in [0, 1], got {value!r}")

    def curve(self, m: int) -> np.ndarray:
        """``w(x)`` at the ``m`` document positions (``x = j / (m - 1)``; ``x = 0`` when ``m = 1``)."""
        x = np.arange(m) / (m - 1) if m > 1 else np.zeros(m)
        left = self.position_middle + (self.position_first - self.position_middle) * (1 - 2 * x) ** 2
        right = self.position_middle + (self.position_last - self.position_middle) * (2 * x - 1) ** 2
        return np.where(x <= 0.5, left, right)


def decide(params: ReaderParams, reading: Reading, u: np.ndarray) -> np.ndarray:
    """The reader's choice in each of ``R`` draws: a document index, :data:`FALLBACK` or :data:`DRAFT`.

    Args:
        params: The planted parameters.
        reading: The prompt's reading.
        u: Uniforms in [0, 1), shape ``(R, m + 2)``: one per document, then the conflict and the
            draft draws.

    Returns:
        Int array of shape ``(R,)``.
    """
    roles = np.asarray(reading.roles, dtype=np.int8)
    m = len(roles)
    r = u.shape[0]
    choice = np.full(r, FALLBACK, dtype=np.int64)
    if m:
        w = params.curve(m)
        p = np.where(roles == ANSWER, w, np.where(roles == DISTRACTOR, params.distractor * w, 0.0))
        noticed = u[:, :m] < p
        ans = noticed & (roles == ANSWER)
        dis = noticed & (roles == DISTRACTOR)
        has_a, has_d = ans.any(axis=1), dis.any(axis=1)
        first_a, first_d = ans.argmax(axis=1), dis.argmax(axis=1)
        earlier_wins = u[:, m] < (1.0 + params.order) / 2.0
        earlier = np.minimum(first_a, first_d)
        later = np.maximum(first_a, first_d)
        both = np.where(earlier_wins, earlier, later)
        choice = np.where(has_a & has_d, both, np.where(has_a, first_a, np.where(has_d, first_d, FALLBACK)))
    if reading.kind == OWNKNOW and reading.draft:
        choice = np.where(u[:, m + 1] < params.draft_trust, DRAFT, choice)
    return choice


def decide_one(params: ReaderParams, reading: Reading, u: Sequence[float]) -> int:
    """:func:`decide` for one draw, in plain Python (the reader's path: a few microseconds per
    prompt, where numpy's per-call overhead would cost tens); ``u`` has ``m + 2`` uniforms.
    A test checks both give the same choices."""
    roles = reading.roles
    m = len(roles)
    first_a = first_d = -1
    if m:
        w = _curve_list(params, m)
        for j, role in enumerate(roles):
            if role == ANSWER and first_a < 0 and u[j] < w[j]:
                first_a = j
            elif role == DISTRACTOR and first_d < 0 and u[j] < params.distractor * w[j]:
                first_d = j
            if first_a >= 0 and first_d >= 0:
                break
    if first_a >= 0 and first_d >= 0:
        earlier_wins = u[m] < (1.0 + params.order) / 2.0
        choice = min(first_a, first_d) if earlier_wins else max(first_a, first_d)
    else:
        choice = first_a if first_a >= 0 else first_d if first_d >= 0 else FALLBACK
    if reading.kind == OWNKNOW and reading.draft and u[m + 1] < params.draft_trust:
        return DRAFT
    return choice


@lru_cache(maxsize=512)
def _curve_list(params: ReaderParams, m: int) -> list[float]:
    return params.curve(m).tolist()


def outcome(reading: Reading, choice: np.ndarray, known: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(correct, refused)`` of each choice, given whether the entity is known in each draw.

    A draft is correct exactly when the entity is known (the draft is the closed-book answer).
    """
    roles = np.asarray(reading.roles + (NONE, NONE), dtype=np.int8)  # pad: FALLBACK/DRAFT index safely
    picked_role = roles[np.where(choice >= 0, choice, len(roles) - 1)]
    from_docs = choice >= 0
    correct = np.where(from_docs, picked_role == ANSWER, known)
    refused = (choice == FALLBACK) & ~known & (reading.kind == RGB)
    return correct, refused


def uniforms(seed: int, prompt: str, n: int) -> list[float]:
    """``n`` uniforms in [0, 1) that depend only on ``(seed, prompt)``: SHAKE-128 of both, read as
    64-bit integers (one hash call per prompt, a microsecond or two)."""
    raw = hashlib.shake_128(f"{seed}\x1f{prompt}".encode()).digest(8 * n)
    return [x / 2.0**64 for x in struct.unpack(f"<{n}Q", raw)]


def _seed_of(*parts: object) -> int:
    data = "\x1f".join(map(str, parts)).encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=16).digest(), "little")


@component("generator", "simulated")
class SimulatedGenerator(ConfiguredDecoding):
    """The simulated reader as a generator backend (see the module docstring).

    Prompts are rendered as ``<|role|>\\n{content}\\n`` turns followed by ``<|assistant|>\\n``;
    a token is a whitespace-separated word. Its cache identity is ``rr-simulated-reader`` with a
    revision hashing every parameter, so each parameter set has its own cache entries.

    Args:
        knowledge: Probability that the reader knows an entity (closed-book accuracy).
        position_first, position_middle, position_last: The position curve ``w(x)``: probability
            of noticing an answer document at the start, the middle and the end of the context.
        distractor: Susceptibility: a distractor document is noticed with ``distractor * w(x)``.
        order: Order sensitivity: when answers and distractors are both noticed, the earlier one
            wins with probability ``(1 + order) / 2`` (0: a coin flip).
        draft_trust: OwnKnow: probability of repeating the previous (closed-book) answer.
        reader_seed: Seed of the reader's draws (knowledge per entity, draws per prompt).
        world_seed: The synthetic world the reader "was trained on" (``dataset.seed``): what it
            answers for entities it knows.
        planted_reps: Monte-Carlo draws of the reader per prompt for the planted values
            (:func:`planted_scores`; capped so that rows x draws stay under 2 million).
        latency_s: Seconds each prompt takes, slept per backend call (0: none): a slow model for
            tests of what happens while generation runs (a job killed mid-generation, timeouts).
            Not part of the cache identity (it changes no answer).
        context_window: Window in tokens (words).
        name: The score table's ``generator`` column.
        **kwargs: The decoding block (``max_new_tokens``, ...), accepted so experiments compose;
            the reader's answers do not depend on it.
    """

    def __init__(
        self,
        knowledge: float = 0.3,
        position_first: float = 0.95,
        position_middle: float = 0.55,
        position_last: float = 0.85,
        distractor: float = 0.5,
        order: float = 0.5,
        draft_trust: float = 0.5,
        reader_seed: int = 0,
        world_seed: int = 0,
        planted_reps: int = 400,
        latency_s: float = 0.0,
        context_window: int = 131072,
        name: str = "simulated",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.params = ReaderParams(
            knowledge, position_first, position_middle, position_last, distractor, order, draft_trust
        )
        self.params.check()
        if isinstance(planted_reps, bool) or not isinstance(planted_reps, int) or planted_reps < 1:
            raise ConfigError("planted_reps", f"must be a positive integer, got {planted_reps!r}")
        self.reader_seed = int(reader_seed)
        self.world_seed = int(world_seed)
        self.planted_reps = planted_reps
        if isinstance(latency_s, bool) or not isinstance(latency_s, int | float) or latency_s < 0:
            raise ConfigError("latency_s", f"must be a number of seconds >= 0, got {latency_s!r}")
        self.latency_s = float(latency_s)
        self.context_window = int(context_window)
        self.name = name
        self._world = World(self.world_seed)
        self._kinds: dict[str, dict[str, str]] = {}
        self._inverse_a = pow(self._world._a, -1, 32**5)

    # -- the generator protocol ------------------------------------------------------------------
    def identity(self) -> dict:
        spec = {
            **vars(self.params),
            "reader_seed": self.reader_seed,
            "world_seed": self.world_seed,
            "rules": READER_VERSION,
        }
        return {"model_id": "rr-simulated-reader", "revision": content_hash(spec, 16)}

    def render(self, request: Request) -> str:
        if request.raw_prompt is not None:
            return request.raw_prompt
        return "".join(f"<|{role}|>\n{content}\n" for role, content in request.messages) + "<|assistant|>\n"

    def count_tokens(self, prompts: list[str]) -> list[int]:
        return [len(p.split()) for p in prompts]

    def generate(
        self, prompts: list[str], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        if self.latency_s and prompts:
            time.sleep(self.latency_s * len(prompts))
        out = []
        for prompt in prompts:
            text = self.answer(prompt)
            out.append(Completion(text, len(prompt.split()), len(text.split())))
        if progress is not None:
            progress.update(len(prompts))
        return out

    # -- the reader ------------------------------------------------------------------------------
    def knows(self, entity: str) -> bool:
        """Whether the reader knows ``entity`` (fixed per entity and reader seed)."""
        return _seed_of("known", self.reader_seed, entity) % 2**53 / 2**53 < self.params.knowledge

    def true_value(self, entity: str, attribute: str) -> str:
        """The value the reader's world gives ``entity`` (what it answers when it knows it)."""
        from rr.data.synthetic import BASE, NAME_SPACE, SYLLABLES

        sylls = re.findall(
            "|".join(sorted(SYLLABLES, key=len, reverse=True)), entity.lower().replace(" ", "")
        )
        code = 0
        for s in sylls:
            code = code * BASE + SYLLABLES.index(s)
        index = ((code - self._world._b) * self._inverse_a) % NAME_SPACE
        return self._world.value(index, attribute)

    def answer(self, prompt: str) -> str:
        """The reader's output for one prompt."""
        reading = read_prompt(prompt)
        choice = decide_one(self.params, reading, uniforms(self.reader_seed, prompt, len(reading.roles) + 2))
        known = self.knows(reading.entity)
        if choice >= 0:
            value = reading.values[choice]
        elif choice == DRAFT:
            value = reading.draft or ""
        elif known:
            value = self.true_value(reading.entity, reading.attribute)
        elif reading.kind == RGB:
            return RGB_REFUSAL
        else:  # a wrong guess: a near-miss of the true value (never contains it)
            value = self._near_guess(reading)
        return f"The answer is {value}." if reading.kind == RGB else f"Answer: {value}"

    def _near_guess(self, reading: Reading) -> str:
        true = self.true_value(reading.entity, reading.attribute)
        i = next(j for j, ch in enumerate(true.lower()) if ch in "aeiou")
        return (true[:i] + "y" + true[i + 1 :]).capitalize()

    # -- strategies and planted values -----------------------------------------------------------
    def check_strategies(self, strategies: Sequence[Any]) -> None:
        """Raise :class:`ConfigError` (one line) for a strategy whose prompts the reader cannot read.

        Called when a job builds its components, before any data or model loads.
        """
        for s in strategies:
            self._kinds[s.name] = strategy_kinds(s)

    def planted_scores(self, scores: Any, examples: Sequence[Any], corpus: Any) -> PlantedScores | None:
        """The planted score table of a finished job (:func:`planted_scores`; ``None``: none can be computed)."""
        return planted_scores(self, scores, examples, corpus)


def strategy_kinds(strategy: Any) -> dict[str, str]:
    """``{"k0": kind, "rag": kind}``: the prompt kinds of a strategy's closed-book and RAG cells.

    Raises:
        ConfigError: The strategy uses a template the reader cannot read (S2A's selection step,
            SURE's formats, a custom template), named in one line.
    """
    cls = type(strategy).__name__
    template = getattr(strategy, "template", None)
    templates = [template, getattr(strategy, "closed_book_template", None)]
    templates += [getattr(strategy, t, None) for t in ("select_template", "system_template")]
    readable = set(READABLE_TEMPLATES) | {"rgb_system.j2"}
    bad = [t for t in templates if t is not None and t not in readable]
    draft = getattr(strategy, "draft", "prediction")
    if bad or draft != "prediction":
        what = f"template {bad[0]}" if bad else f"draft={draft!r}"
        raise ConfigError(
            "generator",
            f"simulated reader cannot read strategy {strategy.name!r} ({cls}, {what}): it reads only "
            f"prompts of {', '.join(READABLE_TEMPLATES)} (vanilla, closed_book, ownknow, rgb); "
            "S2A's selection step and SURE's formats are not simulated",
        )
    rag = READABLE_TEMPLATES[template] if template is not None else CLOSED
    if getattr(strategy, "uses_retrieval", True) is False:
        rag = CLOSED
    k0 = RGB if rag == RGB else CLOSED
    return {"k0": k0, "rag": rag}


# ------------------------------------------------------------------------------ planted values

#: Columns of a planted score table (:func:`planted_scores`): the example, the system, the cell and
#: the perturbations, the metrics' groups; ``score`` and ``refused`` are the draws'.
PLANTED_COLUMNS = (
    "example_id",
    "generator",
    "strategy",
    "judge",
    "retriever",
    "k",
    "order",
    "query_perturbation",
    "doc_perturbation",
)

#: Most score rows x draws :func:`planted_scores` builds (the draws are capped to stay below).
MAX_PLANTED_ROWS = 2_000_000


def _doc_text(doc_id: str, example: Any, corpus: Any) -> str | None:
    """A document's text: the corpus passage, or a passage of the example's RGB pools
    (ids ``<example id>/pos/<i>`` and ``/neg/<i>``, as :func:`rr.perturbations.composition.pools_for`);
    ``None`` for any other id (a document a perturbation rewrote, e.g. RARE's ``<id>/del``, ``<id>/bt``:
    its text is not kept)."""
    if doc_id in corpus:
        return corpus[doc_id].text
    from rr.records import MetaKey

    parts = doc_id.rsplit("/", 2)
    if len(parts) != 3 or parts[0] != example.id or parts[1] not in ("pos", "neg") or not parts[2].isdigit():
        return None
    pool = example.meta.get(MetaKey.POSITIVE if parts[1] == "pos" else MetaKey.NEGATIVE) or []
    return pool[int(parts[2])] if int(parts[2]) < len(pool) else None


def planted_scores(
    gen: SimulatedGenerator, scores: Any, examples: Sequence[Any], corpus: Any
) -> PlantedScores | None:
    """The planted score table of a finished job: draws of the reader's randomness over the job's
    prompts (which documents each row showed, in which order).

    Monte Carlo over the reader alone: every distinct prompt of the score table (kind, question,
    documents) is read once (:func:`classify` on its documents) and decided ``R`` times with fresh
    uniforms, the entity's knowledge drawn per draw and shared by all prompts of the entity. Each
    draw is a copy of the score table with its scores; the copies, stacked as ``R`` times the
    examples, give the expectation of every metric that is a mean over examples (accuracy per
    cell, NDR, RSR, ROR), computed by the job's own metric step (:func:`rr.summary.job_metrics`).

    Returns:
        The stacked table (the score table's cell columns, ``example_id`` suffixed ``#<draw>``,
        ``score``, ``refused``) and ``R``; ``None`` when a row showed a document whose text is
        neither a corpus passage nor in its example's pools (a document perturbation that rewrites
        documents: RARE's, SURE's): the prompts cannot be read again, so the job has no planted values.
    """
    import pandas as pd

    params = gen.params
    by_id = {ex.id: ex for ex in examples}
    rows = len(scores)
    reps = max(1, min(gen.planted_reps, MAX_PLANTED_ROWS // max(rows, 1)))
    rng = np.random.default_rng(_seed_of("planted", gen.reader_seed))
    entities = sorted({(World.parse_question(ex.question) or ("", ""))[0] for ex in examples})
    known = rng.random((reps, len(entities))) < params.knowledge
    entity_col = {e: j for j, e in enumerate(entities)}

    prompt_of: dict[tuple, int] = {}
    outcomes: list[tuple[np.ndarray, np.ndarray]] = []
    row_prompt = np.empty(rows, dtype=np.int64)
    kinds = gen._kinds
    for i, (ex_id, strategy, k, doc_ids) in enumerate(
        zip(scores["example_id"], scores["strategy"], scores["k"], scores["doc_ids"], strict=True)
    ):
        ex = by_id[ex_id]
        kind = kinds.get(strategy, {"k0": CLOSED, "rag": RAG})["k0" if k == 0 else "rag"]
        key = (kind, ex.question, tuple(doc_ids))
        if key not in prompt_of:
            entity, attribute = World.parse_question(ex.question) or ("", "")
            texts = [_doc_text(d, ex, corpus) for d in doc_ids]
            if any(t is None for t in texts):
                return None
            found = [classify(t, entity, attribute) for t in texts if t is not None]
            reading = Reading(
                kind, entity, attribute, tuple(r for r, _ in found), tuple(v for _, v in found), "draft"
            )
            u = rng.random((reps, len(found) + 2))
            ent_known = known[:, entity_col[entity]]
            outcomes.append(outcome(reading, decide(params, reading, u), ent_known))
            prompt_of[key] = len(outcomes) - 1
        row_prompt[i] = prompt_of[key]
    correct = np.stack([c for c, _ in outcomes], axis=1)[:, row_prompt]  # (reps, rows)
    refused = np.stack([r for _, r in outcomes], axis=1)[:, row_prompt]

    # the columns a job's metrics group by (the system, the cell, the perturbations), not the texts
    cols = [c for c in PLANTED_COLUMNS if c in scores.columns]
    stacked = pd.concat([scores[cols].reset_index(drop=True)] * reps, ignore_index=True)
    stacked["example_id"] = (
        stacked["example_id"].astype(str) + "#" + np.repeat(np.arange(reps), rows).astype(str)
    )
    stacked["score"] = correct.reshape(-1).astype(float)
    stacked["refused"] = refused.reshape(-1)
    return PlantedScores(stacked, reps, "monte_carlo_over_reader", vars(params))


def noise_curve(params: ReaderParams, ratios: Iterable[float], n: int = 5) -> dict[float, float]:
    """RGB accuracy at each noise ratio, exactly, for contexts of ``n`` shuffled documents of which
    ``ceil(n * ratio)`` are answer-free and the rest state the answer (RGB's composition from
    the synthetic pools). Averages over every placement of the answer documents (equally likely
    after RGB's shuffle): accuracy = E[1 - prod(1 - w)] + knowledge * E[prod(1 - w)].
    """
    from itertools import combinations

    w = params.curve(n)
    out = {}
    for ratio in ratios:
        n_pos = n - math.ceil(n * ratio - 1e-9)
        missed = [float(np.prod(1 - w[list(c)])) for c in combinations(range(n), n_pos)]
        p_missed = sum(missed) / len(missed)
        out[float(ratio)] = 1 - p_missed + params.knowledge * p_missed
    return out
