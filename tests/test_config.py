"""Every YAML of every config group composes, validates and instantiates; typos fail at compose time."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from rr.config import MULTI_GROUPS, instantiate, job_id
from rr.registry import COMPONENTS

from .conftest import CONF_DIR, compose_config

CONF = Path(CONF_DIR)
SKIP_GROUPS = {"experiment", "hydra", "sweep"}


def _options() -> list[tuple[str, str]]:
    out = []
    for yaml in sorted(CONF.rglob("*.yaml")):
        rel = yaml.relative_to(CONF)
        group = str(rel.parent)
        if group == "." or group.split("/")[0] in SKIP_GROUPS:
            continue
        out.append((group, yaml.stem))
    return out


@pytest.mark.parametrize(("group", "option"), _options(), ids=lambda x: str(x))
def test_every_option_composes_and_instantiates(group: str, option: str, tmp_path: Path) -> None:
    value = f"[{option}]" if group in MULTI_GROUPS else option
    overrides = [f"{group}={value}"]
    cfg = compose_config(overrides, tmp_path)
    node = OmegaConf.select(cfg, group.replace("/", "."))
    if group in MULTI_GROUPS:
        node = node[option]
    missing = [k for k in node if OmegaConf.is_missing(node, k)]
    if missing:
        pytest.skip(f"{group}/{option} needs user values for {missing} (checked: it composes)")
    obj = instantiate(node)
    cls = COMPONENTS[group][next(n for n, c in COMPONENTS[group].items() if isinstance(obj, c))]
    assert isinstance(obj, cls)


def test_every_registered_component_has_a_yaml() -> None:
    for group, options in COMPONENTS.items():
        for name in options:
            assert (CONF / group / f"{name}.yaml").exists(), f"conf/{group}/{name}.yaml is missing"


@pytest.mark.parametrize(
    "bad", ["generator.batchsize=4", "grid.kk=[1]", "retriever.bm25.k3=1", "seed=abc", "retriever=bm52"]
)
def test_typos_fail_at_compose_time(bad: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigCompositionException):
        compose_config([bad], tmp_path)


def test_command_line_overrides_from_the_issue(tmp_path: Path) -> None:
    cfg = compose_config(
        ["retriever=dense", "generator.batch_size=4", "grid.k=[1,3,5]", "grid.orders=[original,reversed]"],
        tmp_path,
    )
    assert list(cfg.retriever) == ["dense"]
    assert cfg.generator.batch_size == 4
    assert list(cfg.grid.k) == [1, 3, 5]
    assert list(cfg.grid.orders) == ["original", "reversed"]


def test_job_id_ignores_paths_and_batch_size_but_not_seed(tmp_path: Path) -> None:
    base = compose_config([], tmp_path)
    same = compose_config(["generator.batch_size=2", "paths.output_root=/elsewhere"], tmp_path)
    other_seed = compose_config(["seed=1"], tmp_path)
    other_model = compose_config(["generator.model=HuggingFaceTB/SmolLM2-360M-Instruct"], tmp_path)
    assert job_id(base) == job_id(same)
    assert job_id(base) != job_id(other_seed)
    assert job_id(base) != job_id(other_model)


@pytest.mark.parametrize("experiment", sorted(p.stem for p in (CONF / "experiment").glob("*.yaml")))
def test_every_experiment_composes(experiment: str, tmp_path: Path) -> None:
    cfg = compose_config([f"experiment={experiment}"], tmp_path)
    assert cfg.name == experiment
    assert len(cfg.grid.k) >= 2


def test_paper_grid_is_the_papers(tmp_path: Path) -> None:
    cfg = compose_config(["experiment=cao2025"], tmp_path)
    assert list(cfg.grid.k) == [5, 10, 25, 50, 75, 100]
    assert list(cfg.grid.orders) == ["original", "reversed", "shuffled"]
    assert cfg.generator.max_new_tokens == 100 and cfg.generator.temperature == 0.0
    assert cfg.dataset.n == 500
    assert sorted(cfg.retriever) == ["bge_large", "bm25"]


def _compose_with_hydra(overrides: list[str]):
    from rr.config import compose

    return compose(overrides, return_hydra_config=True)


@pytest.mark.parametrize("sweep", sorted(p.stem for p in (CONF / "sweep").glob("*.yaml")))
def test_every_sweep_composes_and_each_point_validates(sweep: str, tmp_path: Path) -> None:
    cfg = _compose_with_hydra([f"sweep={sweep}"])
    params = cfg.hydra.sweeper.params
    assert params, f"sweeps/{sweep}.yaml defines no sweeper params"
    for key, values in params.items():
        for value in str(values).split(","):
            compose_config([f"sweep={sweep}", f"{key}={value.strip()}"], tmp_path)  # each point composes


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
    job; rr makes the copies share the ConfigStore (``rr.config._share_the_config_store``) instead of
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
