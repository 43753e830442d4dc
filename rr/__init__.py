"""rr: a Hydra-configured harness that measures how robustly LLMs use retrieved documents.

Start at :mod:`rr.pipeline` (one job), :mod:`rr.results` (the score table) and
:mod:`rr.metrics.robustness` (NDR, RSR, ROR).
"""

__version__ = "0.1.0"
