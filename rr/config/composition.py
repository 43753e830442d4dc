"""Hydra composition: where rr's configs are, the one set-up that composes them as ``rr`` would
(:func:`hydra_context`, :func:`compose`), and ``rr --help``'s list of config groups."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from rr.config.identity import job_id_resolver
from rr.config.schemas import store_schemas

#: The configs shipped with rr (``config.yaml``, ``encode.yaml``, one folder per group). In a checkout
#: they live in the top-level ``conf/`` (``rr/conf`` is a link to it); a wheel carries them as the
#: package data ``rr/conf``, so a non-editable install runs from any folder.
PACKAGE_CONFIG_DIR = str((Path(__file__).resolve().parent.parent / "conf").resolve())


#: The primary config of ``rr`` (``<config folder>/config.yaml``; ``rr encode``'s is ``encode``).
PRIMARY_CONFIG = "config"


def config_dir() -> str:
    """The primary config folder: ``RR_CONFIG_DIR`` if set, else the package's own."""
    return os.environ.get("RR_CONFIG_DIR") or PACKAGE_CONFIG_DIR


#: Config groups that select several options at once (one cell dimension each); their
#: option YAMLs are placed at ``<group>.<option>`` (``# @package retriever.bm25``).
MULTI_GROUPS = ("retriever", "strategy")


def register_configs() -> None:
    """Store the root schema and one schema per registered component in Hydra's ConfigStore
    (:func:`rr.config.schemas.store_schemas`), and register rr's resolvers (``rr_job_id``,
    ``rr_config_groups``)."""
    store_schemas()
    if not OmegaConf.has_resolver("rr_job_id"):
        OmegaConf.register_new_resolver("rr_job_id", job_id_resolver)
    if not OmegaConf.has_resolver("rr_config_groups"):
        OmegaConf.register_new_resolver("rr_config_groups", config_groups_help)


@contextmanager
def hydra_context(directory: str | None = None) -> Iterator[None]:
    """Hydra initialised on rr's configs (``directory``, default :func:`config_dir`), schemas registered.

    Inside, ``hydra.compose`` composes as ``rr`` would; on exit Hydra is cleared again. Use
    :func:`compose` for one config; this for many (``rr status`` re-expanding a sweep).
    """
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=directory or config_dir(), version_base="1.3"):
            yield
    finally:
        GlobalHydra.instance().clear()


def compose(
    overrides: Sequence[str] = (),
    config_name: str | None = PRIMARY_CONFIG,
    directory: str | None = None,
    return_hydra_config: bool = False,
) -> DictConfig:
    """The config ``rr OVERRIDES`` would run (``config_name="encode"``: ``rr encode``'s)."""
    from hydra import compose as hydra_compose

    with hydra_context(directory):
        return hydra_compose(config_name, overrides=list(overrides), return_hydra_config=return_hydra_config)


def config_groups_help() -> str:
    """``rr --help``'s list of config groups and their options (``${rr_config_groups:}`` in
    ``conf/hydra/help/rr.yaml``): Hydra's own list (``$APP_CONFIG_GROUPS``) without the
    ``<option>_schema`` nodes rr stores beside every option, and with the options of plugins and of
    ``hydra.searchpath`` folders, which Hydra's config loader sees like rr's own.

    OmegaConf resolves the help template while Hydra merges configs, i.e. on every compose; listing
    the groups costs ~0.15 s each time, so outside ``--help`` this returns Hydra's own placeholder
    (the template is only rendered for ``--help``), and the list is made once per config loader.
    """
    import sys

    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.object_type import ObjectType

    if not {"--help", "-h"} & set(sys.argv[1:]):
        return "$APP_CONFIG_GROUPS"
    loader = GlobalHydra.instance().config_loader()
    if id(loader) in _GROUPS_HELP:
        return _GROUPS_HELP[id(loader)]

    def groups(parent: str) -> list[str]:
        out = []
        for name in loader.list_groups(parent):
            group = f"{parent}/{name}" if parent else name
            if group in ("hydra", "experiment_data"):  # experiment_data: picked by the experiment, not by you
                continue
            if loader.get_group_options(group, ObjectType.CONFIG):
                out.append(group)
            out += groups(group)
        return out

    lines = []
    for group in sorted(groups("")):
        options = sorted(o for o in loader.get_group_options(group) if not o.endswith("_schema"))
        if options:
            lines.append(f"{group}: {', '.join(options)}")
    # Launchers (where -m runs its jobs): rr's own profiles and the installed Hydra plugins'.
    launchers = sorted(o for o in loader.get_group_options("hydra/launcher") if not o.endswith("_schema"))
    lines.append(f"hydra/launcher (rr -m): {', '.join(launchers)}")
    _GROUPS_HELP[id(loader)] = "\n".join(lines)
    return _GROUPS_HELP[id(loader)]


#: id(Hydra's config loader) -> ``rr --help``'s group list (see :func:`config_groups_help`).
_GROUPS_HELP: dict[int, str] = {}
