"""A synthetic task with a known answer key: questions about made-up entities and a corpus of any size.

The *world* is fixed by a seed. Entity ``i`` (``0 <= i < 32**5``) has a made-up name of two words
(``Velkaron Tuspadrim``: a first name of two syllables, a last name of three) and one value per
attribute (made-up words of three syllables). Names are a bijection of the index (an affine map
modulo ``32**5`` seeded by the world seed, then base-32 digits as syllables), so two entities never
share a name. Every attribute has one question and one statement template:

=========== ============================================== ==================================================
attribute   question                                       statement (``E`` entity, ``V`` value)
=========== ============================================== ==================================================
born        ``Where was E born?``                          ``E was born in V.``
founded     ``Which company did E found?``                 ``E founded the company V.``
novel       ``What is the title of E's first novel?``      ``The first novel by E is titled V.``
river       ``Which river runs past the home town of E?``  ``The river V runs past the home town of E.``
=========== ============================================== ==================================================

Question ``i`` (``SyntheticDataset``) asks entity ``i`` about one attribute (drawn with the seed);
its answer-bearing passage states it. The corpus (``SyntheticCorpus``) holds, for each of its
``entities`` question entities, the answer-bearing passage plus configurable distractors, then
unrelated passages about other entities up to ``max_passages`` in all:

* **same entity, other attribute** (``same_entity``, 0-3): the entity's other statements; they share
  the entity's name with the question, so retrievers rank them high, but answer nothing.
* **near-miss** (``near_miss``, 0-5): a *near-miss entity* (one vowel of the name replaced by
  ``y``, e.g. ``Velkaryn``) stating the asked attribute with a *near-miss value* (likewise, e.g.
  ``Quilmorvyn`` for ``Quilmorven``). No real name or value contains a ``y``, so a near-miss is never
  a real entity and its value never contains the gold answer (the match judge's substring test).
* **unrelated**: statements about other entities (indexes from ``entities`` on).

Passages have no title (the text names the entity), so each is one line in every prompt format.
Generation is per passage and streaming (O(1) memory per passage, about 2 microseconds each here),
so a corpus of millions of passages is cheap. :class:`World` also *reads* statements back
(:meth:`World.read`), which is what the simulated reader (:mod:`rr.generation.simulated`) does.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from rr.data.base import Corpus
from rr.errors import ConfigError, require_non_negative, require_positive
from rr.records import Example, MetaKey, Passage
from rr.registry import component

#: Syllables of real names and values (no ``y``: a ``y`` marks a near-miss).
SYLLABLES = (
    "ka",
    "lo",
    "vre",
    "mi",
    "dor",
    "tha",
    "bre",
    "zun",
    "qui",
    "mor",
    "ven",
    "tas",
    "ril",
    "gan",
    "sho",
    "pel",
    "dru",
    "fen",
    "win",
    "ost",
    "bar",
    "cel",
    "nim",
    "rok",
    "sal",
    "tev",
    "ush",
    "jor",
    "zel",
    "hap",
    "lum",
    "dar",
)
BASE = len(SYLLABLES)  # 32
NAME_SYLLABLES = 5  # first name 2 + last name 3
NAME_SPACE = BASE**NAME_SYLLABLES
VALUE_SYLLABLES = 3

#: attribute -> (question, statement); ``{e}`` entity, ``{v}`` value.
ATTRIBUTES: dict[str, tuple[str, str]] = {
    "born": ("Where was {e} born?", "{e} was born in {v}."),
    "founded": ("Which company did {e} found?", "{e} founded the company {v}."),
    "novel": ("What is the title of {e}'s first novel?", "The first novel by {e} is titled {v}."),
    "river": ("Which river runs past the home town of {e}?", "The river {v} runs past the home town of {e}."),
}
ATTRIBUTE_NAMES = tuple(ATTRIBUTES)
_NAME = r"[A-Z][a-z]+ [A-Z][a-z]+"
_WORD = r"[A-Z][a-z]+"


def _pattern(template: str, anchored: bool) -> re.Pattern[str]:
    body = re.escape(template).replace(r"\{e\}", f"(?P<e>{_NAME})").replace(r"\{v\}", f"(?P<v>{_WORD})")
    return re.compile(f"^{body}$" if anchored else body)


QUESTION_PATTERNS = {a: _pattern(q, True) for a, (q, _) in ATTRIBUTES.items()}
STATEMENT_PATTERNS = {a: _pattern(s, False) for a, (_, s) in ATTRIBUTES.items()}
_FILLERS = (
    "Local records mention this more than once.",
    "The archives of the district keep a note of it.",
    "Several regional chronicles repeat the fact.",
    "It is told in the family's own letters.",
    "A short entry in an old almanac says the same.",
)


def _u64(*parts: object) -> int:
    """A 64-bit integer hash of ``parts`` (stable across processes and machines)."""
    data = "\x1f".join(map(str, parts)).encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def _syllables(n: int, count: int) -> list[str]:
    out = []
    for _ in range(count):
        n, d = divmod(n, BASE)
        out.append(SYLLABLES[d])
    return out[::-1]


def _word(sylls: list[str]) -> str:
    return "".join(sylls).capitalize()


def _near(sylls: list[str], which: int) -> list[str]:
    """``sylls`` with the vowel of syllable ``which`` (counted from the end) replaced by ``y``."""
    out = list(sylls)
    i = len(out) - 1 - which % len(out)
    s = out[i]
    j = max(k for k, ch in enumerate(s) if ch in "aeiou")
    out[i] = s[:j] + "y" + s[j + 1 :]
    return out


@dataclass(frozen=True)
class Statement:
    """A statement found in a text: who, which attribute, what value, and where (character offset)."""

    entity: str
    attribute: str
    value: str
    offset: int


class World:
    """The made-up entities of one seed: names, attribute values, questions and passages.

    Args:
        seed: The world seed (entity names, values and question attributes follow from it).
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = int(seed)
        h = _u64("world", self.seed)
        self._a = (h | 1) % NAME_SPACE  # odd: a bijection modulo 32**5 (a power of two)
        self._b = (h >> 25) % NAME_SPACE

    # -- names and values --------------------------------------------------------------------
    def _name_sylls(self, i: int) -> list[str]:
        if not 0 <= i < NAME_SPACE:
            raise ValueError(f"entity index {i} outside [0, {NAME_SPACE})")
        return _syllables((self._a * i + self._b) % NAME_SPACE, NAME_SYLLABLES)

    @staticmethod
    def _join_name(s: list[str]) -> str:
        return f"{_word(s[:2])} {_word(s[2:])}"

    def name(self, i: int) -> str:
        """The name of entity ``i`` (unique per index)."""
        return self._join_name(self._name_sylls(i))

    def near_name(self, i: int, j: int) -> str:
        """The ``j``-th near-miss name of entity ``i`` (a vowel replaced by ``y``)."""
        return self._join_name(_near(self._name_sylls(i), j))

    def _value_sylls(self, i: int, attribute: str) -> list[str]:
        return _syllables(_u64("value", self.seed, i, attribute) % BASE**VALUE_SYLLABLES, VALUE_SYLLABLES)

    def value(self, i: int, attribute: str) -> str:
        """Entity ``i``'s value of ``attribute``."""
        return _word(self._value_sylls(i, attribute))

    def near_value(self, i: int, attribute: str, j: int) -> str:
        """The ``j``-th near-miss of :meth:`value` (never contains the value itself)."""
        return _word(_near(self._value_sylls(i, attribute), j))

    def asked(self, i: int) -> str:
        """The attribute question ``i`` asks about entity ``i``."""
        return ATTRIBUTE_NAMES[_u64("asked", self.seed, i) % len(ATTRIBUTE_NAMES)]

    # -- texts -------------------------------------------------------------------------------
    @staticmethod
    def question(entity: str, attribute: str) -> str:
        return ATTRIBUTES[attribute][0].format(e=entity)

    @staticmethod
    def statement(entity: str, attribute: str, value: str, filler: int = 0) -> str:
        """A passage text: the statement, then a filler sentence (``filler`` picks which)."""
        return f"{ATTRIBUTES[attribute][1].format(e=entity, v=value)} {_FILLERS[filler % len(_FILLERS)]}"

    def other_attributes(self, i: int) -> list[str]:
        """Entity ``i``'s attributes other than the asked one, in a fixed order."""
        a = ATTRIBUTE_NAMES.index(self.asked(i))
        return [ATTRIBUTE_NAMES[(a + j) % len(ATTRIBUTE_NAMES)] for j in range(1, len(ATTRIBUTE_NAMES))]

    # -- reading -----------------------------------------------------------------------------
    @staticmethod
    def parse_question(text: str) -> tuple[str, str] | None:
        """``(entity, attribute)`` of a synthetic question, or ``None`` if ``text`` is not one."""
        text = text.strip()
        for attribute, pattern in QUESTION_PATTERNS.items():
            m = pattern.match(text)
            if m:
                return m["e"], attribute
        return None

    @staticmethod
    def read(text: str, attribute: str) -> list[Statement]:
        """Every statement of ``attribute`` in ``text``, in text order."""
        return [
            Statement(m["e"], attribute, m["v"], m.start())
            for m in STATEMENT_PATTERNS[attribute].finditer(text)
        ]


def is_near_miss(name: str, entity: str) -> bool:
    """Whether ``name`` is a near-miss of ``entity``: same length, differing only where it has ``y``."""
    if len(name) != len(entity) or name == entity:
        return False
    return all(a == b or a == "y" for a, b in zip(name.lower(), entity.lower(), strict=True))


@lru_cache(maxsize=8)
def world(seed: int) -> World:
    return World(seed)


@component("dataset", "synthetic")
class SyntheticDataset:
    """``n`` questions about the made-up entities ``0 .. n-1`` of the world of ``seed``
    (see the module docstring); each example's answer is its entity's value of the asked attribute.

    Each example also carries RGB passage pools in ``meta`` (``perturbation/doc=noise_ratio``
    composes contexts from them): ``positives`` answer-bearing passages (the statement with
    different filler sentences) and ``negatives`` answer-free ones (the entity's other attributes,
    then statements about unrelated entities).

    Args:
        n: Number of questions (entities ``0 .. n-1``).
        seed: World seed; use the same in ``corpus=synthetic``.
        positives: Size of the positive pool per example.
        negatives: Size of the negative pool per example.
    """

    name = "synthetic"

    def __init__(self, n: int = 100, seed: int = 0, positives: int = 5, negatives: int = 5) -> None:
        require_positive("n", n)
        require_non_negative("positives", positives)
        require_non_negative("negatives", negatives)
        if n > NAME_SPACE // 2:
            raise ConfigError("n", f"at most {NAME_SPACE // 2} questions, got {n}")
        self.n = int(n)
        self.seed = int(seed)
        self.positives = positives
        self.negatives = negatives

    def fingerprint(self) -> dict:
        return {
            "name": self.name,
            "n": self.n,
            "seed": self.seed,
            "positives": self.positives,
            "negatives": self.negatives,
        }

    def example(self, i: int) -> Example:
        """Question ``i``."""
        w = world(self.seed)
        entity, attribute = w.name(i), w.asked(i)
        value = w.value(i, attribute)
        others = w.other_attributes(i)
        negatives = [w.statement(entity, a, w.value(i, a), j) for j, a in enumerate(others)]
        j = 0
        while len(negatives) < self.negatives:  # unrelated entities, far from any question's index
            other = NAME_SPACE // 2 + (_u64("negative", self.seed, i, j) % (NAME_SPACE // 2))
            a = ATTRIBUTE_NAMES[j % len(ATTRIBUTE_NAMES)]
            negatives.append(w.statement(w.name(other), a, w.value(other, a), j))
            j += 1
        return Example(
            id=f"syn-{i}",
            question=w.question(entity, attribute),
            answers=[value],
            meta={
                MetaKey.GOLD_IDS: [gold_id(i, attribute)],
                MetaKey.SOURCE: f"synthetic:seed{self.seed}",
                "entity": entity,
                "attribute": attribute,
                MetaKey.POSITIVE: [w.statement(entity, attribute, value, f) for f in range(self.positives)],
                MetaKey.NEGATIVE: negatives[: self.negatives],
            },
        )

    def load(self) -> list[Example]:
        return [self.example(i) for i in range(self.n)]


def gold_id(i: int, attribute: str) -> str:
    """Corpus id of entity ``i``'s passage about ``attribute``."""
    return f"syn-{i}-{attribute}"


@component("corpus", "synthetic")
class SyntheticCorpus:
    """The passages of the world of ``seed`` (see the module docstring), generated on the fly.

    Args:
        entities: Question entities covered (``0 .. entities-1``); at least ``dataset.n``.
        max_passages: The corpus size, passages in all (``None``: only those of the question
            entities); the rest are unrelated statements about entities ``entities ..``. Named as the
            other corpora's sample size, so experiments that set it (``cao2025_mini``) compose.
        same_entity: Distractors per question entity stating its other attributes (0-3).
        near_miss: Near-miss distractors per question entity (0-5): a near-miss name stating the
            asked attribute with a near-miss value.
        seed: World seed (same as the dataset's).
        name: Corpus name in cache keys and file names.
    """

    def __init__(
        self,
        entities: int = 100,
        max_passages: int | None = None,
        same_entity: int = 2,
        near_miss: int = 1,
        seed: int = 0,
        name: str = "synthetic",
    ) -> None:
        require_positive("entities", entities)
        require_positive("max_passages", max_passages, optional=True)
        if not 0 <= same_entity <= len(ATTRIBUTE_NAMES) - 1:
            raise ConfigError("same_entity", f"must be in [0, {len(ATTRIBUTE_NAMES) - 1}], got {same_entity}")
        if not 0 <= near_miss <= NAME_SYLLABLES:
            raise ConfigError("near_miss", f"must be in [0, {NAME_SYLLABLES}], got {near_miss}")
        per_entity = 1 + same_entity + near_miss
        if max_passages is not None and max_passages < entities * per_entity:
            raise ConfigError(
                "max_passages",
                f"{max_passages} is fewer than the {entities * per_entity} passages of {entities} question "
                f"entities ({per_entity} each: 1 answer + {same_entity} same-entity + {near_miss} near-miss)",
            )
        if entities + (max_passages or 0) > NAME_SPACE // 2:
            raise ConfigError("max_passages", f"entities + max_passages must stay below {NAME_SPACE // 2}")
        self.entities = int(entities)
        self.max_passages = max_passages
        self.same_entity = same_entity
        self.near_miss = near_miss
        self.seed = int(seed)
        self.name = name

    def stream(self) -> Iterator[Passage]:
        """Every passage, in corpus order: each question entity's answer, same-entity and near-miss
        passages, then the unrelated ones."""
        w = world(self.seed)
        for i in range(self.entities):
            entity, asked = w.name(i), w.asked(i)
            yield Passage(gold_id(i, asked), w.statement(entity, asked, w.value(i, asked), i))
            for a in w.other_attributes(i)[: self.same_entity]:
                yield Passage(gold_id(i, a), w.statement(entity, a, w.value(i, a), i + 1))
            for j in range(self.near_miss):
                yield Passage(
                    f"syn-{i}-near{j}",
                    w.statement(w.near_name(i, j), asked, w.near_value(i, asked, j), i + 2 + j),
                )
        n_done = self.entities * (1 + self.same_entity + self.near_miss)
        for f in range((self.max_passages or n_done) - n_done):
            e = self.entities + f
            a = ATTRIBUTE_NAMES[_u64("filler", self.seed, f) % len(ATTRIBUTE_NAMES)]
            yield Passage(f"syn-f{f}", w.statement(w.name(e), a, w.value(e, a), f))

    def load(self) -> Corpus:
        source = (
            f"synthetic:seed{self.seed}:entities{self.entities}:passages{self.max_passages}:"
            f"same{self.same_entity}:near{self.near_miss}"
        )
        return Corpus(self.stream(), name=self.name, source=source)
