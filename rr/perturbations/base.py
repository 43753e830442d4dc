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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rr.records import Example

if TYPE_CHECKING:
    from rr.runtime import Runtime
    from rr.strategies.base import CellInput


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
