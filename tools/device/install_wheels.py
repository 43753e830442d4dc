"""Install the carried wheels beside a node's own Python, offline, without touching what it has.

    python3 tools/device/install_wheels.py install WHEEL_DIR TARGET [--root REPO]
    python3 tools/device/install_wheels.py tree-hash REPO

``install`` puts every wheel of ``WHEEL_DIR`` whose distribution this interpreter does not
already have into ``TARGET`` (``pip install --no-index --no-deps --target``, or plain unzipping
where the node's Python has no pip), for ``PYTHONPATH=TARGET``. A distribution the node already
has (torch, transformers, numpy, or rich as a dependency of huggingface_hub) is left as it is:
a carried copy on ``PYTHONPATH`` would shadow the one its own stack was installed against.

rr's own wheel is installed only when it was built from the tree that travelled with it (the
``rr-tree.sha256`` stamp that ``fetch_wheels.sh`` writes equals :func:`tree_hash` of ``--root``);
otherwise rr runs from the tree itself. Which one is written to ``TARGET/rr-source`` (``wheel``
or ``tree``) for ``run_gpu_check.sh``. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

#: What rr's wheel is built from (``fetch_wheels.sh``); ``rr/conf`` is a link, followed.
TREE_PARTS = ("rr", "hydra_plugins", "pyproject.toml")
SKIPPED = ("__pycache__", ".pyc", ".egg-info")


def tree_hash(root: Path) -> str:
    """SHA-256 over the relative paths and bytes of the files rr's wheel is built from."""
    h = hashlib.sha256()
    files: list[Path] = []
    for part in TREE_PARTS:
        path = root / part
        if path.is_file():
            files.append(path)
            continue
        for folder, dirs, names in os.walk(path, followlinks=True):
            dirs[:] = sorted(d for d in dirs if not d.endswith(SKIPPED))
            files += [Path(folder) / n for n in names if not n.endswith(SKIPPED)]
    for f in sorted(files, key=lambda p: p.relative_to(root).as_posix()):
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    return h.hexdigest()


def dist_name(wheel: Path) -> str:
    """The normalised distribution name of a wheel file (``PyStemmer-3.1.0-...`` -> ``pystemmer``)."""
    return re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()


def installed_version(dist: str) -> str | None:
    """The version of ``dist`` this interpreter already has, or ``None``."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def unzip_install(wheels: list[Path], target: Path) -> None:
    """Install wheels by unpacking them (the wheel format's own layout) where pip is missing."""
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(target)
        for data in target.glob("*.data"):  # purelib / platlib go to the top; scripts are not needed
            for kind in ("purelib", "platlib"):
                if (data / kind).is_dir():
                    shutil.copytree(data / kind, target, dirs_exist_ok=True)
            shutil.rmtree(data)


def install(wheel_dir: Path, target: Path, root: Path) -> int:
    """Install what is missing into ``target``; write ``target/rr-source``. Returns an exit status."""
    wheels = sorted(wheel_dir.glob("*.whl"))
    if not wheels:
        print(f"install_wheels: no wheels in {wheel_dir} (run tools/device/fetch_wheels.sh and carry it)")
        return 1
    target.mkdir(parents=True, exist_ok=True)
    stamp = wheel_dir / "rr-tree.sha256"
    rr_fresh = stamp.exists() and stamp.read_text().strip() == tree_hash(root)
    chosen = []
    for wheel in wheels:
        dist = dist_name(wheel)
        if dist == "rr":
            if rr_fresh:
                chosen.append(wheel)
            else:
                print(f"install_wheels: {wheel.name} was not built from this tree: rr runs from {root}")
            continue
        have = installed_version(dist)
        if have is not None:
            print(f"install_wheels: {dist} {have} is already installed here; {wheel.name} left out")
            continue
        chosen.append(wheel)
    print(f"install_wheels: installing {len(chosen)} wheels: {' '.join(dist_name(w) for w in chosen)}")
    has_pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode == 0
    if has_pip:
        cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
        done = subprocess.run([*cmd, "--target", str(target), *map(str, chosen)])
        if done.returncode != 0:
            print("install_wheels: pip failed; unpacking the wheels instead")
            unzip_install(chosen, target)
    else:
        print("install_wheels: no pip here; unpacking the wheels")
        unzip_install(chosen, target)
    (target / "rr-source").write_text("wheel\n" if rr_fresh else "tree\n")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    inst = sub.add_parser("install", help="install the missing wheels into TARGET")
    inst.add_argument("wheel_dir", type=Path)
    inst.add_argument("target", type=Path)
    inst.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    th = sub.add_parser("tree-hash", help="print the hash of what rr's wheel is built from")
    th.add_argument("root", type=Path)
    a = ap.parse_args()
    if a.command == "tree-hash":
        print(tree_hash(a.root))
        return 0
    return install(a.wheel_dir, a.target, a.root)


if __name__ == "__main__":
    sys.exit(main())
