"""Moved to :mod:`rr.commands.plan` (the command), :mod:`rr.cost` and :mod:`rr.pipeline` (the
estimates; see CHANGELOG.md): this alias warns and goes in the next release."""

from rr import cost, pipeline
from rr.commands import plan
from rr.moved import moved_module

__getattr__, __dir__ = moved_module("rr.plan", plan, cost, pipeline)
