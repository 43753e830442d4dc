"""rr's import graph keeps its layers: no circle, and no module importing a layer above its own.

The layers, lowest first (docs/architecture.md, "Layers"):

0. contracts: records, errors, registry, hashing, atomic, answers, stats, context, config, jobfolder, ...
1. components: data, retrieval, generation, strategies, judges, perturbations, metrics, the
   score-table builder (results), the runtime and the logger
2. the job: pipeline, summary, resume, cost
3. analysis: statistics and the papers' analyses over score tables (rr.analysis)
4. reporting: tables, figures, the site (rr.reporting); it reads analysis, never the reverse
5. commands: rr.commands (and ``python -m rr``); nothing in rr imports them

The graph is read from the source with :mod:`ast` (every ``import`` anywhere in a module, inside
functions too: an import moved into a function still runs back up), so the test needs nothing
installed and cannot be fooled by import order.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "rr"

#: Module-name prefix -> layer; the longest matching prefix wins.
LAYERS: dict[str, int] = {
    "rr": 0,
    "rr.records": 0,
    "rr.errors": 0,
    "rr.registry": 0,
    "rr.hashing": 0,
    "rr.model_identity": 0,
    "rr.atomic": 0,
    "rr.answers": 0,
    "rr.stats": 0,
    "rr.context": 0,
    "rr.config": 0,
    "rr.plugins": 0,
    "rr.preflight": 0,
    "rr.console_log": 0,
    "rr.job_env": 0,
    "rr.jobfolder": 0,
    "rr.sweepfolder": 0,
    "rr.environment": 0,
    "rr.prompts": 0,
    "rr.data": 1,
    "rr.retrieval": 1,
    "rr.generation": 1,
    "rr.strategies": 1,
    "rr.judges": 1,
    "rr.perturbations": 1,
    "rr.metrics": 1,
    "rr.papers": 1,
    "rr.results": 1,
    "rr.runtime": 1,
    "rr.tracking": 1,
    "rr.pipeline": 2,
    "rr.predictions": 2,
    "rr.summary": 2,
    "rr.resume": 2,
    "rr.cost": 2,
    "rr.analysis": 3,
    "rr.reporting": 4,
    "rr.commands": 5,
    "rr.__main__": 5,
}
NAMES = {0: "contracts", 1: "components", 2: "job", 3: "analysis", 4: "reporting", 5: "commands"}
COMMANDS = 5


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py")) if "textattack_env" not in p.parts}


def layer(module: str) -> int:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in LAYERS:
            return LAYERS[prefix]
    raise KeyError(module)


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The rr modules ``name`` imports (``from rr.x import y`` is ``rr.x.y`` when that is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "rr"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            if base.split(".")[0] != "rr":
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in known else base)
    return {m for m in out if m in known and m != name}


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports(name, path, known) for name, path in mods.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in modules() if not any(m == p or m.startswith(p + ".") for p in LAYERS if p != "rr")]
    assert unplaced in ([], ["rr"]), f"place these modules in a layer (LAYERS): {unplaced}"


def test_no_import_circle() -> None:
    assert cycles(graph()) == []


def upward(g: dict[str, set[str]]) -> list[str]:
    """Every import in ``g`` of a module in a higher layer than the importer's."""
    return [
        f"{a} ({NAMES[layer(a)]}) imports {b} ({NAMES[layer(b)]})"
        for a, targets in g.items()
        for b in sorted(targets)
        if layer(b) > layer(a)
    ]


def test_no_import_runs_up_a_layer() -> None:
    assert upward(graph()) == []


def test_analysis_importing_reporting_runs_up_a_layer(tmp_path: Path) -> None:
    """Reporting reads analysis; an analysis module importing reporting (even inside a function, as
    rr.analysis.power once did for its intervals) is caught, and the reverse is allowed."""
    known = {"rr.analysis.power", "rr.reporting.registry", "rr.reporting.robustness", "rr.analysis.intervals"}
    bad = tmp_path / "power.py"
    bad.write_text("def f():\n    from rr.reporting.registry import system_label\n")
    good = tmp_path / "robustness.py"
    good.write_text("from rr.analysis.intervals import robustness_ci\n")
    g = {
        "rr.analysis.power": imports("rr.analysis.power", bad, known),
        "rr.reporting.robustness": imports("rr.reporting.robustness", good, known),
    }
    assert upward(g) == ["rr.analysis.power (analysis) imports rr.reporting.registry (reporting)"]


def test_no_library_module_parses_argv() -> None:
    """argparse and sys.argv belong to rr.commands (and the job's own worker scripts, run as processes)."""
    offenders = [
        name
        for name, path in modules().items()
        if layer(name) < COMMANDS
        and ("import argparse" in (text := path.read_text(encoding="utf-8")) or "sys.argv" in text)
        and name != "rr.config.composition"  # reads sys.argv only to tell `rr --help` from a job (no parsing)
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("g", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ],
)
def test_the_cycle_finder_finds_a_planted_circle(g: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(g) == expected


def test_the_walk_sees_imports_inside_functions(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text("def f():\n    from rr.commands.cli import main\n")
    assert imports("rr.x", src, {"rr.commands.cli"}) == {"rr.commands.cli"}


def test_no_file_points_to_a_document_outside_the_repository() -> None:
    """The design page and the papers are cited from inside the repository (docs/design.md), not by a
    path to a folder a user who clones rr does not have."""
    import subprocess

    repo = ROOT.parent
    files = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True, check=True).stdout
    outside = []
    for name in files.split():
        path = repo / name
        if (
            path.suffix not in {".py", ".md", ".yaml", ".toml", ".ipynb", ".txt", ".sh", ".cfg"}
            or not path.exists()
        ):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for needle in ("DESIGN.md", "shared/papers", "../shared/"):
            if needle in text and name != "tests/test_layers.py":
                outside.append(f"{name}: {needle}")
    assert outside == []
