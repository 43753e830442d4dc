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
