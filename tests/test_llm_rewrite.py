"""LLM query rewrites: verbatim Table 3 prompts, the variant parser on messy outputs, tagging and counting."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pytest

from rr.perturbations.llm_rewrite import LLMRewritePerturbation, parse_variants
from rr.prompts import render, template_source
from rr.records import Example, Generation, Request

_TAIL = (
    " Separate the output text samples by single \n between them. Do not output anything else and do not "
    "answer the question but only paraphrase it. Input text: {{ question }} Output:\n\n "
)
# Query-level paper (arXiv 2507.06956), Table 3; "\n" escapes of the Python string are newlines.
TABLE3 = {
    "query_redundancy.j2": "Paraphrase the input text {{ n }} times by inserting related redundant knowledge into "
    "the input text. Do not insert any information that will answer the question directly." + _TAIL,
    "query_formal.j2": "Paraphrase the input text {{ n }} times in a more formal tone." + _TAIL,
    "query_ambiguity.j2": "Paraphrase the text below {{ n }} times while making it unclear to answer by "
    "introducing ambiguity to the text." + _TAIL,
}
# Ours, from RARE App. C.1's description (RARE publishes no prompt for these).
RARE = {
    "query_grammar.j2": "Rewrite the question below {{ n }} times, changing only its grammar, punctuation or word "
    "order. Keep its meaning, every entity and every detail exactly the same. Separate the rewritten questions "
    "by a single new line. Do not output anything else and do not answer the question.\n"
    "Question: {{ question }}\nRewritten questions:\n",
    "query_irrelevant.j2": "Rewrite the question below {{ n }} times, each time inserting one domain-relevant "
    "detail that is irrelevant to the answer. Do not change what is asked and do not insert any information "
    "that answers the question. Separate the rewritten questions by a single new line. Do not output anything "
    "else and do not answer the question.\nQuestion: {{ question }}\nRewritten questions:\n",
}

Q = "when does the cannes film festival take place"


@pytest.mark.parametrize("name", sorted({**TABLE3, **RARE}))
def test_templates_pinned(name: str) -> None:
    assert template_source(name) == {**TABLE3, **RARE}[name]


def test_formal_prompt_renders_like_the_paper() -> None:
    out = render("query_formal.j2", n=5, question=Q)
    assert out == (
        "Paraphrase the input text 5 times in a more formal tone. Separate the output text samples by single \n"
        " between them. Do not output anything else and do not answer the question but only paraphrase it. "
        f"Input text: {Q} Output:\n\n "
    )


MESSY = """Here are 5 paraphrases of the input text:

1. When is the Cannes Film Festival set to be held?
2) "At what time of year does the Cannes Film Festival occur?"
(3) **When does the Cannes Film Festival take place?**
- When does the cannes film festival take place
Paraphrase 4: When might one attend the Cannes Film Festival?
2) "At what time of year does the Cannes Film Festival occur?"
• ‘What are the dates of the Cannes Film Festival?’
6. When is the festival in Cannes?
7. One too many?
I hope these help!
"""


def test_parser_on_messy_output() -> None:
    res = parse_variants(MESSY, Q, 5)
    assert res.variants == [
        "When is the Cannes Film Festival set to be held?",
        "At what time of year does the Cannes Film Festival occur?",
        "When might one attend the Cannes Film Festival?",
        "What are the dates of the Cannes Film Festival?",
        "When is the festival in Cannes?",
    ]
    assert res.dropped == {"chatter": 2, "same_as_original": 2, "duplicate": 1, "extra": 1}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("Sure! Here is the output:\n\n", []),
        (
            "Input text: when does the cannes film festival take place\nOutput:\n1. When is Cannes held?",
            ["When is Cannes held?"],
        ),
        ("1 - First one\n2 - Second one", ["First one", "Second one"]),
        ("`Single quoted?`", ["Single quoted?"]),
        ("1.\n2.\n", []),
    ],
)
def test_parser_cases(text: str, expected: list[str]) -> None:
    assert parse_variants(text, Q, 5).variants == expected


@dataclass
class FakeLLM:
    """Stands in for rr's LLM client: returns canned outputs, records requests."""

    outputs: list[str]
    requests: list[Request] = field(default_factory=list)

    def generate(self, requests: list[Request], step: str = "") -> list[Generation]:
        self.requests += requests
        return [Generation(t, key=str(i)) for i, t in enumerate(self.outputs)]


@dataclass
class FakeRuntime:
    llm: FakeLLM
    seed: int = 0
    counters: Counter = field(default_factory=Counter)

    def llm_for(self, generator: object = None) -> FakeLLM:
        assert generator is None
        return self.llm

    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] += n


def test_variants_tags_prompt_and_counts() -> None:
    exs = [Example("q1", Q, ["May"]), Example("q2", "Who wrote War and Peace?", ["Tolstoy"])]
    rt = FakeRuntime(FakeLLM([MESSY, "Here you go:\nWho was the author of War and Peace?\n"]))
    out = LLMRewritePerturbation(kind="formal").variants(exs, rt)  # type: ignore[arg-type]
    assert [v.tag for v in out] == [
        "none",
        "none",
        "formal#1",
        "formal#2",
        "formal#3",
        "formal#4",
        "formal#5",
        "formal#1",
    ]
    assert out[-1].example.question == "Who was the author of War and Peace?" and out[-1].example.id == "q2"
    assert out[2].example.meta["original_question"] == Q
    assert rt.llm.requests[0].messages == (("user", render("query_formal.j2", n=5, question=Q)),)
    assert rt.llm.requests[0].params.max_new_tokens == 512 and rt.llm.requests[0].params.temperature == 0.0
    assert dict(rt.counters) == {
        "formal:chatter": 3,
        "formal:same_as_original": 2,
        "formal:duplicate": 1,
        "formal:extra": 1,
        "formal:missing_variants": 4,
    }


def test_rare_kind_keeps_most_similar_candidate() -> None:
    exs = [Example("q1", Q, ["May"])]
    text = (
        "1. When does the famous Cannes film festival, held on the French Riviera, take place?\n"
        "2. Cannes film festival: when does it take place?\n"
        "3. What year was the first Olympic Games held in Athens?\n"
    )
    rt = FakeRuntime(FakeLLM([text]))
    pert = LLMRewritePerturbation(kind="grammar")
    assert (pert.n, pert.candidates) == (1, 3)
    out = pert.variants(exs, rt)  # type: ignore[arg-type]
    assert [(v.tag, v.example.question) for v in out] == [
        ("none", Q),
        ("grammar#1", "Cannes film festival: when does it take place?"),
    ]


def test_bad_kind_fails() -> None:
    with pytest.raises(ValueError, match="kind"):
        LLMRewritePerturbation(kind="slang")
    with pytest.raises(ValueError, match="n <= candidates"):
        LLMRewritePerturbation(kind="formal", n=5, candidates=3)
