"""The perturbation protocols: query variants before retrieval, document edits before prompting.

* A **query perturbation** turns the dataset's examples into query variants *before*
  retrieval (a perturbed query is retrieved with, so it gets its own TREC run). Every variant
  keeps its example's id; its ``tag`` goes to the score table's ``query_perturbation`` column
  (``none`` for the original, e.g. ``typo@0.25#3`` for the third variant at a 25% word rate).
* A **document perturbation** rewrites the documents of every cell input after the context
  builder sliced and ordered them and *before* the strategy fits them to the window; its
  ``name`` (with parameters) goes to the ``doc_perturbation`` column.

Both receive the job's :class:`~rr.runtime.Runtime`: model-based perturbations get their model
with ``rt.llm_for(self.generator)`` (``None``: the model under test), so every call is cached,
and they report failures and drops with ``rt.count(...)``. Randomness comes from
:func:`rr.hashing.rng_for` seeded by ``(rt.seed, example id, ...)``, never from global state.

Both tags are :class:`PerturbationTag` records. The score table keeps them as strings (its
``query_perturbation`` / ``doc_perturbation`` columns are a contract, and cache keys and query
ids ``<id>::<tag>`` use them); analysis reads them back with :meth:`PerturbationTag.parse`, and
:func:`perturbation_columns` adds each row's parameters as JSON columns.
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rr.records import Example

if TYPE_CHECKING:
    from rr.runtime import Runtime
    from rr.strategies.base import CellInput


#: The key of a tag's one unlabelled parameter: ``noise_ratio@0.4`` -> ``{"value": 0.4}``.
VALUE = "value"

ParamValue = str | int | float

_NUMBER = r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_LABEL = r"[A-Za-z_]+"
_RESERVED = re.compile(r"[@#\s]")


def _number(text: str) -> int | float:
    return int(text) if re.fullmatch(r"-?\d+", text) else float(text)


def _segment(key: str, value: ParamValue) -> str:
    """One ``@`` segment: ``0.4`` / ``gold`` (the unlabelled value) or ``noise0.4`` (labelled)."""
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return text if key == VALUE else key + text


def _read_segment(segment: str) -> tuple[str, ParamValue]:
    """Inverse of :func:`_segment`: a number, a label followed by a number, or any other word."""
    if re.fullmatch(_NUMBER, segment):
        return VALUE, _number(segment)
    m = re.fullmatch(f"({_LABEL})({_NUMBER})", segment)
    if m:
        return m.group(1), _number(m.group(2))
    return VALUE, segment


@dataclass(frozen=True, eq=False)
class PerturbationTag:
    """A perturbation's identity: what the ``query_perturbation`` / ``doc_perturbation`` columns hold.

    Written by :meth:`format` as ``name('@' param)*('#' variant)?``:

    ======================================  =========================================================
    tag                                     record
    ======================================  =========================================================
    ``none``                                ``("none", {}, None)``
    ``noise_ratio@0.4``                     ``("noise_ratio", {"value": 0.4}, None)``
    ``counterfactual@noise0.4@correct0.2``  ``("counterfactual", {"noise": 0.4, "correct": 0.2}, None)``
    ``typo@0.25#3``                         ``("typo", {"value": 0.25}, 3)``
    ``formal#2``                            ``("formal", {}, 2)``
    ``format:json``                         ``("format:json", {}, None)``
    ``logic:reverse@gold``                  ``("logic:reverse", {"value": "gold"}, None)``
    ``format:markdown@rank2``               ``("format:markdown", {"rank": 2}, None)``
    ======================================  =========================================================

    A parameter is written ``@<value>`` when its key is :data:`VALUE` (at most one per tag: a
    number, or a word such as ``gold``) and ``@<key><number>`` otherwise (``key`` of letters and
    ``_``). Floats are written with ``:g`` (6 significant digits) and the record keeps them as
    written: it holds ``0.333333`` for ``1/3`` and the int ``1`` for ``1.0``. So
    ``parse(t.format()) == t`` for every record, and ``parse(s).format() == s`` for every tag rr
    writes (:meth:`parse` also reads non-canonical spellings such as ``0.40``).

    Attributes:
        name: Non-empty, without ``@``, ``#`` or whitespace (``:`` is allowed: ``format:json``).
        params: Parameter key -> ``str``, ``int`` or ``float``, in the order they are written.
            Treat it as read-only (the record hashes over it).
        variant: Which variant of the setting (a query perturbation's ``#i``), or ``None``.

    Raises:
        ValueError: a name, parameter or variant that could not be written so that it reads
            back (the message names the tag and the part).
    """

    name: str
    params: Mapping[str, ParamValue] = field(default_factory=dict)
    variant: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or _RESERVED.search(self.name):
            raise ValueError(
                f"perturbation tag name must be non-empty without '@', '#' or whitespace, got {self.name!r}"
            )
        object.__setattr__(self, "params", {k: self._canonical(k, v) for k, v in self.params.items()})
        v = self.variant
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
                raise ValueError(
                    f"perturbation tag {self.name!r}: variant must be an int >= 0 or None, got {v!r}"
                )
            object.__setattr__(self, "variant", int(v))

    def _canonical(self, key: str, value: object) -> ParamValue:
        """``value`` as written and read back (floats rounded by ``:g``); raises if it cannot be."""
        where = f"perturbation tag {self.name!r}, parameter {key!r}"
        if key != VALUE and not (isinstance(key, str) and re.fullmatch(_LABEL, key)):
            raise ValueError(f"{where}: a key is {VALUE!r} or letters and '_'")
        out: ParamValue
        if isinstance(value, bool):
            raise ValueError(f"{where}: booleans cannot be written in a tag")
        if isinstance(value, numbers.Integral):
            out = int(value)
        elif isinstance(value, numbers.Real):
            out = _number(f"{float(value):g}")
        elif isinstance(value, str):
            out = value
        else:
            raise ValueError(f"{where}: values are str, int or float, got {type(value).__name__}")
        if isinstance(out, str) and key != VALUE:
            raise ValueError(f"{where}: a labelled parameter takes a number, got {out!r}")
        text = _segment(key, out)
        back = _read_segment(text) if text and not _RESERVED.search(text) else None
        if back is None or back != (key, out) or type(back[1]) is not type(out):
            raise ValueError(
                f"{where}: {value!r} would be written {text!r}, which does not read back as itself"
            )
        return out

    def format(self) -> str:
        """The tag string, e.g. ``typo@0.25#3`` (grammar in the class docstring)."""
        text = self.name + "".join("@" + _segment(k, v) for k, v in self.params.items())
        return text if self.variant is None else f"{text}#{self.variant}"

    @classmethod
    def parse(cls, text: str) -> PerturbationTag:
        """The record of a tag string (``none`` -> ``PerturbationTag("none")``).

        Raises:
            ValueError: an empty tag, name or parameter, whitespace, a variant that is not an
                integer >= 0, or two unlabelled (or equally labelled) parameters.
        """
        if not isinstance(text, str) or not text or re.search(r"\s", text):
            raise ValueError(f"perturbation tag must be a non-empty string without whitespace, got {text!r}")
        head, hashed, variant = text.partition("#")
        if hashed and not re.fullmatch(r"\d+", variant):
            raise ValueError(f"perturbation tag {text!r}: the variant after '#' must be an integer >= 0")
        name, *segments = head.split("@")
        if not name:
            raise ValueError(f"perturbation tag {text!r}: empty name before '@'")
        params: dict[str, ParamValue] = {}
        for seg in segments:
            if not seg:
                raise ValueError(f"perturbation tag {text!r}: empty parameter after '@'")
            key, value = _read_segment(seg)
            if key in params:
                what = "unlabelled parameters" if key == VALUE else f"parameters labelled {key!r}"
                raise ValueError(f"perturbation tag {text!r}: two {what}")
            params[key] = value
        return cls(name, params, int(variant) if hashed else None)

    @classmethod
    def read(cls, text: object) -> PerturbationTag | None:
        """:meth:`parse` for analysis: ``None`` for anything that is not a tag (a NaN cell of a
        concatenated table, a hand-written query-file tag of a table written before they were
        checked) instead of an error."""
        try:
            return cls.parse(text) if isinstance(text, str) else None
        except ValueError:
            return None

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        return f"PerturbationTag({self.name!r}, {dict(self.params)!r}, {self.variant!r})"

    def _identity(self) -> tuple:
        return (self.name, tuple(self.params.items()), self.variant)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PerturbationTag):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())


def perturbation_columns(query_tag: str, doc_tag: str) -> dict[str, str]:
    """The parameter columns of a score-table row, beside its two tag columns.

    Returns:
        ``{"query_perturbation_params": ..., "doc_perturbation_params": ...}``, each the JSON
        object of its tag's parameters in tag order (``"{}"`` for ``none`` and tags without
        parameters): ``typo@0.25#3`` -> ``'{"value": 0.25}'``,
        ``counterfactual@noise0.4@correct0.2`` -> ``'{"noise": 0.4, "correct": 0.2}'``.
        A variant (``#3``) is not a parameter.

    Raises:
        ValueError: a tag that does not parse (:meth:`PerturbationTag.parse`).
    """
    return {
        f"{column}_params": json.dumps(dict(PerturbationTag.parse(tag).params))
        for column, tag in (("query_perturbation", query_tag), ("doc_perturbation", doc_tag))
    }


@dataclass(frozen=True)
class QueryVariant:
    """One (possibly perturbed) query of an example.

    Attributes:
        example: The example with ``question`` replaced by the variant's text (same ``id``).
        tag: The ``query_perturbation`` value of its rows: ``none`` or e.g. ``typo@0.25#3``.
    """

    example: Example
    tag: str = "none"


@runtime_checkable
class QueryPerturbation(Protocol):
    """Expands examples into the query variants a job runs on (whole batch, never per example)."""

    name: str

    def variants(self, examples: Sequence[Example], rt: Runtime) -> list[QueryVariant]:
        """Every variant of every example. Including the originals (tag ``none``) is the
        perturbation's choice; no variant may silently equal its original under a perturbed tag."""
        ...


@runtime_checkable
class DocPerturbation(Protocol):
    """Rewrites the documents of cell inputs (whole batch)."""

    name: str

    def apply(self, inputs: Sequence[CellInput], rt: Runtime) -> list[CellInput]:
        """The inputs with perturbed ``docs`` and ``cell.doc_perturbation`` set.

        May return fewer inputs (e.g. SURE's causal-feature filter drops failing pairs), but every
        dropped input must be counted with ``rt.count`` under a name saying why.
        """
        ...
