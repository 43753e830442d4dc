"""Config schemas, the job-id resolver and the one ``instantiate`` entry point.

Every registered component (see :mod:`rr.registry`) gets a dataclass schema in Hydra's
ConfigStore named ``<group>/<option>_schema``; each option YAML starts with
``defaults: [<option>_schema@_here_, _self_]``. The top level has its own schema
(:class:`RootSchema`), so a misspelled key anywhere fails at compose time.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from rr.errors import ConfigError, UserError
from rr.hashing import content_hash
from rr.model_identity import HUB_TARGETS, model_identity
from rr.registry import COMPONENT_MODULES, COMPONENTS, schema_for

#: The configs shipped with rr (``config.yaml``, ``encode.yaml``, one folder per group). In a checkout
#: they live in the top-level ``conf/`` (``rr/conf`` is a link to it); a wheel carries them as the
#: package data ``rr/conf``, so a non-editable install runs from any folder.
PACKAGE_CONFIG_DIR = str((Path(__file__).resolve().parent / "conf").resolve())


#: The primary config of ``rr`` (``<config folder>/config.yaml``; ``rr encode``'s is ``encode``).
PRIMARY_CONFIG = "config"


def config_dir() -> str:
    """The primary config folder: ``RR_CONFIG_DIR`` if set, else the package's own."""
    return os.environ.get("RR_CONFIG_DIR") or PACKAGE_CONFIG_DIR


#: Config groups that select several options at once (one cell dimension each); their
#: option YAMLs are placed at ``<group>.<option>`` (``# @package retriever.bm25``).
MULTI_GROUPS = ("retriever", "strategy")

#: Top-level keys that do not change results and so are left out of the job id.
NON_SEMANTIC_KEYS = (
    "hydra",
    "paths",
    "logger",
    "progress",
    "name",
    "force",
    "flush_every",
    "strict_window",
    "cpu_warn_minutes",
    "shards",
    "shard",
    "shard_gpus",
)
#: Keys left out of the job id wherever they occur (throughput settings, not semantics).
NON_SEMANTIC_LEAVES = (
    "batch_size",
    "n_threads",
    "n_batch",
    "device",
    "num_workers",
    "cache_dir",
    "model_cache_dir",
    "show_progress",
    "data_parallel",
    "dp_timeout_s",
    # hf / llamacpp: a shared prefix computed once; the same tokens up to float rounding, as batch_size
    "prefix_cache",
    "block_size",  # dense: exact search over blocks ranks as one in-memory index does
    "gpu_search",
    "download_timeout_s",
    # dense, approximate index: the recall check on the job's queries reports, it changes no result
    "query_recall_sample",
    "query_recall_seed",
    "recall_warn_below",
    # generator: the model's public name, a label (summary.json public_model); what the model is, is its id
    "model_name",
)


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
    dataset: Any = MISSING
    corpus: Any = MISSING
    retriever: Any = field(default_factory=dict)
    generator: Any = MISSING
    strategy: Any = field(default_factory=dict)
    judge: Any = MISSING
    perturbation: Any = field(default_factory=dict)
    logger: Any = field(default_factory=dict)
    experiment: Any = None


@dataclass(frozen=True)
class JobSettings:
    """A job's top-level stage settings, typed, read once from its config by :func:`job_settings`
    (the components' settings stay config nodes: :func:`instantiate` builds them). A key the config
    lacks takes :class:`RootSchema`'s default: defaults are declared there and nowhere else.

    Attributes:
        name, seed: The job's ``name`` label and ``seed``.
        ks: The positive k values of ``grid.k``, sorted and unique.
        closed_book: Whether k = 0 cells are made (``grid.closed_book``, or 0 in ``grid.k``).
        orders: ``grid.orders``.
        cache_dir: ``paths.cache_dir``, resolved.
        scored_text: ``scoring.text`` (:data:`rr.prompts.answer.SCORED_TEXTS`).
        progress, force, flush_every, strict_window, cpu_warn_minutes: As in :class:`RootSchema`.
    """

    name: str | None
    seed: int
    ks: list[int]
    closed_book: bool
    orders: list[str]
    scored_text: str
    cache_dir: str
    progress: bool
    force: bool
    flush_every: int
    strict_window: bool
    cpu_warn_minutes: float | None


def job_settings(cfg: DictConfig) -> JobSettings:
    """The :class:`JobSettings` of a composed job config.

    Raises:
        ConfigError: ``grid.k`` holds a negative value, or ``scoring.text`` is not a known text.
    """
    from rr.prompts.answer import SCORED_TEXTS

    root, grid, paths, scoring = RootSchema(), GridSchema(), PathsSchema(), ScoringSchema()

    def get(node: Any, key: str, schema: Any) -> Any:
        return node.get(key, getattr(schema, key)) if node is not None else getattr(schema, key)

    g, p = cfg.get("grid"), cfg.get("paths")
    ks = [int(k) for k in get(g, "k", grid)]
    if any(k < 0 for k in ks):
        raise ConfigError("grid.k", f"must be >= 0, got {ks}")
    warn = get(cfg, "cpu_warn_minutes", root)
    text = str(get(cfg.get("scoring"), "text", scoring))
    if text not in SCORED_TEXTS:
        raise ConfigError("scoring.text", f"must be one of {', '.join(SCORED_TEXTS)}, got {text!r}")
    return JobSettings(
        name=get(cfg, "name", root),
        seed=int(get(cfg, "seed", root)),
        ks=sorted({k for k in ks if k > 0}),
        closed_book=bool(get(g, "closed_book", grid)) or 0 in ks,
        orders=[str(o) for o in get(g, "orders", grid)],
        scored_text=text,
        cache_dir=str(get(p, "cache_dir", paths)),
        progress=bool(get(cfg, "progress", root)),
        force=bool(get(cfg, "force", root)),
        flush_every=int(get(cfg, "flush_every", root)),
        strict_window=bool(get(cfg, "strict_window", root)),
        cpu_warn_minutes=None if warn is None else float(warn),
    )


@dataclass
class EncodeSchema(RootSchema):
    """``rr encode`` (``conf/encode.yaml``): the job config plus which shard of the corpus to embed."""

    shards: int = 1
    shard: int | None = None
    shard_gpus: int = 0


def import_components() -> None:
    """Import every built-in component module, then every plugin's (entry-point group
    ``rr.components``, :mod:`rr.plugins`), so that their ``@component`` decorators run."""
    from rr.plugins import import_plugin_components

    for mod in COMPONENT_MODULES:
        importlib.import_module(mod)
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


def register_configs() -> None:
    """Store the root schema and one schema per registered component in Hydra's ConfigStore."""
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
    if not OmegaConf.has_resolver("rr_job_id"):
        OmegaConf.register_new_resolver("rr_job_id", _job_id_resolver)
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


def semantic_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config minus everything that does not change results (see module constants)."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in NON_SEMANTIC_LEAVES}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    # Resolve first (semantic keys may interpolate non-semantic ones), then drop; never touch
    # the hydra node, whose run dir interpolates the job id itself.
    keys = [str(k) for k in cfg if k != "hydra"]
    container = OmegaConf.to_container(OmegaConf.masked_copy(cfg, keys), resolve=True)
    assert isinstance(container, dict)
    if "experiment" in container:
        # The experiment's name is a label (its settings are in the config itself); null, as it was
        # before experiments named themselves, so that every job keeps its id.
        container["experiment"] = None
    if _scores_the_strategies_answer(container):
        container.pop("scoring", None)  # what every job scored before scoring.text existed: ids kept
    return with_model_identities(strip({k: v for k, v in container.items() if k not in NON_SEMANTIC_KEYS}))


def with_model_identities(node: Any) -> Any:
    """``node`` with ``model_identity`` beside the ``model`` of every component that has one and whose
    model is not pinned by its name alone (see :func:`rr.model_identity.model_identity`): a local
    folder's content digest, a hub id's commit. A changed weight file is a new job."""
    if isinstance(node, list):
        return [with_model_identities(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: with_model_identities(v) for k, v in node.items()}
    model, target = out.get("model"), out.get("_target_")
    if isinstance(model, str) and isinstance(target, str):
        revision = out.get("revision")
        ident = model_identity(
            model, revision if isinstance(revision, str) else None, hub=target in HUB_TARGETS
        )
        if ident is not None:
            out["model_identity"] = ident
    return out


#: The strategy whose answer is its whole stripped response (it asks for no ``Answer:`` marker).
WHOLE_RESPONSE_STRATEGY = "rr.strategies.rgb.RGBPrompt"


def _scores_the_strategies_answer(container: dict[Any, Any]) -> bool:
    """Whether ``scoring.text`` has the judge score each strategy's own answer, the one text scored
    before the key existed: ``extracted`` (or no ``scoring``), or ``whole`` when every strategy is
    ``strategy=rgb``, whose answer is its whole stripped response. Such a job's id leaves ``scoring``
    out, so that it keeps the id it had."""
    scoring = container.get("scoring")
    text = scoring.get("text", "extracted") if isinstance(scoring, dict) else "extracted"
    if text == "extracted":
        return True
    strategies = container.get("strategy")
    return (
        text == "whole"
        and isinstance(strategies, dict)
        and bool(strategies)
        and all(
            isinstance(s, dict) and s.get("_target_") == WHOLE_RESPONSE_STRATEGY for s in strategies.values()
        )
    )


def job_id(cfg: DictConfig) -> str:
    """A job's identity: 12 hex digits of the hash of its semantic config (seed included)."""
    return content_hash(semantic_config(cfg), 12)


def _job_id_resolver(*, _root_: DictConfig) -> str:
    return job_id(_root_)


#: Keys an experiment sets that are not settings of the job (its label, its defaults list).
_EXPERIMENT_LABELS = ("defaults", "name", "experiment")


def _hydra_job() -> Any:
    """Hydra's config of the running job (``hydra.*``), or ``None`` outside a Hydra run (``compose``)."""
    from hydra.core.hydra_config import HydraConfig

    return HydraConfig.get() if HydraConfig.initialized() else None


def _command_line_keys(hc: Any) -> set[str]:
    """The keys the command line (or the sweep's values) set for this job: ``dataset.n``, ``dataset``."""
    return {str(o).split("=", 1)[0].lstrip("+~") for o in hc.overrides.task}


def _experiment_files(hc: Any, group: str | None = None) -> list[tuple[DictConfig, str]]:
    """The experiment's own config and, for ``group`` (``dataset``, ``corpus``), the experiment-data
    file it applied to it: ``(raw config, key prefix)`` pairs, prefix ``""`` for the experiment's
    global keys and ``"dataset."`` for a data file's. Files that cannot be read are left out."""
    from hydra.core.global_hydra import GlobalHydra

    choices = hc.runtime.choices
    paths = [(f"experiment/{choices.get('experiment')}", "")]
    if group is not None and (data := choices.get(f"experiment_data@{group}")):
        paths.append((f"experiment_data/{data}", f"{group}."))
    out = []
    repository = GlobalHydra.instance().config_loader().repository  # type: ignore[attr-defined]
    for path, prefix in paths:
        result = repository.load_config(path)
        if result is not None and isinstance(result.config, DictConfig):
            out.append((result.config, prefix))
    return out


def _leaf_keys(node: DictConfig, prefix: str = "") -> Iterator[str]:
    """The dotted keys of ``node``'s leaves (a list is a leaf): ``grid.k``, ``generator.max_new_tokens``."""
    for k, v in node.items():
        if isinstance(v, DictConfig):
            yield from _leaf_keys(v, f"{prefix}{k!s}.")
        else:
            yield f"{prefix}{k!s}"


def setting_origin(key: str) -> str | None:
    """Where the running job's value of ``key`` (``dataset.n``) comes from, for a line a person reads.

    Returns:
        ``"on the command line"`` (a sweep's values included), ``"from experiment=<name>"`` (the
        experiment or the data file it applied, ``conf/experiment_data``), ``"the default of
        dataset=<option>"``, or ``None`` outside a Hydra run (``rr.config.compose``) or when unknown.
    """
    try:
        hc = _hydra_job()
        if hc is None:
            return None
        if key in _command_line_keys(hc):
            return "on the command line"
        group, _, _ = key.partition(".")
        experiment = hc.runtime.choices.get("experiment")
        if experiment:
            for config, prefix in _experiment_files(hc, group):
                if key.startswith(prefix) and OmegaConf.select(config, key[len(prefix) :]) is not None:
                    return f"from experiment={experiment}"
        option = hc.runtime.choices.get(group)
        return f"the default of {group}={option}" if option else None
    except Exception:  # noqa: BLE001 - a note for the console; never fail a job over it
        return None


def experiment_settings(cfg: DictConfig) -> tuple[str, dict[str, Any]] | None:
    """The applied experiment's name and the settings it gives this job that the command line does
    not (``{"grid.k": [1, 2, 3], "generator.max_new_tokens": 24, ...}``, values as the job runs them;
    its data sizes are in the data lines), or ``None`` outside a Hydra run or without an experiment."""
    try:
        hc = _hydra_job()
        experiment = hc.runtime.choices.get("experiment") if hc is not None else None
        if not experiment:
            return None
        given = _command_line_keys(hc)
        out: dict[str, Any] = {}
        for config, _ in _experiment_files(hc)[:1]:  # the experiment's own file, not its data files
            for key in _leaf_keys(config):
                if key.split(".")[0] in _EXPERIMENT_LABELS or key in given:
                    continue
                value = OmegaConf.select(cfg, key, throw_on_missing=False)
                out[key] = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
        return experiment, out
    except Exception:  # noqa: BLE001 - a note for the console; never fail a job over it
        return None


def protocol_members(protocol: type) -> list[str]:
    """The attributes and methods a ``typing.Protocol`` class declares (its bases' included)."""
    names: dict[str, None] = {}
    for klass in reversed(protocol.__mro__):
        if not getattr(klass, "_is_protocol", False) or klass.__module__ == "typing":
            continue
        for name in [*getattr(klass, "__annotations__", {}), *vars(klass)]:
            if not name.startswith("_"):
                names[name] = None
    return list(names)


def instantiate_as(node: Any, protocol: type, key: str, **kwargs: Any) -> Any:
    """:func:`instantiate`, then check that the object implements ``protocol`` (a runtime-checkable
    ``typing.Protocol``, e.g. :class:`rr.retrieval.base.Retriever`).

    Raises:
        ConfigError: under ``key`` (``retriever.first_passages``), naming the class and what it lacks,
            so a plugin component missing a method fails before any data or model loads.
    """
    obj = instantiate(node, **kwargs)
    if not isinstance(obj, protocol):
        missing = [m for m in protocol_members(protocol) if not hasattr(obj, m)]
        cls = type(obj)
        raise ConfigError(
            key,
            f"{cls.__module__}.{cls.__qualname__} does not implement {protocol.__module__}."
            f"{protocol.__qualname__}: it lacks {', '.join(missing) or '?'}",
        )
    return obj


def instantiate(node: Any, **kwargs: Any) -> Any:
    """The one place ``rr`` turns a config node into an object.

    Every ``_target_`` goes through here, so an allow-list of importable targets is a
    one-line change. ``_convert_="all"`` hands plain lists/dicts to constructors.

    Raises:
        ConfigError: A constructor rejected a value; its key is placed under the node's path
            (``max_new_tokens`` of ``cfg.generator`` becomes ``generator.max_new_tokens``).
        UserError: Any other user error a constructor raised, unwrapped from Hydra's
            ``InstantiationException``.
    """
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate as hydra_instantiate

    try:
        return hydra_instantiate(node, _convert_="all", **kwargs)
    except InstantiationException as e:
        cause = e.__cause__
        if isinstance(cause, ConfigError):
            prefix = node._get_full_key(None) if isinstance(node, DictConfig) else ""
            raise cause.under(str(prefix)) from e
        if isinstance(cause, UserError):
            raise cause from e
        raise
