"""Ctrl-C and SIGTERM end a job with one line that names its folder and says how to resume it; the
re-run says how many requests it found cached (issue 30).

A real ``python -m rr`` subprocess on the simulated reader, slowed to 0.5 s per prompt, gets the
signal once its first cached completion is on disk (as ``tests/test_resume.py`` kills one); the
re-run runs in process (:func:`tests.test_cli_errors.rr_main`).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rr.resume import folder_state
from rr.sweepfolder import INTERRUPTED

from .test_cli_errors import rr_main
from .test_resume import SIMULATED, rr_env, wait_for_a_cached_completion


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(
    ("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"]
)
def test_signal_stops_a_job_in_one_line_and_the_rerun_resumes(
    sig: signal.Signals, code: int, tmp_path: Path, monkeypatch, capsys
) -> None:
    out = tmp_path / "out"
    args = [*SIMULATED, f"paths.output_root={out}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "rr", *args],
        cwd=tmp_path,
        env=rr_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # Python installs its Ctrl-C handler only where SIGINT is not ignored, and a pytest-xdist
        # worker ignores it (its children inherit that): give the job a terminal's default
        preexec_fn=_default_sigint,
    )
    try:
        wait_for_a_cached_completion(proc, out, timeout=120)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    (job,) = (out / "runs" / "cao2025_mini").iterdir()
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == [
        f"rr: interrupted ({sig.name}): job {job} stopped before its end; run the same command again "
        "to resume it (model calls already made are cached)"
    ]
    assert json.loads((job / INTERRUPTED).read_text())["message"] == sig.name
    state = folder_state(job)
    assert state.state == "partial" and "run the same command again to resume it" in state.detail

    code, stdout, err = rr_main(args, monkeypatch, capsys)
    assert code == 0, err
    assert f"resuming job {job} (interrupted by {sig.name} at " in stdout
    assert "resuming: 2 of 2 requests cached (step closed_book)" in stdout  # 2 questions, closed book first
    assert not (job / INTERRUPTED).exists() and folder_state(job).state == "done"
