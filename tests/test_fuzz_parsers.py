"""Fuzzing the parsers of model output rr did not write (issue 14, "Fuzzing as a standing test").

Property, for each parser: any text gives a valid result (never an exception), and whatever
is not read as a result is counted where a job reports it (the answer extractor's
``marker_found``, S2A's dropped numbers, the rewrite parser's dropped lines, the judge's
``None`` verdicts). Texts are drawn from arbitrary unicode mixed with the tokens each parser
looks for, so the interesting branches are reached. Profiles: tests/conftest.py.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rr.judges.verdicts import answer_block, parse_group_verdicts, parse_yes_no
from rr.perturbations.llm_rewrite import parse_variants
from rr.prompts.answer import extract_answer
from rr.strategies.selection import NONE, OK, OUT_OF_RANGE, UNPARSABLE, parse_selection

pytestmark = pytest.mark.fuzz


def text_with(*tokens: str) -> st.SearchStrategy[str]:
    """Text made of arbitrary unicode pieces and the given tokens, in any order."""
    piece = st.one_of(st.text(max_size=12), st.sampled_from(tokens), st.sampled_from(["\n", " ", "\r\n"]))
    return st.lists(piece, max_size=14).map("".join)


ANSWER_TOKENS = (
    "Answer:",
    "answer :",
    "**Answer:**",
    "**Answer**:",
    "__Answer:__",
    "Paris.",
    '"x"',
    "*",
    ".",
)


@given(text_with(*ANSWER_TOKENS))
@example("Answer:\n\n  Paris.\n")
@example("**Answer**:")
@example("\u2028Answer: a\u2029b")  # unicode line separators: str.splitlines splits on them
def test_answer_extractor_total_and_counts_its_fallback(raw: str) -> None:
    answer, found = extract_answer(raw)
    assert isinstance(answer, str) and isinstance(found, bool)
    assert answer == answer.strip()
    assert len(answer.splitlines()) <= 1  # one line of the output, never two
    assert answer in raw or answer + "." in raw or not answer
    if "answer" not in raw.casefold():
        assert not found  # no marker: the fallback was used, and marker_found says so


def test_answer_is_stripped_of_any_unicode_whitespace() -> None:
    """Found by the fuzz test above: U+001F (and NBSP, U+3000) were kept as the answer."""
    assert extract_answer("\x1f") == ("", False)
    assert extract_answer("\u00a0\n Answer:\u00a0**Paris**.\u3000\n") == ("Paris", True)
    assert extract_answer("\u2003London\u2003") == ("London", False)


WORD = st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=20)


@given(st.lists(WORD, min_size=1, max_size=4).map(" ".join).filter(lambda s: "answer" not in s.casefold()))
def test_answer_after_the_marker_is_read(words: str) -> None:
    answer, found = extract_answer(f"Some reasoning.\nAnswer: {words}.\n")
    assert (answer, found) == (words, True)


SELECTION_TOKENS = ("Selected Contexts:", "Context", "[", "]", ",", "-", "1", "2", "3", "17", "None", "and")


@given(text_with(*SELECTION_TOKENS), st.integers(min_value=0, max_value=20))
@example("Selected Contexts: 1-100000000000", 5)
@example("Selected Contexts: [3, 3, 9, 0]", 4)
def test_s2a_selection_parser_total_and_counts_what_it_drops(text: str, n_docs: int) -> None:
    sel = parse_selection(text, n_docs)
    assert sel.status in (OK, NONE, OUT_OF_RANGE, UNPARSABLE)
    assert list(sel.indices) == sorted(set(sel.indices))
    assert all(1 <= i <= n_docs for i in sel.indices)
    assert (sel.status == OK) == bool(sel.indices)
    assert sel.dropped_out_of_range >= 0 and sel.dropped_duplicates >= 0
    if sel.status == OUT_OF_RANGE:
        assert sel.dropped_out_of_range > 0  # the fallback has a count


@given(st.lists(st.integers(min_value=-3, max_value=30), min_size=1, max_size=12), st.integers(1, 20))
def test_every_number_of_a_selection_is_kept_or_counted(numbers: list[int], n_docs: int) -> None:
    numbers = [n for n in numbers if n >= 0]  # "-3" would read as a range dash
    if not numbers:
        return
    sel = parse_selection(f"Selected Contexts: [{', '.join(map(str, numbers))}]", n_docs)
    assert len(sel.indices) + sel.dropped_out_of_range + sel.dropped_duplicates == len(numbers)
    assert set(sel.indices) == {n for n in numbers if 1 <= n <= n_docs}


VERDICT_TOKENS = (
    "[Start answer]",
    "[End answer]",
    "[ start_answer ]",
    "Yes",
    "No",
    "yes",
    "**No**",
    "Group 1:",
    "Group 2: Yes",
    "group #3 - no",
    "<Your answer. Choose from: Yes, No>",
)


@given(text_with(*VERDICT_TOKENS), st.integers(min_value=0, max_value=6))
def test_judge_verdict_parsers_total(text: str, n_groups: int) -> None:
    assert isinstance(answer_block(text), str)
    assert parse_yes_no(text) in (True, False, None)
    verdicts = parse_group_verdicts(text, n_groups)
    assert len(verdicts) == n_groups
    assert all(v in (True, False, None) for v in verdicts)


@given(st.text(max_size=40).filter(lambda s: "[" not in s), st.sampled_from(["Yes", "No"]))
def test_judge_verdict_inside_the_markers_wins(noise: str, verdict: str) -> None:
    text = f"{noise}\n[Start answer]\n{verdict}\n[End answer]\n{noise}"
    assert parse_yes_no(text) is (verdict == "Yes")


REWRITE_TOKENS = (
    "1.",
    "2)",
    "(3)",
    "Paraphrase 4:",
    "- ",
    "Here are 5 paraphrases:",
    '"',
    "**",
    "Input text:",
    "q?",
)


@given(text_with(*REWRITE_TOKENS), st.text(max_size=20), st.integers(min_value=0, max_value=6))
@example("1. q?\n2. Q?\n3) q ?", "q?", 2)
def test_rewrite_parser_accounts_for_every_line(text: str, original: str, max_n: int) -> None:
    res = parse_variants(text, original, max_n)
    assert len(res.variants) <= max_n
    assert all(v == v.strip() and v and "\n" not in v for v in res.variants)
    assert set(res.dropped) <= {"chatter", "same_as_original", "duplicate", "extra"}
    lines = [raw for raw in text.splitlines() if raw.strip().replace("**", "")]
    assert len(res.variants) + sum(res.dropped.values()) == len(lines)
