"""Prompt templates (Jinja2 files, verbatim from the papers) and answer extraction."""

from rr.prompts.render import render, template_source

__all__ = ["render", "template_source"]
