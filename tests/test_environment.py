"""A job's environment record (issue 38): the lock's hash, whether the installed set matches it,
and ``rr report`` flagging jobs that ran in different environments."""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from rr.environment import (
    differences,
    environment,
    environments_note,
    installed_versions,
    locked_pins,
    record,
)
from rr.jobfolder import EnvironmentRecord
from rr.reporting import build_report

from .synthetic import write_synthetic_sweep

LOCK = """\
# rr-lock-inputs-sha256: 00
accelerate==1.15.0 \\
    --hash=sha256:aa
    # via rr (pyproject.toml)
Foo_Bar==2.0 \\
    --hash=sha256:bb
torch==2.13.0+cpu \\
    --hash=sha256:cc
"""


def _site(tmp_path: Path, dists: dict[str, str]) -> Path:
    """A fake site-packages: one ``NAME-VERSION.dist-info`` folder per distribution."""
    site = tmp_path / "site"
    for name, version in dists.items():
        (site / f"{name}-{version}.dist-info").mkdir(parents=True)
    return site


def _locks(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "locks").mkdir(parents=True)
    (root / "locks" / "rr.txt").write_text(LOCK)
    (root / "locks" / "rr-data.txt").write_text("fanoutqa==1.1.1 \\\n    --hash=sha256:dd\n")
    return root


def test_locked_pins_reads_name_version_lines_normalized() -> None:
    assert locked_pins(LOCK) == {"accelerate": "1.15.0", "foo-bar": "2.0", "torch": "2.13.0+cpu"}


def test_installed_versions_read_folder_names_first_entry_wins(tmp_path: Path) -> None:
    first = _site(tmp_path / "a", {"Foo_Bar": "2.0", "torch": "2.13.0+cpu"})
    second = _site(tmp_path / "b", {"foo_bar": "1.0", "rich": "13.0"})
    egg = second / "legacy.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: Legacy-Pkg\nVersion: 0.3\n")
    got = installed_versions([str(first), str(second), str(tmp_path / "missing")])
    assert got == {"foo-bar": "2.0", "torch": "2.13.0+cpu", "rich": "13.0", "legacy-pkg": "0.3"}


def test_differences_hand_worked() -> None:
    pins = {"a": "1.0", "b": "2.0", "c": "3.0.post1"}
    installed = {"a": "1.0", "b": "2.1", "c": "3.0-post1", "d": "4.0", "rr": "0.1.0"}
    # c: the same PEP 440 version spelled differently; rr itself is never locked
    assert differences(pins, installed) == ["b: installed 2.1, locked 2.0", "d: installed 4.0, not locked"]
    assert differences({**pins, "e": "5"}, {**pins}) == ["e: not installed, locked 5"]


def test_record_matches_and_differs(tmp_path: Path) -> None:
    root = _locks(tmp_path)
    digest = hashlib.sha256((root / "locks/rr.txt").read_bytes() + (root / "locks/rr-data.txt").read_bytes())
    same = {
        "accelerate": "1.15.0",
        "foo_bar": "2.0",
        "torch": "2.13.0+cpu",
        "fanoutqa": "1.1.1",
        "rr": "0.1.0",
    }
    got = record(root, [str(_site(tmp_path / "same", same))])
    assert got == {
        "lock": digest.hexdigest()[:12],
        "lock_files": ["locks/rr.txt", "locks/rr-data.txt"],
        "matches_lock": True,
        "differences": [],
        "n_differences": 0,
    }
    other = {**same, "torch": "2.14.1"}
    got = record(root, [str(_site(tmp_path / "other", other))])
    assert got["lock"] == digest.hexdigest()[:12] and got["matches_lock"] is False
    assert got["differences"] == ["torch: installed 2.14.1, locked 2.13.0+cpu"] and got["n_differences"] == 1
    # no lock beside rr (installed from a wheel): nothing to compare with
    assert record(tmp_path / "nowhere")["lock"] is None


GPU_LOCK = """\
# rr-lock-inputs-sha256: 01
accelerate==1.15.0 \\
    --hash=sha256:aa
Foo_Bar==2.0 \\
    --hash=sha256:bb
nvidia-cublas==13.1.1.3 \\
    --hash=sha256:ee
torch==2.13.0 \\
    --hash=sha256:ff
vllm==0.32.0 \\
    --hash=sha256:99
"""


def test_a_gpu_node_installed_from_the_gpu_lock_records_that_lock(tmp_path: Path) -> None:
    """Issue 45: a .venv installed with ``make install GPU=1`` (locks/rr-gpu.txt + locks/rr-data.txt)
    records the GPU lock and matches it, not "differs from locks/rr.txt"; a CPU install still records
    the CPU lock; a GPU install that drifted is recorded against the GPU lock with its one difference."""
    root = _locks(tmp_path)
    (root / "locks" / "rr-gpu.txt").write_text(GPU_LOCK)
    gpu_digest = hashlib.sha256(
        (root / "locks/rr-gpu.txt").read_bytes() + (root / "locks/rr-data.txt").read_bytes()
    ).hexdigest()[:12]
    cpu_digest = hashlib.sha256(
        (root / "locks/rr.txt").read_bytes() + (root / "locks/rr-data.txt").read_bytes()
    ).hexdigest()[:12]
    gpu = {"accelerate": "1.15.0", "foo_bar": "2.0", "nvidia_cublas": "13.1.1.3", "torch": "2.13.0"}
    gpu |= {"vllm": "0.32.0", "fanoutqa": "1.1.1", "rr": "0.1.0"}
    got = record(root, [str(_site(tmp_path / "gpu", gpu))])
    assert got == {
        "lock": gpu_digest,
        "lock_files": ["locks/rr-gpu.txt", "locks/rr-data.txt"],
        "matches_lock": True,
        "differences": [],
        "n_differences": 0,
    }
    got = record(root, [str(_site(tmp_path / "drift", {**gpu, "vllm": "0.33.0"}))])
    assert got["lock"] == gpu_digest and got["matches_lock"] is False
    assert got["differences"] == ["vllm: installed 0.33.0, locked 0.32.0"]
    cpu = {"accelerate": "1.15.0", "foo_bar": "2.0", "torch": "2.13.0+cpu", "fanoutqa": "1.1.1"}
    got = record(root, [str(_site(tmp_path / "cpu", cpu))])
    assert (got["lock"], got["lock_files"], got["matches_lock"]) == (
        cpu_digest,
        ["locks/rr.txt", "locks/rr-data.txt"],
        True,
    )
    # a tie (as far from both): the CPU lock, make install's
    got = record(root, [str(_site(tmp_path / "none", {"rich": "13.0"}))])
    assert got["lock"] == cpu_digest


def test_environment_is_cached_per_process() -> None:
    first = environment()
    assert environment() is first
    assert set(first) == {"lock", "lock_files", "matches_lock", "differences", "n_differences"}
    assert first == record(path=sys.path)


def test_environments_note() -> None:
    env_a = EnvironmentRecord(lock="aaaaaaaaaaaa", matches_lock=True)
    env_b = EnvironmentRecord(lock="bbbbbbbbbbbb", matches_lock=True)
    assert environments_note({"j1": env_a, "j2": replace(env_a)}) is None
    assert environments_note({"j1": None, "j2": EnvironmentRecord()}) is None  # old jobs: nothing to compare
    note = environments_note({"j1": env_a, "j2": env_b, "j3": env_a})
    assert note == (
        "the jobs ran in different environments (lock aaaaaaaaaaaa: 2 job(s) (j1, j3); "
        "lock bbbbbbbbbbbb: 1 job(s) (j2)); a difference may come from package versions"
    )
    note = environments_note({"j1": replace(env_a, matches_lock=False)})
    assert note is not None and "lock aaaaaaaaaaaa, installed set differs: 1 job(s) (j1)" in note
    assert note.endswith("; j1 differs: not listed in its summary.json")
    shadowed = replace(
        env_a,
        matches_lock=False,
        differences=["tqdm: imports /x/tqdm (no metadata there), locked 4.70.1"],
        n_differences=3,
    )
    note = environments_note({"j1": env_a, "j2": shadowed})
    assert note is not None and note.endswith(
        "; j2 differs: tqdm: imports /x/tqdm (no metadata there), locked 4.70.1 and 2 more"
    )
    note = environments_note({"j1": env_a, "j2": None})
    assert note is not None and "no record: 1 job(s) (j2)" in note


def test_rr_report_shows_and_flags_environments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job table's environment column, and the note in the index, on the site and on the console
    when the compared jobs ran on different locks."""
    sweep = write_synthetic_sweep(tmp_path / "sweep", n_examples=3)
    jobs = sorted(p.parent for p in sweep.rglob("summary.json"))
    assert len(jobs) >= 2
    for i, job in enumerate(jobs):
        summary = json.loads((job / "summary.json").read_text())
        summary["environment"] = {"lock": "aaaaaaaaaaaa" if i else "bbbbbbbbbbbb", "matches_lock": bool(i)}
        (job / "summary.json").write_text(json.dumps(summary))
    report = build_report(sweep, tmp_path / "report", n_resamples=20, only=["robustness"])
    index = (report.out_dir / "README.md").read_text()
    assert "| environment |" in index
    assert "| bbbbbbbbbbbb* |" in index and "| aaaaaaaaaaaa |" in index
    assert "**Note:** the jobs ran in different environments (lock aaaaaaaaaaaa:" in index

    from rr.reporting.site import build_site

    site = build_site(report, tmp_path / "report" / "site").out_dir
    text = (site / "data" / "overview.js").read_text()
    overview = json.loads(text.split(",", 2)[2].rstrip().removesuffix(");"))  # RR.load(kind, key, payload);
    assert sorted(j["environment"] for j in overview["jobs"]) == ["aaaaaaaaaaaa"] * (len(jobs) - 1) + [
        "bbbbbbbbbbbb*"
    ]
    assert overview["environment_note"].startswith(
        "the jobs ran in different environments (lock aaaaaaaaaaaa:"
    )

    from rr.commands.cli import main

    monkeypatch.setattr(sys, "argv", ["rr", "report", str(sweep), "--out", str(tmp_path / "r2"), "--no-site"])
    monkeypatch.setattr(sys, "argv", [*sys.argv, "--resamples", "20", "--only", "robustness"])
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 0
    assert "  note: the jobs ran in different environments (lock aaaaaaaaaaaa:" in capsys.readouterr().out


def test_a_vendored_folder_on_sys_path_is_not_the_installed_set() -> None:
    # pkg_resources puts setuptools/_vendor on sys.path when something imports it: its jaraco/
    # inflect/... dist-infos are vendored copies, not installs; the record must not depend on it
    # (it did: 11 "installed, not locked" differences once a test had imported pkg_resources).
    import site

    vendored = [str(Path(p) / "setuptools" / "_vendor") for p in site.getsitepackages()]
    vendored = [p for p in vendored if Path(p).is_dir()]
    if not vendored:
        pytest.skip("this setuptools vendors nothing into a _vendor folder")
    assert record(path=[*sys.path, *vendored]) == record(path=[p for p in sys.path if p not in vendored])


@pytest.mark.parametrize("with_metadata", [False, True])
def test_a_shadow_package_on_pythonpath_is_what_differs(tmp_path: Path, with_metadata: bool) -> None:
    """A ``tqdm`` folder on ``PYTHONPATH`` is what ``import tqdm`` runs: the record says so, with or
    without a ``dist-info`` beside it (without one it was recorded ``matches_lock: True``)."""
    import os
    import subprocess

    from rr.environment import ROOT

    shadow = tmp_path / "shadow"
    (shadow / "tqdm").mkdir(parents=True)
    (shadow / "tqdm" / "__init__.py").write_text("__version__ = '4.66.0'\n")
    if with_metadata:
        (shadow / "tqdm-4.66.0.dist-info").mkdir()
        (shadow / "tqdm-4.66.0.dist-info" / "METADATA").write_text("Name: tqdm\nVersion: 4.66.0\n")
        (shadow / "tqdm-4.66.0.dist-info" / "top_level.txt").write_text("tqdm\n")
    code = "import json; from rr.environment import record; print(json.dumps(record()))"
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    got = json.loads(out)
    if environment()["matches_lock"] is None:
        pytest.skip("rr runs outside its source tree: no lock to compare with")
    assert got["matches_lock"] is False
    locked = locked_pins((ROOT / "locks" / "rr.txt").read_text())["tqdm"]
    there = "version 4.66.0 there" if with_metadata else "no metadata there"
    assert f"tqdm: imports {shadow / 'tqdm'} ({there}), locked {locked}" in got["differences"]
    if with_metadata:
        assert f"tqdm: installed 4.66.0, locked {locked}" in got["differences"]
    # and nothing else: the clean interpreter's record, plus the shadow
    clean = json.loads(
        subprocess.run(
            [sys.executable, "-c", code],
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert got["n_differences"] == clean["n_differences"] + (2 if with_metadata else 1)
