"""Nothing a failed command writes breaks what was there (issue 30): a sweep that fails to compose
leaves the sweep folder byte for byte as it was; ``rr status`` reads a sweep whose ``multirun.yaml``
it cannot use from its job folders and names the file; a job that fails before its first stage
leaves its folder marked failed, the one-line error in its log and in ``rr status``.

Every command runs in process (:func:`tests.test_cli_errors.rr_main`) on the simulated reader:
closed-book jobs on 2 synthetic questions, no corpus and no retrieval.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from rr.resume import folder_state, status_report
from rr.sweepfolder import FAILED, sweep_records

from .test_cli_errors import assert_one_line, rr_main

#: Two closed-book jobs (seed 0 and 1) of the simulated reader.
SWEEP = [
    "-m",
    "generator=simulated",
    "dataset=synthetic",
    "grid.k=[0]",
    "dataset.n=2",
    "progress=false",
    "seed=0,1",
]


def folder_digest(folder: Path) -> dict[str, str]:
    """Every file below ``folder`` (relative path) -> the SHA-256 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def sweep_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``outputs`` of a finished two-job sweep (built once; tests copy it before they change it)."""
    mp = pytest.MonkeyPatch()
    root = tmp_path_factory.mktemp("sweep") / "out"

    class _Capture:  # rr_main reads capsys; a module fixture has none, so a stand-in that drops output
        def readouterr(self) -> tuple[str, str]:
            return "", ""

    try:
        code, _, _ = rr_main(
            [*SWEEP, "strategy=closed_book", f"paths.output_root={root}"],
            mp,
            _Capture(),  # type: ignore[arg-type]
        )
    finally:
        mp.undo()
    assert code == 0
    return root


def _copy(src: Path, tmp_path: Path) -> Path:
    import shutil

    dst = tmp_path / "out"
    shutil.copytree(src, dst)
    return dst


@pytest.mark.parametrize(
    "bad",
    [
        ["strategy=closed_book,clozed_book"],  # the second value of a swept group is a typo
        ["strategy=closed_book", "generator.latency=0,1"],  # a key that does not exist
    ],
    ids=["typo-in-value", "unknown-key"],
)
def test_sweep_that_fails_to_compose_leaves_the_sweep_folder_untouched(
    bad: list[str], sweep_root: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    root = _copy(sweep_root, tmp_path)
    sweep_dir = root / "multirun" / "cao2025_mini"
    before = folder_digest(root)
    assert "multirun.yaml" in {Path(p).name for p in before}
    code, _, err = rr_main([*SWEEP, *bad, f"paths.output_root={root}"], monkeypatch, capsys)
    assert_one_line(code, err)
    assert folder_digest(root) == before  # every byte of every file, and no file added
    code, out, err = rr_main(["status", str(sweep_dir)], monkeypatch, capsys)
    assert code == 0, err
    assert "2 done, 0 partial, 0 missing" in out


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text + "\n: [unclosed\n",  # torn / not YAML
        lambda text: text.replace(
            "strategy=closed_book", "strategy=clozed_book"
        ),  # a value that no longer composes
    ],
    ids=["not-yaml", "does-not-compose"],
)
def test_status_lists_job_folders_of_a_sweep_whose_multirun_yaml_it_cannot_read(
    damage, sweep_root: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    root = _copy(sweep_root, tmp_path)
    mr = root / "multirun" / "cao2025_mini" / "multirun.yaml"
    (kept,) = sweep_records(mr.parent)  # the sweep's own record, kept beside multirun.yaml
    for record in (mr, kept):
        record.write_text(damage(record.read_text()))
    report = status_report(root)
    assert [s.state for s in report.states] == ["done", "done"]
    assert [path for path, _ in report.unreadable] == [kept]
    for folder in (root, mr.parent):
        code, out, err = rr_main(["status", str(folder)], monkeypatch, capsys)
        assert code == 0, err
        assert "2 done, 0 partial, 0 missing" in out
        assert f"could not read {kept}" in err and "Traceback" not in err


def test_job_failing_before_its_first_stage_is_marked_failed(tmp_path: Path, monkeypatch, capsys) -> None:
    args = ["generator=simulated", "retriever=[bm25]", "dataset.n=0", "progress=false"]
    code, _, err = rr_main([*args, f"paths.output_root={tmp_path}"], monkeypatch, capsys)
    line = assert_one_line(code, err, "dataset.n", "positive integer")
    message = line.removeprefix("rr: ")
    (job,) = (tmp_path / "runs" / "cao2025_mini").iterdir()
    assert json.loads((job / FAILED).read_text())["message"] == message
    assert f"job failed: {message}" in (job / "cli.log").read_text()
    state = folder_state(job)
    assert state.state == "failed" and message in state.detail
    code, out, err = rr_main(["status", str(tmp_path)], monkeypatch, capsys)
    assert code == 1 and "0 done, 0 partial, 1 failed, 0 missing" in out  # failed jobs: exit 1
    assert f"rr status: failed {state.job_id}" in err
    # it failed on its configuration: the hint says re-running as is will not help
    assert "re-running it as it is will not help (it failed on its configuration)" in err
    assert "then: rr generator=simulated" in err and "re-run:" not in err
    assert any(line.startswith("│ failed") and "dataset.n:" in line for line in out.splitlines())

    # Fixed and run again: the marker goes, the job is done.
    code, _, err = rr_main(
        [*args[:-2], "dataset=synthetic", "corpus=synthetic", "dataset.n=2", "grid.k=[1]", "progress=false"]
        + [f"paths.output_root={tmp_path}", f"hydra.run.dir={job}"],
        monkeypatch,
        capsys,
    )
    assert code == 0, err
    assert not (job / FAILED).exists() and folder_state(job).state == "done"
