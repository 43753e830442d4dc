"""Components and configs from other installed packages, found by entry point.

A plugin is an ordinary distribution that declares two entry points in its ``pyproject.toml``::

    [project.entry-points."rr.components"]
    first_passages = "rr_first_passages"        # a module: importing it runs its @component decorators

    [project.entry-points."rr.configs"]
    first_passages = "rr_first_passages.conf"   # a package of YAMLs (conf/<group>/<option>.yaml)

``rr`` imports every ``rr.components`` module when it registers its schemas
(:func:`rr.config.composition.register_configs`), and adds every ``rr.configs`` package to Hydra's config
search path (through :mod:`hydra_plugins.rr_searchpath`, Hydra's own mechanism for a library that
brings configs), so ``rr retriever=[first_passages]`` works with no edit to rr. The worked example
is in the README ("Add a component") and ``tests/test_plugins.py`` builds and installs one.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import EntryPoint, entry_points

from rr.errors import UserError
from rr.registry import registering_from

#: Entry-point group naming modules to import (their ``@component`` classes register).
COMPONENTS_GROUP = "rr.components"
#: Entry-point group naming packages of YAML configs to put on Hydra's search path.
CONFIGS_GROUP = "rr.configs"


def plugin_entry_points(group: str) -> list[EntryPoint]:
    """The installed entry points of ``group``, sorted by name (a stable import order)."""
    return sorted(entry_points(group=group), key=lambda ep: (ep.name, ep.value))


def _origin(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return (
        f"entry point {ep.name} = {ep.value!r} (group {ep.group}, distribution {dist.name if dist else '?'})"
    )


def import_plugin_components() -> list[str]:
    """Import each ``rr.components`` module; return their names.

    Raises:
        UserError: a plugin module failed to import (named with its distribution), so a broken
            plugin says which one it is instead of failing somewhere inside Hydra.
    """
    names = []
    for ep in plugin_entry_points(COMPONENTS_GROUP):
        try:
            with registering_from(f"plugin {_origin(ep)}"):
                import_module(ep.value)
        except Exception as e:
            raise UserError(f"the rr plugin {_origin(ep)} failed to import: {type(e).__name__}: {e}") from e
        names.append(ep.value)
    return names


def plugin_config_paths() -> list[str]:
    """Hydra search-path entries (``pkg://...``) of every ``rr.configs`` entry point."""
    return [f"pkg://{ep.value.strip()}" for ep in plugin_entry_points(CONFIGS_GROUP)]
