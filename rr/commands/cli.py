"""The ``rr`` command: a Hydra app that runs one job (or a multirun sweep with ``-m``)."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from rr.commands.errors import user_message
from rr.config.composition import PRIMARY_CONFIG, config_dir, register_configs
from rr.errors import ConfigError, UserError
from rr.registry import Registry

if TYPE_CHECKING:
    from rr.commands.status import JobRow

log = logging.getLogger("rr")

#: ``rr <name> ...`` subcommands, dispatched before Hydra sees argv: name -> lazy "module:function"
#: (its module imported only when the subcommand runs); the function takes the remaining arguments
#: and returns an exit code.
SUBCOMMANDS: Registry[Callable[[list[str]], int | None]] = Registry("subcommand", Callable)
for _name, _ref in {
    "status": "rr.commands.status:status_main",
    "plan": "rr.commands.plan:plan_main",
    "prefetch": "rr.commands.prefetch:prefetch_main",
    "encode": "rr.commands.encode:encode_main",
    "chunk-wiki": "rr.commands.chunk_wiki:main",
    "report": "rr.commands.report:main",
    "score": "rr.commands.score:main",
    "serve": "rr.commands.serve:main",
    "judge-agreement": "rr.commands.judge_agreement:main",
    "perturb-queries": "rr.commands.perturb_queries:main",
    "sure-prelim": "rr.commands.sure_prelim:main",
    "reproduce-docs": "rr.commands.reproduction:main",
}.items():
    SUBCOMMANDS.register_lazy(_name, _ref)

#: ``rr --verbose ...`` (anywhere on the command line): show the traceback of a user error too.
VERBOSE_FLAG = "--verbose"
#: ``rr -m ... --detach``: submit the sweep's jobs to SLURM and return (``hydra.launcher.detach=true``).
DETACH_FLAG = "--detach"
#: Exit status of a user error (bad config value, bad data, missing file or model).
USER_ERROR_EXIT = 2


def _app(cfg: DictConfig) -> JobRow:
    """One job: skip it when done, else run it (resuming a cut-off run from the cache).

    Returns:
        Its :func:`rr.commands.status.job_record`, its line of ``rr -m``'s sweep table.
    """
    from rr.commands.status import job_record
    from rr.config.identity import job_id
    from rr.config.settings import job_settings
    from rr.job_env import prepare_job
    from rr.jobfolder import HISTORY_DIR, SUMMARY_FILE, archive_run, is_started
    from rr.pipeline import run_job
    from rr.reporting.job import print_job_report, print_summary
    from rr.resume import finished
    from rr.sweepfolder import (
        FAILED,
        INTERRUPTED,
        clear_running,
        clear_stopped,
        mark_running,
        mark_stopped,
        record_command,
        run_in_progress,
    )

    start = time.monotonic()
    hc = HydraConfig.get()
    if hc.mode == RunMode.RUN and hc.sweeper.get("params"):  # sweep=... without -m: not one job
        name = hc.runtime.choices.get("sweep") or "..."
        raise ConfigError(
            "sweep",
            f"sweep={name} is a multirun sweep (hydra.sweeper.params: {', '.join(hc.sweeper.params)}); "
            f"run it with -m: `rr -m sweep={name} ...`",
        )
    output_dir = hc.runtime.output_dir
    jid = job_id(cfg)
    done = finished(output_dir, jid)
    settings = job_settings(cfg)
    if done is not None and not settings.force:
        print_summary(done, output_dir, already_done=True)  # its tables again, from summary.json
        return job_record("skipped", jid, output_dir, replace(done, model_calls=0), 0.0)
    prepare_job(settings.progress)
    record_command(output_dir, jid, job_command(hc))  # what every "finish it" / "re-run" hint gives
    outcome = "resumed" if is_started(output_dir) and done is None else "done"
    if (
        done is not None
    ):  # force=true: the finished run's record is kept (rr status lists it), not overwritten
        n = archive_run(output_dir)
        log.info(
            "force=true: job %s runs again; its earlier run is kept as %s/%d.*", output_dir, HISTORY_DIR, n
        )
    Path(output_dir, SUMMARY_FILE).unlink(missing_ok=True)  # a forced re-run is not done until it ends
    last = clear_stopped(output_dir)
    beside = run_in_progress(output_dir)
    if outcome == "resumed" and beside is not None and beside.alive:
        # the same job, started by another command that has not ended: nothing of a stopped run to resume
        outcome = "done"
        log.info(
            "job %s is running now in another process (pid %s since %s): this run goes beside it, from "
            "the start; requests either has cached are not sent again",
            output_dir,
            beside.pid,
            beside.at,
        )
    elif outcome == "resumed":
        if last:
            how = "failed" if last.marker == FAILED else "interrupted by"
            why = f" ({how} {_or_unknown(last.message)} at {_or_unknown(last.at)})"
        elif beside is not None and beside.alive is None:  # another machine's process: unknowable here
            why = (
                f" (its run on {beside.host}, pid {beside.pid} since {beside.at}, has not "
                "finished: killed, or still running there)"
            )
        elif beside is not None:
            why = f" (its run, pid {beside.pid} since {beside.at}, stopped without finishing)"
        else:
            why = " (its run stopped without finishing)"
        log.info("resuming job %s%s: model calls it made are read from the cache", output_dir, why)
    if beside is None or not beside.alive:  # a live run's record stays: it names the first
        mark_running(output_dir, jid)
    try:
        result = run_job(cfg, output_dir, resuming=outcome == "resumed")
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: one line, the folder marked, no traceback
        signame = e.signal_name if isinstance(e, Terminated) else "SIGINT"
        mark_stopped(output_dir, jid, INTERRUPTED, signame)
        line = (
            f"interrupted ({signame}): job {output_dir} stopped before its end; run the same command "
            "again to resume it (model calls already made are cached)"
        )
        _log_to_job_file(logging.WARNING, line)
        print(f"rr: {line}", file=sys.stderr)
        sys.exit(INTERRUPT_EXIT[signame])
    except Exception as e:  # the sweep table names the failed job and its folder
        message = " ".join((user_message(e) or f"{type(e).__name__}: {e}").split())
        cause = "config" if _on_configuration(e) else "error"  # re-running as is cannot help a config error
        mark_stopped(output_dir, jid, FAILED, message, cause)  # rr status: failed, with this line
        _log_to_job_file(logging.ERROR, f"job failed: {message}")
        e.rr_record = job_record("failed", jid, output_dir, None, time.monotonic() - start)  # type: ignore[attr-defined]
        raise
    finally:
        clear_running(output_dir)
    print_job_report(result)
    return job_record(outcome, jid, output_dir, result.summary, time.monotonic() - start)


def _on_configuration(e: BaseException) -> bool:
    """Whether a job failed on what it was given (a user error: a setting, a path, a prompt that cannot
    fit its window), not on something a re-run might not meet again (a crash, memory, a server)."""
    from rr.generation.client import PromptTooLongError
    from rr.generation.openai import OpenAIBackendError

    seen: BaseException | None = e
    while seen is not None:
        if isinstance(seen, OpenAIBackendError):  # a server down may be up on the re-run
            return False
        if isinstance(seen, UserError | PromptTooLongError):
            return True
        seen = seen.__cause__
    return False


def job_command(hc: Any) -> list[str]:
    """The command that makes this one job again, in its own folder: its overrides (a sweep job's
    own values: the sweep's other jobs are not re-run) and the hydra overrides of its command (the
    launcher, the sweep folder). A job of a sweep goes through ``rr -m`` (its launcher, its folder
    ``<sweep>/<job id>``); a single run through ``rr``."""
    multirun = hc.mode == RunMode.MULTIRUN
    hydra = [str(o) for o in hc.overrides.hydra if not str(o).startswith("hydra.mode=")]
    return ["rr", *(["-m"] if multirun else []), *(str(o) for o in hc.overrides.task), *hydra]


def _or_unknown(value: str | None) -> str:
    """A stop record's field as said on the console (``?``: the record lacks it)."""
    return "?" if value is None else value


class Terminated(KeyboardInterrupt):
    """Raised in the ``rr`` process by SIGTERM (``kill``, a scheduler's cancel) as Ctrl-C raises
    :class:`KeyboardInterrupt`: the job stops the same way, with one line and its folder marked."""

    signal_name = "SIGTERM"


#: Exit status of a command stopped by a signal (the shell's 128 + signal number).
INTERRUPT_EXIT = {"SIGINT": 130, "SIGTERM": 143}


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


def _log_to_job_file(level: int, message: str) -> None:
    """Write ``message`` to the job's log file only (Hydra's file handler; the console gets its own line)."""
    record = logging.LogRecord("rr", level, __file__, 0, message, None, None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)


@contextmanager
def _hydra_reraises() -> Iterator[None]:
    """Let Hydra re-raise what a job raises (``HYDRA_FULL_ERROR=1``) so rr decides how to print it."""
    before = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = before


def run_reporting_errors(func: Callable[[], Any], verbose: bool) -> Any:
    """Run ``func``; a user error exits with one line ``rr: ...`` on stderr (status 2).

    Bugs keep their traceback (exit status 1); ``verbose`` shows the traceback of user errors too.
    """
    try:
        with _hydra_reraises():
            return func()
    except BrokenPipeError:  # `rr --help | head`: the reader left; Python's documented way out
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except Exception as e:
        message = user_message(e)
        if message is None:
            traceback.print_exc()
            sys.exit(1)
        exit_with_user_error(message, verbose)


def exit_with_user_error(message: str, verbose: bool) -> NoReturn:
    """Print ``rr: <message>`` on stderr (after the traceback when ``verbose``) and exit 2."""
    if verbose:
        traceback.print_exc()
    print(f"rr: {message}", file=sys.stderr)
    sys.exit(USER_ERROR_EXIT)


#: ``--verbose`` was on the command line (or ``HYDRA_FULL_ERROR=1``); set by :func:`main`.
_verbose = False


def single_run_one_line(app: Callable[[DictConfig], Any]) -> Callable[[DictConfig], Any]:
    """``app`` (a Hydra task function) whose user errors in a single run exit with their one line.

    Raised further, Hydra would first print "Error executing job with overrides: [...]"; in a
    multirun it does (that line names the failed job), and the sweep's other jobs still run.
    """

    def task(cfg: DictConfig) -> Any:
        try:
            return app(cfg)
        except Exception as e:
            if HydraConfig.get().mode == RunMode.RUN and (message := user_message(e)) is not None:
                exit_with_user_error(message, _verbose)
            raise

    return task


def main() -> None:
    """Entry point of the ``rr`` console script and ``python -m rr``.

    A user error prints one line ``rr: <what, where, how to fix>`` and exits 2; ``--verbose``
    (or ``HYDRA_FULL_ERROR=1``) prints its traceback first. Ctrl-C (SIGINT) and SIGTERM stop the
    command with one line (a job's names its folder and how to resume it) and exit 130 / 143.
    """
    in_main_thread = threading.current_thread() is threading.main_thread()  # signal handlers live there
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if in_main_thread else None
    try:
        _main()
    except KeyboardInterrupt as e:  # outside a job (composing, a subcommand): one line too
        signame = e.signal_name if isinstance(e, Terminated) else "SIGINT"
        print(f"rr: interrupted ({signame})", file=sys.stderr)
        sys.exit(INTERRUPT_EXIT[signame])
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)


def _main() -> None:
    global _verbose
    verbose = VERBOSE_FLAG in sys.argv[1:] or os.environ.get("HYDRA_FULL_ERROR") == "1"
    _verbose = verbose
    sys.argv = [a for a in sys.argv if a != VERBOSE_FLAG]
    flags = set(sys.argv[1:])
    if DETACH_FLAG in flags:
        if not flags & {"-m", "--multirun"} or not any(a.startswith("hydra/launcher=slurm") for a in flags):
            exit_with_user_error(
                "--detach submits a sweep to SLURM and returns: use it with `rr -m ... hydra/launcher=slurm` "
                "(or slurm_cpu); `rr status DIR` follows the jobs",
                False,
            )
        sys.argv = [*(a for a in sys.argv if a != DETACH_FLAG), "hydra.launcher.detach=true"]
        flags = set(sys.argv[1:])
    if flags & {"-m", "--multirun"} and flags & {"-c", "--cfg", "--info"}:
        exit_with_user_error(
            "--cfg / --info show one job's config and cannot be combined with -m: drop -m and give one value "
            "per key to see a job's config, or run `rr plan -m ...` to list every job of the sweep",
            False,
        )
    if len(sys.argv) > 1 and sys.argv[1] in SUBCOMMANDS:
        entry = SUBCOMMANDS[sys.argv[1]]
        sys.exit(run_reporting_errors(lambda: entry(sys.argv[2:]), verbose))
    directory = config_dir()
    if not Path(directory, f"{PRIMARY_CONFIG}.yaml").exists():
        sys.exit(
            f"rr: no {PRIMARY_CONFIG}.yaml in {directory} (RR_CONFIG_DIR={os.environ.get('RR_CONFIG_DIR')!r})"
        )
    run_reporting_errors(register_configs, verbose)  # a plugin that fails to import: one line

    run_reporting_errors(
        hydra.main(config_path=directory, config_name="config", version_base="1.3")(
            single_run_one_line(_app)
        ),
        verbose,
    )
