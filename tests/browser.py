"""A real browser for the tests: Debian's ``chromium``, driven by Playwright.

Playwright's own browser download (``playwright install``) is not used: where the tests run as
root on Debian (CI does), :func:`install` installs the distribution's ``chromium`` with
``apt-get install -y --no-install-recommends`` (skipped when already installed), as
``tests/slurm_cluster.py`` installs SLURM, and :func:`launch` starts it through Playwright with its
``executable_path``. The site under test needs no network, and the flags keep Chromium from
reaching for one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Any

#: The Debian package and the binary it installs.
PACKAGE = "chromium"
EXECUTABLE = "/usr/bin/chromium"
#: Headless, no sandbox (root in a container), nothing that phones home.
ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def install() -> tuple[str | None, float]:
    """Install Debian's chromium if needed.

    Returns:
        ``(None, seconds spent installing)`` when ``/usr/bin/chromium`` is usable (0.0 when it
        already was), or ``(reason, 0.0)`` when it cannot be installed here.
    """
    if os.path.exists(EXECUTABLE):
        return None, 0.0
    if os.geteuid() != 0:
        return f"{PACKAGE} is not installed ({EXECUTABLE} missing) and this is not root", 0.0
    if shutil.which("apt-get") is None:
        return f"{PACKAGE} is not installed and there is no apt-get (not Debian/Ubuntu)", 0.0
    start = time.monotonic()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "--no-install-recommends", PACKAGE]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:  # a stale package list: update once, then try again
        subprocess.run(["apt-get", "update"], env=env, capture_output=True)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0 or not os.path.exists(EXECUTABLE):
        return f"apt-get install {PACKAGE} failed: {proc.stderr.strip()[-500:]}", 0.0
    return None, time.monotonic() - start


def launch(playwright: Any) -> Any:
    """Debian's chromium, headless, through Playwright (``playwright.chromium.launch``)."""
    return playwright.chromium.launch(executable_path=EXECUTABLE, args=ARGS)
