"""Moved to :mod:`rr.analysis.power` (see CHANGELOG.md): this alias warns and goes in the next release."""

from rr.analysis import power
from rr.moved import moved_module

__getattr__, __dir__ = moved_module("rr.power", power)
