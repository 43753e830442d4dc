"""Data-parallel generation across the devices of one node with Lightning Fabric.

``generator=hf generator.data_parallel=N`` runs N replicas of the model, one per device (GPU,
or CPU process), as the ranks of a Fabric DDP process group: the job's own process is rank 0,
ranks 1..N-1 are worker processes started once (``spawn``) on the first ``generate`` call and
kept alive for the whole job, so each rank loads the model once.

Per ``generate`` call rank 0 sorts the prompts longest first, cuts them into batches of
``batch_size`` and deals the batches round-robin to the ranks (:func:`shard_batches`);
``scatter_object_list`` sends each rank its share, every rank generates its batches, and
``gather_object`` collects the completions on rank 0, which puts them back in prompt order.
Because every batch is exactly a batch of the single-process run (same prompts, same padding),
the completions are the same as with ``data_parallel=1``.

A rank that fails sends its traceback instead of completions; rank 0 raises it naming the
rank. Collectives time out after ``timeout_s`` (a rank killed from outside makes rank 0 fail
instead of waiting forever). :meth:`FabricPool.close` (also run at exit) tells the workers to
stop and tears the process group down.

Run one ``rr`` process per node: the pool uses Lightning's process-group setup with its own
cluster environment (ranks and port chosen here), so it neither needs nor reads ``torchrun`` or
SLURM rank variables; a SLURM job asks for ``tasks_per_node: 1`` and N GPUs.
"""

from __future__ import annotations

import atexit
import logging
import os
import socket
import traceback
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from rr.generation.base import Completion
from rr.records import GenerationParams

log = logging.getLogger(__name__)


def shard_batches(lengths: list[int], batch_size: int, world_size: int) -> list[list[list[int]]]:
    """Prompt indices per rank, as batches: longest first, batches dealt round-robin.

    Args:
        lengths: Token count of each prompt.
        batch_size: Prompts per batch (>= 1).
        world_size: Number of ranks (>= 1).

    Returns:
        ``shards[rank]`` = that rank's batches, each a list of prompt indices. The batches are
        those of a single-process run over the same prompts (sorted longest first, stable).
    """
    if batch_size < 1 or world_size < 1:
        raise ValueError(f"batch_size and world_size must be >= 1, got {batch_size} and {world_size}")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    return [batches[rank::world_size] for rank in range(world_size)]


@dataclass(frozen=True)
class _Work:
    """What rank 0 sends a rank for one ``generate`` call."""

    prompts: list[str]
    batches: list[list[int]]  # indices into ``prompts``
    params: GenerationParams


def _run_shard(generator: Any, work: _Work | None) -> tuple[str, Any]:
    """Generate one rank's batches: ``("ok", [(index, Completion), ...])`` or ``("error", traceback)``."""
    if work is None:
        return ("ok", [])
    try:
        out: list[tuple[int, Completion]] = []
        for batch in work.batches:
            completions = generator.generate_local([work.prompts[i] for i in batch], work.params)
            out.extend(zip(batch, completions, strict=True))
        return ("ok", out)
    except Exception:  # noqa: BLE001 - sent to rank 0, which raises it with the rank's name
        return ("error", traceback.format_exc())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _make_environment(rank: int, world_size: int, port: int) -> Any:
    """A Lightning cluster environment with fixed ranks: the pool starts its processes itself."""
    from lightning_fabric.plugins.environments import ClusterEnvironment

    class PoolEnvironment(ClusterEnvironment):
        @property
        def creates_processes_externally(self) -> bool:
            return True  # Fabric must not launch anything: the pool did

        @property
        def main_address(self) -> str:
            return "127.0.0.1"

        @property
        def main_port(self) -> int:
            return port

        @staticmethod
        def detect() -> bool:
            return True

        def world_size(self) -> int:
            return world_size

        def set_world_size(self, size: int) -> None:
            pass

        def global_rank(self) -> int:
            return rank

        def set_global_rank(self, rank_: int) -> None:
            pass

        def local_rank(self) -> int:
            return rank

        def node_rank(self) -> int:
            return 0

    return PoolEnvironment()


def _make_fabric(rank: int, world_size: int, port: int, accelerator: str, timeout_s: float) -> Any:
    """A launched Fabric for ``rank``: process group initialised (blocks until all ranks join)."""
    from lightning_fabric import Fabric
    from lightning_fabric.strategies import DDPStrategy

    strategy = DDPStrategy(
        cluster_environment=_make_environment(rank, world_size, port),
        process_group_backend="nccl" if accelerator == "cuda" else "gloo",
        timeout=timedelta(seconds=timeout_s),
    )
    fabric = Fabric(accelerator=accelerator, devices=world_size, strategy=strategy)
    fabric.launch()
    return fabric


def _threads_per_rank(accelerator: str, world_size: int) -> int | None:
    """CPU ranks split the cores between them (no oversubscription); GPU ranks keep the default."""
    if accelerator != "cpu":
        return None
    return max(1, (os.cpu_count() or 1) // world_size)


def _worker_main(
    rank: int,
    world_size: int,
    port: int,
    accelerator: str,
    timeout_s: float,
    generator_cls: type,
    generator_kwargs: dict,
    started: Any,
) -> None:
    """Entry point of ranks 1..N-1: report start-up on ``started``, then serve shards until
    rank 0 sends ``"stop"``."""
    try:
        import torch
        import torch.distributed as dist

        threads = _threads_per_rank(accelerator, world_size)
        if threads:
            torch.set_num_threads(threads)
        generator = generator_cls(**{**generator_kwargs, "data_parallel": 1})
    except Exception:  # noqa: BLE001 - reported to rank 0, which raises it naming this rank
        started.put((rank, traceback.format_exc()))
        return
    started.put((rank, None))
    fabric = _make_fabric(rank, world_size, port, accelerator, timeout_s)
    generator.device = str(fabric.device)
    try:
        while True:
            received: list[Any] = [None]
            dist.scatter_object_list(received, None, src=0)
            message = received[0]
            if message == "stop":
                break
            dist.gather_object(_run_shard(generator, message), None, dst=0)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


class FabricPool:
    """Rank 0 of a data-parallel pool of HF model replicas (see the module docstring).

    Args:
        generator: The rank-0 generator (the job's own, e.g. :class:`~rr.generation.hf.HFGenerator`);
            each replica is built from its class (``type(generator)``, importable by the spawned
            workers) and ``generator_kwargs`` with ``data_parallel=1``.
        generator_kwargs: Those constructor arguments (picklable).
        world_size: Number of ranks (devices), >= 2.
        accelerator: ``cuda`` or ``cpu``.
        timeout_s: Collective timeout.
    """

    def __init__(
        self,
        generator: Any,
        generator_kwargs: dict,
        world_size: int,
        accelerator: str,
        timeout_s: float = 1800.0,
    ) -> None:
        if world_size < 2:
            raise ValueError(f"a data-parallel pool needs >= 2 ranks, got {world_size}")
        if accelerator == "cuda":
            import torch

            available = torch.cuda.device_count()
            if available < world_size:
                raise ValueError(
                    f"generator.data_parallel={world_size} but only {available} CUDA device(s) are visible"
                )
        self.generator = generator
        self.generator_kwargs = generator_kwargs
        self.world_size = world_size
        self.accelerator = accelerator
        self.timeout_s = timeout_s
        self.prompts_per_rank = [0] * world_size
        self._processes: list[Any] = []
        self._fabric: Any = None
        self._host_threads: int | None = None

    @property
    def started(self) -> bool:
        return self._fabric is not None

    def start(self) -> None:
        """Start ranks 1..N-1 and join the process group as rank 0 (once)."""
        if self.started:
            return
        import multiprocessing as mp

        port = _free_port()
        ctx = mp.get_context("spawn")
        log.info(
            "data-parallel generation: %d ranks on %s (Lightning Fabric DDP, port %d)",
            self.world_size,
            self.accelerator,
            port,
        )
        started = ctx.Queue()
        for rank in range(1, self.world_size):
            p = ctx.Process(
                target=_worker_main,
                args=(
                    rank,
                    self.world_size,
                    port,
                    self.accelerator,
                    self.timeout_s,
                    type(self.generator),
                    self.generator_kwargs,
                    started,
                ),
                daemon=True,
                name=f"rr-dp-rank{rank}",
            )
            p.start()
            self._processes.append(p)
        try:
            self._wait_started(started)
        except BaseException:
            for p in self._processes:
                p.terminate()
            self._processes = []
            raise
        threads = _threads_per_rank(self.accelerator, self.world_size)
        if threads:
            import torch

            # rank 0 is this (host) process: its thread count is given back in close()
            self._host_threads = torch.get_num_threads()
            torch.set_num_threads(threads)
        self._fabric = _make_fabric(0, self.world_size, port, self.accelerator, self.timeout_s)
        self.generator.device = str(self._fabric.device)
        atexit.register(self.close)

    def _wait_started(self, started: Any) -> None:
        """Wait until every worker has imported and built its generator, so that a worker that
        fails or dies while starting is reported at once rather than after the rendezvous timeout."""
        import queue
        import time

        pending = set(range(1, self.world_size))
        deadline = time.monotonic() + self.timeout_s
        while pending:
            try:
                rank, error = started.get(timeout=1.0)
            except queue.Empty:
                for r in sorted(pending):
                    p = self._processes[r - 1]
                    if not p.is_alive():
                        raise RuntimeError(
                            f"data-parallel rank {r} exited with code {p.exitcode} while starting"
                        ) from None
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"data-parallel ranks {sorted(pending)} did not start within {self.timeout_s:.0f}s"
                    ) from None
                continue
            if error is not None:
                raise RuntimeError(f"data-parallel rank {rank} failed to start:\n{error}")
            pending.discard(rank)

    def generate(
        self, prompts: list[str], lengths: list[int], params: GenerationParams, progress: Any = None
    ) -> list[Completion]:
        """Completions for ``prompts`` (same order), generated by all ranks."""
        import torch.distributed as dist

        self.start()
        shards = shard_batches(lengths, self.generator.batch_size, self.world_size)
        works: list[Any] = [_Work(prompts, batches, params) for batches in shards]
        received: list[Any] = [None]
        gathered: list[Any] = [None] * self.world_size
        try:
            dist.scatter_object_list(received, works, src=0)
            mine = _run_shard(self.generator, received[0])
            if progress is not None:
                progress.update(sum(len(b) for b in shards[0]))
            dist.gather_object(mine, gathered, dst=0)
        except RuntimeError as e:  # gloo/NCCL: a peer crashed, was killed, or timed out
            dead = [
                f"rank {r} (exit code {p.exitcode})"
                for r, p in enumerate(self._processes, start=1)
                if not p.is_alive()
            ]
            raise RuntimeError(
                f"data-parallel generation: a collective failed; dead ranks: {', '.join(dead) or 'none'}. "
                f"Completed requests are in the cache: re-running the job resumes. Cause: {e}"
            ) from e
        out: list[Completion | None] = [None] * len(prompts)
        failures = []
        for rank, (status, payload) in enumerate(gathered):
            if status == "error":
                failures.append(f"rank {rank}:\n{payload}")
                continue
            self.prompts_per_rank[rank] += len(payload)
            for i, completion in payload:
                out[i] = completion
        if failures:
            raise RuntimeError("data-parallel generation failed on " + "\n".join(failures))
        if progress is not None:
            progress.update(len(prompts) - sum(len(b) for b in shards[0]))
        missing = [i for i, c in enumerate(out) if c is None]
        if missing:  # a bug, not bad input: every index is dealt to exactly one rank
            raise RuntimeError(f"data-parallel generation lost prompts {missing[:5]}")
        return [c for c in out if c is not None]

    def close(self) -> None:
        """Stop the workers and leave the process group (idempotent)."""
        if not self.started:
            return
        import torch.distributed as dist

        try:
            dist.scatter_object_list([None], ["stop"] * self.world_size, src=0)
        except Exception as e:  # noqa: BLE001 - a dead worker must not hide the job's own outcome
            log.warning("data-parallel pool: could not stop the workers cleanly: %s", e)
        finally:
            if dist.is_initialized():
                dist.destroy_process_group()
            for p in self._processes:
                p.join(timeout=30)
                if p.is_alive():
                    p.terminate()
            self._processes = []
            self._fabric = None
            atexit.unregister(self.close)
            if self._host_threads is not None:
                import torch

                torch.set_num_threads(self._host_threads)
                self._host_threads = None
