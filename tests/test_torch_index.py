"""Where ``make install`` finds the CPU build of torch (issue 45): PyPI has no ``torch==2.13.0+cpu``.

The Makefile gives uv torch's own page of PyTorch's CPU wheel index (``TORCH_INDEX/torch/``, default
https://download.pytorch.org/whl/cpu) as ``--find-links``: that page lists torch's files alone, so
nothing else can come from it. A local folder (``TORCH_WHEELS``, default ``$PIP_FIND_LINKS``)
overrides it; ``GPU=1`` (locks/rr-gpu.txt) takes everything from PyPI. Here the index is simulated:
a folder laid out as PyTorch's (``whl/cpu/torch/index.html`` linking ``/whl/cpu/torch-...whl``, a
PEP 503 project page) served on localhost, with this machine's torch wheel (or, where there is none,
a stand-in wheel of the same name). uv then resolves and syncs torch from it with no other index
(``--no-index``) and no wheel folder.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import urllib.parse
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from .test_lock import lock_tool

REPO = Path(__file__).resolve().parent.parent
UV = REPO / ".uv" / "bin" / "uv"
WHEEL = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"

pytestmark = pytest.mark.skipif(not os.access(UV, os.X_OK), reason="no .uv/bin/uv (make install makes it)")


def _local_wheel() -> Path | None:
    """This machine's CPU torch wheel, where TORCH_WHEELS / PIP_FIND_LINKS name a folder holding it."""
    for folder in (os.environ.get("TORCH_WHEELS", "") + " " + os.environ.get("PIP_FIND_LINKS", "")).split():
        if (Path(folder) / WHEEL).is_file():
            return Path(folder) / WHEEL
    return None


def _stand_in_wheel(folder: Path) -> Path:
    """A minimal wheel named as the CPU torch (no code): the index's mechanics without the real one."""
    path = folder / WHEEL
    info = "torch-2.13.0+cpu.dist-info"
    files = {
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0+cpu\nRequires-Python: >=3.10\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: rr-test\nRoot-Is-Purelib: false\nTag: cp311-cp311-manylinux_2_28_x86_64\n",
    }
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
        zf.writestr(f"{info}/RECORD", "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"]))
    return path


@functools.cache
def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@pytest.fixture
def torch_index(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(the index URL, the wheel it serves): PyTorch's layout under ``whl/cpu``, served on localhost."""
    root = tmp_path / "index"
    cpu = root / "whl" / "cpu"
    (cpu / "torch").mkdir(parents=True)
    wheel = _local_wheel() or _stand_in_wheel(tmp_path)
    (cpu / WHEEL).symlink_to(wheel)
    href = f"/whl/cpu/{urllib.parse.quote(WHEEL)}#sha256={_sha256(wheel)}"
    (cpu / "index.html").write_text('<!DOCTYPE html><html><body><a href="torch/">torch</a></body></html>\n')
    (cpu / "torch" / "index.html").write_text(
        f'<!DOCTYPE html><html><body><h1>Links for torch</h1><a href="{href}">{WHEEL}</a></body></html>\n'
    )

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/whl/cpu", wheel
    finally:
        server.shutdown()
        server.server_close()


def _sync_line(pip_conf: str = os.devnull, **variables: str) -> list[str]:
    """The ``uv pip sync`` command ``make install`` runs with these make variables (``make -n -B``),
    in an environment without this machine's TORCH_WHEELS / PIP_FIND_LINKS / GPU and with pip
    configured by ``pip_conf`` (default: no configuration)."""
    args = [f"{k}={v}" for k, v in variables.items()]
    env = {k: v for k, v in os.environ.items() if k not in ("TORCH_WHEELS", "PIP_FIND_LINKS", "GPU")}
    env["PIP_CONFIG_FILE"] = pip_conf
    out = subprocess.run(
        ["make", "-n", "-B", "--no-print-directory", "install", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    lines = [line for line in out.splitlines() if " pip sync " in line]
    assert len(lines) == 1, out
    return shlex.split(lines[0])


def _source_flags(cmd: list[str]) -> list[str]:
    """The flags of a uv command that say where packages come from."""
    names = ("--find-links", "-f", "--index", "--index-url", "--extra-index-url", "--default-index")
    return [f"{a} {b}" for a, b in zip(cmd, cmd[1:], strict=False) if a in names]


def _env() -> dict[str, str]:
    # the simulated index is on localhost: no proxy; uv's own settings from the environment left out
    env = {k: v for k, v in os.environ.items() if not k.startswith("UV_") and "proxy" not in k.lower()}
    return {**env, "NO_PROXY": "127.0.0.1", "UV_PYTHON_DOWNLOADS": "never"}


def test_the_makefile_takes_torch_from_the_index_page_unless_a_folder_is_given(tmp_path: Path) -> None:
    index = "https://example.invalid/whl/cpu"
    no_folder = {"TORCH_INDEX": index, "TORCH_WHEELS": "", "PIP_FIND_LINKS": ""}
    # no folder: torch's page of the index, and no other source (PyPI for everything else)
    assert _source_flags(_sync_line(**no_folder)) == [f"--find-links {index}/torch/"]
    # the default index is PyTorch's own CPU index, and tools/lock.py names the same
    default = _sync_line(TORCH_WHEELS="", PIP_FIND_LINKS="")
    assert _source_flags(default) == ["--find-links https://download.pytorch.org/whl/cpu/torch/"]
    assert lock_tool.TORCH_CPU_INDEX == "https://download.pytorch.org/whl/cpu"
    # a wheel folder overrides it: TORCH_WHEELS, or a folder pip is told of (PIP_FIND_LINKS, else
    # pip's configured find-links, as on this machine) that holds a torch CPU wheel; one without is
    # no source of torch (the index then)
    wheels, other = tmp_path / "wheels", tmp_path / "other"
    wheels.mkdir()
    other.mkdir()
    (wheels / WHEEL).write_bytes(b"")
    assert _source_flags(_sync_line(TORCH_INDEX=index, PIP_FIND_LINKS=str(wheels))) == [
        f"--find-links {wheels}"
    ]
    assert _source_flags(_sync_line(TORCH_INDEX=index, PIP_FIND_LINKS=f"{other} {wheels}")) == [
        f"--find-links {wheels}"
    ]
    assert _source_flags(_sync_line(TORCH_INDEX=index, PIP_FIND_LINKS=str(other))) == [
        f"--find-links {index}/torch/"
    ]
    # pip.conf's find-links: test_pips_configured_folder_holding_the_wheel_is_used
    assert _source_flags(_sync_line(TORCH_INDEX=index, TORCH_WHEELS="/a /b")) == [
        "--find-links /a",
        "--find-links /b",
    ]
    # the GPU lock: PyPI's CUDA torch, no torch page, no folder
    gpu = _sync_line(**no_folder, GPU="1")
    assert _source_flags(gpu) == [] and "locks/rr-gpu.txt" in gpu and "locks/rr.txt" not in gpu
    # nothing in the Makefile names one machine's folder
    assert "/opt/" not in (REPO / "Makefile").read_text(encoding="utf-8")


def test_pips_configured_folder_holding_the_wheel_is_used(tmp_path: Path) -> None:
    """A machine whose pip.conf names the wheel folder but whose shell exports no PIP_FIND_LINKS (a
    CI runner of this VM, where download.pytorch.org is unreachable) installs from that folder; a
    configured folder without the wheel leaves the index in place."""
    wheels, other = tmp_path / "wheels", tmp_path / "other"
    wheels.mkdir()
    other.mkdir()
    (wheels / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")

    def flags(folder: Path) -> list[str]:
        conf = tmp_path / f"pip-{folder.name}.conf"
        conf.write_text(f"[global]\nfind-links = {folder}\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in ("TORCH_WHEELS", "PIP_FIND_LINKS", "GPU")}
        out = subprocess.run(
            [
                "make",
                "-n",
                "-B",
                "--no-print-directory",
                "install",
                "TORCH_INDEX=https://example.invalid/whl/cpu",
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
            env={**env, "PIP_CONFIG_FILE": str(conf)},
        ).stdout
        (line,) = [ln for ln in out.splitlines() if " pip sync " in ln]
        return _source_flags(shlex.split(line))

    assert flags(wheels) == [f"--find-links {wheels}"]
    assert flags(other) == ["--find-links https://example.invalid/whl/cpu/torch/"]


def test_torch_resolves_and_syncs_from_the_index_alone(
    torch_index: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tools/lock.py's ``uv pip compile`` (make lock) and ``uv pip sync --dry-run`` (make install) with the Makefile's
    flags for a machine without a wheel folder, the index pointed at the simulated one, and no other
    index: both find torch 2.13.0+cpu there, with the wheel's hash."""
    url, wheel = torch_index
    cmd = _sync_line(TORCH_INDEX=url, TORCH_WHEELS="", PIP_FIND_LINKS="")
    flags = [part for flag in _source_flags(cmd) for part in flag.split(" ", 1)]
    assert flags == ["--find-links", f"{url}/torch/"]
    digest = _sha256(wheel)
    if wheel.name == WHEEL and _local_wheel() == wheel:
        # the real wheel: the lock's torch pin is this file (make install checks the hash)
        block = (
            (REPO / "locks" / "rr.txt").read_text(encoding="utf-8").split("\ntorch==2.13.0+cpu \\\n", 1)[1]
        )
        assert f"--hash=sha256:{digest}" in block.split("\n    #", 1)[0]

    # make lock: tools/lock.py's compile with the Makefile's find-links (uv writes no hash for a file
    # found on a page; the lock gets the page's sha256), PyPI left out here (--no-index, --no-deps)
    (tmp_path / "in.txt").write_text("torch==2.13.0\n")
    platform = ("--python-version", "3.11", "--python-platform", "x86_64-manylinux_2_28")
    lock = lock_tool.Lock("torch.txt", {}, ("in.txt",), (*platform, "--no-index", "--no-deps"))
    links = [link for flag in _source_flags(cmd) for link in flag.split(" ", 1)[1:]]
    env = _env()
    for name in set(os.environ) - set(env):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    lock_tool.compile_lock(lock, str(UV), links, root=tmp_path)
    compiled = (tmp_path / "torch.txt").read_text()
    assert re.search(rf"^torch==2\.13\.0\+cpu \\\n    --hash=sha256:{digest}$", compiled, re.M), compiled

    venv = tmp_path / "venv"
    subprocess.run([str(UV), "venv", "-q", "--python", sys.executable, str(venv)], check=True, env=_env())
    (tmp_path / "lock.txt").write_text(f"torch==2.13.0+cpu \\\n    --hash=sha256:{digest}\n")
    synced = subprocess.run(
        [str(UV), "pip", "sync", "--dry-run", "--no-index", "--require-hashes", *flags]
        + ["--python", str(venv / "bin" / "python"), "lock.txt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
    )
    assert synced.returncode == 0, synced.stderr
    assert " + torch==2.13.0+cpu" in synced.stdout + synced.stderr


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_an_unreachable_torch_index_is_one_line_naming_what_was_tried_and_what_to_set(tmp_path: Path) -> None:
    """``make install`` whose torch page cannot be read (nothing listens at TORCH_INDEX): one line
    naming the page, the cause and TORCH_INDEX / TORCH_WHEELS, not uv's seven lines of retries
    (issue 52). Run in a copy of the Makefile, pyproject.toml and locks/, into a new venv there."""
    copy = tmp_path / "rr"
    copy.mkdir()
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(REPO / name, copy / name)
    shutil.copytree(REPO / "locks", copy / "locks")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    index = f"http://127.0.0.1:{port}/whl/cpu"
    env = {k: v for k, v in _env().items() if k not in ("TORCH_WHEELS", "PIP_FIND_LINKS", "GPU")}
    proc = subprocess.run(
        ["make", "-s", "install", f"PYTHON={sys.executable}", f"UV_DIR={UV.parent.parent}"]
        + [f"VENV={copy / 'venv'}", f"TORCH_INDEX={index}", "TORCH_WHEELS="],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "PIP_CONFIG_FILE": os.devnull},
    )
    lines = [
        line
        for line in proc.stderr.splitlines()
        if line.strip() and not re.match(r"make(\[\d+\])?: \*\*\*", line)
    ]  # make[1]: under make test
    assert proc.returncode != 0 and len(lines) == 1, proc.stderr
    (line,) = lines
    assert line.startswith(f"make: uv cannot read torch's wheel page {index}/torch/ (Connection refused")
    assert "set TORCH_INDEX=" in line and "TORCH_WHEELS=<a folder holding torch-*+cpu-*.whl>" in line
    assert not (copy / "venv" / ".rr-installed").exists()
