"""The identity perturbations (the default of both perturbation groups)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rr.perturbations.base import QueryVariant
from rr.records import Example
from rr.registry import component

if TYPE_CHECKING:
    from rr.runtime import Runtime
    from rr.strategies.base import CellInput


@component("perturbation/query", "none")
class NoQueryPerturbation:
    """Leaves every question unchanged; its rows carry ``query_perturbation = "none"``."""

    name = "none"

    def __init__(self) -> None:
        pass

    def variants(self, examples: Sequence[Example], rt: Runtime) -> list[QueryVariant]:
        return [QueryVariant(ex, "none") for ex in examples]


@component("perturbation/doc", "none")
class NoDocPerturbation:
    """Leaves every document unchanged; its rows carry ``doc_perturbation = "none"``."""

    name = "none"

    def __init__(self) -> None:
        pass

    def apply(self, inputs: Sequence[CellInput], rt: Runtime) -> list[CellInput]:
        return list(inputs)
