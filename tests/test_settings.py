"""A job's stage settings are read once, typed (rr.config.job_settings), with the schema's defaults
declared in one place (issue 37, part 3)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from rr.config import RootSchema, job_settings
from rr.errors import ConfigError

from .conftest import compose_config

ROOT = Path(__file__).resolve().parents[1] / "rr"


def test_settings_of_a_composed_config() -> None:
    cfg = compose_config(["grid.k=[0,5,1,5]", "grid.closed_book=false", "flush_every=8", "progress=false"])
    s = job_settings(cfg)
    assert (s.ks, s.closed_book, s.flush_every, s.progress) == ([1, 5], True, 8, False)  # 0 in k: closed book
    assert s.orders == list(cfg.grid.orders) and s.cache_dir == str(cfg.paths.cache_dir)
    assert (s.seed, s.name, s.force, s.strict_window) == (cfg.seed, cfg.name, False, False)


def test_keys_a_config_lacks_take_the_schema_default() -> None:
    s = job_settings(OmegaConf.create({"grid": {"k": [2]}, "paths": {"cache_dir": "/c"}}))
    root = RootSchema()
    assert (s.flush_every, s.progress, s.strict_window, s.cpu_warn_minutes, s.seed) == (
        root.flush_every,
        root.progress,
        root.strict_window,
        root.cpu_warn_minutes,
        root.seed,
    )
    assert s.orders == root.grid.orders and s.closed_book is True and s.ks == [2]


def test_a_negative_k_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"grid\.k"):
        job_settings(OmegaConf.create({"grid": {"k": [1, -1]}}))


def test_no_read_repeats_a_default_the_schema_declares() -> None:
    keys = "|".join(k for k in vars(RootSchema()) if not isinstance(getattr(RootSchema(), k), dict))
    pattern = re.compile(rf"\.get\(\s*[\"']({keys})[\"']\s*,")
    found = [
        f"{p.relative_to(ROOT.parent)}:{n}: {line.strip()}"
        for p in sorted(ROOT.rglob("*.py"))
        if p.name != "config.py"
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line) and "cfg" in line
    ]
    assert not found, "read these through rr.config.job_settings:\n" + "\n".join(found)
