"""The typo query perturbation: pinned outputs, determinism, word rate, stop words, RARE's variant."""

from __future__ import annotations

import numpy as np
import pytest

from rr.perturbations.typo import (
    WORD_RE,
    TypoPerturbation,
    english_stopwords,
    n_words_to_perturb,
    nlpaug_neighbours,
    typo_text,
)
from rr.records import Example

CANNES = Example("q1", "when does the cannes film festival take place", ["May"])
TOLSTOY = Example("q2", "Who wrote the novel War and Peace?", ["Leo Tolstoy"])

SENTENCES = [
    "when does the cannes film festival take place",
    "Who wrote the novel War and Peace?",
    "What is the population of the capital city of the country where the Eiffel Tower stands?",
    "In which year did the first human land on the Moon, and who was the commander of that mission?",
    "how many players are on a basketball team",
    "Which 2019 film won the Academy Award for Best Picture, beating 1917 and Joker?",
]


def test_stopword_list_is_nltk_english() -> None:
    words = english_stopwords()
    assert len(words) == 179
    assert {"the", "does", "when", "who", "and", "don't", "wouldn't", "ourselves"} <= words
    assert "festival" not in words


def test_nlpaug_neighbours_are_qwerty_letters() -> None:
    nb = nlpaug_neighbours()
    assert sorted(nb) == list("abcdefghijklmnopqrstuvwxyz")
    assert nb["a"] == ("q", "s", "w", "x", "z")
    assert nb["p"] == ("l", "o")
    assert all(c.isalpha() and c.islower() and c != k for k, v in nb.items() for c in v)


@pytest.mark.parametrize(
    ("n", "rate", "expected"),
    [(8, 0.1, 1), (8, 0.25, 2), (7, 0.25, 1), (20, 0.1, 2), (100, 0.29, 29), (3, 1.0, 3), (0, 0.5, 0)],
)
def test_word_count_rule(n: int, rate: float, expected: int) -> None:
    assert n_words_to_perturb(n, rate) == expected


def test_pinned_outputs_seed0() -> None:
    got = [
        (v.tag, v.example.question) for v in TypoPerturbation(rate=0.25, n=5).perturb([CANNES, TOLSTOY], 0)
    ]
    assert got == [
        ("none", "when does the cannes film festival take place"),
        ("none", "Who wrote the novel War and Peace?"),
        ("typo@0.25#1", "when does the canneq film festivao take place"),
        ("typo@0.25#2", "when does the cannew film festivai take place"),
        ("typo@0.25#3", "when does the cznnes film fesgival take place"),
        ("typo@0.25#4", "when does the cannfs filj festival take place"),
        ("typo@0.25#5", "when does the camnes film festivap take place"),
        ("typo@0.25#1", "Who wrote the nocel War and Peace?"),
        ("typo@0.25#2", "Who wrote the novel Aar and Peace?"),
        ("typo@0.25#3", "Who wrote the novel Wat and Peace?"),
        ("typo@0.25#4", "Who wrote the novel War and Peafe?"),
        ("typo@0.25#5", "Who wrkte the novel War and Peace?"),
    ]


def test_deterministic_per_example_and_seed() -> None:
    pert = TypoPerturbation(rate=0.1, n=5, include_original=False)
    a = pert.perturb([CANNES, TOLSTOY], 7)
    b = pert.perturb([TOLSTOY, CANNES], 7)  # other order, other batch: same variants per example
    assert sorted((v.example.id, v.tag, v.example.question) for v in a) == sorted(
        (v.example.id, v.tag, v.example.question) for v in b
    )
    c = pert.perturb([CANNES, TOLSTOY], 8)
    assert [v.example.question for v in a] != [v.example.question for v in c]
    assert all(v.example.id in {"q1", "q2"} and v.example.meta["original_question"] for v in a)


@pytest.mark.parametrize("rate", [0.1, 0.25, 0.5])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rate_and_stopwords(rate: float, seed: int) -> None:
    stop = english_stopwords()
    for s_i, text in enumerate(SENTENCES):
        rng = np.random.default_rng([seed, s_i])
        out, done, asked = typo_text(text, rate, rng)
        before, after = WORD_RE.findall(text), WORD_RE.findall(out)
        assert len(before) == len(after)
        changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
        eligible = [
            w for w in before if len(w) >= 2 and w.lower() not in stop and any(c.isalpha() for c in w)
        ]
        assert asked == n_words_to_perturb(len(before), rate)
        assert done == len(changed) == min(asked, len(eligible))
        for a, b in changed:
            assert a.lower() not in stop
            diffs = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
            assert len(diffs) == 1  # one character per word
            x, y = diffs[0]
            assert y.lower() in nlpaug_neighbours()[x.lower()] and x.isupper() == y.isupper()
        # everything outside the words (spaces, punctuation) is unchanged
        assert WORD_RE.sub("#", text) == WORD_RE.sub("#", out)


def test_no_eligible_word_is_counted_not_emitted() -> None:
    counts: dict[str, int] = {}
    ex = Example("s", "Who is he?", ["x"])  # only stop words (and 'he')
    out = TypoPerturbation(rate=0.5, n=3).perturb(
        [ex], 0, lambda k, n: counts.__setitem__(k, counts.get(k, 0) + n)
    )
    assert [v.tag for v in out] == ["none"]
    assert counts == {"typo:unchanged": 3}


def test_rate_capped_counted() -> None:
    counts: dict[str, int] = {}
    ex = Example("s", "what is the capital of France", ["Paris"])  # 6 words, 2 eligible
    out = TypoPerturbation(rate=1.0, n=1, include_original=False).perturb(
        [ex], 0, lambda k, n: counts.__setitem__(k, counts.get(k, 0) + n)
    )
    words = WORD_RE.findall(out[0].example.question)
    assert words[:3] == ["what", "is", "the"] and words[4] == "of"
    assert words[3] != "capital" and words[5] != "France"
    assert counts == {"typo:rate_capped": 1}


def test_rare_character_variant_selects_most_similar() -> None:
    pert = TypoPerturbation(rate=0.1, n=1, ops=["qwerty", "delete"], candidates=5, name="char")
    out = pert.perturb([CANNES], 0)
    assert [v.tag for v in out] == ["none", "char@0.1#1"]
    from rr.perturbations.selection import cosine_to_original

    cands = [pert.candidate(CANNES, i, 0)[0] for i in range(5)]
    sims = cosine_to_original([CANNES.question] * 5, cands, pert.embedder)
    assert out[1].example.question == cands[int(np.argmax(sims))]
    # deletions occur among RARE's candidates
    assert any(len(c) == len(CANNES.question) - 1 for c in cands)


def test_bad_options_fail_early() -> None:
    with pytest.raises(ValueError, match="rate"):
        TypoPerturbation(rate=0)
    with pytest.raises(ValueError, match="ops"):
        TypoPerturbation(ops=["swap"])
    with pytest.raises(ValueError, match="backend"):
        TypoPerturbation(backend="nlpaug2")
    with pytest.raises(ValueError, match="candidates"):
        TypoPerturbation(n=5, candidates=3)
    with pytest.raises(ValueError, match=r"ops \['embedding'\] need backend: textattack"):
        TypoPerturbation(ops=["embedding"])
