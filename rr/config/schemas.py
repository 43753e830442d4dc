"""The dataclass schemas of rr's configs, stored in Hydra's ConfigStore.

Every registered component (see :mod:`rr.registry`) gets a dataclass schema in Hydra's
ConfigStore named ``<group>/<option>_schema``; each option YAML starts with
``defaults: [<option>_schema@_here_, _self_]``. The top level has its own schema
(:class:`RootSchema`; ``rr encode``'s is :class:`EncodeSchema`), so a misspelled key anywhere
fails at compose time. A setting's default is declared here and nowhere else
(:func:`rr.config.settings.job_settings` reads them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from rr.registry import COMPONENT_PACKAGES, COMPONENTS, import_builtins, schema_for


@dataclass
class GridSchema:
    """The cells of a job. ``k``: retrieval sizes (0 = closed-book); ``orders``: document orders."""

    k: list[int] = field(default_factory=lambda: [5, 10, 25, 50, 75, 100])
    orders: list[str] = field(default_factory=lambda: ["original", "reversed", "shuffled"])
    closed_book: bool = True


@dataclass
class PathsSchema:
    """Where outputs and caches go (relative paths are relative to the launch folder)."""

    output_root: str = "outputs"
    cache_dir: str = "${paths.output_root}/cache"
    model_cache_dir: str = "${oc.env:RR_MODEL_CACHE,${oc.env:HOME,.}/.cache/rr/models}"


@dataclass
class ScoringSchema:
    """Which text of a model's output the judge scores (``scoring.text``): ``extracted`` (the
    strategy's answer: after the last ``Answer:``, else the first line), ``whole`` (the whole
    generation: BERGEN, RGB) or ``first_line`` (lost-in-the-middle's script, SURE). Set by each
    paper's experiment config (docs/scoring-parity.md)."""

    text: str = "extracted"


@dataclass
class ResourcesSchema:
    """What one job needs from a scheduler (not part of the job id).

    ``gpus``: GPUs one job requests from a GPU launcher (``hydra/launcher=slurm`` requests them,
    and ``cpus_per_task`` / ``mem_gb`` per GPU); ``None``: the launcher's ``gpus_per_node``. A
    paper sweep sets it per model from ``gpus_by_model`` (a model not listed: 1), and its model's
    ``generator.tensor_parallel_size`` to it (``sweeps/cao2025.yaml``).
    """

    gpus: int | None = None
    gpus_by_model: dict[str, int] = field(default_factory=dict)


@dataclass
class RootSchema:
    """Top-level stage settings; the groups (dataset, generator, ...) have their own schemas."""

    name: str = "rr"
    seed: int = 0
    grid: GridSchema = field(default_factory=GridSchema)
    scoring: ScoringSchema = field(default_factory=ScoringSchema)
    paths: PathsSchema = field(default_factory=PathsSchema)
    progress: bool = True
    force: bool = False
    flush_every: int = 64
    strict_window: bool = False
    cpu_warn_minutes: float | None = 10.0
    resources: ResourcesSchema = field(default_factory=ResourcesSchema)
    dataset: Any = MISSING
    corpus: Any = MISSING
    retriever: Any = field(default_factory=dict)
    generator: Any = MISSING
    strategy: Any = field(default_factory=dict)
    judge: Any = MISSING
    perturbation: Any = field(default_factory=dict)
    logger: Any = field(default_factory=dict)
    experiment: Any = None


@dataclass
class EncodeSchema(RootSchema):
    """``rr encode`` (``conf/encode.yaml``): the job config plus which shard of the corpus to embed."""

    shards: int = 1
    shard: int | None = None
    shard_gpus: int = 0


def import_components() -> None:
    """Import every module of rr's component packages (:data:`rr.registry.COMPONENT_PACKAGES`), then every
    plugin's (entry-point group ``rr.components``, :mod:`rr.plugins`), so that their ``@component``
    decorators run."""
    from rr.plugins import import_plugin_components

    import_builtins(*COMPONENT_PACKAGES)
    import_plugin_components()


#: (group, option) -> the class whose schema is in the ConfigStore.
_STORED: dict[tuple[str, str], type] = {}


def _share_the_config_store() -> None:
    """Let a copied config repository use the live ConfigStore instead of a deep copy of it.

    hydra-core 1.3.2 deep-copies its config repository, and with it the whole ConfigStore (rr's
    schemas, every plugin's), each time it builds a caching repository: once per config group
    listed by ``rr --help`` (~150 copies, 4-5 s of its 6 s) and once per job of a sweep. Composition
    only reads the store (``ConfigStore.load`` hands out a copy of the node), so the copies buy
    nothing; Hydra's main branch stopped copying it the same way (facebookresearch/hydra#2928,
    "Use latest configstore singleton instead of storing it"), not in a release yet.
    """
    if "__deepcopy__" not in vars(ConfigStore):
        ConfigStore.__deepcopy__ = lambda self, memo: self  # type: ignore[attr-defined]


def store_schemas() -> None:
    """Store the root schemas (:class:`RootSchema`, :class:`EncodeSchema`) and one schema per registered
    component (every built-in and plugin component imported first) in Hydra's ConfigStore; each class
    is stored once however often this runs (every compose calls it)."""
    import_components()
    _share_the_config_store()
    cs = ConfigStore.instance()
    if "rr_root_schema.yaml" not in cs.repo:
        cs.store(name="rr_root_schema", node=RootSchema)
        cs.store(name="rr_encode_schema", node=EncodeSchema)
    for group, options in COMPONENTS.items():
        for name, cls in options.items():
            if _STORED.get((group, name)) is not cls:  # every compose calls this: store each class once
                cs.store(group=group, name=f"{name}_schema", node=schema_for(cls))
                _STORED[(group, name)] = cls
