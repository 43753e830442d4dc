"""The S2A selection parser on what models really write (pure function, no model)."""

from __future__ import annotations

import pytest

from rr.strategies.selection import NONE, OK, OUT_OF_RANGE, UNPARSABLE, parse_selection

CASES = [
    # (output, n_docs, indices, status)
    ("Selected Contexts: Context 2, Context 5", 5, (2, 5), OK),
    ("Selected Contexts: Context 2, Context 5.", 5, (2, 5), OK),
    ("Selected Conetxts: Context 2, Context 5.", 5, (2, 5), OK),  # the template's misspelling
    ("selected contexts: context 3", 5, (3,), OK),
    ("**Selected Contexts:** Context 1, Context 4", 5, (1, 4), OK),
    ("Selected Context(s): Context 4", 5, (4,), OK),
    ("Selected Contexts: Contexts 1-3", 5, (1, 2, 3), OK),
    ("Selected Contexts: Context 1 – Context 3", 5, (1, 2, 3), OK),
    ("Selected Contexts: 1 to 3 and 5", 5, (1, 2, 3, 5), OK),
    ("Selected Contexts: 2, 5", 5, (2, 5), OK),
    ("Selected Contexts: [2, 5]", 5, (2, 5), OK),
    ("Selected Contexts: #2 and #4", 5, (2, 4), OK),
    ("Selected Contexts: Context 5, Context 2", 5, (2, 5), OK),  # prompt order, not the model's
    ("Selected Contexts: Context 2. Context 5.", 5, (2, 5), OK),
    ("Selected Contexts:\nContext 3, Context 1", 5, (1, 3), OK),  # list on the next line
    ("Selected Contexts: None", 5, (), NONE),
    ("Selected Conetxts: None.", 5, (), NONE),
    ("None", 5, (), NONE),
    ("There is no relevant context for this question.", 5, (), NONE),
    ("Selected Contexts: Context 2 because it mentions the 1998 election.", 5, (2,), OK),
    ("Selected Contexts: Context 2. It says 3 people won in 1998.", 5, (2,), OK),
    # The example echoed first, then the model's own choice: the last marker wins.
    (
        "Question: What city is Kowloon a part of? Selected Conetxts: Context 2, Context 5.\n"
        "Selected Contexts: Context 1",
        5,
        (1,),
        OK,
    ),
    ("The most relevant are Context 3 and Context 4; the others are off-topic.", 5, (3, 4), OK),
    ("Contexts 2 and 3 answer it.", 5, (2, 3), OK),
    ("2, 4", 5, (2, 4), OK),
    ("3", 5, (3,), OK),
    ("Selected Contexts: Context 7, Context 2", 5, (2,), OK),  # 7 dropped
    ("Selected Contexts: Context 7, Context 9", 5, (), OUT_OF_RANGE),
    ("Selected Contexts: Context 0", 5, (), OUT_OF_RANGE),
    ("Selected Contexts: Context 2, Context 2, context 2", 5, (2,), OK),
    ("", 5, (), UNPARSABLE),
    ("Paris is the capital of France.", 5, (), UNPARSABLE),
    ("In 1998 the team won 3 games.", 5, (), UNPARSABLE),  # prose numbers are not a selection
    ("Answer: Hong Kong", 5, (), UNPARSABLE),
    ("Selected Contexts: Context 1-1000", 5, (1,), OK),  # absurd range: endpoints only
]


@pytest.mark.parametrize(("text", "n", "indices", "status"), CASES)
def test_parse_selection(text: str, n: int, indices: tuple[int, ...], status: str) -> None:
    sel = parse_selection(text, n)
    assert (sel.indices, sel.status) == (indices, status)


def test_counts_dropped_numbers_and_marker() -> None:
    sel = parse_selection("Selected Contexts: Context 2, Context 9, Context 2, Context 0", 3)
    assert sel.indices == (2,)
    assert sel.dropped_out_of_range == 2 and sel.dropped_duplicates == 1
    assert sel.marker_found
    assert not parse_selection("Context 2", 3).marker_found
