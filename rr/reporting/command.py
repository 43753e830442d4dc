"""Moved to :mod:`rr.commands.report` (see CHANGELOG.md): this alias warns and goes in the next release."""

from rr.commands import report
from rr.moved import moved_module

__getattr__, __dir__ = moved_module("rr.reporting.command", report)
