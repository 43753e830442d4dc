"""Moved to :mod:`rr.commands.cli` (see CHANGELOG.md): this alias warns and goes in the next release."""

from rr.commands import cli
from rr.moved import moved_module

__getattr__, __dir__ = moved_module("rr.cli", cli)
