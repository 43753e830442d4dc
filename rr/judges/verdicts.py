"""Parse the verdicts an LLM judge writes for Cao et al.'s answer-evaluation prompts (Appendix C).

The prompts ask for::

    [Start answer]
    Yes
    [End answer]

(NQ / HotpotQA) or one ``Group i: Yes|No`` line per answer group between the markers (ASQA).
Judges deviate: other case or spacing in the markers (``[start Answer]``, ``[ Start answer ]``),
a missing ``[End answer]``, markdown (``**Yes**``), prose around the verdict
("Yes, the predicted answer is correct."), an echo of the prompt's placeholder
(``<Your answer. Choose from: Yes, No>``) before the real answer, or no markers at all. Both
parsers are pure functions and return ``None`` for what they cannot read (never a guess).
"""

from __future__ import annotations

import re

_START = re.compile(r"\[\s*start[\s_-]*answer\s*\]", re.IGNORECASE)
_END = re.compile(r"\[\s*end[\s_-]*answer\s*\]", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"<\s*your answer\.?\s*choose from\s*:?\s*yes\s*,\s*no\s*>", re.IGNORECASE)
_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_LEADING = re.compile(r"^[\s*_`\"'>:\-.#]*(yes|no)\b", re.IGNORECASE)
_GROUP = re.compile(r"group\s*#?\s*(\d+)\s*[*_]*\s*[:\-=–)]?\s*[*_`\"']*\s*(yes|no)\b", re.IGNORECASE)


def answer_block(text: str) -> str:
    """The text between the last ``[Start answer]`` and the next ``[End answer]``.

    Without a start marker, the text before the first ``[End answer]`` (or all of it); without
    an end marker, everything after the start marker. The prompt's placeholder
    (``<Your answer. Choose from: Yes, No>``), when echoed, is removed.
    """
    starts = list(_START.finditer(text))
    if starts:
        body = text[starts[-1].end() :]
        end = _END.search(body)
        if end:
            body = body[: end.start()]
        elif not body.strip():  # "[Start answer]" last: the verdict came before it
            body = text[: starts[-1].start()]
    else:
        end = _END.search(text)
        body = text[: end.start()] if end else text
    return _PLACEHOLDER.sub(" ", body)


def parse_yes_no(text: str) -> bool | None:
    """An NQ/HotpotQA-style verdict: ``True`` (Yes), ``False`` (No) or ``None`` (unreadable).

    Inside the answer block (see :func:`answer_block`): a block that starts with yes/no (after
    markdown and punctuation) gives that verdict; otherwise the verdict is the one of yes/no
    that occurs as a word, and ``None`` if both or neither do.
    """
    block = answer_block(text)
    lead = _LEADING.match(block)
    if lead:
        return lead.group(1).lower() == "yes"
    words = {m.group(1).lower() for m in _WORD.finditer(block)}
    if len(words) == 1:
        return words == {"yes"}
    return None


def parse_group_verdicts(text: str, n_groups: int) -> list[bool | None]:
    """ASQA-style verdicts, one per answer group (1-based ``Group i`` in the prompt).

    ``Group i: Yes|No`` lines are read from the answer block (falling back to the whole text when
    the block has none); a later line for the same group overrides an earlier one; groups
    outside ``1..n_groups`` are ignored. Without any ``Group`` label, the block's yes/no words
    are assigned to the groups in order when there are exactly ``n_groups`` of them (and a
    single group accepts a plain yes/no verdict).

    Returns:
        ``n_groups`` entries: ``True`` covered, ``False`` not covered, ``None`` unreadable.
    """
    out: list[bool | None] = [None] * n_groups
    block = answer_block(text)
    found = list(_GROUP.finditer(block)) or list(_GROUP.finditer(_PLACEHOLDER.sub(" ", text)))
    if found:
        for m in found:
            i = int(m.group(1))
            if 1 <= i <= n_groups:
                out[i - 1] = m.group(2).lower() == "yes"
        return out
    if n_groups == 1:
        return [parse_yes_no(text)]
    words = [m.group(1).lower() == "yes" for m in _WORD.finditer(block)]
    if len(words) == n_groups:
        return list(words)
    return out
