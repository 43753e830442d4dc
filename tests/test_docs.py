"""Documentation that cannot drift: the commands and snippets of README.md and docs/*.md, run (issue 24).

Every fenced ``bash`` and ``python`` block of README.md and docs/*.md is read from the files
themselves: a new block is picked up without editing this test. Each shell command (one line,
``\\`` continuations joined) gets one mode from :func:`mode` (the rules are the table below, so
nothing is silently untested; ``test_every_command_has_a_mode`` prints the whole list):

* ``run``: run for real, in-process (:func:`rr.commands.cli.main` with the command's argv), in a temporary
  folder that stands for the reader's current folder, at a tiny size: :data:`TINY` (and
  :data:`TINY_WIKI` on the default corpus) is appended to an ``rr`` job's overrides (a later
  override wins in Hydra). A command written in several places is run once. Relative paths such as
  ``outputs/runs/cao2025_mini`` then name the jobs the earlier commands wrote there.
* ``compose``: an ``rr`` job command (or a multirun: its first 4 jobs, ``sweep=`` files
  included) is composed as ``rr`` would (``--cfg job`` for a single job); then :mod:`rr.preflight`
  checks the models, datasets and files it names. Where something is missing here (a hub model
  offline, a cluster path), a single job is run for real and must fail in one line naming it,
  before any work; a multirun's check must give that one line.
* ``report-sections``: an ``rr report`` over a sweep that is not run here: its ``--only`` names
  must be real sections.
* ``skip``: with the reason (environment setup, ``make``, cluster shell, placeholders the reader
  fills in such as ``...`` or ``<job id>``).

A docs author steers a block with a marker on the line right above its fence:
``<!-- docs-test: run -->`` runs its ``rr`` commands for real (at :data:`TINY` size), and
``<!-- docs-test: skip <reason> -->`` lists it as skipped with that reason. A command that no rule
covers (a new first word such as ``srun``) fails ``test_every_command_has_a_mode`` until one does.

Python blocks: the README's Quickstart snippet runs on the jobs written by the ``run`` commands;
the "Adding a component" class and YAML and the plugin example are built from the README's own
text (see the tests below); the other snippets read the outputs of paper sweeps that cost
minutes and are listed as skipped with the test that covers their functions.

Budget: two real one-question jobs (the packaged model, 2 new tokens), the rest in-process
composes and small commands: 94 s wall serially on the shared 2-core VM (load ~3.5; 2 min 3 s
before the 20-passage samples and the commands written in several places run once), 2 min 30 s
under `make test` beside the other worker.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import shutil
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.docs

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = [README, *sorted((REPO / "docs").glob("*.md"))]
#: Appended to an ``rr`` job run for real: one question, one k, one order, two new tokens.
TINY = [
    "dataset.n=1",
    "grid.k=[1]",
    "grid.orders=[original]",
    "generator.max_new_tokens=2",
    "corpus.max_passages=20",
    "progress=false",
]
#: Appended too when the command keeps the default corpus (the packaged Wikipedia sample): its 20
#: passages, not the 312 FanOutQA evidence pages it keeps by default (the dense job encodes them).
TINY_WIKI = ["corpus.keep_fanoutqa_evidence=false"]
#: Commands run for real (exact text after joining lines, comment stripped); everything else
#: follows the rules of :func:`mode`. Order matters: later ones read what earlier ones wrote.
RUN = (
    "rr dataset.n=10 retriever=bm25 'grid.k=[1,3,5]' 'grid.orders=[original,reversed]'",
    "rr retriever=dense generator.batch_size=4",
    "rr report outputs/runs/cao2025_mini",
    "rr --help",
    "rr --cfg job",
    "rr report --list-sections",
)
#: Why a command whose first word is not ``rr`` is not run.
SKIP_FIRST_WORD = {
    "make": "make demo / make test are what CI runs (.ci/run); make report needs the demo's outputs",
    "pip": "environment setup",
    "python": "a second environment or a module run on a Wikipedia dump",
    ".": "environment setup",
    "export": "environment setup",
    "sbatch": "cluster shell",
    "cat": "cluster shell / file preparation",
    "ls": "cluster shell / file preparation",
    "mkdir": "opens the reader's editor ($EDITOR)",
}
#: Subcommands not run here, with why (their errors are pinned in tests/test_newcomer_errors.py).
SKIP_SUBCOMMAND = {
    "chunk-wiki": "needs a Wikipedia dump (tests/test_wiki_dump.py runs it on a small one)",
    "sure-prelim": "encodes a corpus and scores every golden pair (~1 min); tests/test_sure_analysis.py",
    "reproduce-docs": "runs every paper's mini experiment (minutes); tests/test_reproduction.py runs its --check",
}
PLACEHOLDERS = ("...", "<", "JOB_A", "$EDITOR", "[...]", "$(")


@dataclass(frozen=True)
class Command:
    """One shell command of a docs block."""

    file: str
    line: int
    text: str
    marker: str | None = None  # ``run`` or ``skip <reason>`` from a ``<!-- docs-test: ... -->`` line

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"


#: ``<!-- docs-test: run -->`` or ``<!-- docs-test: skip <reason> -->`` on the line above a fence.
MARKER = re.compile(r"<!--\s*docs-test:\s*(.*?)\s*-->\s*\n$")


def blocks(lang: str, with_marker: bool = False) -> list[tuple]:
    """(file, line of the fence, body[, marker]) of every fenced ``lang`` block of README.md and docs/*.md."""
    out = []
    for path in DOCS:
        text = path.read_text()
        for m in re.finditer(rf"^```{lang}\n(.*?)^```", text, re.S | re.M):
            before = text[: m.start()]
            found = MARKER.search(before[before.rfind("\n", 0, len(before) - 1) + 1 :])
            item = (path.relative_to(REPO).as_posix(), before.count("\n") + 1, m.group(1))
            out.append((*item, found.group(1) if found else None) if with_marker else item)
    return out


def _strip_comment(line: str) -> str:
    lex = shlex.shlex(line, posix=True, punctuation_chars=False)
    lex.whitespace_split = True
    lex.commenters = "#"
    try:
        tokens = list(lex)
    except ValueError:
        return line.strip()
    if not tokens:
        return ""
    # keep the original quoting: cut the line where the comment starts
    hash_at = [m.start() for m in re.finditer(r"\s#", line)]
    for at in hash_at:
        head = line[:at]
        try:
            if shlex.split(head) == tokens:
                return head.strip()
        except ValueError:
            continue
    return line.strip()


def commands() -> list[Command]:
    """Every shell command of every ``bash`` block (continuations joined, heredocs kept whole)."""
    out = []
    for file, fence, body, marker in blocks("bash", with_marker=True):
        lines = body.splitlines()
        i = 0
        while i < len(lines):
            start, text = i, lines[i]
            if "<<'EOF'" in text:  # a heredoc: the command is everything up to its end marker
                while i + 1 < len(lines) and lines[i].strip() != "EOF":
                    i += 1
                out.append(Command(file, fence + 1 + start, text.strip(), marker))
                i += 1
                continue
            while text.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                text = text.rstrip()[:-1].rstrip() + " " + lines[i].strip()
            i += 1
            text = _strip_comment(text)
            if text:
                out.append(Command(file, fence + 1 + start, text, marker))
    return out


def _argv(cmd: Command) -> list[str]:
    args = shlex.split(cmd.text)
    if args[:3] == ["python", "-m", "rr"]:
        args = ["rr", *args[3:]]
    return args


def mode(cmd: Command) -> tuple[str, str]:
    """(mode, reason) of one command: ``run``, ``compose``, ``report-sections`` or ``skip``."""
    if cmd.marker and cmd.marker.startswith("skip"):
        return "skip", cmd.marker.removeprefix("skip").strip() or "marked skip in the docs"
    if cmd.text in RUN or (cmd.marker == "run" and _argv(cmd)[0] == "rr"):
        return "run", "tiny size, in-process"
    if "<<'EOF'" in cmd.text:
        return "skip", "cluster shell (a SLURM script)"
    if any(p in cmd.text for p in PLACEHOLDERS):
        return (
            "skip",
            "placeholder the reader fills in (..., <job id>, JOB_A, $EDITOR, $(...) of their files)",
        )
    args = _argv(cmd)
    if args[0] != "rr":
        if args[:2] == ["python", "-c"]:
            return "skip", "reads a sweep's outputs (the metric is tested in tests/test_rgb_rare_metrics.py)"
        if args[0] in SKIP_FIRST_WORD:
            return "skip", SKIP_FIRST_WORD[args[0]]
        return "unknown", "add a rule here or <!-- docs-test: skip <reason> --> above the block"
    sub = args[1] if len(args) > 1 else None
    if sub in SKIP_SUBCOMMAND:
        return "skip", SKIP_SUBCOMMAND[sub]
    if sub == "report":
        return "report-sections", "its folder is a sweep not run here; --only names checked"
    if sub in ("judge-agreement", "perturb-queries"):
        return "run", "in the temporary folder, on the README jobs / a 2-question file made as the docs do"
    if sub == "status":
        return "run", "on the temporary folder: jobs listed, or one line for a folder that does not exist"
    if sub in ("plan", "encode"):
        return "compose", "composed; run when something is missing here (must fail in one line)"
    return "compose", "composed (every job of a multirun); run when something is missing here"


def rr_main(argv: list[str], capsys) -> tuple[int, str, str]:
    """``rr <argv>`` in-process: (exit code, stdout, stderr); what the job set for the process is
    undone afterwards (:func:`tests.test_cli_errors.rr_main`)."""
    from .test_cli_errors import rr_main as run_rr

    with pytest.MonkeyPatch.context() as mp:
        return run_rr(argv, mp, capsys)


def _one_line(code: int, err: str, cmd: Command) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("[")]  # log lines start "["
    assert code == 2 and len(lines) == 1 and lines[0].startswith("rr: "), f"{cmd}\nexit {code}\n{err[-3000:]}"
    return lines[0]


def _jobs(args: list[str]) -> list[list[str]]:
    """The override lists of the command's jobs (a multirun expanded with its ``sweep=`` file).

    Call it inside :func:`rr.config.hydra_context`."""
    from hydra import compose

    from rr.resume import sweep_jobs

    overrides = [a for a in args[1:] if a not in ("-m", "--multirun")]
    if "-m" not in args and "--multirun" not in args:
        return [overrides]
    full = compose("config", overrides=[o for o in overrides if not _is_sweep(o)], return_hydra_config=True)
    params = full.hydra.sweeper.get("params")
    return sweep_jobs(overrides, params)


def _is_sweep(override: str) -> bool:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create().parse_override(override).is_sweep_override()


@pytest.fixture(scope="module")
def reader_dir(tmp_path_factory) -> Path:
    """The reader's current folder: outputs/ and its cache below it; cwd while a test runs."""
    return tmp_path_factory.mktemp("reader")


@pytest.fixture
def in_reader_dir(reader_dir, monkeypatch) -> Path:
    monkeypatch.chdir(reader_dir)
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    return reader_dir


ALL = commands()


def test_every_command_has_a_mode() -> None:
    """The list of what is run, composed or skipped (``pytest -s`` shows it); RUN names real commands."""
    texts = {c.text for c in ALL}
    assert not [r for r in RUN if r not in texts], "a RUN entry no longer appears in the docs"
    for c in ALL:
        m, why = mode(c)
        print(f"{m:16s} {c}  [{why}]")
    unknown = [str(c) for c in ALL if mode(c)[0] == "unknown"]
    assert not unknown, f"commands with no rule (say how to test them): {unknown}"
    counts = {m: sum(mode(c)[0] == m for c in ALL) for m in ("run", "compose", "report-sections", "skip")}
    assert counts["run"] >= len(RUN) and counts["compose"] >= 20, counts


def tiny(args: list[str]) -> list[str]:
    """What is appended to an ``rr`` job's argv run for real (:data:`TINY`, :data:`TINY_WIKI`)."""
    return [*TINY, *([] if any(a.startswith("corpus=") for a in args) else TINY_WIKI)]


def readme_jobs(reader_dir: Path, capsys) -> list[Path]:
    """The job folders the two README job commands (RUN[:2]) write, run here if not yet (any test order)."""
    runs = reader_dir / "outputs" / "runs" / "cao2025_mini"
    for text in RUN[:2]:
        if len(list(runs.glob("*/summary.json"))) < 2:
            args = _argv(Command("README.md", 0, text))
            code, _, err = rr_main([*args[1:], *tiny(args)], capsys)
            assert code == 0, err[-3000:]
    return sorted(p.parent for p in runs.glob("*/summary.json"))


def json_files() -> dict[str, str]:
    """The files the docs show as ``json`` blocks marked ``<!-- docs-test: file NAME -->`` (a predictions
    file for ``rr score``): name -> the block's text, which the reader would save under that name."""
    return {
        marker.removeprefix("file").strip(): body
        for _, _, body, marker in blocks("json", with_marker=True)
        if marker and marker.startswith("file ")
    }


def _prepare(args: list[str], reader_dir: Path, capsys) -> None:
    """What the reader has before a command: jobs to report on, two judges' jobs, a questions file,
    the predictions files the docs show."""
    sub = args[1] if len(args) > 1 else None
    if sub == "score":
        for name, text in json_files().items():
            if name in args[2:] and not Path(name).exists():
                Path(name).write_text(text)
    scored = sub == "report" and all(
        a.startswith("outputs/scored/") for a in args[2:] if not a.startswith("-")
    )
    if sub in ("report", "judge-agreement") and not scored:
        jobs = readme_jobs(reader_dir, capsys)
        for a in args[2:]:
            if sub == "judge-agreement" and a.startswith("outputs/runs/") and not Path(a).exists():
                shutil.copytree(jobs[0], a)  # the reader's two judges' jobs: two copies of one real job
    if sub == "perturb-queries" and "--input" in args:
        source = Path(args[args.index("--input") + 1])
        if not source.exists():  # the docs' own `rr perturb-queries questions FILE dataset=...`
            code, _, err = rr_main(
                ["perturb-queries", "questions", str(source), "dataset=mini", "dataset.n=2"], capsys
            )
            assert code == 0, err


def distinct(kind: str) -> list:
    """The commands of mode ``kind``, one test per distinct text (the same command in several places
    runs the same way in the reader's folder), in order of first appearance; the id names them all."""
    places: dict[str, list[Command]] = {}
    for c in ALL:
        if mode(c)[0] == kind:
            places.setdefault(c.text, []).append(c)
    return [
        pytest.param(cs[0], id=", ".join(f"{c.file}:{c.line}" for c in cs) + f": {text}")
        for text, cs in places.items()
    ]


@pytest.mark.parametrize("cmd", distinct("run"))
def test_run(cmd: Command, in_reader_dir: Path, capsys) -> None:
    args = _argv(cmd)
    sub = args[1] if len(args) > 1 else None
    _prepare(args, in_reader_dir, capsys)
    small = tiny(args) if (sub is None or "=" in sub) and "--cfg" not in args else []
    code, out, err = rr_main([*args[1:], *small], capsys)
    if sub == "status" and not Path(args[2]).exists():
        _one_line(code, err, cmd)
        return
    assert code == 0, f"{cmd}\n{err[-3000:]}"
    if (sub is None or "=" in sub) and "--cfg" not in args:
        assert "results: " in out and "model calls" in out, out[-2000:]
    if sub == "judge-agreement":  # two copies of one job: every row agrees
        assert re.search(r"^\s*\d+\s+1\.0000\s", out, re.M), out
    if sub == "perturb-queries" and "--output" in args:
        assert Path(args[args.index("--output") + 1]).stat().st_size > 0
    if sub == "score":  # a job folder of every record, read back as rr reads a job's
        from rr.jobfolder import read_summary
        from rr.results import load

        folder = Path(args[args.index("--out") + 1])
        records = len(json.loads(json_files()[args[2]]))
        assert read_summary(folder).rows == len(load(folder)) == records, out
        assert "rr report " + str(folder) in out


def test_rerun_and_readme_snippet(in_reader_dir: Path, capsys) -> None:
    """After the two README jobs: a re-run reprints (0 model calls); the Quickstart snippet works."""
    readme_jobs(in_reader_dir, capsys)
    args = _argv(Command("README.md", 0, RUN[0]))
    code, out, err = rr_main([*args[1:], *tiny(args)], capsys)
    assert code == 0, err[-3000:]
    assert "nothing re-run, model calls 0" in " ".join(out.split())
    (file, line, snippet) = next(
        b for b in blocks("python") if b[0] == "README.md" and "robustness_table" in b[2]
    )
    namespace: dict = {}
    capsys.readouterr()
    exec(compile(snippet, f"{file}:{line}", "exec"), namespace)  # noqa: S102 - the README's own text
    printed = capsys.readouterr().out.splitlines()
    assert namespace["df"]["job_id"].nunique() >= 2, "the snippet should face a folder of several jobs"
    assert len(namespace["table"]) == namespace["df"]["job_id"].nunique()
    # every metric column printed, none replaced by pandas' "..." (issue 30)
    assert printed[0].split() == [
        "job_id",
        "strategy",
        "ndr",
        "rsr",
        "ror",
        "accuracy",
        "closed_book_accuracy",
    ]
    assert len(printed) == 1 + len(namespace["table"]) and not any("..." in p for p in printed)


@pytest.mark.parametrize("cmd", distinct("compose"))
def test_compose(cmd: Command, in_reader_dir: Path, capsys) -> None:
    from hydra import compose

    from rr.config import hydra_context
    from rr.errors import UserError
    from rr.preflight import check_resources, declared_resources, missing_resources

    args = _argv(cmd)
    if "file://my_conf" in cmd.text:  # what the README's `$EDITOR my_conf/experiment/my_ablation.yaml` writes
        (in_reader_dir / "my_conf" / "experiment").mkdir(parents=True, exist_ok=True)
        (in_reader_dir / "my_conf" / "experiment" / "my_ablation.yaml").write_text(
            "# @package _global_\ndefaults:\n  - cao2025_mini\n  - _self_\ngrid:\n  k: [1, 2]\n"
        )
    sub = args[1] if len(args) > 1 and "=" not in args[1] and not args[1].startswith("-") else None
    with hydra_context():  # composed as rr would (rr.config.compose), one Hydra set-up for all
        if sub == "plan":
            overrides = [a for a in args[2:] if "=" in a and not a.startswith("--")]
            multirun = "-m" in args
            jobs = _jobs(["rr", *(["-m"] if multirun else []), *overrides])
            config_name = "config"
        elif sub == "encode":
            jobs = _jobs(["rr", *args[2:]])
            config_name = "encode"
        else:
            jobs = _jobs(args)
            config_name = "config"
        cfgs = [compose(config_name, overrides=list(overrides)) for overrides in jobs[:4]]
    missing = [m for cfg in cfgs for m in missing_resources(declared_resources(cfg))]
    if not missing:
        if sub is None and "-m" not in args:
            code, out, err = rr_main([*args[1:], "--cfg", "job"], capsys)
            assert code == 0 and "dataset:" in out, f"{cmd}\n{err[-2000:]}"
        return
    if "-m" in args or "hydra/launcher=slurm" in cmd.text:
        with pytest.raises(UserError) as exc:
            check_resources(cfgs[0])
        assert "\n" not in str(exc.value)
        return
    code, out, err = rr_main(args[1:], capsys)
    line = _one_line(code, err, cmd)
    res, _ = missing[0]
    assert res.name in line, (cmd, line)


@pytest.mark.parametrize("cmd", distinct("report-sections"))
def test_report_only_names_real_sections(cmd: Command) -> None:
    from rr.reporting.registry import check_section_names

    args = _argv(cmd)
    if "--only" in args:
        names = []
        for a in args[args.index("--only") + 1 :]:
            if a.startswith("--"):
                break
            names.append(a)
        check_section_names(names)


# ----------------------------------------------------------------------------- README examples


def _readme_block(lang: str, marker: str) -> str:
    return next(body for file, _, body in blocks(lang) if file == "README.md" and marker in body)


@pytest.fixture
def component_registry_restored():
    from rr.registry import COMPONENTS

    before = {g: dict(o) for g, o in COMPONENTS.items()}
    yield
    for group in COMPONENTS:
        COMPONENTS[group].clear()
        COMPONENTS[group].update(before.get(group, {}))


def _import_as(name: str, source: str, folder: Path) -> None:
    path = folder / (name.replace(".", "_") + ".py")
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


def test_adding_a_component_as_written(tmp_path, component_registry_restored, monkeypatch) -> None:
    """The README's class and YAML, copied as written: the option composes, checks its keys, builds."""
    from rr.config import compose as rr_compose
    from rr.config import instantiate

    python = _readme_block("python", '@component("retriever", "mine")')
    yaml = next(body for file, _, body in blocks("yaml") if file == "README.md" and "mine_schema" in body)
    module = python.splitlines()[0].lstrip("# ").strip()  # rr/retrieval/my_retriever.py
    name = module.removesuffix(".py").replace("/", ".")
    _import_as(name, python, tmp_path)
    monkeypatch.setitem(sys.modules, name, sys.modules[name])
    conf = tmp_path / "conf"
    yaml_path = conf / yaml.splitlines()[1].lstrip("# ").split()[0].removeprefix("conf/")
    yaml_path.parent.mkdir(parents=True)
    yaml_path.write_text(yaml)
    search = f"hydra.searchpath=[file://{conf}]"
    cfg = rr_compose(["retriever=[mine]", "retriever.mine.depth_factor=3", search])
    assert cfg.retriever.mine.depth_factor == 3
    assert type(instantiate(cfg.retriever.mine)).__name__ == "MyRetriever"
    with pytest.raises(Exception, match="depth_facter"):
        rr_compose(["retriever=[mine]", "retriever.mine.depth_facter=3", search])


def test_plugin_example_as_written(tmp_path, component_registry_restored, monkeypatch) -> None:
    """The plugin's pyproject, class and YAML (the component YAML with first_passages for mine)."""
    from rr.config import compose as rr_compose
    from rr.config import instantiate

    toml = tomllib.loads(_readme_block("toml", "rr-first-passages"))
    eps = toml["project"]["entry-points"]
    module = eps["rr.components"]["first_passages"]
    conf_pkg = eps["rr.configs"]["first_passages"]
    assert conf_pkg == f"{module}.conf"
    python = _readme_block("python", '@component("retriever", "first_passages")')
    _import_as(module, python, tmp_path)
    monkeypatch.setitem(sys.modules, module, sys.modules[module])
    component_yaml = next(
        body for file, _, body in blocks("yaml") if file == "README.md" and "mine_schema" in body
    )
    # the README: "the one above with `first_passages` for `mine`, `stride: 1` for ... and `_target_: ...`"
    sentence = re.search(r"The YAML is the one above with (.*?)\.\n", README.read_text(), re.S).group(1)
    swaps = re.findall(r"`([^`]+)` for `([^`]+)`", sentence)
    assert ("first_passages", "mine") in swaps and len(swaps) >= 2, sentence
    target = re.search(r"`(_target_: [^`]+)`", sentence).group(1)
    plugin_yaml = re.sub(r"_target_: .*", target, component_yaml)
    for new, old in swaps:
        plugin_yaml = plugin_yaml.replace(old, new)
    conf = tmp_path / "plugin_conf"
    (conf / "retriever").mkdir(parents=True)
    (conf / "retriever" / "first_passages.yaml").write_text(plugin_yaml)
    cfg = rr_compose(
        [
            "retriever=[first_passages]",
            "retriever.first_passages.stride=2",
            f"hydra.searchpath=[file://{conf}]",
        ]
    )
    retriever = instantiate(cfg.retriever.first_passages)
    retriever.stride = cfg.retriever.first_passages.stride  # the README's __init__ is a stub (`...`)
    assert retriever.fingerprint() == {"stride": 2}


SKIPPED_PYTHON = {
    "query_level as ql": "reads a query_level2025_mini job (<job id>); tests/test_query_level_analysis.py",
    "rare.robustness_flags": "reads the rare2025 sweep (4 jobs); tests/test_rgb_rare_metrics.py",
    "robustness_rates": "reads the sure2025_mini sweep; tests/test_spurious_metrics.py",
    "@section(": "a section skeleton (`table = ...`); tests/test_report.py adds real sections",
    "first_passages": "built by test_plugin_example_as_written",
    '"mine"': "built by test_adding_a_component_as_written",
    "robustness_table": "run by test_rerun_and_readme_snippet",
}


@pytest.mark.parametrize("block", blocks("python"), ids=lambda b: f"{b[0]}:{b[1]}")
def test_every_python_block_is_run_or_listed(block) -> None:
    _, _, body = block
    assert any(key in body for key in SKIPPED_PYTHON), "a new python block: run it here or list why not"


def test_markers_and_rules_on_a_page(tmp_path, monkeypatch) -> None:
    """How a docs author steers this test: a marker above a fence, else the rules of :func:`mode`."""
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- docs-test: skip needs a cluster -->\n```bash\nsrun rr -m sweep=x\n```\n\n"
        "<!-- docs-test: run -->\n```bash\nrr dataset.n=3 \\\n   retriever=bm25   # tiny anyway\n```\n\n"
        "```bash\nrr -m strategy=vanilla,closed_book   # a sweep\nsrun hostname\n```\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "DOCS", [page])
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    got = [(c.line, c.text, mode(c)) for c in commands()]
    assert got == [
        (3, "srun rr -m sweep=x", ("skip", "needs a cluster")),
        (8, "rr dataset.n=3 retriever=bm25", ("run", "tiny size, in-process")),
        (
            13,
            "rr -m strategy=vanilla,closed_book",
            mode(Command("", 0, "rr -m strategy=vanilla,closed_book")),
        ),
        (
            14,
            "srun hostname",
            ("unknown", "add a rule here or <!-- docs-test: skip <reason> --> above the block"),
        ),
    ]
    assert got[2][2][0] == "compose"


def test_the_readme_says_when_generations_are_flushed() -> None:
    """Issue 43: the README said the cache is "flushed after every batch"; the unit is ``flush_every``
    prompts (an interrupt after 2 of 6 prompts, all in one chunk of 64, kept none)."""
    from rr.config import RootSchema

    text = " ".join(README.read_text().split())
    assert "flushed after every batch" not in text
    assert (
        f"flushed after every chunk of `flush_every` prompts ({RootSchema().flush_every} by default" in text
    )
