"""The identity perturbations (the default of both perturbation groups)."""

from __future__ import annotations

import numpy as np

from rr.registry import component


@component("perturbation/query", "none")
class NoQueryPerturbation:
    """Leaves every question unchanged; its rows carry ``query_perturbation = "none"``."""

    name = "none"

    def __init__(self) -> None:
        pass

    def apply(self, question: str, rng: np.random.Generator) -> str:
        return question


@component("perturbation/doc", "none")
class NoDocPerturbation:
    """Leaves every document unchanged; its rows carry ``doc_perturbation = "none"``."""

    name = "none"

    def __init__(self) -> None:
        pass

    def apply(self, text: str, rng: np.random.Generator) -> str:
        return text
