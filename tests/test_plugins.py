"""rr used from an installed wheel, and extended from a separate package (issue 16, part 1).

Both tests build real distributions with pip (offline: ``--no-index --no-build-isolation``, the
venv's setuptools) and install them with ``--target`` into the test's own folder, which goes first on
``PYTHONPATH`` of one ``python`` subprocess that runs ``rr`` (:func:`rr.commands.cli.main`, what ``python -m
rr`` runs) once per command line: the test environment itself is never changed.

* A plugin distribution (``pyproject.toml``, one retriever class, one YAML in its own config package,
  two entry points) adds ``retriever=[first_passages]`` with no edit to rr; a real job runs with it.
* rr's own wheel (not editable: the configs are package data) runs ``rr --cfg job`` and a one-example
  job from a folder that is not the checkout.

Both jobs run the simulated reader on the synthetic task: what is checked is the packaging and the
plugin's retriever, not a model.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from rr.config import instantiate

from .conftest import compose_config
from .test_resume import REPO, SMALL, rr_env

PLUGIN_MODULE = '''
"""A toy retriever: the corpus's passages in corpus order, every ``stride``-th one."""

from rr.records import Hit
from rr.registry import component


@component("retriever", "first_passages")
class FirstPassages:
    def __init__(self, stride: int = 1, name: str = "first_passages") -> None:
        self.stride = stride
        self.name = name
        self._ids: list[str] = []

    def index(self, corpus, cache_dir=None) -> None:
        self._ids = [p.id for p in corpus][:: self.stride]

    def search(self, queries, k):
        return [[Hit(pid, rank, 1.0 / rank) for rank, pid in enumerate(self._ids[:k], 1)] for _ in queries]

    def fingerprint(self) -> dict:
        return {"stride": self.stride}
'''

PLUGIN_YAML = """\
# @package retriever.first_passages
defaults:
  - first_passages_schema@_here_
  - _self_
_target_: rr_first_passages.FirstPassages
stride: 1
name: first_passages
"""

PLUGIN_PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "rr-first-passages"
version = "0.1.0"

[project.entry-points."rr.components"]
first_passages = "rr_first_passages"

[project.entry-points."rr.configs"]
first_passages = "rr_first_passages.conf"

[tool.setuptools.packages.find]
include = ["rr_first_passages*"]

[tool.setuptools.package-data]
"rr_first_passages.conf" = ["retriever/*.yaml"]
"""


def _pip_install(source: Path, target: Path) -> None:
    """``pip install --no-deps --target TARGET SOURCE`` offline, building with this venv's setuptools."""
    subprocess.run(
        [
            sys.executable,
            *("-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation"),
            *("--target", str(target), str(source)),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )


#: Runs ``rr`` once per command line of ``argv[1]`` (JSON) in one process, as ``python -m rr`` would:
#: first where ``rr`` and its configs were imported from, then after each command a line
#: ``@@rr-exit I CODE@@`` on stdout and stderr (one Python start instead of one per command).
DRIVER = """
import json, sys
from hydra.core.global_hydra import GlobalHydra
import rr, rr.commands.cli, rr.config
print(f"@@rr-where {rr.__file__} {rr.config.config_dir()}@@", flush=True)
for i, argv in enumerate(json.loads(sys.argv[1])):
    sys.argv = ["rr", *argv]
    code = 0
    try:
        rr.commands.cli.main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else int(e.code is not None)
    GlobalHydra.instance().clear()
    for stream in (sys.stdout, sys.stderr):
        stream.write(f"\\n@@rr-exit {i} {code}@@\\n")
        stream.flush()
"""


def _rr(
    commands: list[list[str]], cwd: Path, site: Path, with_checkout: bool = True
) -> tuple[str, list[tuple[int, str, str]]]:
    """Run ``rr`` with each command line in one subprocess (:data:`DRIVER`); return where ``rr`` was
    imported from (``"<rr/__init__.py> <config folder>"``) and each command's (exit status, stdout, stderr)."""
    env = rr_env()
    paths = [str(site)] + ([env["PYTHONPATH"]] if with_checkout else [])
    env["PYTHONPATH"] = ":".join(paths)
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(commands)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    where, out = proc.stdout.split("@@\n", 1)
    outs, errs = out.split("\n@@rr-exit "), proc.stderr.split("\n@@rr-exit ")
    results = []
    for i in range(len(commands)):
        code = outs[i + 1].split("@@", 1)[0].split()
        assert int(code[0]) == i, proc.stdout[-3000:]
        results.append((int(code[1]), outs[i].split("@@\n", 1)[-1], errs[i].split("@@\n", 1)[-1]))
    return where.removeprefix("@@rr-where "), results


def test_a_plugin_distribution_adds_a_retriever_without_editing_rr(tmp_path: Path) -> None:
    src = tmp_path / "plugin"
    (src / "rr_first_passages" / "conf" / "retriever").mkdir(parents=True)
    (src / "pyproject.toml").write_text(PLUGIN_PYPROJECT)
    (src / "rr_first_passages" / "__init__.py").write_text(textwrap.dedent(PLUGIN_MODULE))
    (src / "rr_first_passages" / "conf" / "__init__.py").write_text("")
    (src / "rr_first_passages" / "conf" / "retriever" / "first_passages.yaml").write_text(PLUGIN_YAML)
    site = tmp_path / "site"
    _pip_install(src, site)
    assert (site / "rr_first_passages-0.1.0.dist-info" / "entry_points.txt").exists()

    # the simulated reader on the synthetic task: the plugin's retriever is checked, not a model
    small = ["generator=simulated", "dataset=synthetic", "corpus=synthetic"]
    small += [a for a in SMALL if not a.startswith(("retriever=", "grid.k="))] + ["grid.k=[1,2]"]
    out = tmp_path / "out"
    job = [*small, "retriever=[first_passages]", "retriever.first_passages.stride=2"]
    _, (run, typo, listed) = _rr(
        [
            [*job, f"paths.output_root={out}"],
            # the plugin's option is typed like a built-in one: a misspelled key fails at compose time
            [*job, "retriever.first_passages.strid=3", "--cfg", "job"],
            # and it is listed beside the built-in options
            ["--help"],
        ],
        tmp_path,
        site,
    )
    assert run[0] == 0, run[2][-3000:]
    (scores_path,) = out.glob("runs/*/*/scores.parquet")
    scores = pd.read_parquet(scores_path)
    assert len(scores) == 2 * (1 + 2 * 2)  # 2 questions x (closed-book + k in {1, 2} x 2 orders)
    assert set(scores.loc[scores["k"] > 0, "retriever"]) == {"first_passages"}
    # the plugin's ranking reached the prompts: passages 0 and 2 of the corpus (stride 2), in cell order
    corpus = instantiate(compose_config(small).corpus).load()
    p0, p2 = corpus.passages[0].id, corpus.passages[2].id
    docs = {(r.k, r.order): tuple(r.doc_ids) for r in scores[scores["k"] > 0].itertuples()}
    assert docs == {
        (1, "original"): (p0,),
        (1, "reversed"): (p0,),
        (2, "original"): (p0, p2),
        (2, "reversed"): (p2, p0),
    }
    assert typo[0] != 0
    assert "strid" in typo[2]
    assert listed[0] == 0 and "first_passages" in listed[1]


def test_rr_runs_from_its_wheel_outside_the_checkout(tmp_path: Path) -> None:
    src = tmp_path / "rr-src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for part in ("rr", "hydra_plugins"):
        shutil.copytree(REPO / part, src / part, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    site = tmp_path / "site"
    _pip_install(src, site)
    assert (site / "rr" / "conf" / "config.yaml").exists()
    assert (site / "rr" / "conf" / "sweep" / "cao2025_mini.yaml").exists()

    out = tmp_path / "out"
    job = [
        "generator=simulated",
        "dataset=synthetic",
        "corpus=synthetic",
    ]  # packaging is checked, not a model
    job += [*SMALL, "dataset.n=1", "grid.orders=[original]", f"paths.output_root={out}"]
    where, (cfg, run) = _rr([["--cfg", "job"], job], tmp_path, site, with_checkout=False)
    module, conf = where.split()
    assert module.startswith(str(site)) and conf.startswith(str(site))
    assert cfg[0] == 0, cfg[2][-2000:]
    assert "name: cao2025_mini" in cfg[1]
    assert run[0] == 0, run[2][-3000:]
    (scores_path,) = out.glob("runs/*/*/scores.parquet")
    assert len(pd.read_parquet(scores_path)) == 2  # closed-book + k=1, one question


def test_users_config_folder_on_the_search_path_and_rr_config_dir(tmp_path: Path, monkeypatch) -> None:
    from rr.config import PACKAGE_CONFIG_DIR, compose

    mine = tmp_path / "my_conf" / "experiment"
    mine.mkdir(parents=True)
    (mine / "my_ablation.yaml").write_text(
        "# @package _global_\ndefaults:\n  - cao2025_mini\n  - _self_\nname: my_ablation\ngrid:\n  k: [3]\n"
    )
    cfg = compose([f"hydra.searchpath=[file://{tmp_path / 'my_conf'}]", "experiment=my_ablation"])
    assert (cfg.name, list(cfg.grid.k), cfg.dataset.n) == ("my_ablation", [3], compose().dataset.n)

    # RR_CONFIG_DIR replaces rr's config folder altogether
    copy = tmp_path / "conf_copy"
    shutil.copytree(PACKAGE_CONFIG_DIR, copy, symlinks=False)
    text = (copy / "config.yaml").read_text().replace("\nname: rr\n", "\nname: from_copy\n")
    (copy / "config.yaml").write_text(text.replace("  - experiment: cao2025_mini", "  - experiment: null"))
    monkeypatch.setenv("RR_CONFIG_DIR", str(copy))
    assert compose().name == "from_copy"


def test_a_plugin_that_fails_to_import_is_named_in_one_user_error(monkeypatch) -> None:
    from importlib.metadata import EntryPoint

    import rr.plugins
    from rr.commands.errors import user_message
    from rr.errors import UserError

    broken = EntryPoint(name="broken", value="rr_no_such_plugin_module", group=rr.plugins.COMPONENTS_GROUP)
    monkeypatch.setattr(rr.plugins, "entry_points", lambda group: [broken] if group == broken.group else [])
    with pytest.raises(UserError) as err:
        rr.plugins.import_plugin_components()
    message = user_message(err.value)
    assert message is not None
    assert "entry point broken = 'rr_no_such_plugin_module' (group rr.components" in message
    assert "failed to import: ModuleNotFoundError" in message
    assert rr.plugins.plugin_config_paths() == []


def test_a_plugins_components_say_which_entry_point_registered_them(tmp_path: Path, monkeypatch) -> None:
    from importlib.metadata import EntryPoint

    import rr.plugins
    from rr.registry import BUILT_IN, COMPONENTS

    (tmp_path / "rr_origin_probe.py").write_text(
        "from rr.registry import component\n\n\n"
        "@component('retriever', 'origin_probe')\n"
        "class OriginProbe:\n"
        "    def __init__(self, name: str = 'origin_probe') -> None:\n"
        "        self.name = name\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "rr_origin_probe", raising=False)
    probe = EntryPoint(name="probe", value="rr_origin_probe", group=rr.plugins.COMPONENTS_GROUP)
    monkeypatch.setattr(rr.plugins, "entry_points", lambda group: [probe] if group == probe.group else [])
    try:
        assert rr.plugins.import_plugin_components() == ["rr_origin_probe"]
        origin = COMPONENTS["retriever"].origin("origin_probe")
        assert origin.startswith("plugin entry point probe = 'rr_origin_probe' (group rr.components")
        assert COMPONENTS["retriever"].origin("bm25") == BUILT_IN
    finally:
        COMPONENTS["retriever"].pop("origin_probe", None)
        sys.modules.pop("rr_origin_probe", None)
