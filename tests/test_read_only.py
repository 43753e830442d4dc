"""A folder rr cannot write (a read-only results share, a folder of someone else's): one line ``rr: ...``
naming the folder and the fix, never a traceback (issue 36, part 6).

The folder is made read-only for real: a read-only bind mount in a private mount namespace
(``unshare -m``) when the tests run as root (whom file modes do not stop), else its write bits
removed. Where neither works the tests skip.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from .synthetic import write_synthetic_sweep
from .test_cli_errors import USER_ERROR_EXIT, assert_one_line

REPO = Path(__file__).resolve().parent.parent
#: A small job (its config only: nothing runs before the error).
SMALL = ["dataset.n=1", "grid.k=[1]", "retriever=[bm25]", "progress=false"]
#: ``sh -c`` script: bind ``$0`` read-only over itself, then run the rest of the arguments.
_RO_MOUNT = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'


@contextmanager
def read_only(folder: Path) -> Iterator[list[str]]:
    """A command prefix under which ``folder`` cannot be written (root included); skip where impossible."""
    if os.geteuid() == 0:
        prefix = ["unshare", "-m", "sh", "-c", _RO_MOUNT, str(folder)]
        probe = subprocess.run([*prefix, "touch", str(folder / "probe")], capture_output=True, text=True)
        if shutil.which("unshare") is None or probe.returncode == 0 or "Read-only" not in probe.stderr:
            pytest.skip(f"cannot mount {folder} read-only here: {probe.stderr.strip()[-200:]}")
        yield prefix
        return
    modes = {p: p.stat().st_mode for p in [folder, *folder.rglob("*")] if p.is_dir()}
    for p in modes:
        p.chmod(modes[p] & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        yield []
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def _rr(prefix: list[str], args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [*prefix, sys.executable, "-m", "rr", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _job_folder(overrides: list[str]) -> Path:
    """The folder ``rr OVERRIDES`` runs in (Hydra's run dir, with the job's id)."""
    from rr.config import compose

    cfg = compose(overrides, return_hydra_config=True)
    return Path(OmegaConf.to_container(cfg.hydra.run, resolve=True)["dir"])  # type: ignore[index]


def test_a_finished_job_run_again_in_a_read_only_folder_is_one_line(tmp_path: Path) -> None:
    """The job is done and its folder read-only: one line saying so, where to read its results, and
    how to run it elsewhere (was: Hydra's logging traceback, "Unable to configure handler 'file'", exit 1)."""
    outputs = tmp_path / "outputs"
    args = [f"paths.output_root={outputs}", *SMALL]
    folder = _job_folder(args)
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({"job_id": folder.name}))
    with read_only(outputs) as prefix:
        done = _rr(prefix, args, tmp_path)
    line = assert_one_line(done.returncode, done.stderr, f"job {folder} is finished", f"{folder}/cli.log")
    assert f"`rr status {folder}`" in line and "--out DIR" in line and "paths.output_root=DIR" in line


def test_rr_report_into_a_read_only_folder_names_out(tmp_path: Path) -> None:
    """``rr report SWEEP`` writes ``SWEEP/report`` by default: read-only, the line names ``--out``, the
    option that moves the report (was: "point paths.output_root / paths.cache_dir elsewhere")."""
    sweep = write_synthetic_sweep(tmp_path / "sweep", n_examples=3, noise=False)
    with read_only(sweep) as prefix:
        done = _rr(prefix, ["report", str(sweep), "--no-site"], tmp_path)
    line = assert_one_line(done.returncode, done.stderr, f"cannot write the report folder {sweep}/report")
    assert line.endswith("write the report elsewhere with --out DIR") and "paths." not in line
    assert not (sweep / "report").exists()


def test_rr_report_into_a_path_under_a_file_names_out(tmp_path: Path, monkeypatch, capsys) -> None:
    """The same line for an ``--out`` that cannot be created (a file in its path), whoever runs it."""
    from .test_cli_errors import rr_main

    sweep = write_synthetic_sweep(tmp_path / "sweep", n_examples=3, noise=False)
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    code, _, err = rr_main(["report", str(sweep), "--out", f"{blocker}/report"], monkeypatch, capsys)
    assert code == USER_ERROR_EXIT
    assert err.strip() == (
        f"rr: cannot write the report folder {blocker}/report (Not a directory: {blocker}/report); "
        "write the report elsewhere with --out DIR"
    )
    # a report that fails for another reason (an unknown section) leaves no empty folder behind
    code, _, err = rr_main(["report", str(sweep), "--only", "robustnes"], monkeypatch, capsys)
    assert code == USER_ERROR_EXIT and "robustnes" in err and not (sweep / "report").exists()
