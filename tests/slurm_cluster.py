"""A real single-node SLURM cluster for the tests, from Debian's own packages.

Where the tests run as root on Debian (CI does), :func:`install` installs SLURM with
``apt-get install -y --no-install-recommends`` (skipped when already installed) and
:class:`SlurmCluster` starts it as plain background daemons, no systemd and no cgroups:

* ``munged`` (authentication), with its own key and socket;
* ``mariadbd`` + ``slurmdbd``: real job accounting, so ``sacct`` (which submitit asks for job
  states) answers as on any production cluster;
* ``slurmctld`` and ``slurmd`` for one node whose CPUs and memory come from ``slurmd -C``, with
  ``gpus`` GPUs (``Gres=gpu:N``) and no GPU behind them, so that a job asking for GPUs is given
  them, and waits for them, as on a GPU cluster. slurmd 22.05 drops a GPU without ``File=``
  ("Removing file-less GPU"), so each names a character device that is no GPU (:data:`GPU_FILES`:
  ``/dev/null``, ``/dev/zero``...); without cgroups SLURM only counts them.

Everything (configs, keys, sockets, state, spool, logs, the database) lives in one folder;
clients find the cluster through ``SLURM_CONF`` (:attr:`SlurmCluster.env`); ports are picked
free, so the cluster coexists with any other SLURM on the machine. :meth:`SlurmCluster.stop`
ends the daemons by their PIDs.

Settings that matter, and why: ``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none``
(no cgroups in a container), ``EnforcePartLimits=ALL`` (an impossible request is rejected at
``sbatch`` instead of pending forever), ``AuthInfo=...cred_expire=5`` (a requeued job restarts
after ~6 s, cred_expire + 1, instead of SLURM's default 121 s; 5 is the least SLURM accepts; read
only when slurmctld starts).

From a shell (what ``docs/scale-out.md`` "Tested on SLURM" runs)::

    python -m tests.slurm_cluster start /tmp/rr-slurm     # prints: export SLURM_CONF=...
    python -m tests.slurm_cluster stop /tmp/rr-slurm
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

#: Debian packages of the cluster (SLURM 22.05 on Debian 12) and of its accounting database.
PACKAGES = ["slurmctld", "slurmd", "slurm-client", "munge", "slurmdbd", "mariadb-server"]
#: One program of each package: present means installed.
PROGRAMS = ["slurmctld", "slurmd", "sbatch", "munged", "slurmdbd", "mariadbd"]
CLUSTER = "rrtest"
#: Character devices standing in for the node's GPUs in gres.conf (one each; nothing opens them).
GPU_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/urandom")
PARTITION = "debug"


def missing_programs() -> list[str]:
    """The cluster's programs not found on ``PATH`` (``/usr/sbin`` included)."""
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return [p for p in PROGRAMS if shutil.which(p, path=path) is None]


def install() -> tuple[str | None, float]:
    """Install the Debian packages if needed.

    Returns:
        ``(None, seconds spent installing)`` when SLURM is usable (0.0 when it already was), or
        ``(reason, 0.0)`` when it cannot be installed here (not root, no apt-get, install failed).
    """
    if not missing_programs():
        return None, 0.0
    if os.geteuid() != 0:
        return f"SLURM is not installed ({', '.join(missing_programs())} missing) and this is not root", 0.0
    if shutil.which("apt-get") is None:
        return "SLURM is not installed and there is no apt-get (not Debian/Ubuntu)", 0.0
    start = time.monotonic()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "--no-install-recommends", *PACKAGES]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:  # a stale package list: update once, then try again
        subprocess.run(["apt-get", "update"], env=env, capture_output=True)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0 or missing_programs():
        return f"apt-get install {' '.join(PACKAGES)} failed: {proc.stderr.strip()[-500:]}", 0.0
    return None, time.monotonic() - start


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def node_line() -> str:
    """``NodeName=... CPUs=... RealMemory=...`` of this machine, from ``slurmd -C``."""
    out = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout
    line = next(line for line in out.splitlines() if line.startswith("NodeName="))
    return line.strip()


class SlurmCluster:
    """munged, mariadbd, slurmdbd, slurmctld and slurmd for one node, all below ``root``.

    Args:
        root: The cluster's folder (created; state, spool, logs, database and configs).
        accounting: Run MariaDB + slurmdbd (``sacct`` answers); ``False``: a cluster without
            job accounting (``AccountingStorageType=accounting_storage/none``), as some are.
        gpus: GPUs of the node (at most ``len(GPU_FILES)``; SLURM counts and allocates them, nothing uses them).
    """

    def __init__(self, root: str | Path, accounting: bool = True, gpus: int = 0) -> None:
        self.root = Path(root).resolve()
        self.accounting = accounting
        self.gpus = gpus
        self.conf = self.root / "etc" / "slurm.conf"
        self.pids: dict[str, int] = {}
        self._procs: list[subprocess.Popen] = []

    @property
    def env(self) -> dict[str, str]:
        """The environment of a SLURM client (sbatch, squeue, rr -m ...) for this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    # -- start ---------------------------------------------------------------------------

    def _spawn(self, name: str, cmd: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.out", "ab")  # noqa: SIM115 (the daemon holds it)
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
        )
        log.close()
        self._procs.append(proc)
        self.pids[name] = proc.pid
        (self.root / "pids.json").write_text(json.dumps(self.pids))

    def _wait(self, what: str, ready, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return
            for proc in self._procs:
                if proc.poll() is not None:
                    name = next(n for n, p in self.pids.items() if p == proc.pid)
                    raise RuntimeError(f"{name} exited ({proc.returncode}): {self.log_tail(name)}")
            time.sleep(0.2)
        raise TimeoutError(
            f"SLURM cluster: {what} not ready after {timeout:.0f} s; logs in {self.root / 'log'}"
        )

    def log_tail(self, name: str, chars: int = 2000) -> str:
        """The end of daemon ``name``'s log."""
        text = ""
        for path in sorted((self.root / "log").glob(f"{name}*")):
            text += path.read_text(errors="replace")
        return text[-chars:]

    def _run(self, *cmd: str) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, capture_output=True, text=True, env=self.env, timeout=30)

    def start(self) -> float:
        """Write the configs and start every daemon; returns the seconds it took."""
        begin = time.monotonic()
        for sub in ("etc", "log", "run", "state", "spool", "db", "munge"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        r = self.root
        # munge: its own key and socket (munged insists on private folders for both).
        (r / "munge").chmod(0o700)
        key = r / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            key.chmod(0o400)
        sock = r / "munge" / "munge.socket"
        self._spawn(
            "munged",
            ["munged", "-F", "--force", f"--key-file={key}", f"--socket={sock}",
             f"--pid-file={r / 'run' / 'munged.pid'}", f"--log-file={r / 'log' / 'munged.log'}",
             f"--seed-file={r / 'munge' / 'munged.seed'}"],
        )  # fmt: skip
        self._wait("munged", sock.exists)
        db_port, dbd_port = _free_port(), _free_port()
        auth = f"AuthType=auth/munge\nAuthInfo=socket={sock},cred_expire=5\n"
        if self.accounting:
            self._start_accounting(db_port, dbd_port, auth, sock)
            accounting = (
                "AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageHost=127.0.0.1\n"
                f"AccountingStoragePort={dbd_port}\nAccountingStoragePass={sock}\n"
            )
        else:
            accounting = "AccountingStorageType=accounting_storage/none\n"
        node = node_line()
        name = re.match(r"NodeName=(\S+)", node).group(1)  # type: ignore[union-attr]
        node = re.sub(r"\s*UpTime=\S+", "", node)
        gres = ""
        if self.gpus:
            (self.root / "etc" / "gres.conf").write_text(
                "".join(f"NodeName={name} Name=gpu File={dev}\n" for dev in GPU_FILES[: self.gpus])
            )
            gres, node = "GresTypes=gpu\n", f"{node} Gres=gpu:{self.gpus}"
            if self.accounting:  # sacct's AllocTRES then names the GPUs a job was given
                gres += "AccountingStorageTRES=gres/gpu\n"
        self.conf.write_text(
            gres + auth + f"ClusterName={CLUSTER}\nSlurmctldHost={name}(127.0.0.1)\n"
            f"SlurmctldPort={_free_port()}\nSlurmdPort={_free_port()}\n"
            "SlurmUser=root\nSlurmdUser=root\nCredType=cred/munge\n"
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
            "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core_Memory\n"
            "EnforcePartLimits=ALL\nReturnToService=2\nMpiDefault=none\n"
            "SchedulerParameters=sched_interval=2\nMessageTimeout=20\nKillWait=2\n"
            f"{accounting}MailProg=/bin/true\n"
            f"StateSaveLocation={r / 'state'}\nSlurmdSpoolDir={r / 'spool'}\n"
            f"SlurmctldPidFile={r / 'run' / 'slurmctld.pid'}\nSlurmdPidFile={r / 'run' / 'slurmd.pid'}\n"
            f"SlurmctldLogFile={r / 'log' / 'slurmctld.log'}\nSlurmdLogFile={r / 'log' / 'slurmd.log'}\n"
            f"{node} NodeAddr=127.0.0.1 State=UNKNOWN\n"
            f"PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"
        )
        self._spawn("slurmctld", ["slurmctld", "-D", "-i"])
        self._wait("slurmctld", lambda: self._run("scontrol", "ping").stdout.count("UP") > 0)
        self._spawn("slurmd", ["slurmd", "-D"])
        self._wait("slurmd", lambda: self._run("sinfo", "-h", "-o", "%T").stdout.strip() == "idle")
        return time.monotonic() - begin

    def _start_accounting(self, db_port: int, dbd_port: int, auth: str, sock: Path) -> None:
        """MariaDB (bound to 127.0.0.1 on a free port, no grant tables: a throwaway database only
        this cluster's slurmdbd talks to) and slurmdbd."""
        r = self.root
        if not (r / "db" / "mysql").exists():
            proc = subprocess.run(
                ["mariadb-install-db", f"--datadir={r / 'db'}", "--user=root", "--skip-test-db",
                 "--auth-root-authentication-method=normal"],
                capture_output=True, text=True,
            )  # fmt: skip
            if proc.returncode != 0:
                raise RuntimeError(f"mariadb-install-db failed: {proc.stderr[-1000:]}")
        self._spawn(
            "mariadbd",
            ["mariadbd", "--no-defaults", f"--datadir={r / 'db'}", "--user=root", f"--port={db_port}",
             "--bind-address=127.0.0.1", f"--socket={r / 'run' / 'mysqld.sock'}", "--skip-grant-tables",
             f"--pid-file={r / 'run' / 'mariadbd.pid'}", f"--log-error={r / 'log' / 'mariadbd.log'}",
             "--innodb-buffer-pool-size=16M", "--skip-log-bin"],
        )  # fmt: skip
        self._wait("mariadbd", lambda: _port_open(db_port))
        dbd_conf = r / "etc" / "slurmdbd.conf"
        dbd_conf.write_text(
            auth + f"DbdHost=localhost\nDbdAddr=127.0.0.1\nDbdPort={dbd_port}\nSlurmUser=root\n"
            f"StorageType=accounting_storage/mysql\nStorageHost=127.0.0.1\nStoragePort={db_port}\n"
            f"StorageUser=root\nStorageLoc=slurm_acct_db\nPidFile={r / 'run' / 'slurmdbd.pid'}\n"
            f"LogFile={r / 'log' / 'slurmdbd.log'}\nDebugLevel=info\n"
        )
        dbd_conf.chmod(0o600)
        self._spawn("slurmdbd", ["slurmdbd", "-D"])
        self._wait("slurmdbd", lambda: _port_open(dbd_port))

    # -- stop ----------------------------------------------------------------------------

    def stop(self) -> None:
        """Cancel every job and end the daemons (slurmd first), by PID: SIGTERM, then SIGKILL."""
        if not self.pids and (self.root / "pids.json").exists():
            self.pids = json.loads((self.root / "pids.json").read_text())
        if "slurmctld" in self.pids:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                self._run("scancel", "--full", "--user=root")
        for name in ("slurmd", "slurmctld", "slurmdbd", "mariadbd", "munged"):
            pid = self.pids.get(name)
            if pid is None:
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            if not _wait_gone(pid, 15.0):
                os.kill(pid, signal.SIGKILL)
                _wait_gone(pid, 5.0)
        for proc in self._procs:
            proc.poll()
        self.pids = {}
        (self.root / "pids.json").unlink(missing_ok=True)


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)  # our child: reap it
            if done:
                return True
        except ChildProcessError:  # not our child (stop from another process)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
        time.sleep(0.1)
    return False


def main(argv: list[str]) -> int:
    """``python -m tests.slurm_cluster start|stop DIR``."""
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print(__doc__.split("From a shell")[1] if __doc__ else "", file=sys.stderr)
        return 2
    cluster = SlurmCluster(argv[1])
    if argv[0] == "stop":
        cluster.stop()
        return 0
    reason, took = install()
    if reason is not None:
        print(f"cannot start SLURM here: {reason}", file=sys.stderr)
        return 1
    started = cluster.start()
    print(f"# installed in {took:.1f} s, started in {started:.1f} s; daemons: {cluster.pids}")
    print(f"export SLURM_CONF={cluster.conf}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
