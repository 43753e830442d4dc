"""The GPU check (issue 32, part 1): its CPU form runs every check, and its device tools work.

``benchmarks/gpu_check.py --quick`` runs in a child process with CUDA hidden, as on a machine
without a GPU: every line appears in order, what can run on CPU passes, what needs CUDA (or a
faiss GPU build, or vLLM on a GPU) is SKIP with its reason, nothing FAILs. The comparison helpers
(ties in greedy decoding and in rankings) and ``tools/device/install_wheels.py`` (which wheels a
node without network gets, rr's wheel only when built from the same tree, pip-less unpacking) are
checked on small inputs.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

REPO = Path(__file__).resolve().parent.parent
CHECKS = [
    "gpus",
    "setup",
    "a1",
    "a2",
    "a3",
    "a4",
    "a5",
    "b1",
    "b2",
    "c1",
    "c2",
    "c3",
    "d1",
    "d2",
    "e1",
    "e2",
    "e3",
    "f1",
    "f2",
    "f3",
]
#: What runs on a machine without CUDA (e1 / e3 need faiss, which `make install` installs).
CPU_PASS = {"setup", "a1", "a4", "a5", "b2", "c1", "c3", "d1", "e1", "e3"}
LINE = re.compile(r"^\[(\w+)\] (PASS|FAIL|SKIP)  (.+?): (.+) \((\d+\.\d) s\)$", re.M)


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gpu_check() -> ModuleType:
    return _load(REPO / "benchmarks" / "gpu_check.py", "gpu_check")


@pytest.fixture(scope="module")
def installer() -> ModuleType:
    return _load(REPO / "tools" / "device" / "install_wheels.py", "install_wheels")


@pytest.mark.slow
@pytest.mark.bench
def test_cpu_form_prints_every_check_and_no_failure(tmp_path: Path) -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=tmp_path,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:] + proc.stderr[-4000:]
    lines = LINE.findall(out)
    assert [c for c, *_ in lines] == CHECKS, out
    status = {c: s for c, s, *_ in lines}
    figure = {c: f for c, _, _, f, _ in lines}
    assert {c for c, s in status.items() if s == "PASS"} == CPU_PASS, out
    for check in ("a2", "a3", "b1", "c2", "d2"):
        assert figure[check].startswith("no CUDA device"), figure[check]
    assert "no GPU support" in figure["e2"] and "vLLM" in figure["f1"]
    for check in ("f2", "f3"):  # CUDA graphs and tensor parallel: GPU paths only
        assert figure[check] == "no CUDA device: CUDA graphs and tensor parallelism need GPUs", figure[check]
    assert figure["gpus"].startswith("no GPU here (torch "), figure["gpus"]
    assert re.search(r"\d+/\d+ completions identical", figure["a1"]), figure["a1"]
    assert re.search(r"top-20 identical for \d+/\d+ queries", figure["c3"]), figure["c3"]
    assert re.search(r"\d+ rows, \d+ model calls", figure["d1"]), figure["d1"]
    # a5: prefix reuse on vs off, on the CPU here (on CUDA where there is one): same outputs, the ratio
    assert re.search(
        r"completions identical.*; cpu: reuse on [\d.]+ s, off [\d.]+ s, on/off [\d.]+ \(\d+% of prompt tokens reused",
        figure["a5"],
    ), figure["a5"]
    assert re.search(r"^summary: 10 PASS, 0 FAIL, 10 SKIP in \d+ s on CPU", out, re.M), out
    assert out.startswith(f"gpu-check: writing to {tmp_path}\ngpu-check: python ")
    record = json.loads((tmp_path / "gpu_check.json").read_text())
    assert [r["check"] for r in record["results"]] == CHECKS
    assert record["environment"]["cuda"] == "not available"
    # the tiny models are real model folders: rr loads them as generator.model / retriever.dense.model
    assert (tmp_path / "models" / "tiny-llama" / "config.json").exists()
    assert (tmp_path / "models" / "tiny-encoder" / "modules.json").exists()


def fake_nvidia_smi(folder: Path, lines: str = "NVIDIA H100 80GB HBM3, 535.183.01") -> str:
    """A folder holding an ``nvidia-smi`` that lists ``lines`` (one GPU a line), for PATH."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "nvidia-smi"
    exe.write_text(f"#!/bin/sh\nprintf '%s\\n' {' '.join(repr(x) for x in lines.splitlines())}\n")
    exe.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def test_a_node_whose_gpus_torch_cannot_use_fails_at_once(tmp_path: Path) -> None:
    """nvidia-smi lists two GPUs, torch sees none (CUDA hidden here): the first line FAILs naming
    the driver and torch's CUDA build, nothing else runs, the exit status is 1."""
    path = fake_nvidia_smi(
        tmp_path / "bin", "NVIDIA H100 80GB HBM3, 535.183.01\nNVIDIA H100 80GB HBM3, 535.183.01"
    )
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PATH": path}
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), "--quick", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    lines = LINE.findall(proc.stdout)
    assert [(c, s) for c, s, *_ in lines] == [("gpus", "FAIL")], proc.stdout
    import torch

    figure = lines[0][3]
    assert "nvidia-smi lists 2 GPUs, driver 535.183.01" in figure, figure
    assert f"torch {torch.__version__} (" in figure and ("CPU-only" in figure or "built for CUDA" in figure)
    assert re.search(r"^summary: 0 PASS, 1 FAIL, 0 SKIP", proc.stdout, re.M), proc.stdout


def test_the_tiny_encoder_vocabulary_is_the_same_every_time(gpu_check: ModuleType) -> None:
    from tokenizers import normalizers, pre_tokenizers

    norm, pre = normalizers.BertNormalizer(lowercase=True), pre_tokenizers.BertPreTokenizer()
    texts = ["Velkaron Tuspadrim was born in Quilmorven.", "Where was Velkaron Tuspadrim born?"] * 3
    a = gpu_check.wordpiece_vocab(texts, norm, pre, size=60)
    assert a == gpu_check.wordpiece_vocab(list(reversed(texts)), norm, pre, size=60)
    assert list(a)[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert {"v", "##v", "velkaron", "born"} <= set(a) and len(a) <= 60


class _C:
    def __init__(self, text: str) -> None:
        self.text, self.completion_tokens = text, len(text.split())


def test_greedy_completions_may_differ_only_after_a_near_tie(gpu_check: ModuleType) -> None:
    ref = [_C("a b"), _C("c d"), _C("e f")]
    same = gpu_check.compare_completions(ref, [_C("a b"), _C("c d"), _C("e f")], [0.1, 0.2, 0.3])
    assert same[0] == "PASS" and same[1].startswith("3/3 completions identical")
    tie = gpu_check.compare_completions(ref, [_C("a b"), _C("c x"), _C("e f")], [0.1, 1e-6, 0.3])
    assert tie[0] == "PASS" and "1 differ after a near-tie" in tie[1] and tie[2]["near_ties"] == [1]
    real = gpu_check.compare_completions(ref, [_C("a b"), _C("c x"), _C("e f")], [0.1, 0.2, 0.3])
    assert real[0] == "FAIL" and "1 differ without a tie, e.g. prompt 1" in real[1]


def test_rankings_may_differ_only_among_tied_scores(gpu_check: ModuleType) -> None:
    scores = np.array([[0.9, 0.5, 0.5 + 1e-7, 0.1], [0.2, 0.8, 0.7, 0.6]], dtype=np.float32)
    expected = gpu_check.topk_rows(scores, 2)
    assert expected.tolist() == [[0, 2], [1, 2]]
    exact = np.take_along_axis(scores, expected, axis=1)
    ok, figure = gpu_check.compare_rankings(scores, expected, expected, exact)
    assert ok and figure.startswith("top-2 identical for 2/2 queries")
    swapped = np.array([[0, 1], [1, 2]])  # rows 1 and 2 of query 0 tie within 1e-7
    ok, figure = gpu_check.compare_rankings(
        scores, expected, swapped, np.take_along_axis(scores, swapped, axis=1)
    )
    assert ok and "1 differ only among ties" in figure
    wrong = np.array([[0, 2], [1, 3]])  # 0.6 instead of 0.7: no tie
    ok, figure = gpu_check.compare_rankings(
        scores, expected, wrong, np.take_along_axis(scores, wrong, axis=1)
    )
    assert not ok and "1 differ beyond ties" in figure


def _wheel(folder: Path, dist: str, version: str, module: str) -> Path:
    """A minimal pure-Python wheel of ``module`` (``VALUE = version``)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": f"VALUE = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def test_installer_adds_only_what_the_node_lacks_and_rr_only_from_the_same_tree(
    installer: ModuleType, tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    (tree / "rr").mkdir(parents=True)
    (tree / "rr" / "__init__.py").write_text("")
    (tree / "pyproject.toml").write_text("[project]\nname = 'rr'\n")
    wheels = tmp_path / "wheels"
    _wheel(wheels, "Rr_Gpu_Check_Probe", "1.0", "rr_gpu_check_probe")
    _wheel(wheels, "numpy", "0.0.1", "numpy_impostor")  # this interpreter has numpy: left out
    _wheel(wheels, "rr", "0.1.0", "rr_impostor")
    (wheels / "rr-tree.sha256").write_text(installer.tree_hash(tree))
    assert installer.dist_name(wheels / "Rr_Gpu_Check_Probe-1.0-py3-none-any.whl") == "rr-gpu-check-probe"

    site = tmp_path / "site"
    assert installer.install(wheels, site, tree) == 0
    assert (site / "rr_gpu_check_probe" / "__init__.py").exists()
    assert (site / "rr_impostor").exists() and not (site / "numpy_impostor").exists()
    assert (site / "rr-source").read_text() == "wheel\n"

    (tree / "rr" / "__init__.py").write_text("# changed after the wheel was built\n")
    site2 = tmp_path / "site2"
    installer.install(wheels, site2, tree)
    assert not (site2 / "rr_impostor").exists() and (site2 / "rr-source").read_text() == "tree\n"

    unpacked = tmp_path / "unpacked"  # a node whose Python has no pip
    installer.unzip_install(sorted(wheels.glob("Rr_*.whl")), unpacked)
    assert (unpacked / "rr_gpu_check_probe" / "__init__.py").read_text() == "VALUE = '1.0'\n"
    assert (unpacked / "Rr_Gpu_Check_Probe-1.0.dist-info" / "METADATA").exists()


def test_wheel_list_names_what_the_check_imports() -> None:
    listed = {
        re.split(r"[=<>]", line.split("#")[0].strip())[0].lower()
        for line in (REPO / "tools" / "device" / "wheels.txt").read_text().splitlines()
        if line.split("#")[0].strip()
    }
    needed = {"hydra-core", "omegaconf", "antlr4-python3-runtime", "tenacity", "bm25s", "pystemmer"}
    needed |= {"faiss-cpu", "lightning-fabric", "lightning-utilities"}
    assert needed <= listed
    preinstalled = {"torch", "transformers", "sentence-transformers", "numpy", "pandas", "pyarrow", "scipy"}
    assert not listed & preinstalled


def test_the_scheduler_giving_gpus_is_read_from_slurm_and_cuda_variables() -> None:
    from rr.job_env import allocated_gpus

    assert allocated_gpus({}) is None
    assert allocated_gpus({"CUDA_VISIBLE_DEVICES": ""}) is None  # hidden on purpose
    assert allocated_gpus({"CUDA_VISIBLE_DEVICES": "-1", "SLURM_GPUS_ON_NODE": "0"}) is None
    assert allocated_gpus({"SLURM_JOB_GPUS": "0,1"}) == "SLURM_JOB_GPUS=0,1"
    assert allocated_gpus({"CUDA_VISIBLE_DEVICES": "2"}) == "CUDA_VISIBLE_DEVICES=2"


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["generator.device=cuda"], {}, "generator.device=cuda but torch sees no CUDA device"),
        (
            [],
            {"SLURM_JOB_GPUS": "0,1"},
            "generator: this job was given GPUs (SLURM_JOB_GPUS=0,1) but torch sees none",
        ),
    ],
)
def test_a_job_that_asks_for_or_was_given_gpus_never_runs_on_the_cpu(
    args: list[str],
    env: dict[str, str],
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No CUDA here: a job asking for it, or one SLURM gave GPUs that leaves the device to rr, stops
    in one line naming the driver and torch's build, before any model loads."""
    from tests.test_cli_errors import SMALL, run_main

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("PATH", fake_nvidia_smi(tmp_path / "bin"))
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    code, err = run_main([*SMALL, "generator=hf", *args], tmp_path, monkeypatch, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("rr: ") and expected in lines[0], err
    assert "nvidia-smi lists 1 GPU, driver 535.183.01" in lines[0] and "Traceback" not in err
    # device=cpu given on purpose runs on the CPU, in an allocation too
    from rr.job_env import torch_device

    assert torch_device("cpu", "generator") == "cpu"
