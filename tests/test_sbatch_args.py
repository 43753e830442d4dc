"""``hydra/launcher=slurm`` / ``slurm_cpu`` against fake SLURM commands (``sbatch``, ``srun``, ``squeue``,
``sacct``, ``scontrol``: shell scripts on ``PATH``), in seconds and without a cluster: the job array
sbatch is given (the profiles' settings as ``#SBATCH`` lines), a rejection in one line naming the
setting, and a job that leaves the queue without a result failing the sweep in one line with the
state from ``sacct``, else ``scontrol``. What SLURM itself does with them (running, requeueing,
cancelling, rejecting) is tested on a real cluster in ``tests/test_slurm.py`` (``make test``)."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest

import rr.commands.slurm
from tests.test_cli_errors import rr_main
from tests.test_slurm import SWEEP

pytest.importorskip("hydra_plugins.hydra_submitit_launcher")

#: The fake commands. sbatch keeps the n-th script it is given as $FAKE_SLURM/script-<n>.sh, then
#: answers $FAKE_SLURM/sbatch.err on stderr with exit 1 when that file exists, else "Submitted batch
#: job <4241 + n>". squeue lists the array's two tasks for its first two calls, then none. sacct and scontrol
#: answer $FAKE_SLURM/sacct.out and scontrol.out, or fail when the file is missing.
FAKES = {
    "sbatch": """n=$(( $(ls "$FAKE_SLURM"/script-*.sh 2>/dev/null | wc -l) + 1 ))
cp "$1" "$FAKE_SLURM/script-$n.sh"
if [ -f "$FAKE_SLURM/sbatch.err" ]; then cat "$FAKE_SLURM/sbatch.err" >&2; exit 1; fi
echo "Submitted batch job $((4241 + n))"
""",
    "srun": "exit 1\n",
    "squeue": """n=$(cat "$FAKE_SLURM/squeue.calls" 2>/dev/null || echo 0)
echo $((n + 1)) > "$FAKE_SLURM/squeue.calls"
if [ "$n" -lt 2 ]; then printf '4242_0\\n4242_1\\n'; fi
""",
    "sacct": '[ -f "$FAKE_SLURM/sacct.out" ] && cat "$FAKE_SLURM/sacct.out"\n',
    "scontrol": '[ -f "$FAKE_SLURM/scontrol.out" ] && cat "$FAKE_SLURM/scontrol.out"\n',
}


@pytest.fixture
def fake_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake commands first on ``PATH``; their folder (``$FAKE_SLURM``) holds what they were given
    and what they answer. rr waits 0.2 s, not 15 s, for a job gone from the queue."""
    folder = tmp_path / "fake-slurm"
    (folder / "bin").mkdir(parents=True)
    for name, body in FAKES.items():
        script = folder / "bin" / name
        script.write_text("#!/bin/bash\n" + body)
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SLURM", str(folder))
    fast = functools.partial(rr.commands.slurm.wait_for_jobs, poll_s=0.05, grace_s=0.2)
    monkeypatch.setattr(rr.commands.slurm, "wait_for_jobs", fast)
    return folder


def _sbatch_lines(folder: Path, n: int = 1) -> set[str]:
    """The ``#SBATCH`` lines of the ``n``-th script sbatch was given."""
    script = (folder / f"script-{n}.sh").read_text()
    return {ln for ln in script.splitlines() if ln.startswith("#SBATCH ")}


@pytest.mark.parametrize(
    ("launcher", "expected"),
    [
        (
            ["hydra/launcher=slurm", "hydra.launcher.partition=gpu"],
            {"--partition=gpu", "--gpus-per-node=1", "--cpus-per-task=8", "--mem=64GB", "--time=240"},
        ),
        (
            ["hydra/launcher=slurm_cpu", "hydra.launcher.cpus_per_task=512"],
            {"--gpus-per-node=0", "--cpus-per-task=512", "--mem=4GB", "--time=60"},
        ),
    ],
)
def test_the_profiles_settings_are_sbatch_options_and_a_rejection_is_one_line(
    fake_slurm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, launcher, expected
) -> None:
    (fake_slurm / "sbatch.err").write_text(
        "sbatch: error: CPU count per node can not be satisfied\n"
        "sbatch: error: Batch job submission failed: Requested node configuration is not available\n"
    )
    sweep = [a for a in SWEEP if not a.startswith("hydra/launcher=")]
    code, out, err = rr_main(
        ["-m", *sweep, *launcher, f"paths.output_root={tmp_path / 'out'}"], monkeypatch, capsys
    )
    assert code == 2 and "Traceback" not in err, err[-3000:]
    assert err.strip().splitlines()[-1] == (
        "rr: sbatch rejected the sweep's jobs: Batch job submission failed: Requested node configuration "
        "is not available; change hydra.launcher.cpus_per_task / mem_gb / gpus_per_node"
    )
    lines = _sbatch_lines(fake_slurm)
    # one array of the sweep's two jobs, the time-limit warning signal_delay_s (120 s) before the limit
    assert {f"#SBATCH {o}" for o in {"--array=0-1%2", "--signal=USR2@120", "--nodes=1", *expected}} <= lines


@pytest.mark.parametrize("accounting", [True, False])
def test_a_job_gone_from_the_queue_without_a_result_fails_the_sweep_in_one_line(
    fake_slurm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, accounting: bool
) -> None:
    if accounting:
        (fake_slurm / "sacct.out").write_text("CANCELLED by 0\n")
    else:  # no slurmdbd: sacct fails, the state comes from scontrol
        (fake_slurm / "scontrol.out").write_text("JobId=4242 ArrayTaskId=0 JobState=CANCELLED Reason=None\n")
    code, out, err = rr_main(["-m", *SWEEP, f"paths.output_root={tmp_path / 'out'}"], monkeypatch, capsys)
    assert code == 2 and "Traceback" not in err, err[-3000:]
    assert "0 done, 0 skipped, 0 resumed, 2 failed" in out
    # "rr: 2 of 2 jobs failed:", then one line per failed job
    lines = [ln.strip() for ln in err.strip().splitlines()]
    assert "rr: 2 of 2 jobs failed:" in lines, err[-3000:]
    first = lines[lines.index("rr: 2 of 2 jobs failed:") + 1]
    sweep_dir = tmp_path / "out" / "multirun" / "cao2025_mini"
    log = sweep_dir / ".submitit" / "4242_0" / "4242_0_0_log.err"
    assert first.startswith("seed=0: SLURM job 4242_0 ended CANCELLED "), first
    assert f"without a result; its log: {log}" in first
    lines = _sbatch_lines(fake_slurm)
    assert {"#SBATCH --array=0-1%2", "#SBATCH --gpus-per-node=0", "#SBATCH --cpus-per-task=1"} <= lines


def test_jobs_asking_for_other_gpu_counts_go_in_one_array_each_with_cpus_and_memory_per_gpu(
    fake_slurm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    (fake_slurm / "sacct.out").write_text("CANCELLED by 0\n")
    sweep = [a for a in SWEEP if not a.startswith(("hydra/launcher=", "seed="))]
    args = ["-m", *sweep, "hydra/launcher=slurm", "resources.gpus=1,2,1", "seed=0"]
    code, out, err = rr_main([*args, f"paths.output_root={tmp_path / 'out'}"], monkeypatch, capsys)
    assert code == 2 and "Traceback" not in err, err[-3000:]
    assert not (fake_slurm / "script-3.sh").exists()
    one, two = _sbatch_lines(fake_slurm, 1), _sbatch_lines(fake_slurm, 2)
    assert {"#SBATCH --array=0-1%2", "#SBATCH --gpus-per-node=1", "#SBATCH --cpus-per-task=8"} <= one
    assert "#SBATCH --mem=64GB" in one
    # the one 2-GPU job: submitted alone (no array), twice the CPUs and memory
    assert {"#SBATCH --gpus-per-node=2", "#SBATCH --cpus-per-task=16", "#SBATCH --mem=128GB"} <= two
    assert not any(ln.startswith("#SBATCH --array") for ln in two)
