"""Moved to :mod:`rr.commands.status` (see CHANGELOG.md): this alias warns and goes in the next release."""

from rr.commands import status
from rr.moved import moved_module

__getattr__, __dir__ = moved_module("rr.sweep_report", status)
