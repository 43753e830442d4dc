"""RGB (Chen et al. 2024, "Benchmarking LLMs in Retrieval-Augmented Generation") data files.

RGB ships JSON-lines files (``data/en.json``, ``en_int.json``, ``en_fact.json`` and the ``zh``
counterparts), one question per line:

* ``id`` (int or string), ``query`` (string);
* ``answer``: a string, or a list whose elements are each *required*: a string element must
  occur in the response, a list element is a group of alternatives of which one must occur
  (RGB's ``checkanswer``). ``en.json`` uses ``[["alt 1", "alt 2"]]`` (one group),
  ``en_int.json`` several groups (information integration), ``en_fact.json`` a plain string;
* ``positive``: answer-bearing passages, a list of strings, or for the integration testbed a
  list of lists (one list of passages per answer group);
* ``negative``: relevant passages without the answer (list of strings);
* counterfactual testbed only: ``positive_wrong`` (``positive`` with the answer replaced by the
  fake answer, same length and order) and ``fakeanswer`` (the fake answer: a string, or in
  ``zh_fact.json`` line 14 a list of strings; RGB's scripts never read it).

Fields RGB's scripts do not read may hold anything (``zh_int.json``'s ``asnwer1`` / ``answer2``).

:class:`RGBDataset` turns rows into :class:`~rr.records.Example` s. The passages go to
``Example.meta`` under the *passage-pool keys* below, which the context-composition
perturbations (:mod:`rr.perturbations.composition`) read; every other dataset can fill the same
keys (for datasets without them the perturbations derive the pools from the retrieved documents).
:class:`RGBCorpus` makes a retrievable corpus of the same file's passages, so a job can also run
real retrieval over RGB's pools (``corpus=rgb``).

Every malformed row raises :class:`~rr.data.base.DataError` whose message starts with
``path:line``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rr.data.base import Corpus, DataError, sample_examples
from rr.data.jsonl import parse_id, parse_question, read_examples
from rr.errors import require_positive
from rr.records import Example, MetaKey, Passage
from rr.registry import component

# The passage-pool keys of Example.meta (defined with the others in rr.records.MetaKey).
POSITIVE = MetaKey.POSITIVE
POSITIVE_GROUPS = MetaKey.POSITIVE_GROUPS
NEGATIVE = MetaKey.NEGATIVE
COUNTERFACTUAL = MetaKey.COUNTERFACTUAL
FAKE_ANSWER = MetaKey.FAKE_ANSWER

TESTBEDS = ("auto", "noise", "integration", "counterfactual")
#: ``dataset.language`` values: ``auto`` reads it off the file's name as RGB does.
LANGUAGES = ("auto", "en", "zh")


def file_language(path: str | Path, language: str = "auto") -> str:
    """The language of an RGB file: ``language`` when given, else ``zh`` when the file's name holds
    ``zh`` (RGB's ``evalue.py``: ``if 'zh' in dataset`` for scoring, ``instruction.yaml[dataset[:2]]``
    for the prompt), else ``en``."""
    if language not in LANGUAGES:
        raise ValueError(f"dataset.language must be one of {LANGUAGES}, got {language!r}")
    if language != "auto":
        return language
    return "zh" if "zh" in Path(path).name else "en"


def _strings(value: Any, where: str, field: str, allow_empty: bool = True) -> list[str]:
    if not isinstance(value, list) or any(not isinstance(v, str) for v in value):
        raise DataError(f"{where}: {field!r} must be a list of strings, got {value!r:.120}")
    if not allow_empty and not value:
        raise DataError(f"{where}: {field!r} is empty")
    return list(value)


def parse_rgb_answer(value: Any, where: str) -> list[list[str]]:
    """RGB's ``answer`` as required groups of alternatives (each group must be matched).

    ``"x"`` -> ``[["x"]]``; ``["x", "y"]`` -> ``[["x"], ["y"]]`` (both required, as RGB's
    ``checkanswer`` treats a string element); ``[["x", "x2"], ["y"]]`` -> as is.

    Raises:
        DataError: not a non-empty string / list of non-empty strings or string lists.
    """
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise DataError(f"{where}: 'answer' must be a string or a non-empty list, got {value!r:.120}")
    groups: list[list[str]] = []
    for j, item in enumerate(items):
        alts = [item] if isinstance(item, str) else item
        if (
            not isinstance(alts, list)
            or not alts
            or any(not isinstance(a, str) or not a.strip() for a in alts)
        ):
            raise DataError(
                f"{where}: answer element {j} must be a non-empty string or a list of them, got {item!r:.120}"
            )
        groups.append(list(alts))
    return groups


def _fake_answer(value: Any, where: str) -> str:
    """RGB's ``fakeanswer`` as the one string of the ``fake_answer`` column: a string, or a list of
    them (``zh_fact.json`` line 14: ``["中国", "北京"]``, one per part of its list ``answer``) joined by
    ``"; "``. RGB's scripts never read the field (``positive_wrong`` already holds the fake answer), so
    only its display is at stake."""
    parts = [value] if isinstance(value, str) else value
    if (
        not isinstance(parts, list)
        or not parts
        or any(not isinstance(p, str) or not p.strip() for p in parts)
    ):
        raise DataError(
            f"{where}: 'fakeanswer' must be a non-empty string or a list of them, got {value!r:.120}"
        )
    return "; ".join(parts)


def _testbed(row: dict[str, Any], where: str, testbed: str) -> str:
    if testbed != "auto":
        return testbed
    if "positive_wrong" in row or "fakeanswer" in row:
        return "counterfactual"
    pos = row.get("positive")
    if isinstance(pos, list) and pos and all(isinstance(p, list) for p in pos):
        return "integration"
    return "noise"


def parse_rgb_row(
    row: dict[str, Any], where: str, testbed: str = "auto", source: str = "rgb", language: str = "en"
) -> Example:
    """One RGB row as an :class:`Example` (see the module docstring for the format).

    ``answers`` are all alternatives of all groups; ``answer_groups`` is set when there are two
    or more required groups (information integration), else ``None``.

    Raises:
        DataError: a missing or malformed field (message starts with ``where``).
    """
    if testbed not in TESTBEDS:
        raise ValueError(f"dataset.testbed must be one of {TESTBEDS}, got {testbed!r}")
    for field in ("id", "query", "answer", "positive", "negative"):
        if field not in row:
            raise DataError(f"{where}: missing field {field!r} (fields: {sorted(row)})")
    kind = _testbed(row, where, testbed)
    ex_id = parse_id(row["id"], where)
    question = parse_question(row["query"], where)
    groups = parse_rgb_answer(row["answer"], where)
    meta: dict[str, Any] = {MetaKey.SOURCE: source, "rgb_testbed": kind, MetaKey.LANGUAGE: language}
    if kind == "integration":
        pos = row["positive"]
        if not isinstance(pos, list) or not pos or any(not isinstance(p, list) for p in pos):
            raise DataError(
                f"{where}: integration 'positive' must be a list of passage lists, got {pos!r:.120}"
            )
        meta[POSITIVE_GROUPS] = [_strings(p, where, f"positive[{j}]") for j, p in enumerate(pos)]
        meta[POSITIVE] = [t for p in meta[POSITIVE_GROUPS] for t in p]
    else:
        meta[POSITIVE] = _strings(row["positive"], where, "positive")
    meta[NEGATIVE] = _strings(row["negative"], where, "negative")
    if kind == "counterfactual":
        for field in ("positive_wrong", "fakeanswer"):
            if field not in row:
                raise DataError(f"{where}: counterfactual row lacks {field!r} (fields: {sorted(row)})")
        wrong = _strings(row["positive_wrong"], where, "positive_wrong")
        if len(wrong) != len(meta[POSITIVE]):
            raise DataError(
                f"{where}: 'positive_wrong' has {len(wrong)} passages but 'positive' has {len(meta[POSITIVE])}"
            )
        meta[COUNTERFACTUAL] = wrong
        meta[FAKE_ANSWER] = _fake_answer(row["fakeanswer"], where)
    answers = list(dict.fromkeys(a for g in groups for a in g))
    return Example(
        id=ex_id,
        question=question,
        answers=answers,
        answer_groups=groups if len(groups) > 1 else None,
        meta=meta,
    )


def read_rgb(path: str | Path, testbed: str = "auto", language: str = "auto") -> list[Example]:
    """Every row of an RGB file as an :class:`Example`, in file order (ids must be unique); its
    language (``Example.meta["language"]``) is :func:`file_language`'s."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"RGB data file not found: {path} (RGB's data/en.json, en_int.json, ...)")
    language = file_language(path, language)
    source = f"rgb:{path.name}"
    return read_examples(path, lambda row, where, _: parse_rgb_row(row, where, testbed, source, language))


@component("dataset", "rgb")
class RGBDataset:
    """Questions of an RGB data file, with their passages in ``Example.meta``.

    Args:
        path: The RGB file (``en.json``, ``en_int.json``, ``en_fact.json``, ...).
        testbed: ``noise`` (noise robustness / negative rejection), ``integration``,
            ``counterfactual``, or ``auto`` (from the row's fields: ``positive_wrong`` ->
            counterfactual, nested ``positive`` -> integration, else noise).
        n: Number of examples to sample (``None`` = all).
        seed: Sampling seed.
        name: Value of the score table's ``dataset`` column.
        language: ``en``, ``zh`` or ``auto`` (:func:`file_language`: ``zh`` when the file's name
            holds it): RGB's Chinese scoring (:mod:`rr.judges.rgb`) and instruction
            (:class:`rr.strategies.rgb.RGBPrompt`) follow it.
    """

    def __init__(
        self,
        path: str,
        testbed: str = "auto",
        n: int | None = None,
        seed: int = 0,
        name: str = "rgb",
        language: str = "auto",
    ) -> None:
        if testbed not in TESTBEDS:
            raise ValueError(f"dataset.testbed must be one of {TESTBEDS}, got {testbed!r}")
        file_language(path, language)  # a bad value fails here, before any data loads
        self.path = path
        self.testbed = testbed
        self.language = language
        self.n = n
        self.seed = seed
        self.available: int | None = None  # after load: examples there were to sample n from
        self.name = name

    def fingerprint(self) -> dict:
        from rr.data.jsonl import file_sha256

        return {
            "name": self.name,
            "path": str(self.path),
            "sha256": file_sha256(self.path),
            "testbed": self.testbed,
            "language": file_language(self.path, self.language),
            "n": self.n,
            "seed": self.seed,
        }

    def load(self) -> list[Example]:
        population = read_rgb(self.path, self.testbed, self.language)
        self.available = len(population)
        return sample_examples(population, self.n, self.seed)


@component("corpus", "rgb")
class RGBCorpus:
    """The passages of an RGB file as a retrievable corpus (``positive`` and ``negative``).

    Passage ids are ``<question id>/pos/<i>`` and ``<question id>/neg/<i>`` (``i`` 0-based in
    the row's list, flattened over groups for the integration testbed); titles are empty (RGB
    passages have none). Counterfactual passages are left out unless ``counterfactual=True``
    (ids ``<question id>/cf/<i>``).

    Args:
        path: The RGB file (usually ``${dataset.path}``).
        counterfactual: Also index ``positive_wrong``.
        max_passages: Keep only the first ``max_passages`` passages (``None`` = all).
        name: Corpus name used in cache keys and file names.
    """

    def __init__(
        self, path: str, counterfactual: bool = False, max_passages: int | None = None, name: str = "rgb"
    ) -> None:
        require_positive("max_passages", max_passages, optional=True)
        self.path = path
        self.counterfactual = counterfactual
        self.max_passages = max_passages
        self.name = name

    def load(self) -> Corpus:
        passages: list[Passage] = []
        for ex in read_rgb(self.path):
            for tag, key in (("pos", POSITIVE), ("neg", NEGATIVE), ("cf", COUNTERFACTUAL)):
                if tag == "cf" and not self.counterfactual:
                    continue
                for i, text in enumerate(ex.meta.get(key, [])):
                    passages.append(Passage(id=f"{ex.id}/{tag}/{i}", text=text, title=""))
        if not passages:
            raise DataError(f"{self.path}: no passages")
        return Corpus(
            passages, name=self.name, source=f"rgb:{Path(self.path).name}:cf{int(self.counterfactual)}"
        )
