"""Records passed between the stages of a job.

These are the data contracts of ``rr`` (see docs/design.md): every stage takes and returns
lists of these, so any backend can batch. All records are frozen dataclasses; lists
inside them are never mutated after construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final


class MetaKey:
    """The keys components pass to each other through :attr:`Example.meta`, with their value types.

    A dataset loader sets them; retrievers, qrels, perturbations and analyses read them. Use these
    names, not string literals, so a reader and a writer cannot drift apart. Any other key is free-form
    (e.g. the jsonl loader copies every extra field of a row).
    """

    #: ``list[str]``: ids of the passages that answer the question (qrels, the oracle retriever).
    GOLD_IDS: Final = "gold_ids"
    #: ``list[str]``: titles of the evidence pages; every corpus passage with such a title is gold.
    GOLD_TITLES: Final = "gold_titles"
    #: ``str``: where the example came from (dataset, split).
    SOURCE: Final = "source"
    #: ``str``: the question this one was decomposed from (the mini multi-hop variant).
    PARENT_ID: Final = "parent_id"
    #: ``str``: the unperturbed question of a query variant (set by query perturbations).
    ORIGINAL_QUESTION: Final = "original_question"
    #: ``str``: the language of the question and answers (``zh`` for RGB's Chinese files; judges may use it).
    LANGUAGE: Final = "language"
    #: ``list[str]``: answer-bearing passages (RGB's positive pool).
    POSITIVE: Final = "positive_passages"
    #: ``list[list[str]]``: answer-bearing passages per answer group (RGB information integration).
    POSITIVE_GROUPS: Final = "positive_groups"
    #: ``list[str]``: relevant passages without the answer (RGB's negative pool).
    NEGATIVE: Final = "negative_passages"
    #: ``list[str]``: the positive passages with the answer replaced by ``FAKE_ANSWER`` (RGB counterfactual).
    COUNTERFACTUAL: Final = "counterfactual_passages"
    #: ``str``: the wrong answer written into the counterfactual passages.
    FAKE_ANSWER: Final = "fake_answer"


@dataclass(frozen=True)
class Example:
    """One question of a dataset.

    Attributes:
        id: Stable id, unique within the dataset. A perturbed query keeps its example's id.
        question: The question text shown to the model (and used as the retrieval query).
        answers: Gold answer strings; any one of them is a correct answer (NQ-style).
        answer_groups: ASQA-style answers: a list of groups, each a list of alternatives.
            A prediction covers a group when it matches any alternative of it. ``None``
            for single-answer datasets.
        meta: Extra fields; the keys components share are named in :class:`MetaKey`
            (``gold_titles``: titles of the evidence passages, ``source``: dataset and split, ...).
    """

    id: str
    question: str
    answers: list[str]
    answer_groups: list[list[str]] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Passage:
    """One retrievable document of a corpus.

    Attributes:
        id: Corpus-unique id (the docid of TREC run files).
        text: The passage body.
        title: Title of the source article ("" when unknown).
    """

    id: str
    text: str
    title: str = ""


@dataclass(frozen=True)
class Hit:
    """One retrieved passage for one query.

    Attributes:
        passage_id: Id of the :class:`Passage`.
        rank: 1-based rank in the retriever's ranking (1 = most relevant).
        score: The retriever's score (higher = more relevant; scale is retriever-specific).
    """

    passage_id: str
    rank: int
    score: float


@dataclass(frozen=True)
class GenerationParams:
    """Decoding parameters; every field is part of the generation cache key.

    Defaults follow Cao et al. (2025), Appendix B: greedy decoding, at most 100 new tokens.
    ``seed`` only matters (and is only keyed) when ``temperature > 0``.
    """

    max_new_tokens: int = 100
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def key_fields(self) -> dict[str, Any]:
        """The fields that determine the output (the seed only for sampled calls)."""
        out: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "stop": list(self.stop),
        }
        if not self.greedy:
            out.update(top_p=self.top_p, seed=self.seed)
        return out


@dataclass(frozen=True)
class Request:
    """One model call, before the backend's chat template is applied.

    Attributes:
        messages: Chat messages (``[{"role": "user", "content": ...}]``). The backend
            renders them with the model's chat template.
        params: Decoding parameters.
        raw_prompt: When set, sent as-is (no chat template); ``messages`` is ignored.
    """

    messages: tuple[tuple[str, str], ...]
    params: GenerationParams = GenerationParams()
    raw_prompt: str | None = None

    @classmethod
    def user(cls, content: str, params: GenerationParams | None = None) -> Request:
        """A single-turn request with one user message."""
        return cls(messages=(("user", content),), params=params or GenerationParams())

    def chat(self) -> list[dict[str, str]]:
        """Messages in the ``[{"role", "content"}]`` form chat templates expect."""
        return [{"role": r, "content": c} for r, c in self.messages]


@dataclass(frozen=True)
class Generation:
    """A model's output for one :class:`Request`.

    Attributes:
        text: The generated continuation (special tokens removed).
        key: The cache key of the request (hex sha256).
        prompt_tokens: Tokens in the rendered prompt.
        completion_tokens: Tokens generated.
        cached: Whether this came from the generation cache rather than a model call.
        over_window: The prompt plus ``max_new_tokens`` did not fit the model's context window:
            it was not sent, and ``text`` is empty (see :meth:`rr.generation.client.LLM.generate`).
        prompt: The prompt exactly as rendered for the backend (chat template applied); the one
            sent, or the one that would have been (``over_window``).
    """

    text: str
    key: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False
    over_window: bool = False
    prompt: str = ""


@dataclass(frozen=True)
class Judgment:
    """A judge's verdict on one prediction.

    Attributes:
        score: Correctness in [0, 1] (1/0 for single-answer data, fraction of answer
            groups covered for ASQA-style data).
        judge: Name of the judge that produced ``score``.
        refused: Whether the output is a refusal.
        extra: Further per-row columns (e.g. ``em``, ``f1``), added to the score table.
    """

    score: float
    judge: str
    refused: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
