"""Extract the short answer from a model's raw output.

The paper's prompts (``templates/*.j2``) ask the model to "Indicate your answer with 'Answer:'".
Models follow that loosely: markdown (``**Answer:** Paris``), lower case, a trailing period,
quotes, an echo of the prompt's example ("Question: ... Answer: Hong Kong.") before their own
answer, or no marker at all. :func:`extract_answer` handles these and reports whether the
marker was found, so a run can count fallbacks.
"""

from __future__ import annotations

import re

# "Answer:", "answer :", "**Answer:**", "**Answer**:", "__Answer:__"; not "...Answer:" inside a word,
# nor RARE's "cot_answer:" (its prompt's chain-of-thought part, before the "answer:" part).
_MARKER = re.compile(
    r"(?<![A-Za-z])(?<!cot_)answer[ \t]*(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?", re.IGNORECASE
)
# A line that is a chain-of-thought part (RARE's "cot_answer: ..."): never an answer, even as the fallback.
_COT = re.compile(r"\A[\s*_`]*cot_answer[ \t]*(?:\*\*|__)?[ \t]*:", re.IGNORECASE)
# Stripped from both ends of the answer: whitespace (any, as str.isspace: NBSP, U+001F, ...),
# markdown emphasis, straight and curly quotes.
_WRAPPERS = re.compile("\\A[\\s*_`\"'\u201c\u201d\u2018\u2019]+|[\\s*_`\"'\u201c\u201d\u2018\u2019]+\\Z")


def _clean(text: str) -> str:
    """Strip whitespace, surrounding quotes/asterisks and one trailing period."""
    text = _WRAPPERS.sub("", text)
    if text.endswith("."):
        text = text[:-1]
    return _WRAPPERS.sub("", text)


def extract_answer(raw: str) -> tuple[str, bool]:
    """The answer in a model's output, and whether an "Answer:" marker was found.

    Rules:
        * The answer is the text after the **last** "Answer:" marker (case-insensitive;
          markdown variants such as ``**Answer:**`` and ``**Answer**:`` included), up to the
          end of that line. If the rest of the marker's line is empty, the next non-empty line
          is used ("Answer:\\nParis").
        * Without a marker, the first non-empty line of the output is used.
        * ``cot_answer:`` (RARE's prompt's reasoning part) is not a marker, and a line it opens is
          not an answer: an output cut off inside its chain of thought has no answer (``""``),
          never its reasoning scored.
        * Either way the result is stripped of whitespace, surrounding quotes (straight or curly),
          asterisks/underscores/backticks, and one trailing period.

    Args:
        raw: The generated text (any length, possibly empty).

    Returns:
        ``(answer, found_marker)``: ``answer`` may be ``""``; ``found_marker`` is ``False`` when
        the fallback was used (and for empty output: ``("", False)``).
    """
    markers = list(_MARKER.finditer(raw))
    if markers:
        lines = raw[markers[-1].end() :].splitlines()
        answer = _clean(lines[0]) if lines else ""
        if not answer:
            answer = next((c for c in (_clean(line) for line in lines[1:]) if c), "")
        return answer, True
    for line in raw.splitlines():
        if _COT.match(line):
            continue
        answer = _clean(line)
        if answer:
            return answer, False
    return "", False


#: The values of ``scoring.text``: which text of a model's output the judge scores.
#:
#: * ``extracted``: the strategy's answer, what :func:`extract_answer` takes from the final output
#:   (after the last ``Answer:``, else the first non-empty line); ``strategy=rgb`` extracts nothing,
#:   its answer is its whole stripped response. rr's own experiments and Cao et al.'s.
#: * ``whole``: the whole generation, stripped: what BERGEN's ``match_score`` reads (the
#:   query-level study's Match) and RGB's ``checkanswer``.
#: * ``first_line``: ``raw.split("\n")[0].strip()``, exactly as lost-in-the-middle's
#:   ``get_metrics_for_example`` cuts the response before ``best_subspan_em`` (SURE's Y): the first
#:   line even when it is empty.
SCORED_TEXTS = ("extracted", "whole", "first_line")


def scored_text(raw: str, answer: str, text: str) -> str:
    """The text the judge scores under ``scoring.text=text`` (see :data:`SCORED_TEXTS`).

    Args:
        raw: The model's full final-step output.
        answer: The strategy's answer (its ``prediction``).
        text: One of :data:`SCORED_TEXTS`.

    Raises:
        ValueError: ``text`` is not one of :data:`SCORED_TEXTS`.
    """
    if text == "extracted":
        return answer
    if text == "whole":
        return raw.strip()
    if text == "first_line":
        return raw.split("\n")[0].strip()
    raise ValueError(f"scoring.text must be one of {', '.join(SCORED_TEXTS)}, got {text!r}")
