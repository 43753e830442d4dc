"""The ``textattack`` typo backend: TextAttack's own ``Augmenter`` run in TextAttack's environment.

These tests run the real TextAttack 0.3.11 in ``.venv-textattack`` (``make textattack``; ``make
test`` creates it and sets ``RR_REQUIRE_TEXTATTACK=1``, so there they fail instead of skipping
when it is missing). Each call of :func:`textattack_typos` is one child process (~10 s: TextAttack
imports torch and transformers), so the module starts three: two that answer the query-level
paper's and RARE's character-level recipes for both queries, in two orders (the second also RARE's
word level, on stand-in embeddings), and one that is refused a download. The tests of
``TypoPerturbation.perturb`` are served those children's answers for exactly the items they ask
for (:func:`served`).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rr.perturbations import typo
from rr.perturbations.typo import (
    TEXTATTACK_WORKER,
    WORD_RE,
    TextAttackUnavailable,
    TypoPerturbation,
    english_stopwords,
    n_words_to_perturb,
    textattack_python,
    textattack_typos,
    variant_seed,
)
from rr.records import Example

CANNES = Example("q1", "when does the cannes film festival take place", ["May"])
TOLSTOY = Example("q2", "Who wrote the novel War and Peace?", ["Leo Tolstoy"])

#: The query-level study's recipes (QWERTY at 10 % and 25 % of words, 5 variants) and RARE's
#: character noise (QWERTY swap or character deletion, 10 %, 5 candidates), as TypoPerturbations.
RECIPES = {
    "qwerty@0.1": TypoPerturbation(rate=0.1, n=5, backend="textattack", include_original=False),
    "qwerty@0.25": TypoPerturbation(rate=0.25, n=5, backend="textattack", include_original=False),
    "rare_char": TypoPerturbation(
        rate=0.1, n=1, ops=["qwerty", "delete"], candidates=5, backend="textattack", name="char"
    ),
}
#: RARE's word-level recipe (WordSwapEmbedding) at 10 %, run on :func:`_fake_counterfitted`'s
#: two-word embeddings ('film' <-> 'movie').
WORD = TypoPerturbation(
    rate=0.1, n=1, ops=["embedding"], backend="textattack", include_original=False, name="word"
)

#: TextAttack 0.3.11's outputs for seed 0, pinned (computed once; any change in TextAttack, in the
#: seeding or in the recipe shows here).
PINNED = {
    "qwerty@0.1": [
        [
            "when does the camnes film festival take place",
            "when does the cannes film festival taks place",
            "when does the cannes film festival takw place",
            "when does the cannes film festival takf place",
            "when does the cannes film fewtival take place",
        ],
        [
            "Who wrotf the novel War and Peace?",
            "Who wrote the novel Wqr and Peace?",
            "Who wrote the novel War and Pezce?",
            "Who wrote the novel Wae and Peace?",
            "Who wrlte the novel War and Peace?",
        ],
    ],
    "qwerty@0.25": [
        [
            "when does the cannes cilm festival tzke place",
            "when does the cannes film festival twke plafe",
            "when does the canhes film festival tame place",
            "when does the cannes film festival takd piace",
            "when does the cannes film festifal take placw",
        ],
        [
            "Who wrote the novel War and Peaxe?",
            "Who wrots the novel War and Peace?",
            "Who wrote the novel Qar and Peace?",
            "Who wrote the nogel War and Peace?",
            "Who wrote the novel Wqr and Peace?",
        ],
    ],
    "rare_char": [
        [
            "when does the cannes fil festival take place",
            "when does the cannfs film festival take place",
            "when does the cannes fil festival take place",
            "when does the cannes fulm festival take place",
            "when does the cannes fipm festival take place",
        ],
        [
            "Who wrote the novel War and eace?",
            "Who rote the novel War and Peace?",
            "Who wrotd the novel War and Peace?",
            "Who wrote the novel War and Pwace?",
            "Who wrote the novel Wa and Peace?",
        ],
    ],
}


@pytest.fixture(scope="module")
def textattack_env() -> Path:
    """TextAttack's Python; skips without it, fails under ``make test`` (``RR_REQUIRE_TEXTATTACK=1``)."""
    try:
        return textattack_python()
    except TextAttackUnavailable as e:
        if os.environ.get("RR_REQUIRE_TEXTATTACK"):
            pytest.fail(str(e))
        pytest.skip(str(e))


Item = tuple[str, float, tuple[str, ...], int]


def _items(perts: Sequence[TypoPerturbation]) -> list[Item]:
    """Every candidate of CANNES and TOLSTOY under each of ``perts``, as ``textattack_typos`` items
    (what ``perturb`` asks for with seed 0), recipe by recipe."""
    return [
        (ex.question, p.rate, p.ops, variant_seed(0, p.name, p.rate, p.ops, ex.id, i))
        for p in perts
        for ex in (CANNES, TOLSTOY)
        for i in range(p.candidates)
    ]


def _by_recipe(outputs: list[str | None], order: list[str]) -> dict[str, list[list[str | None]]]:
    it = iter(outputs)
    return {
        key: [[next(it) for _ in range(RECIPES[key].candidates)] for _ in (CANNES, TOLSTOY)] for key in order
    }


def _fake_counterfitted(cache: Path, vocab: list[str], neighbours: list[list[int]]) -> None:
    """A tiny stand-in for TextAttack's counter-fitted embeddings (its real files are a 65k-word
    download no package ships), in TextAttack's own layout and formats."""
    folder = cache / "word_embeddings" / "paragramcf"
    folder.mkdir(parents=True)
    np.save(folder / "paragram.npy", np.eye(len(vocab), dtype=np.float32))
    with open(folder / "wordlist.pickle", "wb") as f:
        pickle.dump({w: i for i, w in enumerate(vocab)}, f)
    np.save(folder / "nn.npy", np.array(neighbours))
    for name in ("mse_dist.p", "cos_sim.p"):
        with open(folder / name, "wb") as f:
            pickle.dump({}, f)


@pytest.fixture(scope="module")
def children(textattack_env: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The module's two TextAttack children (``textattack_typos`` calls).

    ``first``: every RECIPES item in order, with a fresh ``TA_CACHE_DIR`` (``first_cache``; this
    process's environment is recorded before and after, ``env_before`` / ``env_after``).
    ``second``: the items in reverse recipe order, then WORD's, with ``TA_CACHE_DIR`` holding the
    fake counter-fitted embeddings ('film' <-> 'movie' only).
    """
    root = tmp_path_factory.mktemp("textattack")
    first_cache, embeddings = root / "ta_cache", root / "embeddings"
    _fake_counterfitted(embeddings, ["film", "movie"], [[0, 1], [1, 0]])
    out: dict[str, Any] = {"first_cache": first_cache}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TA_CACHE_DIR", str(first_cache))
        out["env_before"] = dict(os.environ)
        out["first"] = textattack_typos(_items(list(RECIPES.values())))
        out["env_after"] = dict(os.environ)
        mp.setenv("TA_CACHE_DIR", str(embeddings))
        second = _items([*list(RECIPES.values())[::-1], WORD])
        out["second"] = textattack_typos(second)
    out["answers"] = dict(zip(second, out["second"]["outputs"], strict=True))
    return out


def served(answers: dict[Item, str | None], calls: list[list[Item]]) -> Callable[..., dict[str, Any]]:
    """A ``textattack_typos`` that answers from a real child's ``answers`` (failing on an item it
    did not answer) and records each call's items."""

    def textattack_typos(items: Sequence[tuple[str, float, Sequence[str], int]]) -> dict[str, Any]:
        asked = [(t, float(r), tuple(o), int(s)) for t, r, o, s in items]
        calls.append(asked)
        missing = [item for item in asked if item not in answers]
        assert not missing, f"items no TextAttack child answered: {missing}"
        return {
            "outputs": [answers[item] for item in asked],
            "textattack": "0.3.11",
            "nltk_download_attempts": 0,
        }

    return textattack_typos


def test_recipes_pinned_reproducible_across_processes_and_isolated(children: dict[str, Any]) -> None:
    """Two child processes, the second with the items in reverse recipe order (and WORD's after
    them), give the pinned outputs; the first runs with a fresh ``TA_CACHE_DIR`` (TextAttack then
    rewrites HF_HOME and XDG_CACHE_HOME and sets TOKENIZERS_PARALLELISM, in the child only) and
    makes no NLTK download."""
    order = list(RECIPES)
    first, second = children["first"], children["second"]
    assert children["env_after"] == children["env_before"]  # nothing TextAttack did reached this process
    assert first["textattack"] == second["textattack"] == "0.3.11"
    assert first["nltk_download_attempts"] == 0
    assert (children["first_cache"] / "post_install_check_3").is_file()
    assert _by_recipe(first["outputs"], order) == PINNED
    assert _by_recipe(second["outputs"], order[::-1]) == PINNED


def test_pinned_outputs_follow_the_papers_rule() -> None:
    """The pinned QWERTY variants perturb max(1, floor(rate * words)) words, never a stop word;
    RARE's candidates hold one edited word each (a neighbour swap or a deletion)."""
    stop = english_stopwords()
    for key, per_example in PINNED.items():
        rate = RECIPES[key].rate
        for ex, variants in zip((CANNES, TOLSTOY), per_example, strict=True):
            before = WORD_RE.findall(ex.question)
            for v in variants:
                after = WORD_RE.findall(v)
                changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
                assert len(changed) == n_words_to_perturb(len(before), rate), (key, v)
                assert not any(a.lower() in stop for a, _ in changed)
                if key == "rare_char":
                    assert all(len(b) in (len(a), len(a) - 1) for a, b in changed)


def test_typo_perturbation_uses_textattack_in_one_batch(
    children: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through TypoPerturbation.perturb, one batch answered by TextAttack: the tags and the texts are
    the pinned candidates."""
    calls: list[list[Item]] = []
    monkeypatch.setattr(typo, "textattack_typos", served(children["answers"], calls))
    variants = RECIPES["qwerty@0.25"].perturb([CANNES, TOLSTOY], 0)
    assert calls == [_items([RECIPES["qwerty@0.25"]])]
    assert [v.tag for v in variants[:5]] == [f"typo@0.25#{i}" for i in range(1, 6)]
    assert [v.example.question for v in variants] == PINNED["qwerty@0.25"][0] + PINNED["qwerty@0.25"][1]


def test_rare_word_level_recipe_runs_on_the_users_embeddings(
    children: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """WordSwapEmbedding(max_candidates=50) reads $TA_CACHE_DIR/word_embeddings/paragramcf: with only
    'film' -> 'movie' known (the second child's cache), the 10 % recipe can swap only that word,
    and a query with no known word is left unchanged (counted)."""
    calls: list[list[Item]] = []
    monkeypatch.setattr(typo, "textattack_typos", served(children["answers"], calls))
    counts: dict[str, int] = {}
    variants = WORD.perturb([CANNES, TOLSTOY], 0, lambda k, n=1: counts.__setitem__(k, counts.get(k, 0) + n))
    assert calls == [_items([WORD])]
    assert [(v.example.id, v.tag, v.example.question) for v in variants] == [
        ("q1", "word@0.1#1", "when does the cannes movie festival take place")
    ]
    assert counts == {"word:unchanged": 1}


def test_word_level_recipe_without_embeddings_fails_in_one_line_before_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("RR_TEXTATTACK_PYTHON", str(tmp_path / "never-started"))  # checked first
    pert = TypoPerturbation(ops=["embedding"], backend="textattack")
    with pytest.raises(TextAttackUnavailable) as e:
        pert.perturb([CANNES], 0)
    msg = str(e.value)
    assert "\n" not in msg
    assert "counter-fitted embeddings, which no package ships: 5 of 5 files missing" in msg
    assert str(tmp_path / "word_embeddings" / "paragramcf" / "paragram.npy") in msg


def test_worker_refuses_to_download(textattack_env: Path, tmp_path: Path) -> None:
    """Asked for the embeddings directly (bypassing rr's check), TextAttack's download is refused."""
    import json

    from rr.perturbations.typo import NLTK_DATA_DIR

    request = {
        "nltk_data": str(NLTK_DATA_DIR),
        "stopwords": [],
        "items": [{"text": "a film", "rate": 0.5, "ops": ["embedding"], "seed": 0}],
    }
    env = {**os.environ, "TA_CACHE_DIR": str(tmp_path)}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(
        [str(textattack_env), str(TEXTATTACK_WORKER)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 1
    assert proc.stdout == ""
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: TextAttack tried to download https://")
    assert last.endswith("word_embeddings/paragramcf; rr's TextAttack worker never reaches the network")


def test_missing_environment_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RR_TEXTATTACK_PYTHON", str(tmp_path / "nope" / "python"))
    with pytest.raises(TextAttackUnavailable, match=r"does not exist: run `make textattack`"):
        textattack_typos([("a film", 0.5, ("qwerty",), 0)])
    assert "textattack" not in sys.modules  # rr's own interpreter never imports TextAttack
