"""Moved to :mod:`rr.commands.perturb_queries` (``rr perturb-queries``; see CHANGELOG.md): this alias,
imported or run with ``python -m``, warns and goes in the next release."""

from rr.commands import perturb_queries
from rr.moved import moved_module, run_moved_main

if __name__ == "__main__":
    run_moved_main("rr.perturbations.generate", "rr.commands.perturb_queries", "rr perturb-queries")

__getattr__, __dir__ = moved_module("rr.perturbations.generate", perturb_queries)
