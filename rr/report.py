"""Moved to :mod:`rr.reporting.job` (see CHANGELOG.md): this alias warns and goes in the next release."""

from rr.moved import moved_module
from rr.reporting import job

__getattr__, __dir__ = moved_module("rr.report", job)
