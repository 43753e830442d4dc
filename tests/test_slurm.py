"""Sweeps on a real single-node SLURM cluster (tests/slurm_cluster.py: Debian's SLURM 22.05,
MariaDB + slurmdbd for accounting, plain daemons started by this module and stopped after it).

A sweep runs as one job array and ``rr status`` reports it; a re-run skips the finished jobs;
a job interrupted by USR2, by ``scontrol requeue`` and by its time limit is requeued and ends
with the uninterrupted run's score table, redoing no cached model call; a cancelled job makes
``rr -m`` exit 2 within a bounded time with one line naming the job, its state and its log
(with job accounting, and without it on a second cluster); ``rr encode -m ... shards=2`` runs
as an array and writes one process's store byte for byte; an sbatch rejection is one line naming
the setting.

Where SLURM cannot be installed (not root, no apt-get) these tests skip with the reason; under
``CI=true`` they fail instead. The jobs are the smallest that show each property (the packaged
simulated reader on 2-12 synthetic questions, slowed to 0.5 s per prompt so that an interruption
lands mid-generation): what is checked is SLURM's and the cache's behaviour, not a model's answers.
Runs that do not depend on each other (the uninterrupted reference job and the interrupted ones,
the one-process encode and the array, the two cancelled sweeps) run at the same time: most of
these tests' time is waiting on SLURM.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rr.job_env import THREAD_VARS
from rr.resume import status

from .slurm_cluster import SlurmCluster, install
from .test_resume import rr_env

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

#: The reader of every job here: the simulated reader on the synthetic task (microseconds per
#: answer, slowed to 0.5 s per prompt so that signals land while the job generates).
GENERATOR: list[str] = [
    "generator=simulated",
    "dataset=synthetic",
    "corpus=synthetic",
    "corpus.max_passages=300",
    "generator.latency_s=0.5",
]

#: Two closed-book jobs (seed 0 and 1) on 2 questions: one array of 2 tasks, 1 CPU each.
SWEEP = [
    *GENERATOR,
    "strategy=closed_book",
    "grid.k=[0]",
    "dataset.n=2",
    "generator.max_new_tokens=4",
    "progress=false",
    "seed=0,1",
    "hydra/launcher=slurm_cpu",
    "hydra.launcher.poll_s=1",  # the default 30 s between looks at the queue, shortened for the tests
]

#: One job to interrupt mid-generation: 12 closed-book questions, each its own chunk
#: (flush_every=1), so an interrupted attempt leaves finished calls in the cache (the test stops
#: the job at its first cached call: 11 x 0.5 s left to stop it in, on a loaded machine too).
LONG_JOB = [
    *GENERATOR,
    "strategy=closed_book",
    "grid.k=[0]",
    "dataset.n=12",
    "generator.max_new_tokens=8",
    "generator.batch_size=1",
    "flush_every=1",
    "progress=false",
]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """A running single-node cluster (installed with apt-get when missing), stopped afterwards."""
    reason, installed_s = install()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"SLURM tests must run in CI: {reason}")
        pytest.skip(reason)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"), gpus=2)
    try:
        started_s = cluster.start()
        print(f"\nSLURM: apt-get install {installed_s:.1f} s, cluster start {started_s:.1f} s")
        yield cluster
    finally:
        cluster.stop()


def slurm_env(cluster: SlurmCluster) -> dict[str, str]:
    """The submitting command's environment (sbatch passes it on to the jobs) without thread-count
    variables that another test or library may have left in this process, so that the jobs' thread
    counts come from their allocation as on a user's shell."""
    env = {**rr_env(), "SLURM_CONF": cluster.env["SLURM_CONF"]}
    for var in THREAD_VARS:
        env.pop(var, None)
    return env


def rr(cluster: SlurmCluster, args: list[str], cwd: Path, timeout: int = 240) -> subprocess.CompletedProcess:
    env = slurm_env(cluster)
    return subprocess.run(
        [sys.executable, "-m", "rr", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def rr_background(
    cluster: SlurmCluster, args: list[str], cwd: Path, log: Path, threads: int | None = None
) -> subprocess.Popen:
    env = slurm_env(cluster)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, "-m", "rr", *args], cwd=cwd, env=env, stdout=out, stderr=out)


def slurm_cmd(cluster: SlurmCluster, *cmd: str) -> str:
    proc = subprocess.run(cmd, env=cluster.env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, f"{' '.join(cmd)}: {proc.stderr}"
    return proc.stdout


def wait_for(
    what: str,
    ready: Callable[[], Any],
    timeout: float = 180.0,
    proc: subprocess.Popen | None = None,
    poll: float = 0.2,
) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := ready():
            return value
        assert proc is None or proc.poll() is None, f"rr -m ended (exit {proc.returncode}) before {what}"
        time.sleep(poll)
    raise AssertionError(f"no {what} after {timeout:.0f} s")


def cached_calls(root: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in (root / "cache" / "generations").glob("*/*.jsonl"))


def array_tasks(sweep_dir: Path) -> list[str]:
    """SLURM ids of the sweep's array tasks (submitit's folders below ``.submitit``)."""
    # "12_0", "12_1", ... for an array; a sweep of one job is submitted as a plain job: "12"
    jobs = sorted(p.name for p in (sweep_dir / ".submitit").iterdir() if p.is_dir() and p.name[0].isdigit())
    return [j for j in jobs if "_" in j] or jobs


def test_sweep_runs_as_an_array_status_reports_it_and_a_rerun_skips(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first = rr(slurm, ["-m", *SWEEP, f"paths.output_root={out}"], tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "2 done, 0 skipped, 0 resumed, 0 failed" in first.stdout
    sweep_dir = out / "multirun" / "cao2025_mini"
    tasks = array_tasks(sweep_dir)
    array = tasks[0].split("_")[0]
    assert tasks == [f"{array}_0", f"{array}_1"]  # one array, two tasks
    completed = [f"{array}_0|COMPLETED", f"{array}_1|COMPLETED"]  # the tasks exit just after their results

    def acct():
        return sorted(slurm_cmd(slurm, "sacct", "-n", "-P", "-X", "-o", "JobID,State", "-j", array).split())

    wait_for("both tasks COMPLETED in sacct", lambda: acct() == completed, timeout=30)
    # each task's threads followed its one CPU
    logs = "".join(p.read_text() for p in (sweep_dir / ".submitit").rglob("*_log.*"))
    assert logs.count("threads follow SLURM_CPUS_PER_TASK=1") == 2 and "torch 1" in logs
    assert sorted(s.state for s in status(sweep_dir)) == ["done", "done"]
    shown = rr(slurm, ["status", str(sweep_dir)], tmp_path)
    assert shown.returncode == 0 and "2 done, 0 partial, 0 missing" in shown.stdout
    # closed-book jobs: the k = 0 score is named as such (there is no k > 0 accuracy)
    assert (
        len(re.findall(r"2 rows, closed-book \(k = 0\) \d\.\d{3}, 2 model calls, wall ", shown.stdout)) == 2
    )

    summaries = {p: p.stat().st_mtime_ns for p in sweep_dir.glob("*/summary.json")}
    accounted = accounted_jobs(slurm)
    again = rr(slurm, ["-m", *SWEEP, f"paths.output_root={out}"], tmp_path)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 done, 2 skipped, 0 resumed, 0 failed" in again.stdout
    # a finished sweep submits nothing: no second array, no new job in the accounting
    assert array_tasks(sweep_dir) == tasks and "2 of 2 jobs are done already: not submitted" in again.stdout
    assert accounted_jobs(slurm) == accounted
    assert {p: p.stat().st_mtime_ns for p in sweep_dir.glob("*/summary.json")} == summaries


def accounted_jobs(cluster: SlurmCluster) -> list[str]:
    """Every job (array task) the cluster's accounting knows, submitted in the last day."""
    return sorted(slurm_cmd(cluster, "sacct", "-n", "-X", "-a", "-o", "JobID", "-S", "now-1day").split())


def test_gpu_jobs_get_their_gpus_detach_returns_and_status_asks_the_scheduler(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    """Two jobs asking for 1 and 2 of the node's GPUs (``resources.gpus``, here its seed): two arrays,
    each task allocated its GPUs by SLURM (accounting's gres/gpu); ``--detach`` returns once they
    are submitted, ``rr status`` reads pending / running from squeue meanwhile, then done; a re-run
    submits nothing."""
    out = tmp_path / "out"
    gpu = [
        *SWEEP,
        "hydra/launcher=slurm",
        "hydra.launcher.cpus_per_task=1",
        "hydra.launcher.mem_gb=1",
        "seed=1,2",
        "resources.gpus=${seed}",
        f"paths.output_root={out}",
    ]
    started = time.monotonic()
    detached = rr(slurm, ["-m", *gpu, "--detach"], tmp_path)
    took = time.monotonic() - started
    assert detached.returncode == 0, detached.stderr[-3000:]
    assert "0 done, 0 skipped, 0 resumed, 0 failed, 2 submitted" in detached.stdout, detached.stdout
    sweep_dir = out / "multirun" / "cao2025_mini"
    tasks = array_tasks(sweep_dir)
    assert len(tasks) == 2 and len({t.split("_")[0] for t in tasks}) == 2  # one array per GPU count
    shown = rr(slurm, ["status", str(sweep_dir)], tmp_path)
    assert shown.returncode == 0, shown.stderr[-3000:]
    queued = re.findall(r"^\S*\s*(pending|running|done)\b.*", shown.stdout, re.M)
    assert re.search(r"^0 done, .*0 partial, 0 missing$", shown.stdout, re.M), shown.stdout
    assert re.search(r"SLURM job \d+(_\d+)? (PENDING|RUNNING)", shown.stdout), shown.stdout
    wait_for(
        "both jobs done", lambda: sorted(s.state for s in status(sweep_dir)) == ["done", "done"], timeout=240
    )
    tres = dict(
        line.split("|", 1)
        for line in slurm_cmd(
            slurm, "sacct", "-n", "-P", "-X", "-o", "JobID,AllocTRES", "-j", ",".join(tasks)
        ).split()
    )
    assert sorted(re.search(r"gres/gpu=(\d)", t).group(1) for t in tres.values()) == ["1", "2"], tres  # type: ignore[union-attr]
    again = rr(slurm, ["-m", *gpu], tmp_path)
    assert again.returncode == 0 and "0 done, 2 skipped, 0 resumed, 0 failed" in again.stdout, again.stderr[
        -3000:
    ]
    assert array_tasks(sweep_dir) == tasks
    print(f"\n--detach returned after {took:.1f} s; statuses while queued: {queued}")


@pytest.fixture(scope="module")
def uninterrupted(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[], tuple[pd.DataFrame, dict]]]:
    """LONG_JOB run once, uninterrupted, as a plain local job on one thread like the SLURM tasks
    (greedy CPU outputs may depend on the thread count). It starts in the background when the
    first test asks for it (and runs while that test's SLURM job does); the fixture's value waits
    for it and returns its score table and summary."""
    root = tmp_path_factory.mktemp("uninterrupted")
    log = root / "rr.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rr", *LONG_JOB, f"paths.output_root={root}"],
            cwd=root, env={**rr_env(), "OMP_NUM_THREADS": "1"}, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    done: list[tuple[pd.DataFrame, dict]] = []

    def result() -> tuple[pd.DataFrame, dict]:
        if not done:
            assert proc.wait(timeout=240) == 0, log.read_text()[-3000:]
            (job,) = (root / "runs" / "cao2025_mini").iterdir()
            done.append(
                (pd.read_parquet(job / "scores.parquet"), json.loads((job / "summary.json").read_text()))
            )
        return done[0]

    try:
        yield result
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("how", ["usr2", "requeue", "time_limit"])
def test_interrupted_job_is_requeued_and_ends_with_the_uninterrupted_table(
    slurm: SlurmCluster,
    tmp_path: Path,
    uninterrupted: Callable[[], tuple[pd.DataFrame, dict]],
    how: str,
) -> None:
    out = tmp_path / "out"
    launcher = ["hydra/launcher=slurm_cpu", "hydra.launcher.max_num_timeout=10", "hydra.launcher.poll_s=1"]
    if how == "time_limit":
        # a 1-minute limit, warned 10 s before it: slurmctld checks limits every 30 s and warns
        # up to 30 s early, so the warning (USR2) comes 20-50 s after an attempt starts, after
        # its first cached call (~5 s, ~15 s on a loaded machine); a requeued attempt is warned
        # again as late, and usually finishes before (if not, it is requeued once more:
        # max_num_timeout=10)
        launcher += ["hydra.launcher.timeout_min=1", "hydra.launcher.signal_delay_s=10"]
    started = time.monotonic()
    proc = rr_background(
        slurm, ["-m", *LONG_JOB, *launcher, f"paths.output_root={out}"], tmp_path, tmp_path / "rr.log"
    )
    try:
        sweep_dir = out / "multirun" / "cao2025_mini"
        (task,) = wait_for(
            "SLURM job", lambda: (sweep_dir / ".submitit").is_dir() and array_tasks(sweep_dir), proc=proc
        )
        pid = wait_for("the job's Python process", lambda: job_python_pid(slurm, task), proc=proc)
        wait_for("first cached model call", lambda: cached_calls(out), proc=proc, poll=0.05)
        # Hold the job mid-generation (SIGSTOP; SLURM's clock keeps running) while it is
        # interrupted, so it is interrupted in the middle of its work however fast this machine
        # generates.
        os.kill(pid, signal.SIGSTOP)
        wait_for("the job to stop", lambda: stopped(pid), timeout=10)
        before = cached_calls(out)
        try:
            if how == "usr2":
                slurm_cmd(slurm, "scancel", "--signal=USR2", task)
            elif how == "requeue":
                slurm_cmd(slurm, "scontrol", "requeue", task)
            # time_limit: SLURM's warning comes 20-50 s after the job started
            # (scancel --signal leaves USR2 pending on the stopped job; the others resume it)
            wait_for(
                "the interruption to reach the job",
                lambda: not stopped(pid) or usr2_pending(pid),
                timeout=90 if how == "time_limit" else 20,
            )
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        proc.wait(timeout=280)
    finally:
        proc.kill()
    took = time.monotonic() - started
    full_scores, full = uninterrupted()
    log = (tmp_path / "rr.log").read_text()
    assert proc.returncode == 0, log[-3000:]
    assert "0 done, 0 skipped, 1 resumed, 0 failed" in log, log[-3000:]
    (job,) = [s.path for s in status(sweep_dir)]
    assert job is not None
    pd.testing.assert_frame_equal(pd.read_parquet(job / "scores.parquet"), full_scores)
    resumed = json.loads((job / "summary.json").read_text())
    # the last attempt served every call an earlier attempt finished from the cache: nothing
    # cached was redone, so the only extra calls are the chunk in flight (flush_every=1)
    assert resumed["cache_hits"] >= 1 and resumed["model_calls"] < full["model_calls"]
    assert resumed["model_calls"] + resumed["cache_hits"] == full["model_calls"]
    assert resumed["cache_hits"] >= before
    restarts = slurm_cmd(slurm, "scontrol", "show", "job", task).split("Restarts=")[1].split()[0]
    assert int(restarts) >= 1
    submitit_log = "".join(p.read_text() for p in (sweep_dir / ".submitit").rglob("*_log.err"))
    assert "DUE TO JOB REQUEUE" in submitit_log
    if how == "usr2":  # submitit's handler ran checkpoint() and requeued the job
        assert f"Caught signal SIGUSR2 on {socket.gethostname()}: this job is preempted" in submitit_log
    elif how == "time_limit":  # the same, counted against max_num_timeout
        assert f"Caught signal SIGUSR2 on {socket.gethostname()}: this job is timed-out" in submitit_log
    else:  # scontrol requeue: submitit ignored SLURM's SIGTERM; SLURM killed and requeued the job
        assert "Bypassing signal SIGTERM" in submitit_log and "Caught signal SIGUSR2" not in submitit_log
    print(
        f"\n{how}: {took:.0f} s, {restarts} restart(s), last attempt: {resumed['model_calls']} model calls, "
        f"{resumed['cache_hits']} from the cache (uninterrupted: {full['model_calls']})"
    )


def job_python_pid(cluster: SlurmCluster, task: str) -> int | None:
    """The PID of the job's Python process (submitit's ``_submit``), from ``scontrol listpids``;
    ``None`` while the job has none (not started yet)."""
    proc = subprocess.run(
        ["scontrol", "listpids", task], env=cluster.env, capture_output=True, text=True, timeout=30
    )
    for line in proc.stdout.splitlines()[1:]:
        pid = line.split()[0]
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        argv = cmdline.split(b"\0")
        if b"submitit.core._submit" in argv and not argv[0].endswith(b"srun"):  # python, not srun
            return int(pid)
    return None


def stopped(pid: int) -> bool:
    """Whether process ``pid`` exists and is stopped (``T`` in ``/proc/<pid>/status``)."""
    try:
        state = next(
            line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State:")
        )
    except (OSError, StopIteration):
        return False
    return state.split()[1] == "T"


def usr2_pending(pid: int) -> bool:
    """Whether SIGUSR2 is pending on process ``pid`` (stopped, it cannot handle it yet)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return False
    masks = [int(line.split()[1], 16) for line in lines if line.startswith(("ShdPnd:", "SigPnd:"))]
    return any(mask & (1 << (signal.SIGUSR2 - 1)) for mask in masks)


class CancelledSweep:
    """SWEEP on ``cluster`` (started at once), whose second task is scancelled once it runs."""

    def __init__(self, cluster: SlurmCluster, folder: Path) -> None:
        folder.mkdir()
        self.cluster, self.log = cluster, folder / "rr.log"
        self.sweep_dir = folder / "out" / "multirun" / "cao2025_mini"
        self.proc = rr_background(
            cluster, ["-m", *SWEEP, f"paths.output_root={folder / 'out'}"], folder, self.log
        )

    def cancel(self) -> None:
        """Wait until the second task runs, then scancel it."""
        self.tasks = wait_for(
            "SLURM array",
            lambda: (self.sweep_dir / ".submitit").is_dir() and array_tasks(self.sweep_dir),
            proc=self.proc,
        )
        queue = ("squeue", "-h", "-r", "-t", "R", "-o", "%i")
        running = lambda: self.tasks[1] in slurm_cmd(self.cluster, *queue).split()  # noqa: E731
        wait_for(f"{self.tasks[1]} running", running, proc=self.proc)
        slurm_cmd(self.cluster, "scancel", self.tasks[1])
        self.cancelled = time.monotonic()

    def outcome(self) -> tuple[str, float]:
        """``rr -m``'s last line and the seconds it took to notice the cancelled task."""
        self.proc.wait(timeout=120)
        noticed = time.monotonic() - self.cancelled
        log = self.log.read_text()
        assert self.proc.returncode == 2, log[-3000:]
        assert "1 done, 0 skipped, 0 resumed, 1 failed" in log and "Traceback" not in log
        # "rr: 1 of 2 jobs failed:", then one line per failed job (with its re-run command)
        lines = log.strip().splitlines()
        assert "rr: 1 of 2 jobs failed:" in lines, log[-3000:]
        last = lines[lines.index("rr: 1 of 2 jobs failed:") + 1].strip()
        task = self.tasks[1]
        assert last.startswith(f"seed=1: SLURM job {task} ended "), last
        log_file = f"without a result; its log: {self.sweep_dir / '.submitit' / task / task}_0_log.err"
        assert log_file in last, last
        return last, noticed


def test_cancelled_job_fails_the_sweep_with_one_line_with_and_without_job_accounting(
    slurm: SlurmCluster, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A task scancelled on the module's cluster (the state comes from sacct) and, at the same
    time, on a second cluster without slurmdbd, where submitit's sacct query fails (the state
    comes from scontrol). The two sweeps run at once (two slurmd share the node's CPUs), so that
    rr's wait for a job out of the queue (~15 s, rr.commands.slurm.wait_for_jobs) is waited once."""
    bare = SlurmCluster(tmp_path_factory.mktemp("slurm-no-accounting"), accounting=False)
    with contextlib.ExitStack() as stack:
        stack.callback(bare.stop)
        bare.start()
        sweeps = {}
        for name, cluster in (("accounting", slurm), ("no accounting", bare)):
            sweeps[name] = CancelledSweep(cluster, tmp_path / name.replace(" ", "-"))
            stack.callback(sweeps[name].proc.kill)
        for sweep in sweeps.values():
            sweep.cancel()
        for name, sweep in sweeps.items():
            last, noticed = sweep.outcome()
            assert " ended CANCELLED without a result" in last  # the state, from sacct / scontrol
            assert noticed < 60, f"{name}: the cancelled job was noticed {noticed:.0f} s after scancel"
            print(f"\ncancel with {name} noticed after {noticed:.1f} s")


def test_encode_array_writes_one_process_store(slurm: SlurmCluster, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"  # 40 short passages in 5 blocks of 8
    corpus.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"p{i}",
                    "title": f"Page {i % 7}",
                    "text": f"Passage {i} is about topic {i * 13 % 17}.",
                }
            )
            + "\n"
            for i in range(40)
        )
    )
    base = [
        "retriever=[dense]",
        "corpus=jsonl",
        f"corpus.path={corpus}",
        "retriever.dense.block_size=8",
        "progress=false",
    ]
    # one process with the threads of one array task (1 CPU): CPU matmuls sum in a different order
    # on 2 threads, which changes the last bits of some embeddings. It runs while the array does.
    one_args = ["encode", *base, f"paths.output_root={tmp_path / 'one'}"]
    one = rr_background(slurm, one_args, tmp_path, tmp_path / "one.log", threads=1)
    try:
        array = [
            "encode",
            "-m",
            *base,
            "shards=2",
            "shard=range(2)",
            "hydra/launcher=slurm_cpu",
            "hydra.launcher.poll_s=1",
        ]
        arr = rr(slurm, [*array, f"paths.output_root={tmp_path / 'array'}"], tmp_path)
        assert one.wait(timeout=240) == 0, (tmp_path / "one.log").read_text()[-3000:]
    finally:
        one.kill()
        one.wait()
    assert arr.returncode == 0, arr.stderr[-3000:]
    assert "2 done, 0 skipped, 0 resumed, 0 failed" in arr.stdout
    sweep = tmp_path / "array" / "encode" / "jsonl" / "multirun"
    assert len(array_tasks(sweep)) == 2
    shards = [json.loads((sweep / f"shard-{i}-of-2" / "encode.json").read_text()) for i in range(2)]
    assert [s["retrievers"]["dense"][0]["encoded"] for s in shards] == [2, 3]  # blocks 0-1 and 2-4

    def blocks(root: Path) -> dict[str, bytes]:
        (store,) = (root / "cache" / "dense").glob("*.blocks")
        return {p.name: p.read_bytes() for p in sorted(store.iterdir())}

    mine, theirs = blocks(tmp_path / "one"), blocks(tmp_path / "array")
    assert len([n for n in mine if n.startswith("block-")]) == 5
    assert mine == theirs


def test_sbatch_rejection_is_one_line_naming_the_setting(slurm: SlurmCluster, tmp_path: Path) -> None:
    # a generic resource the cluster has not (it has 2 GPUs), and more CPUs than the node has: both at once
    settings = {"gpu": "hydra.launcher.gres=tpu:1", "cpus": "hydra.launcher.cpus_per_task=512"}
    procs: dict[str, subprocess.Popen] = {}
    try:
        for name, setting in settings.items():
            with open(tmp_path / f"{name}.err", "w") as err:
                procs[name] = subprocess.Popen(
                    [sys.executable, "-m", "rr", "-m", *SWEEP, f"paths.output_root={tmp_path / name}", setting],
                    cwd=tmp_path, env=slurm_env(slurm), stdout=subprocess.DEVNULL, stderr=err,
                )  # fmt: skip
        for proc in procs.values():
            proc.wait(timeout=240)
    finally:
        for proc in procs.values():
            proc.kill()
    gpu, cpus = ((tmp_path / f"{name}.err").read_text() for name in settings)  # their stderr
    assert procs["gpu"].returncode == 2 and "Traceback" not in gpu
    assert gpu.strip().splitlines()[-1] == (
        "rr: sbatch rejected the sweep's jobs: Invalid generic resource (gres) specification; change "
        "hydra.launcher.gpus_per_node (or gres): this cluster has no such GPUs; use hydra/launcher=slurm_cpu "
        "or hydra.launcher.gpus_per_node=0"
    )
    assert procs["cpus"].returncode == 2 and "Traceback" not in cpus
    assert (
        cpus.strip().splitlines()[-1].endswith("change hydra.launcher.cpus_per_task (more than a node has)")
    )
