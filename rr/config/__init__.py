"""rr's configs: the public face of the rooms below (import from here or from the owning module).

- :mod:`rr.config.schemas`: the dataclass schemas (:class:`RootSchema`, one per component) stored in
  Hydra's ConfigStore, so a misspelled key fails at compose time.
- :mod:`rr.config.settings`: a job's top-level stage settings, typed, read once (:func:`job_settings`).
- :mod:`rr.config.composition`: where the configs are, Hydra composition as ``rr`` does it
  (:func:`compose`, :func:`hydra_context`, :func:`register_configs`) and ``rr --help``'s group list.
- :mod:`rr.config.identity`: the semantic config and the job id hashed from it (:func:`job_id`).
- :mod:`rr.config.origin`: where the running job's settings come from (:func:`setting_origin`).
- :mod:`rr.config.instantiation`: the one ``instantiate`` entry point (:func:`instantiate`,
  :func:`instantiate_as`).
"""

from __future__ import annotations

from rr.config.composition import (
    MULTI_GROUPS,
    PACKAGE_CONFIG_DIR,
    PRIMARY_CONFIG,
    compose,
    config_dir,
    config_groups_help,
    hydra_context,
    register_configs,
)
from rr.config.identity import (
    NON_SEMANTIC_KEYS,
    NON_SEMANTIC_LEAVES,
    WHOLE_RESPONSE_STRATEGY,
    job_id,
    semantic_config,
    with_model_identities,
)
from rr.config.instantiation import instantiate, instantiate_as, protocol_members
from rr.config.origin import experiment_settings, setting_origin
from rr.config.schemas import (
    EncodeSchema,
    GridSchema,
    PathsSchema,
    RootSchema,
    ScoringSchema,
    import_components,
)
from rr.config.settings import JobSettings, job_settings

__all__ = [
    "MULTI_GROUPS",
    "NON_SEMANTIC_KEYS",
    "NON_SEMANTIC_LEAVES",
    "PACKAGE_CONFIG_DIR",
    "PRIMARY_CONFIG",
    "WHOLE_RESPONSE_STRATEGY",
    "EncodeSchema",
    "GridSchema",
    "JobSettings",
    "PathsSchema",
    "RootSchema",
    "ScoringSchema",
    "compose",
    "config_dir",
    "config_groups_help",
    "experiment_settings",
    "hydra_context",
    "import_components",
    "instantiate",
    "instantiate_as",
    "job_id",
    "job_settings",
    "protocol_members",
    "register_configs",
    "semantic_config",
    "setting_origin",
    "with_model_identities",
]
