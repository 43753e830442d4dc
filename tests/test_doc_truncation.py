"""BERGEN's 100-word document truncation (query-level paper §4.2) in the vanilla strategy."""

from __future__ import annotations

import pytest

from rr.context import RankedDoc
from rr.records import Passage
from rr.strategies.base import format_doc, truncate_words
from rr.strategies.simple import Vanilla


def test_truncate_words() -> None:
    assert truncate_words("a b  c\nd e", 3) == "a b c"
    assert truncate_words("a b  c", 3) == "a b  c"  # short enough: untouched
    assert truncate_words("a b c", None) == "a b c"


def test_format_doc_cuts_text_not_title() -> None:
    doc = RankedDoc(Passage("p", " ".join(f"w{i}" for i in range(150)), "Long Title Here"), 1)
    out = format_doc(doc, "{title}\n{text}", 100)
    title, text = out.split("\n")
    assert title == "Long Title Here" and text.split() == [f"w{i}" for i in range(100)]


def test_vanilla_rejects_bad_limit() -> None:
    with pytest.raises(ValueError, match="max_doc_words"):
        Vanilla(max_doc_words=0)
