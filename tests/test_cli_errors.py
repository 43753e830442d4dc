"""User errors print one line ``rr: ...`` on stderr and exit 2, with no traceback (issue 14).

Each case runs the real ``rr`` entry point (:func:`rr.commands.cli.main`, in-process for speed; one
case through ``python -m rr`` in a subprocess). Every config error here is raised before
any model loads, so no test loads a model. :func:`rr_main` (``rr ARGS`` in-process, its exit
status and output) serves the other modules' command-line tests too.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra.core.global_hydra import GlobalHydra

import rr.commands.cli
from rr.commands.cli import USER_ERROR_EXIT

REPO = Path(__file__).resolve().parent.parent
#: A small job that gets as far as instantiating its components without loading a model.
SMALL = ["dataset.n=2", "grid.k=[1]", "retriever=[bm25]", "progress=false"]


def rr_main(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    """Run ``rr <args>`` in-process (:func:`rr.commands.cli.main`, what the console script and ``python -m rr``
    call); return (exit status, stdout, stderr). What a job sets for its process is undone afterwards:
    Hydra's logging (handlers on the root logger, writing to this test's captured streams) and
    ``progress=false`` (:func:`rr.job_env.set_progress`, environment variables included)."""
    import huggingface_hub.constants  # noqa: F401 - reads HF_HUB_DISABLE_PROGRESS_BARS once, at import: before a job sets it

    from rr.job_env import progress_enabled, set_progress

    GlobalHydra.instance().clear()
    monkeypatch.setattr(sys, "argv", ["rr", *args])
    root = logging.getLogger()
    handlers, level, progress = root.handlers[:], root.level, progress_enabled()
    try:
        rr.commands.cli.main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        GlobalHydra.instance().clear()
        for handler in root.handlers:
            if handler not in handlers:
                handler.close()
        root.handlers[:] = handlers
        root.setLevel(level)
        set_progress(progress)
    out, err = capsys.readouterr()
    return code, out, err


def run_main(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, root: bool = True
) -> tuple[int, str]:
    """Run ``rr <args>`` in-process with outputs under ``tmp_path``; return (exit code, stderr).
    The command must exit (a user error, a bug): a run that returns fails the test.

    ``root=False`` leaves ``paths.output_root`` out (a subcommand such as ``rr report`` comes first).
    """
    GlobalHydra.instance().clear()
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    given = not root or any(a.startswith("paths.output_root=") for a in args)
    prefix = [] if given else [f"paths.output_root={tmp_path}"]
    monkeypatch.setattr(sys, "argv", ["rr", *prefix, *args])
    with pytest.raises(SystemExit) as exc:
        rr.commands.cli.main()
    GlobalHydra.instance().clear()
    code = exc.value.code
    return (code if isinstance(code, int) else 1), capsys.readouterr().err


def assert_one_line(code: int, err: str, *needles: str) -> str:
    """The exit code is the user-error code and stderr is one ``rr:`` line holding ``needles``."""
    assert code == USER_ERROR_EXIT, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("rr: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


@pytest.mark.parametrize(
    ("override", "needles"),
    [
        ("generator.max_new_tokens=-5", ["generator.max_new_tokens", "positive integer", "-5"]),
        ("generator.temperature=-1", ["generator.temperature", ">= 0", "-1"]),
        ("generator.top_p=0", ["generator.top_p", "(0, 1]"]),
        ("flush_every=0", ["flush_every", "positive integer", "got 0"]),
        ("flush_every=-3", ["flush_every", "got -3"]),
        ("corpus.max_passages=0", ["corpus.max_passages", "positive integer or null"]),
        ("generator.model=/no/such/dir", ["generator.model", "/no/such/dir does not exist"]),
        ("dataset.n=0", ["dataset.n", "positive integer or null"]),
        ("grid.orders=[sideways]", ["grid.orders", "unknown order 'sideways'"]),
    ],
)
def test_bad_config_value_is_one_line_naming_the_key(override, needles, tmp_path, monkeypatch, capsys):
    code, err = run_main([*SMALL, override], tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, *needles)


@pytest.mark.parametrize("grid", [["grid.k=[]"], ["grid.orders=[]"]])
def test_empty_grid_says_so(grid, tmp_path, monkeypatch, capsys):
    code, err = run_main([*SMALL, *grid, "grid.closed_book=false"], tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, "grid is empty", "grid.closed_book=true")


def test_empty_k_with_closed_book_is_not_an_empty_grid(tmp_path):
    """``grid.k=[]`` with the closed-book baseline still has cells: no error from the grid check."""
    from rr.pipeline import check_grid
    from rr.strategies.simple import Vanilla

    check_grid([Vanilla()], [], [], closed_book=True)
    with pytest.raises(ValueError, match="grid is empty"):
        check_grid([Vanilla()], [5], [], closed_book=False)


def test_hub_model_that_cannot_be_found_is_a_user_error() -> None:
    """Offline (the tests' HF_HUB_OFFLINE=1), an id that is not cached cannot be loaded."""
    from rr.commands.errors import user_message
    from rr.errors import UserError
    from rr.generation.hf import HFGenerator

    with pytest.raises(UserError, match="model 'rr-no-such-org/no-such-model' cannot be loaded") as exc:
        HFGenerator(model="rr-no-such-org/no-such-model").identity()
    assert "\n" not in (user_message(exc.value) or "\n")


def test_unknown_key_is_one_line(tmp_path, monkeypatch, capsys):
    code, err = run_main(["generator.foo=1"], tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, "unknown config key 'generator.foo'", "HFGeneratorSchema")


def test_missing_option_is_one_line(tmp_path, monkeypatch, capsys):
    code, err = run_main(["generator=nope"], tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, "generator/nope", "hf")


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["retriever=bm25s"], ["'retriever/bm25s' (did you mean bm25?)", "Available options in 'retriever'"]),
        (["retriever=[bm25s]"], ["'retriever/bm25s' (did you mean bm25?)"]),  # a list-valued group
        (["strategy=ownknw"], ["(did you mean ownknow?)"]),
        (["-m", "strategy=vanilla,owknow"], ["'strategy/owknow' (did you mean ownknow?)"]),  # a sweep's value
    ],
)
def test_mistyped_option_says_which_one_was_meant(args, needles, tmp_path, monkeypatch, capsys):
    code, err = run_main([*args, f"paths.output_root={tmp_path}"], tmp_path, monkeypatch, capsys, root=False)
    assert_one_line(code, err, *needles)


def test_unlike_option_suggests_nothing(tmp_path, monkeypatch, capsys):
    code, err = run_main(["generator=xyz"], tmp_path, monkeypatch, capsys)
    assert "did you mean" not in assert_one_line(code, err, "generator/xyz")


@pytest.mark.parametrize(
    ("override", "write"),
    [("grid.k=5", "'grid.k=[5]'"), ("grid.orders=original", "'grid.orders=[original]'")],
)
def test_a_list_key_given_one_value_says_how_to_write_the_list(
    override, write, tmp_path, monkeypatch, capsys
):
    code, err = run_main([override], tmp_path, monkeypatch, capsys)
    line = assert_one_line(code, err, f"{override.split('=')[0]} takes a list: write {write}")
    assert "ListConfig" not in line


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


GOOD_Q = b'{"id": "q1", "question": "Who?", "answers": ["x"]}\n'


@pytest.mark.parametrize(
    ("line", "needles"),
    [
        (
            b'{"id": "q2", "question": "Wh\xffo?", "answers": ["x"]}\n',
            ["not valid UTF-8", "0xff", "column 29"],
        ),
        (b'{"id": "q2", "question": "caf\xc3", "answers": ["x"]}\n', ["not valid UTF-8", "0xc3"]),
        (b'{"id": "q2", "question": "a\\ud800b", "answers": ["x"]}\n', ["lone surrogate", "\\ud800"]),
    ],
)
def test_dataset_file_with_bad_text_names_file_and_line(line, needles, tmp_path, monkeypatch, capsys):
    path = _write(tmp_path / "q.jsonl", GOOD_Q + line)
    code, err = run_main(
        [*SMALL, "dataset=jsonl", f"dataset.path={path}", "grid.k=[]"], tmp_path, monkeypatch, capsys
    )
    assert_one_line(code, err, f"{path}:2:", *needles)


def test_corpus_file_with_lone_surrogate_names_file_and_line(tmp_path, monkeypatch, capsys):
    corpus = _write(
        tmp_path / "c.jsonl",
        b'{"id": "p1", "text": "fine"}\n\n{"id": "p2", "title": "\\udc00", "text": "t"}\n',
    )
    code, err = run_main([*SMALL, "corpus=jsonl", f"corpus.path={corpus}"], tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, f"{corpus}:3:", "lone surrogate")


def test_corpus_of_empty_texts_says_so(tmp_path, monkeypatch, capsys):
    rows = [json.dumps({"id": f"p{i}", "title": "T", "text": " " * i}) for i in range(3)]
    corpus = _write(tmp_path / "c.jsonl", ("\n".join(rows) + "\n").encode())
    code, err = run_main([*SMALL, "corpus=jsonl", f"corpus.path={corpus}"], tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, "all 3 passage texts are empty", str(corpus))


def test_output_root_that_cannot_be_written_names_the_path(tmp_path, monkeypatch, capsys):
    """A path under a regular file cannot be created, whoever runs the test (root included)."""
    blocker = _write(tmp_path / "a_file", b"")
    code, err = run_main([*SMALL, f"paths.output_root={blocker}/out"], tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, str(blocker), "Not a directory")


def test_cache_dir_that_cannot_be_written_names_the_key_and_path(tmp_path, monkeypatch, capsys):
    blocker = _write(tmp_path / "a_file", b"")
    code, err = run_main([*SMALL, f"paths.cache_dir={blocker}/cache"], tmp_path, monkeypatch, capsys)
    assert_one_line(code, err, "paths.cache_dir", f"{blocker}/cache")


def test_verbose_shows_the_traceback_of_a_user_error(tmp_path, monkeypatch, capsys):
    code, err = run_main(["--verbose", *SMALL, "flush_every=0"], tmp_path, monkeypatch, capsys)
    assert code == USER_ERROR_EXIT
    assert "Traceback" in err and "ConfigError" in err
    assert err.rstrip().splitlines()[-1].startswith("rr: flush_every: ")


def test_a_bug_keeps_its_traceback(tmp_path, monkeypatch, capsys):
    def broken(cfg, output_dir, make_llm=None, resuming=None):
        raise KeyError("a bug, not a user error")

    monkeypatch.setattr("rr.pipeline.run_job", broken)
    code, err = run_main(SMALL, tmp_path, monkeypatch, capsys)
    assert code == 1
    assert "Traceback" in err and "KeyError: 'a bug, not a user error'" in err
    assert "rr: " not in err


def test_console_entry_prints_one_line(tmp_path):
    """Through ``python -m rr`` (its own process): one line, exit status 2."""
    environ = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    proc = subprocess.run(
        [sys.executable, "-m", "rr", f"paths.output_root={tmp_path}", *SMALL, "generator.max_new_tokens=-5"],
        cwd=REPO,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert_one_line(proc.returncode, proc.stderr, "generator.max_new_tokens")


def test_hydra_full_error_shows_the_traceback(tmp_path, monkeypatch, capsys):
    """``HYDRA_FULL_ERROR=1`` (Hydra's own switch) shows a user error's traceback, like ``--verbose``."""
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    code, _, err = rr_main(
        [f"paths.output_root={tmp_path}", *SMALL, "generator.max_new_tokens=-5"], monkeypatch, capsys
    )
    assert code == USER_ERROR_EXIT
    assert "Traceback" in err and "rr: generator.max_new_tokens" in err
