"""Every benchmark runs at its quick size, so none can rot (issue 32).

Each ``benchmarks/*.py`` (found here by itself: a new one is tested without editing this file) has a
*quick size*: ``python benchmarks/X.py --quick`` runs its whole code path on tiny inputs, once, in
seconds, and prints the same figures as a full run. The script declares, at module level:

* ``QUICK_FIGURES``: regexes, each matching a line its ``--quick`` run prints (stdout or stderr);
  the figures are checked to exist, not their values;
* ``QUICK_NEEDS`` (optional): modules it needs (``["llama_cpp"]``): without one the run is
  skipped, naming it;
* ``QUICK_RUN_BY`` (optional): ``"tests/<module>.py::<test>"``, the test that runs the quick size
  instead of this module, where it shares an expensive fixture (a vLLM engine): checked to exist.

A script without ``--quick`` or ``QUICK_FIGURES`` fails here. The quick run happens in this process
(``runpy``, as ``python benchmarks/X.py --quick`` would; the interpreter, torch and the model's
first load are shared), with the environment, ``sys.path``, ``sys.argv`` and torch's thread count
restored afterwards. ``gpu_check.py`` has its own test (``tests/test_gpu_check.py``).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import runpy
import sys
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent
#: Benchmarks tested by a module of their own.
OWN_TESTS = {"gpu_check.py": "tests/test_gpu_check.py"}
#: Every script of benchmarks/ but the shared helpers (``_startup.py``: their names start with ``_``).
BENCHMARKS = sorted(
    p for p in (REPO / "benchmarks").glob("*.py") if p.name not in OWN_TESTS and not p.name.startswith("_")
)

pytestmark = [pytest.mark.slow, pytest.mark.bench]


def quick_contract(path: Path) -> dict:
    """What ``path`` declares about its quick size, read from its source (nothing is imported).

    Returns ``{"option": bool (an argument "--quick" is defined), "figures": [...], "needs": [...],
    "run_by": str | None}``.
    """
    tree = ast.parse(path.read_text(), str(path))
    found: dict = {"figures": [], "needs": [], "run_by": None}
    names = {"QUICK_FIGURES": "figures", "QUICK_NEEDS": "needs", "QUICK_RUN_BY": "run_by"}
    for node in tree.body:
        targets = [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        for t in targets:
            if t in names and node.value is not None:
                found[names[t]] = ast.literal_eval(node.value)
    found["option"] = any(
        isinstance(n, ast.Call)
        and getattr(n.func, "attr", None) == "add_argument"
        and any(isinstance(a, ast.Constant) and a.value == "--quick" for a in n.args)
        for n in ast.walk(tree)
    )
    return found


def missing_figures(figures: list[str], out: str) -> list[str]:
    """The regexes of ``figures`` that match no line of ``out`` (lines split at ``\\n`` and ``\\r``,
    so progress bars drawn on one terminal line do not hide a figure)."""
    lines = re.split(r"[\r\n]+", out)
    return [f for f in figures if not any(re.search(f, line) for line in lines)]


def benchmark_module(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` imported as a module (for a test that calls its ``main`` with a
    fixture: ``QUICK_RUN_BY``)."""
    spec = importlib.util.spec_from_file_location(f"benchmarks_{name}", REPO / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    folder = str(REPO / "benchmarks")
    sys.path.insert(0, folder)  # as for `python benchmarks/X.py`: the shared _startup module importable
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module


def run_quick(path: Path) -> None:
    """``python path --quick``, in this process; what the process held is restored after."""
    import torch

    env, argv, syspath, threads = dict(os.environ), sys.argv[:], sys.path[:], torch.get_num_threads()
    sys.argv = [str(path), "--quick"]
    sys.path.insert(0, str(path.parent))  # as `python benchmarks/X.py` puts the script's folder first
    try:
        runpy.run_path(str(path), run_name="__main__")
    except SystemExit as e:
        assert e.code in (None, 0), f"{path.name} --quick exited with {e.code}"
    finally:
        sys.argv, sys.path[:] = argv, syspath
        os.environ.clear()
        os.environ.update(env)
        torch.set_num_threads(threads)


def test_benchmarks_are_found() -> None:
    names = {p.name for p in BENCHMARKS}
    assert {"paper_scale.py", "overhead.py", "vllm_prefix.py"} <= names
    assert not names & set(OWN_TESTS)


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.stem)
def test_quick_size_prints_its_figures(path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    contract = quick_contract(path)
    assert contract["option"] and contract["figures"], (
        f"benchmarks/{path.name} has no quick size: give it a --quick option (seconds: tiny inputs, one "
        "repetition, the same code path) and QUICK_FIGURES, the regexes of the lines it prints "
        "(tests/test_benchmarks.py's docstring)"
    )
    if contract["run_by"]:
        file, _, test = contract["run_by"].partition("::")
        source = (REPO / file).read_text()
        assert re.search(rf"^def {re.escape(test)}\(", source, re.MULTILINE), (
            f"benchmarks/{path.name}: QUICK_RUN_BY names {contract['run_by']}, which does not exist"
        )
        return
    absent = [m for m in contract["needs"] if importlib.util.find_spec(m) is None]
    if absent:
        pytest.skip(f"benchmarks/{path.name} needs {', '.join(absent)}, not installed")
    run_quick(path)
    out, err = capfd.readouterr()
    missing = missing_figures(contract["figures"], out + "\n" + err)
    assert not missing, (
        f"benchmarks/{path.name} --quick did not print {missing}:\n{out[-4000:]}\n{err[-2000:]}"
    )


def test_a_script_without_a_quick_size_fails_the_contract(tmp_path: Path) -> None:
    bare = tmp_path / "bare.py"
    bare.write_text("import argparse\nargparse.ArgumentParser().add_argument('--n')\n")
    assert quick_contract(bare) == {"figures": [], "needs": [], "run_by": None, "option": False}
    quick = tmp_path / "quick.py"
    quick.write_text(
        "import argparse\n"
        "QUICK_FIGURES = [r'^total \\d+ s$']\n"
        "QUICK_NEEDS = ['llama_cpp']\n"
        "argparse.ArgumentParser().add_argument('--quick', action='store_true')\n"
    )
    c = quick_contract(quick)
    assert c["option"] and c["figures"] == [r"^total \d+ s$"] and c["needs"] == ["llama_cpp"]
    assert missing_figures(c["figures"], "bar 10%\rtotal 12 s\n") == []
    assert missing_figures(c["figures"], "total: 12 s\n") == c["figures"]


def test_prefix_reuse_block_trie_counts_each_shared_block_once() -> None:
    # benchmarks/prefix_reuse.py's "attainable" = tokens - block_trie_tokens (the floor of
    # tests/test_vllm_cpu.py::test_prefix_reuse_benchmark_quick is measured against it)
    trie = benchmark_module("prefix_reuse").block_trie_tokens
    # blocks [1,2] and [3,4] shared by the first two prompts: counted once; tails and [9,9] their own
    assert trie([[1, 2, 3, 4, 5], [1, 2, 3, 4, 6, 7], [9, 9]], 2) == 2 * 2 + 1 + 2 + 2
    # the block holding a prompt's last token is never reusable (vLLM computes that token)
    assert trie([[1, 2, 3, 4], [1, 2, 3, 4, 5, 6]], 2) == 2 * 2 + 2 + 2
    # the same block after another prefix is another node
    assert trie([[1, 2, 5, 6, 0], [3, 4, 5, 6, 0]], 2) == 4 * 2 + 1 + 1
    assert trie([], 16) == 0


def test_demo_limit_token_trie_counts_each_shared_prefix_once() -> None:
    # benchmarks/demo_limit.py's "unique prompt tokens": what a perfect prefix cache computes
    nodes = benchmark_module("demo_limit").trie_nodes
    assert nodes([[1, 2, 3], [1, 2, 4], [5]]) == 5  # 1, 2 shared; 3, 4 and 5 their own
    assert nodes([[1, 2], [1, 2]]) == 2  # a repeated prompt costs nothing more
    assert nodes([[7, 1], [1, 7]]) == 4  # the same tokens after another prefix are other nodes
    assert nodes([]) == 0


def test_paper_scale_times_a_command_without_its_own_memory() -> None:
    # a command's peak RSS is read from its process's rusage, which keeps the peak of the image it
    # was forked from: the measuring child imported pandas, pyarrow and rr's reporting first, and
    # `rr status` read 206 MiB (its own: ~50)
    r = benchmark_module("paper_scale").measure("cli", cmd=[sys.executable, "-c", "pass"])
    assert r["peak_mib"] < 60, r  # a bare interpreter: ~12 MiB
