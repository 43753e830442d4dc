"""Every YAML of every config group composes, validates and instantiates; typos fail at compose time.

A compose costs ~0.2-0.6 s, most of this module's time, so the module-scoped fixtures compose what
the tests read in one Hydra initialisation (the same ``hydra.compose`` as ``rr.config.compose``),
and fewer times: one compose holds an option of every group (``dataset=a corpus=b ...``, the
multi-select groups' options all at once), one job of a sweep a value of each of its keys. An option
whose shared compose fails is composed alone, so its own test fails with its own error."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import DictConfig, OmegaConf, open_dict

from rr.config import MULTI_GROUPS, hydra_context, instantiate, job_id
from rr.registry import COMPONENTS

from .conftest import CONF_DIR, compose_config

CONF = Path(CONF_DIR)
SKIP_GROUPS = {"experiment", "experiment_data", "hydra", "sweep"}


def _options() -> list[tuple[str, str]]:
    out = []
    for yaml in sorted(CONF.rglob("*.yaml")):
        rel = yaml.relative_to(CONF)
        group = str(rel.parent)
        if group == "." or group.split("/")[0] in SKIP_GROUPS:
            continue
        out.append((group, yaml.stem))
    return out


def _compose_all(
    jobs: Sequence[Sequence[str]], tmp_path: Path | None = None, hydra: bool = False
) -> dict[tuple[str, ...], DictConfig | Exception]:
    """Each override list's config (``rr.config.compose``; with ``hydra.*`` when ``hydra``), or what
    composing it raised, in one Hydra initialisation; outputs and caches under ``tmp_path``, as
    :func:`tests.conftest.compose_config` sets them."""
    from hydra import compose

    out: dict[tuple[str, ...], DictConfig | Exception] = {}
    with hydra_context():
        for overrides in jobs:
            try:
                cfg = compose("config", overrides=list(overrides), return_hydra_config=hydra)
            except Exception as e:  # noqa: BLE001 - re-raised by the test that reads it
                out[tuple(overrides)] = e
                continue
            if tmp_path is not None:
                with open_dict(cfg):
                    cfg.paths.output_root = str(tmp_path / "outputs")
                    cfg.paths.cache_dir = str(tmp_path / "cache")
                    cfg.progress = False
            out[tuple(overrides)] = cfg
    return out


def _read(configs: dict[tuple[str, ...], DictConfig | Exception], overrides: Sequence[str]) -> DictConfig:
    cfg = configs[tuple(overrides)]
    if isinstance(cfg, Exception):
        raise cfg
    return cfg


def _option_jobs() -> dict[tuple[str, str], tuple[str, ...]]:
    """(group, option) -> the overrides of the compose that holds it: compose ``i`` selects the
    ``i``-th option of every single-select group at once (27 composes for ~70 options), the first
    also every option of each multi-select group."""
    single: dict[str, list[str]] = {}
    for group, option in _options():
        single.setdefault(group, []).append(option)
    multi = {g: single.pop(g) for g in MULTI_GROUPS if g in single}
    out = {}
    for i in range(max(len(options) for options in single.values())):
        job = [f"{g}={options[i]}" for g, options in single.items() if i < len(options)]
        if i == 0:
            job += [f"{g}=[{','.join(options)}]" for g, options in multi.items()]
        out |= {(o.split("=")[0], o.split("=")[1]): tuple(job) for o in job if not o.endswith("]")}
        if i == 0:
            out |= {(g, o): tuple(job) for g, options in multi.items() for o in options}
    return out


OPTION_JOBS = _option_jobs()
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))
SWEEPS = sorted(p.stem for p in (CONF / "sweep").glob("*.yaml"))


@pytest.fixture(scope="module")
def composed(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, ...], DictConfig | Exception]:
    """The configs of every option and experiment (outputs under a temporary folder)."""
    jobs = [*dict.fromkeys(OPTION_JOBS.values()), *((f"experiment={e}",) for e in EXPERIMENTS)]
    return _compose_all(jobs, tmp_path_factory.mktemp("composed"))


def _select(cfg: DictConfig, group: str, option: str) -> DictConfig:
    node = OmegaConf.select(cfg, group.replace("/", "."))
    return node[option] if group in MULTI_GROUPS else node


@pytest.mark.parametrize(("group", "option"), _options(), ids=lambda x: str(x))
def test_every_option_composes_and_instantiates(
    group: str, option: str, composed: dict[tuple[str, ...], DictConfig | Exception], tmp_path: Path
) -> None:
    cfg = composed[OPTION_JOBS[(group, option)]]
    obj = node = None
    if not isinstance(cfg, Exception):
        node = _select(cfg, group, option)
        if not any(OmegaConf.is_missing(node, k) for k in node):
            try:
                obj = instantiate(node)
            except Exception:  # noqa: BLE001 - instantiated alone below, raising its own error
                node = None
    if node is None:  # the shared compose failed: this option alone (as `rr` would compose it)
        value = f"[{option}]" if group in MULTI_GROUPS else option
        node = _select(compose_config([f"{group}={value}"], tmp_path), group, option)
    missing = [k for k in node if OmegaConf.is_missing(node, k)]
    if missing:
        pytest.skip(f"{group}/{option} needs user values for {missing} (checked: it composes)")
    if obj is None:
        obj = instantiate(node)
    cls = COMPONENTS[group][next(n for n, c in COMPONENTS[group].items() if isinstance(obj, c))]
    assert isinstance(obj, cls)


def test_every_registered_component_has_a_yaml() -> None:
    for group, options in COMPONENTS.items():
        for name in options:
            assert (CONF / group / f"{name}.yaml").exists(), f"conf/{group}/{name}.yaml is missing"


TYPOS = ["generator.batchsize=4", "grid.kk=[1]", "retriever.bm25.k3=1", "seed=abc", "retriever=bm52"]
ISSUE = ["retriever=dense", "generator.batch_size=4", "grid.k=[1,3,5]", "grid.orders=[original,reversed]"]
SAME_JOB = ["generator.batch_size=2", "paths.output_root=/elsewhere"]
OTHER_JOBS = [["seed=1"], ["generator.model=HuggingFaceTB/SmolLM2-360M-Instruct"]]


@pytest.fixture(scope="module")
def overridden() -> dict[tuple[str, ...], DictConfig | Exception]:
    """The configs of this module's command lines (``paths`` as given: the job id must ignore them)."""
    return _compose_all([[], *([t] for t in TYPOS), ISSUE, SAME_JOB, *OTHER_JOBS])


@pytest.mark.parametrize("bad", TYPOS)
def test_typos_fail_at_compose_time(bad: str, overridden) -> None:
    with pytest.raises(ConfigCompositionException):
        _read(overridden, [bad])


def test_command_line_overrides_from_the_issue(overridden) -> None:
    cfg = _read(overridden, ISSUE)
    assert list(cfg.retriever) == ["dense"]
    assert cfg.generator.batch_size == 4
    assert list(cfg.grid.k) == [1, 3, 5]
    assert list(cfg.grid.orders) == ["original", "reversed"]


def test_job_id_ignores_paths_and_batch_size_but_not_seed(overridden) -> None:
    base, same = _read(overridden, []), _read(overridden, SAME_JOB)
    assert same.paths.output_root != base.paths.output_root
    assert job_id(base) == job_id(same)
    for other in OTHER_JOBS:
        assert job_id(base) != job_id(_read(overridden, other))


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_composes(experiment: str, composed) -> None:
    cfg = _read(composed, [f"experiment={experiment}"])
    assert cfg.name == experiment
    assert len(cfg.grid.k) >= 2


def test_paper_grid_is_the_papers(composed) -> None:
    cfg = _read(composed, ["experiment=cao2025"])
    assert list(cfg.grid.k) == [5, 10, 25, 50, 75, 100]
    assert list(cfg.grid.orders) == ["original", "reversed", "shuffled"]
    assert cfg.generator.max_new_tokens == 100 and cfg.generator.temperature == 0.0
    assert cfg.dataset.n == 500
    assert sorted(cfg.retriever) == ["bge_large", "bm25"]


def _values(values: object) -> list[str]:
    return [v.strip() for v in str(values).split(",")]


@pytest.fixture(scope="module")
def sweep_points(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[DictConfig | Exception, dict]]:
    """Per sweep: its config with ``hydra.*`` (or what composing it raised) and the composed configs
    of jobs of the sweep that give every value of its sweeper params: job ``i`` sets each key to its
    ``i``-th value (cycling through a shorter list), as one job of ``rr -m sweep=NAME`` would."""
    sweeps = _compose_all([[f"sweep={s}"] for s in SWEEPS], hydra=True)
    points = []
    for sweep in SWEEPS:
        cfg = sweeps[(f"sweep={sweep}",)]
        if isinstance(cfg, Exception) or not cfg.hydra.sweeper.params:
            continue
        params = {key: _values(values) for key, values in cfg.hydra.sweeper.params.items()}
        for i in range(max(len(v) for v in params.values())):
            points.append([f"sweep={sweep}", *(f"{k}={v[i % len(v)]}" for k, v in params.items())])
    composed = _compose_all(points, tmp_path_factory.mktemp("sweeps"))
    return {
        s: (sweeps[(f"sweep={s}",)], {k: v for k, v in composed.items() if k[0] == f"sweep={s}"})
        for s in SWEEPS
    }


@pytest.mark.parametrize("sweep", SWEEPS)
def test_every_sweep_composes_and_each_point_validates(sweep: str, sweep_points) -> None:
    cfg, points = sweep_points[sweep]
    if isinstance(cfg, Exception):
        raise cfg
    params = cfg.hydra.sweeper.params
    assert params, f"sweeps/{sweep}.yaml defines no sweeper params"
    for overrides in points:
        _read(points, overrides)  # each job composes
    # and every value of every key was in one of them
    given = {o for overrides in points for o in overrides}
    assert given >= {f"{key}={value}" for key, values in params.items() for value in _values(values)}


def test_configs_live_in_the_top_level_conf_folder() -> None:
    """The design card's layout: ``conf/`` at the top, ``sweeps/`` its named sweeps, ``rr/conf`` the wheel's view."""
    root = Path(__file__).resolve().parents[1]
    assert (root / "conf").resolve() == CONF
    assert (root / "conf" / "config.yaml").is_file() and not (root / "conf").is_symlink()
    assert (root / "rr" / "conf").resolve() == CONF  # package data in the wheel (a link in the checkout)
    assert (root / "sweeps").resolve() == CONF / "sweep"
    assert {p.name for p in (root / "sweeps").glob("*.yaml")} >= {"cao2025_mini.yaml", "rgb2024.yaml"}


def test_copied_config_repositories_read_the_live_config_store() -> None:
    """Hydra copies its config repository once per group that ``rr --help`` lists and once per sweep
    job; rr makes the copies share the ConfigStore (``rr.config.schemas._share_the_config_store``) instead of
    deep-copying every schema each time, so a copy still sees the store as it is, later entries too."""
    import copy

    from hydra._internal.config_repository import CachingConfigRepository, ConfigRepository
    from hydra._internal.utils import create_config_search_path
    from hydra.core.config_store import ConfigStore

    from rr.config import config_dir, register_configs

    register_configs()
    store = ConfigStore.instance()
    assert copy.deepcopy(store) is store
    repo = CachingConfigRepository(ConfigRepository(create_config_search_path(config_dir())))
    assert repo.config_exists("generator/simulated_schema.yaml")
    store.store(group="rr_test_late_group", name="late", node={"a": 1})
    assert repo.config_exists("rr_test_late_group/late.yaml")
    loaded = repo.load_config("rr_test_late_group/late.yaml")
    assert loaded is not None and loaded.config == {"a": 1}


RR_CONFIG_ROOMS = ("schemas", "settings", "composition", "identity", "origin", "instantiation")


def test_rr_config_is_the_public_face_of_its_modules() -> None:
    """``rr.config`` re-exports every public name of its modules (schemas, settings, composition,
    identity, origin, instantiation), each the owning module's own object, and still offers every
    name the single ``rr/config.py`` offered before the split (issue 44)."""
    import importlib
    import types

    import rr.config

    rooms = [importlib.import_module(f"rr.config.{room}") for room in RR_CONFIG_ROOMS]

    def defined_in(module: types.ModuleType, name: str) -> bool:
        value = vars(module).get(name)
        return value is not None and getattr(value, "__module__", module.__name__) == module.__name__

    before = {
        "MULTI_GROUPS", "NON_SEMANTIC_KEYS", "NON_SEMANTIC_LEAVES", "PACKAGE_CONFIG_DIR", "PRIMARY_CONFIG",
        "WHOLE_RESPONSE_STRATEGY", "EncodeSchema", "GridSchema", "JobSettings", "PathsSchema", "RootSchema",
        "ScoringSchema", "compose", "config_dir", "config_groups_help", "experiment_settings", "hydra_context",
        "import_components", "instantiate", "instantiate_as", "job_id", "job_settings", "protocol_members",
        "register_configs", "semantic_config", "setting_origin", "with_model_identities",
    }  # fmt: skip
    assert before <= set(rr.config.__all__)
    for name in rr.config.__all__:
        owners = [m for m in rooms if defined_in(m, name)]
        assert len(owners) == 1, f"{name}: defined in {[m.__name__ for m in owners]}"
        assert getattr(rr.config, name) is getattr(owners[0], name), name
