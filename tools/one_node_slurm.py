"""A private one-node Slurm on this machine, for lesson 08's Slurm section and its tests.

Everything lives in one folder: a munge key and socket, ``slurm.conf``, the daemons' state,
pid and log files. munged, slurmctld and slurmd run in the foreground as children of this
process, so :meth:`OneNodeSlurm.stop` (also run on ``with`` exit and at interpreter exit)
ends and reaps all three. Clients find this Slurm through ``SLURM_CONF``, which
:attr:`OneNodeSlurm.env` sets::

    with OneNodeSlurm(folder) as slurm:
        subprocess.run(["sbatch", "--wait", "job.sh"], env=slurm.env)

Needs root (slurmd starts jobs as the submitting user) and Debian's ``slurm-wlm`` and
``munge``; :func:`install` gets them with apt-get where they are missing. From the shell,
``python tools/one_node_slurm.py DIR`` starts one, prints the ``export SLURM_CONF=...`` line
to type in another terminal, and stops it on Ctrl-C. ``python tools/one_node_slurm.py
--lesson-08 DIR`` re-executes lesson 08 with such a Slurm running, so that its Slurm section
queues a real job, and stores that job's script, output and checkpoint in lessons/slurm_run/,
which the lesson reads on a machine without Slurm.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from dpkit.plumbing import procs

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "scancel", "squeue", "sinfo", "scontrol")
PACKAGES = ("slurm-wlm", "munge")


class Unavailable(RuntimeError):
    """This machine cannot run a one-node Slurm; the message says why and what would."""


def missing() -> list[str]:
    """The Slurm and munge programs not found on PATH (or in /usr/sbin)."""
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return [p for p in DAEMONS + CLIENTS + ("mungekey",) if not shutil.which(p, path=path)]


def install() -> None:
    """apt-get install slurm-wlm and munge when a program is missing; :class:`Unavailable`
    when that cannot be done here (not root, no apt-get) or did not help."""
    if not missing():
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise Unavailable(
            f"Slurm is not installed ({', '.join(missing())} missing) and cannot be installed "
            "here: that needs root and apt-get (Debian or Ubuntu: apt-get install slurm-wlm munge)."
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *PACKAGES]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        if done.returncode:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise Unavailable(f"{' '.join(command)} failed: {' | '.join(tail)}")
    if missing():
        raise Unavailable(f"after apt-get install, still missing: {', '.join(missing())}")


def _conf(folder: Path, host: str, node: str, cpus: int, memory_mb: int) -> str:
    """slurm.conf for one node that runs every job step on this machine. The node is called
    ``node`` ("localhost": the name Slurm gives the tasks, so the addresses TensorFlow dials
    resolve on any machine, whatever /etc/hosts says of ``host``) and everything talks over
    127.0.0.1. Oversubscription is allowed (srun -O): more tasks than the node has CPUs."""
    state = folder / "state"
    return "\n".join(
        [
            "ClusterName=dpkit",
            f"SlurmctldHost={host}(127.0.0.1)",
            f"SlurmctldPort={procs.free_port()}",
            f"SlurmdPort={procs.free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={folder / 'munge.socket'}",
            "ProctrackType=proctrack/linuxproc",  # no cgroups inside a container
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "MpiDefault=none",
            "ReturnToService=2",
            "SchedulerType=sched/builtin",
            "KillWait=5",  # seconds between SIGTERM and SIGKILL when a job is cancelled
            f"StateSaveLocation={state / 'ctld'}",
            f"SlurmdSpoolDir={state / 'd'}",
            f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
            f"SlurmdPidFile={folder / 'slurmd.pid'}",
            f"SlurmctldLogFile={folder / 'slurmctld.log'}",
            f"SlurmdLogFile={folder / 'slurmd.log'}",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 CPUs={cpus} "
            f"RealMemory={memory_mb} State=UNKNOWN",
            f"PartitionName=debug Nodes={node} Default=YES MaxTime=60 State=UP OverSubscribe=YES",
            "",
        ]
    )


class OneNodeSlurm:
    """munged, slurmctld and slurmd for this machine alone, in ``folder`` (see the module)."""

    def __init__(self, folder: str | os.PathLike, *, start_timeout: float = 60.0):
        self.folder = Path(folder).resolve()
        self.start_timeout = start_timeout
        self.host = socket.gethostname().split(".")[0]  # slurmctld insists on its own name
        self.node = "localhost"  # the node's name in Slurm, and so in every task's address
        self.procs: dict[str, subprocess.Popen] = {}
        self.env = {**os.environ, "SLURM_CONF": str(self.folder / "slurm.conf")}
        self.env["PATH"] = os.pathsep.join([self.env.get("PATH", ""), "/usr/sbin", "/sbin"])

    def __enter__(self) -> OneNodeSlurm:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        if os.geteuid() != 0:
            raise Unavailable("a one-node Slurm needs root here (slurmd runs jobs as root)")
        install()
        atexit.register(self.stop)
        f = self.folder
        for sub in ("state/ctld", "state/d", "munge"):
            (f / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(f, 0o755)  # munged refuses folders that others may write to
        key = f / "munge" / "munge.key"
        if not key.exists():
            self._run(["mungekey", "--create", f"--keyfile={key}"])
        os.chmod(key, 0o600)
        munged = ["munged", "--foreground", "--force", f"--socket={f / 'munge.socket'}"]
        munged += [f"--key-file={key}", f"--pid-file={f / 'munge' / 'munged.pid'}"]
        munged += [
            f"--log-file={f / 'munge' / 'munged.log'}",
            f"--seed-file={f / 'munge' / 'seed'}",
        ]
        self._spawn("munged", munged)
        self._wait_for(lambda: (f / "munge.socket").exists(), "munged's socket")
        cpus = os.cpu_count() or 1
        memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20 // 2
        (f / "slurm.conf").write_text(_conf(f, self.host, self.node, cpus, memory_mb))
        conf = ["-f", str(f / "slurm.conf")]
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", *conf])
        self._spawn("slurmd", ["slurmd", "-D", "-N", self.node, *conf])
        self._wait_for(self._idle, f"node {self.node} idle in sinfo")

    def _run(self, argv: list[str]) -> str:
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=30)
        if done.returncode:
            raise Unavailable(f"{' '.join(argv)} failed: {(done.stderr or done.stdout).strip()}")
        return done.stdout

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.folder / f"{name}.out", "wb") as log:
            self.procs[name] = subprocess.Popen(
                argv, env=self.env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )

    def _idle(self) -> bool:
        states = self.sinfo()
        return states.startswith("idle")

    def sinfo(self) -> str:
        """The node's state as sinfo prints it ("idle", "alloc", ...), "" while unreachable."""
        done = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%T"], env=self.env, capture_output=True, text=True
        )
        return done.stdout.strip() if done.returncode == 0 else ""

    def _wait_for(self, ready, what: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        while not ready():
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    log = (self.folder / f"{name}.out").read_text(errors="replace")
                    tail = " | ".join(log.strip().splitlines()[-3:])
                    raise Unavailable(f"{name} exited with code {proc.returncode}: {tail}")
            if time.monotonic() > deadline:
                raise Unavailable(
                    f"no {what} after {self.start_timeout:g} s (logs in {self.folder})"
                )
            time.sleep(0.2)

    def stop(self) -> None:
        """End the daemons, newest first (SIGTERM, then SIGKILL after 10 s), and reap them."""
        for name in reversed(list(self.procs)):
            proc = self.procs.pop(name)
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def running(self) -> list[str]:
        """The daemons of this Slurm still running."""
        return [name for name, proc in self.procs.items() if proc.poll() is None]


ROOT = Path(__file__).resolve().parents[1]
LESSON = ROOT / "lessons" / "08_beyond_one_machine.ipynb"
RECORD = ROOT / "lessons" / "slurm_run"  # what the lesson reads where Slurm does not answer


def record_lesson_08(slurm: OneNodeSlurm) -> None:
    """Execute lesson 08 in place with ``slurm`` answering, then keep its job's files."""
    run = [sys.executable, str(ROOT / "tools" / "run_notebooks.py"), "--in-place", str(LESSON)]
    subprocess.run(run, env=slurm.env, cwd=ROOT, check=True)
    job = ROOT / "runs" / "slurm-08"
    keep = [
        "job.sh",
        "slurm.out",
        "run/checkpoint",
        *(p.relative_to(job).as_posix() for p in job.glob("run/ckpt-*")),
    ]
    shutil.rmtree(RECORD, ignore_errors=True)
    for name in keep:
        (RECORD / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(job / name, RECORD / name)
    print(f"stored {len(keep)} files of the job in {RECORD.relative_to(ROOT)}", file=sys.stderr)


def main(argv: list[str]) -> int:
    lesson = argv[:1] == ["--lesson-08"]
    argv = argv[1:] if lesson else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        print("usage: python tools/one_node_slurm.py [--lesson-08] FOLDER", file=sys.stderr)
        return 2
    try:
        with OneNodeSlurm(argv[0]) as slurm:
            if lesson:
                record_lesson_08(slurm)
                return 0
            print(f"export SLURM_CONF={slurm.env['SLURM_CONF']}", flush=True)
            print("one-node Slurm running; Ctrl-C stops it", file=sys.stderr, flush=True)
            while slurm.running() == list(DAEMONS):
                time.sleep(1)
            print(f"a daemon stopped; logs in {slurm.folder}", file=sys.stderr)
            return 1
    except Unavailable as error:
        print(f"one_node_slurm: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
