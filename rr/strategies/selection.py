"""Parse the context selection an S2A model writes (``s2a.j2``, Cao et al. 2025, Appendix C).

The prompt asks for ``Selected Contexts: Context 2, Context 5.`` (its own example misspells it
``Conetxts``) or ``Selected Conetxts: None``. Models answer far more loosely; this parser accepts:

* the marker in any spelling and case (``Selected Contexts:``, ``Selected Conetxts:``,
  ``**Selected Context(s):**``, ``selected contexts -``); the **last** marker wins (models
  often echo the prompt's example first);
* after the marker (rest of its line, or the next non-empty line if that is empty):
  ``Context 2, Context 5``, ``Contexts 1-3`` / ``1 to 3`` / ``1–3`` (ranges, inclusive),
  ``2 and 5``, ``[2, 5]``, ``#2``, bare ``2, 5``; parsing stops at the first sentence of prose
  after the list (``Context 2. It mentions 1998`` reads as ``[2]``);
* without a marker: every ``Context N`` / ``Contexts N-M`` reference in the text, or an output
  that is nothing but a list of numbers (``2, 5``);
* ``None`` (also ``no context``, ``no relevant context``) when no number was selected.

Numbers outside ``1..n_docs`` are dropped, duplicates are dropped, and the selection is returned
in ascending order (the documents keep their prompt order in step 2). :func:`parse_selection` is a
pure function; the strategy decides what to do with each :class:`Selection.status`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: A valid selection of at least one document.
OK = "ok"
#: The model explicitly selected nothing ("None").
NONE = "none"
#: Numbers were given, but none names a document of the prompt.
OUT_OF_RANGE = "out_of_range"
#: Neither a number nor "None" could be read (includes empty output).
UNPARSABLE = "unparsable"
STATUSES = (OK, NONE, OUT_OF_RANGE, UNPARSABLE)

_MARKER = re.compile(
    r"(?<![A-Za-z])selected[\s*_]*(?:con[a-z]*(?:\(s\))?|passages?|documents?|docs?)[\s*_]*[:\-–][\s*_]*",
    re.IGNORECASE,
)
_NUM = r"#?\s*(\d{1,6})"
_CTX = r"(?:(?:contexts?|context\(s\)|ctx|passages?|documents?|docs?)\s*)"
_RANGE_SEP = r"\s*(?:-|–|—|to|through)\s*"
# One item: "Context 2", "2", "Contexts 1-3", "1 to 3", "Context 1 - Context 3".
_ITEM = rf"{_CTX}?{_NUM}(?:{_RANGE_SEP}{_CTX}?{_NUM})?"
_LIST_SEP = r"\s*(?:,|;|/|&|\band\b|\bor\b|\+|\.(?=\s*contexts?\b))?\s*(?:\band\b\s*)?"
_LIST = re.compile(rf"{_ITEM}(?:{_LIST_SEP}{_ITEM})*", re.IGNORECASE)
_ITEM_RE = re.compile(_ITEM, re.IGNORECASE)
_CTX_LIST = re.compile(rf"{_CTX}{_NUM}(?:{_RANGE_SEP}{_CTX}?{_NUM})?(?:{_LIST_SEP}{_ITEM})*", re.IGNORECASE)
_BARE_LIST = re.compile(rf"^[\s\[\(\"'*]*(?:{_LIST.pattern})[\s\]\)\"'.*]*$", re.IGNORECASE)
_NONE = re.compile(r"\bnone\b|\bno (?:relevant |good |useful )?(?:retrieved )?contexts?\b", re.IGNORECASE)
# Where prose starts after a list: a sentence end followed by a word, or a clause opener.
_PROSE = re.compile(
    r"(?:[.!?]\s+(?=[A-Za-z])(?!(?:contexts?|context\(s\)|and)\b)|\n|\s(?:because|since|as they|as it|which|that|,\s*as)\b)",
    re.IGNORECASE,
)
#: A range longer than this is read as its two endpoints only (``1-1000`` is not a selection).
MAX_RANGE = 200


@dataclass(frozen=True)
class Selection:
    """What :func:`parse_selection` read.

    Attributes:
        indices: Valid, distinct 1-based document positions in ascending order (empty unless
            ``status == "ok"``).
        status: ``"ok"``, ``"none"`` (explicit None), ``"out_of_range"`` or ``"unparsable"``.
        marker_found: Whether a ``Selected Contexts:`` marker (any spelling) was found.
        dropped_out_of_range: Numbers given that name no document (``< 1`` or ``> n_docs``).
        dropped_duplicates: Numbers given more than once (after range expansion).
    """

    indices: tuple[int, ...]
    status: str
    marker_found: bool
    dropped_out_of_range: int = 0
    dropped_duplicates: int = 0


def _expand(list_text: str) -> list[int]:
    """Numbers of a list match, ranges expanded (in the order written)."""
    out: list[int] = []
    for m in _ITEM_RE.finditer(list_text):
        lo = int(m.group(1))
        if m.group(2) is None:
            out.append(lo)
            continue
        hi = int(m.group(2))
        if lo <= hi and hi - lo <= MAX_RANGE:
            out.extend(range(lo, hi + 1))
        else:  # descending or absurd ranges: keep what was written
            out.extend([lo, hi])
    return out


def _segment_after(text: str, end: int) -> str:
    """The rest of the marker's line, or the next non-empty line; cut where prose starts."""
    rest = text[end:]
    lines = rest.split("\n")
    seg = lines[0].strip()
    if not seg:
        seg = next((ln.strip() for ln in lines[1:] if ln.strip()), "")
    cut = _PROSE.search(seg)
    return seg[: cut.start()] if cut else seg


def _numbers_in_segment(seg: str) -> list[int]:
    m = _LIST.search(seg)
    return _expand(m.group(0)) if m else []


def parse_selection(text: str, n_docs: int) -> Selection:
    """Read the documents an S2A model selected.

    Args:
        text: The model's raw step-1 output.
        n_docs: Number of contexts in the step-1 prompt (valid positions are ``1..n_docs``).

    Returns:
        A :class:`Selection`; see the module docstring for the accepted forms.
    """
    numbers: list[int] = []
    said_none = False
    markers = list(_MARKER.finditer(text))
    if markers:
        seg = _segment_after(text, markers[-1].end())
        numbers = _numbers_in_segment(seg)
        said_none = not numbers and bool(_NONE.search(seg))
    if not numbers and not said_none:
        numbers = [n for m in _CTX_LIST.finditer(text) for n in _expand(m.group(0))]
        if not numbers and _BARE_LIST.match(text):
            numbers = _expand(text)
        said_none = not numbers and bool(_NONE.search(text))
    valid: list[int] = []
    out_of_range = duplicates = 0
    for n in numbers:
        if not 1 <= n <= n_docs:
            out_of_range += 1
        elif n in valid:
            duplicates += 1
        else:
            valid.append(n)
    if valid:
        status = OK
    elif numbers:
        status = OUT_OF_RANGE
    elif said_none:
        status = NONE
    else:
        status = UNPARSABLE
    return Selection(tuple(sorted(valid)), status, bool(markers), out_of_range, duplicates)
