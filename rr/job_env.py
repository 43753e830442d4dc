"""What a job process sets from its config and its allocation before it runs: progress bars
and thread counts.

* ``progress=false`` silences every progress bar the job's libraries draw (bm25s, transformers,
  huggingface_hub, sentence-transformers), so job logs on a cluster hold log lines only;
  components that draw their own bars ask :func:`progress_enabled`.
* On SLURM (or any scheduler that sets ``SLURM_CPUS_PER_TASK``) torch, OpenMP, MKL, OpenBLAS
  and the tokenizers' rayon pool use the task's CPUs, not every core of the node: without
  cgroups nothing else stops a 1-CPU job from running one thread per core. A variable the
  user set (``OMP_NUM_THREADS=4 rr ...``) is left alone, and so is torch then.
* Every component that picks a torch device asks :func:`torch_device`: ``cuda`` asked for without
  a CUDA device torch can use, or no device asked for in a job the scheduler gave GPUs
  (:func:`allocated_gpus`), is a one-line :class:`~rr.errors.UserError` naming the driver and
  torch's CUDA (:func:`cuda_diagnosis`), never a traceback or a silent run on the CPU.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import warnings
from collections.abc import Mapping, MutableMapping

from rr.errors import UserError

log = logging.getLogger(__name__)

#: Thread-count variables set from the allocation (each only when the environment lacks it).
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS")

_progress = {"enabled": True}
#: Variables read by tqdm (bars created without an explicit ``disable``) and huggingface_hub.
_PROGRESS_VARS = ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS")
#: The ones :func:`set_progress` set itself (and so removes again when bars are turned back on).
_progress_vars_set: set[str] = set()


def progress_enabled() -> bool:
    """Whether this process may draw progress bars (``False`` after ``set_progress(False)``)."""
    return _progress["enabled"]


def set_progress(enabled: bool) -> None:
    """Turn the progress bars of this process (rr's and its libraries') on or off.

    Symmetric, so that several jobs run in one process (tests, notebooks) each get their own
    setting: turning bars back on removes the environment variables that turning them off set.
    """
    _progress["enabled"] = enabled
    for var in _PROGRESS_VARS:
        if not enabled and var not in os.environ:
            os.environ[var] = "1"
            _progress_vars_set.add(var)
        elif enabled and var in _progress_vars_set:
            os.environ.pop(var, None)
            _progress_vars_set.discard(var)
    with warnings.catch_warnings():
        # huggingface_hub read HF_HUB_DISABLE_PROGRESS_BARS once, at its import: when an earlier
        # progress=false job of this process set it, turning bars back on (here and through
        # transformers) warns that the variable wins; hub download bars stay off then, the others come back
        warnings.filterwarnings("ignore", message="Cannot enable progress bars", category=UserWarning)
        try:
            from huggingface_hub.utils import disable_progress_bars, enable_progress_bars

            (enable_progress_bars if enabled else disable_progress_bars)()
        except ImportError:
            pass
        try:
            from transformers.utils import logging as hf_logging

            (hf_logging.enable_progress_bar if enabled else hf_logging.disable_progress_bar)()
        except ImportError:
            pass


def allocated_cpus(env: MutableMapping[str, str] | None = None) -> int | None:
    """The CPUs the scheduler gave this task (``SLURM_CPUS_PER_TASK``), or ``None`` outside one."""
    env = os.environ if env is None else env
    value = env.get("SLURM_CPUS_PER_TASK", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


def limit_threads(env: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Make the thread pools follow the allocation; returns the variables it set.

    Sets each of :data:`THREAD_VARS` the environment lacks to the allocated CPU count and calls
    ``torch.set_num_threads`` with it, unless the user set ``OMP_NUM_THREADS`` (torch reads that
    itself). Outside an allocation it does nothing.
    """
    env = os.environ if env is None else env
    cpus = allocated_cpus(env)
    if cpus is None:
        return {}
    user_omp = "OMP_NUM_THREADS" in env
    changed = {var: str(cpus) for var in THREAD_VARS if var not in env}
    env.update(changed)
    if not user_omp:
        import torch

        torch.set_num_threads(cpus)
    log.info(
        "threads follow SLURM_CPUS_PER_TASK=%d: %s%s",
        cpus,
        ", ".join(f"{k}={v}" for k, v in changed.items()) or "all thread variables already set",
        "" if user_omp else f", torch {cpus}",
    )
    return changed


#: Variables through which a scheduler hands a process GPUs (SLURM's, and CUDA's own list).
GPU_VARS = (
    "SLURM_JOB_GPUS",
    "SLURM_STEP_GPUS",
    "SLURM_GPUS",
    "SLURM_GPUS_ON_NODE",
    "SLURM_GPUS_PER_NODE",
    "SLURM_GPUS_PER_TASK",
    "CUDA_VISIBLE_DEVICES",
)


def allocated_gpus(env: Mapping[str, str] | None = None) -> str | None:
    """``VAR=value`` of the first of :data:`GPU_VARS` that gives this process GPUs, else ``None``.

    An empty value, ``0`` GPUs, or ``CUDA_VISIBLE_DEVICES`` of ``-1`` / ``NoDevFiles`` (what a
    user sets to hide the GPUs) gives none.
    """
    env = os.environ if env is None else env
    for var in GPU_VARS:
        value = env.get(var, "").strip()
        if value in ("", "0", "-1", "NoDevFiles"):
            continue
        return f"{var}={value}"
    return None


def nvidia_smi_gpus() -> list[str]:
    """``name, driver`` of each GPU ``nvidia-smi`` lists (``[]`` without ``nvidia-smi`` or GPUs)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    try:
        proc = subprocess.run(
            [exe, "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()] if proc.returncode == 0 else []


def cuda_diagnosis() -> str:
    """Why torch may see no GPU, in one phrase: torch's version and CUDA build, and what ``nvidia-smi``
    lists (its GPUs and driver), e.g. ``torch 2.13.0+cu130 (built for CUDA 13.0); nvidia-smi lists
    2 GPUs, driver 535.183.01``."""
    import torch

    built = f"built for CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
    gpus = nvidia_smi_gpus()
    if gpus:
        drivers = sorted({g.rpartition(",")[2].strip() for g in gpus})
        smi = f"nvidia-smi lists {len(gpus)} GPU{'s' if len(gpus) > 1 else ''}, driver {', '.join(drivers)}"
    else:
        smi = "nvidia-smi lists no GPU" if shutil.which("nvidia-smi") else "no nvidia-smi on PATH"
    return f"torch {torch.__version__} ({built}); {smi}"


def torch_device(requested: str | None, what: str) -> str:
    """The torch device ``what`` (``"generator"``, ``"retriever.dense"``) runs on.

    ``requested`` is the component's ``device`` (``None``: CUDA where torch has it, else the CPU).

    Raises:
        UserError: ``requested`` is a CUDA device and torch has none, or nothing was requested in
            a job the scheduler gave GPUs (:func:`allocated_gpus`) and torch sees none: such a
            job would run on the CPU, many times slower, inside a GPU allocation.
    """
    import torch

    if requested is not None and not requested.startswith("cuda"):
        return requested
    if torch.cuda.is_available():
        return requested or "cuda"
    fix = "install a torch that matches the driver (README, 'Cluster setup')"
    if requested is not None:
        raise UserError(
            f"{what}.device={requested} but torch sees no CUDA device ({cuda_diagnosis()}); "
            f"{fix}, or set {what}.device=cpu"
        )
    given = allocated_gpus()
    if given is not None:
        raise UserError(
            f"{what}: this job was given GPUs ({given}) but torch sees none ({cuda_diagnosis()}); "
            f"it will not run on the CPU instead: {fix}, or set {what}.device=cpu to mean it"
        )
    return "cpu"


def prepare_job(progress: bool) -> None:
    """Everything a job process sets before its work: progress bars and thread counts."""
    set_progress(progress)
    limit_threads()


def plan_command() -> str:
    """``rr plan`` with this job's command-line overrides (``rr plan ...`` outside a Hydra run):
    the command that shows what the job will cost, quoted for a shell."""
    import shlex

    try:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            overrides = list(HydraConfig.get().overrides.task)
            return " ".join(["rr plan", *(shlex.quote(o) for o in overrides)])
    except (ImportError, ValueError):
        pass
    return "rr plan ..."
