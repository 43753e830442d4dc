"""Streamed content hashes equal the in-memory ones (corpus fingerprints, cache keys depend on it)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rr.data.base import Corpus
from rr.hashing import content_hash, content_hash_streamed
from rr.records import Passage

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@pytest.mark.fuzz
@given(JSON)
def test_streamed_hash_equals_content_hash(obj) -> None:
    assert content_hash_streamed(obj) == content_hash(obj)


def test_streamed_hash_of_generators_and_escapes() -> None:
    texts = ["plain", 'quote " and \\ backslash', "nul \x00 tab \t", "é ü 漢字 \U0001f600", "\u2028 line sep"]
    assert content_hash_streamed(t for t in texts) == content_hash(texts)
    assert content_hash_streamed({"b": (t for t in texts), "a": 1}, 16) == content_hash(
        {"a": 1, "b": texts}, 16
    )
    # larger than the 1 MiB buffer: the pieces are fed in several updates
    big = ["x" * 1000 + str(i) for i in range(3000)]
    assert content_hash_streamed(t for t in big) == content_hash(big)


def test_corpus_fingerprint_is_the_documented_hash() -> None:
    passages = [Passage("p1", "Paris is in France.", "Paris"), Passage("p2", 'Rome \x00 "Italy"', "")]
    expected = content_hash(
        {
            "name": "c",
            "source": "s",
            "ids": ["p1", "p2"],
            "text": content_hash([p.title + "\x00" + p.text for p in passages]),
        },
        16,
    )
    assert Corpus(passages, "c", "s").fingerprint() == expected
