"""The two test tiers (issue 51): ``make test`` runs every test; ``make check``, the edit-test loop,
leaves out the markers whose description in pyproject.toml ends "not in make check" (real
infrastructure and benchmarks), read from there, and needs no ``.venv-textattack``."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _dry_run(target: str) -> str:
    """``make -n <target>``: the commands it would run (the install's too, when .venv is stale)."""
    if shutil.which("make") is None:
        pytest.skip("no make")
    proc = subprocess.run(["make", "-n", target], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_check_leaves_out_exactly_the_markers_registered_as_not_in_make_check(
    pytestconfig: pytest.Config,
) -> None:
    registered = {line.split(":")[0]: line for line in pytestconfig.getini("markers")}
    left_out = {name for name, line in registered.items() if line.endswith("; not in make check")}
    assert {"vllm", "slurm", "browser", "textattack", "docs", "bench"} <= left_out
    (command,) = [line for line in _dry_run("check").splitlines() if " -m pytest " in line]
    (expression,) = re.findall(r'-m "not \(([^)]*)\)"', command)
    assert set(expression.split(" or ")) == left_out
    assert "RR_REQUIRE_TEXTATTACK" not in command and "-n " in command


def test_check_does_not_build_textattacks_environment_and_test_runs_everything() -> None:
    check = _dry_run("check")
    assert "locks/textattack.txt" not in check and ".venv-textattack" not in check
    (command,) = [line for line in _dry_run("test").splitlines() if " -m pytest " in line]
    assert " -m " not in command.split(" -m pytest ", 1)[1]  # no marker left out
