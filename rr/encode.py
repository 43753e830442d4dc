"""Moved to :mod:`rr.commands.encode` (see CHANGELOG.md): this alias warns and goes in the next release."""

from rr.commands import encode
from rr.moved import moved_module

__getattr__, __dir__ = moved_module("rr.encode", encode)
