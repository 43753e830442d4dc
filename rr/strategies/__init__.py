"""Prompting strategies: how documents and questions become model requests (whole-batch steps)."""

from rr.strategies.base import CellInput, Strategy, StrategyOutput

__all__ = ["CellInput", "Strategy", "StrategyOutput"]
