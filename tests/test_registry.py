"""Schemas follow inheritance: a subclass declares only what it adds, its options still reject typos."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import MISSING

from rr.config import instantiate
from rr.data.hf import NQOpen
from rr.generation.vllm import VLLMGenerator
from rr.judges.llm import TwoStageJudge
from rr.perturbations.sure import RewritePerturbation, StylePerturbation
from rr.registry import init_parameters, schema_for

from .conftest import compose_config


class _Parent:
    def __init__(self, x: int, y: str = "a", z: list[int] | None = None) -> None:
        self.x, self.y, self.z = x, y, z


class _Child(_Parent):
    def __init__(self, extra: float = 1.5, y: str = "b", **kwargs: Any) -> None:
        super().__init__(y=y, **kwargs)
        self.extra = extra


class _GrandChild(_Child):
    def __init__(self, more: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.more = more


class _Closed(_Parent):
    """No ``**kwargs``: takes none of its parent's parameters."""

    def __init__(self, only: int = 3) -> None:
        super().__init__(x=only)


def _fields(cls: type) -> dict[str, tuple[Any, Any]]:
    out = {}
    for f in dataclasses.fields(schema_for(cls)):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        out[f.name] = (f.type, default)
    return out


def test_subclass_schema_has_its_parents_fields_and_its_own_defaults() -> None:
    fields = _fields(_GrandChild)
    assert list(fields) == ["_target_", "more", "extra", "x", "y", "z"]
    assert fields["more"] == (bool, True)
    assert fields["extra"] == (float, 1.5)
    assert fields["y"] == (str, "b")  # the subclass's default wins, at the parent's place
    assert fields["x"] == (int, MISSING)  # required in the parent: MISSING in the schema
    assert fields["z"][1] is None
    assert list(_fields(_Closed)) == ["_target_", "only"]


def test_real_subclasses_inherit_their_parents_parameters() -> None:
    style = _fields(StylePerturbation)
    assert style["kind"] == (str, "simple")
    assert style["max_new_tokens"] == (int, 512)  # RewritePerturbation's
    assert style["answer_check"] == (bool, True) and style["nli_max_new_tokens"] == (
        int,
        8,
    )  # SurePerturbation's
    assert _fields(RewritePerturbation)["kind"] == (str, MISSING)  # required there
    judge = _fields(TwoStageJudge)
    assert judge["name"] == (str, "two_stage") and judge["max_retries"] == (int, 2)
    assert judge["_recursive_"] == (bool, True)  # admitted by hydra_keys; the YAML sets false
    nq = init_parameters(NQOpen)
    assert list(nq) == ["path", "split", "n", "seed", "data_files", "revision", "cache_dir"]
    assert nq["path"][1] == "google-research-datasets/nq_open"


def test_drop_leaves_a_parents_parameter_out() -> None:
    params = init_parameters(VLLMGenerator)
    assert {"device", "data_parallel", "dp_timeout_s"}.isdisjoint(params)
    assert {"model", "dtype", "max_new_tokens", "temperature", "top_p", "seed", "batch_size"} <= set(params)


@pytest.mark.parametrize(
    "overrides",
    [
        ["perturbation/doc=style", "perturbation.doc.answer_chek=false"],  # SurePerturbation's
        ["perturbation/doc=style", "perturbation.doc.max_new_token=8"],  # RewritePerturbation's
        ["judge=two_stage", "judge.max_retrie=1"],
        ["dataset=nq_open", "dataset.data_file=x.jsonl"],
        ["dataset=nq_open", "dataset.subset=x"],  # only hotpot_qa takes one
        ["generator=vllm", "generator.temprature=0.5"],
        ["generator=vllm", "generator.data_parallel=2"],  # dropped from hf's
        ["generator=hf", "generator.max_new_token=5"],
    ],
    ids=lambda o: " ".join(o),
)
def test_a_typo_in_an_inherited_parameter_fails_at_compose(overrides: list[str], tmp_path: Path) -> None:
    with pytest.raises(ConfigCompositionException):
        compose_config(overrides, tmp_path)


def test_inherited_parameters_reach_the_object(tmp_path: Path) -> None:
    cfg = compose_config(
        [
            "perturbation/doc=style",
            "perturbation.doc.answer_check=false",
            "perturbation.doc.max_new_tokens=8",
            "judge=two_stage",
            "judge.max_retries=1",
            "generator.temperature=0.5",
        ],
        tmp_path,
    )
    style = instantiate(cfg.perturbation.doc)
    assert (style.kind, style.answer_check, style.max_new_tokens) == ("simple", False, 8)
    assert cfg.judge._recursive_ is False
    judge = instantiate(cfg.judge)
    assert judge.max_retries == 1 and judge.name == "two_stage"
    assert (
        judge.generator["_target_"] == "rr.generation.hf.HFGenerator"
    )  # _recursive_: false kept it a config
    assert instantiate(cfg.generator).default_params().temperature == 0.5


# ----------------------------------------------------------------------------- one registry type


def test_every_registry_is_one_type_and_knows_its_built_ins() -> None:
    from rr.commands.cli import SUBCOMMANDS
    from rr.metrics import METRICS, ndr
    from rr.registry import BUILT_IN, COMPONENTS, Registry
    from rr.reporting.registry import SECTIONS, sections

    sections()
    for reg in (METRICS, SECTIONS, SUBCOMMANDS, COMPONENTS["judge"]):
        assert isinstance(reg, Registry)
    assert METRICS.origin("ndr") == BUILT_IN and METRICS.reference("ndr") == "rr.metrics.robustness:ndr"
    assert METRICS["ndr"] is ndr
    assert SECTIONS.origin("robustness") == BUILT_IN
    assert COMPONENTS["judge"].origin("match") == BUILT_IN
    assert SUBCOMMANDS.reference("report") == "rr.commands.report:main"


#: Run in a fresh interpreter: the built-in names the registries' walks register, then those importing every
#: other module of rr adds (a built-in defined outside the walked packages: missing from a run).
_WALKS = """
import importlib, json, pkgutil
import rr
from rr.config import import_components
from rr.metrics import SPECS
from rr.registry import BUILT_IN, COMPONENTS
from rr.reporting.registry import SECTIONS, sections

def names():
    import_components()
    sections()
    out = {f"{g}/{n}": reg.reference(n).split(":")[0] for g, reg in COMPONENTS.items() for n in reg if reg.origin(n) == BUILT_IN}
    out |= {f"metric/{n}": SPECS.reference(n).split(":")[0] for n in SPECS if SPECS.origin(n) == BUILT_IN}
    out |= {f"section/{n}": s.fn.__module__ for n, s in SECTIONS.items() if SECTIONS.origin(n) == BUILT_IN}
    return out

walked = names()
for found in pkgutil.walk_packages(rr.__path__, "rr."):
    if found.name != "rr.__main__":  # runs the command line
        importlib.import_module(found.name)
print(json.dumps({"walked": walked, "missed": sorted(set(names()) - set(walked))}))
"""


def test_every_built_in_name_comes_from_a_discovered_module() -> None:
    """Components, metrics and report sections are filled one way: rr.registry.import_builtins walks each
    registry's packages (rr.registry.COMPONENT_PACKAGES, rr.metrics, rr.reporting), importing every module,
    and the decorators register the names; no list names the modules. Importing every other module of rr
    registers no built-in name the walks missed, and every component package registers a name (none is
    left in the tuple after its components moved)."""
    import json
    import subprocess
    import sys

    from rr.registry import COMPONENT_PACKAGES

    out = subprocess.run([sys.executable, "-c", _WALKS], capture_output=True, text=True, check=True).stdout
    got = json.loads(out.splitlines()[-1])
    assert got["missed"] == []
    homes = set(got["walked"].values())
    assert [p for p in COMPONENT_PACKAGES if not any(h == p or h.startswith(p + ".") for h in homes)] == []
    assert {"retriever/bm25", "metric/ndr", "metric/ql_recall@5", "section/robustness"} <= set(got["walked"])
    listed = subprocess.run(
        [sys.executable, "-m", "rr", "report", "--list-sections"], capture_output=True, text=True, check=True
    ).stdout
    assert all(
        name.removeprefix("section/") in listed for name in got["walked"] if name.startswith("section/")
    )


def test_a_lazy_entry_imports_its_module_at_first_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys
    from collections.abc import Callable

    from rr.registry import BUILT_IN, Registry

    (tmp_path / "rr_lazy_probe.py").write_text("def run(args):\n    return len(args)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry[Callable] = Registry("subcommand", Callable)
    reg.register_lazy("probe", "rr_lazy_probe:run")
    assert "probe" in reg and list(reg) == ["probe"] and reg.origin("probe") == BUILT_IN
    assert "rr_lazy_probe" not in sys.modules  # membership and listing import nothing
    assert reg["probe"](["a", "b"]) == 2
    assert "rr_lazy_probe" in sys.modules
    monkeypatch.delitem(sys.modules, "rr_lazy_probe")
    with pytest.raises(ValueError, match="not 'module:name'"):
        reg.register_lazy("bad", "rr_lazy_probe.run")


def test_an_entry_of_the_wrong_base_type_is_refused_when_registered_or_loaded() -> None:
    from collections.abc import Callable

    from rr.registry import Registry

    classes: Registry[type] = Registry("retriever component", type)
    with pytest.raises(TypeError, match="retriever component 'x': 3 is not a type"):
        classes.register("x", 3)  # type: ignore[arg-type]
    funcs: Registry[Callable] = Registry("subcommand", Callable)
    funcs.register_lazy("pi", "math:pi")  # a float, not a function: refused when looked up
    with pytest.raises(TypeError, match="subcommand 'pi'"):
        funcs["pi"]


def test_a_name_taken_by_another_object_raises_where_the_registry_has_a_key() -> None:
    from rr.registry import Registry

    def f() -> None: ...

    def g() -> None: ...

    keyed: Registry = Registry("metric", object, key=lambda fn: fn.__qualname__)
    keyed.register("m", f)
    keyed.register("m", f)  # the same function again (a module imported twice): fine
    with pytest.raises(ValueError, match="metric 'm' is already registered to"):
        keyed.register("m", g)
    free: Registry = Registry("judge component", object)
    free.register("m", f)
    free.register("m", g)  # no key: replaced, as @component always did
    assert free["m"] is g


def test_entries_registered_while_a_plugin_imports_say_so() -> None:
    from rr.registry import BUILT_IN, Registry, registering_from

    class Mine: ...

    reg: Registry[type] = Registry("retriever component", type)
    with registering_from("plugin entry point first_passages = 'rr_first_passages'"):
        reg.register("first_passages", Mine)
    reg.register("here", Mine)
    assert reg.origin("first_passages") == "plugin entry point first_passages = 'rr_first_passages'"
    assert reg.origin("here") == "module tests.test_registry" != BUILT_IN
