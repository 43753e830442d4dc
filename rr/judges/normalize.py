"""Moved to :mod:`rr.answers` (see CHANGELOG.md): this alias warns and goes in the next release."""

from rr import answers
from rr.moved import moved_module

__getattr__, __dir__ = moved_module("rr.judges.normalize", answers)
