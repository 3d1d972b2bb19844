"""One task of a real cluster, read and checked: what ``python -m dpkit task`` runs (lesson 08).

The same program runs as every task of a cluster (started by hand on each machine, by a shell
loop, by :class:`dpkit.tasks.Group` or by Kubernetes). A task learns who it is from flags, the
TF1 tutorials' command line (TF1's ``--job_name`` works as well as ``--job-name``)::

    python -m dpkit task --job-name=ps     --task-index=0 --ps-hosts=10.0.0.1:2222 \\
        --worker-hosts=10.0.0.2:2222,10.0.0.3:2222 --chief-hosts=10.0.0.4:2222
    python -m dpkit task --job-name=worker --task-index=1 ...   # same host lists everywhere

or from ``TF_CONFIG``, what Kubeflow's TFJob sets in every pod::

    TF_CONFIG='{"cluster": {...}, "task": {"type": "worker", "index": 1}}' python -m dpkit task

The shape of the cluster decides the *flavour* (all train softmax regression on the digits):

* chief + ps + workers: ``ps_strategy``, TF2 ``ParameterServerStrategy`` (asynchronous): the
  chief schedules steps with a ``ClusterCoordinator``; ps and workers only serve;
* workers (+ chief), no ps: ``mirrored``, TF2 ``MultiWorkerMirroredStrategy`` (synchronous):
  every task trains on its slice of each global batch; chief:0, else worker:0, is the chief;
* ps + workers with ``--tf1``: ``tf1``, TF1 between-graph replication, worker 0 the chief;
  ``--sync-replicas`` adds ``SyncReplicasOptimizer``.

:func:`parse` checks it all before TensorFlow is imported (a :class:`LaunchError` names the
problem and the fix; :func:`read` prints it); the program :mod:`dpkit.programs.task` trains.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import textwrap

from dpkit.plumbing import checks
from dpkit.plumbing.contract import Exit

JOBS = ("chief", "ps", "worker")
PORT = 2222  # the port TensorFlow's examples and Kubeflow's TFJob use
_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)$")


class LaunchError(argparse.ArgumentTypeError, ValueError):  # argparse keeps its message
    """Flags or ``TF_CONFIG`` that cannot describe a task (the message says how to fix it)."""


@dataclasses.dataclass
class Task:
    """Who this process is and what it will do (see :func:`parse`); the training settings'
    defaults are those of the flags."""

    job: str
    index: int
    cluster: dict[str, list[str]]
    flavour: str  # "ps_strategy", "mirrored" or "tf1"
    sync_replicas: bool = False
    replicas_to_aggregate: int = 0
    train_steps: int = 200
    batch_size: int = 64
    learning_rate: float = 0.5
    seed: int = 0
    logdir: str = os.path.join("runs", "task")
    checkpoint_every: int = 50
    log_every: int = 20
    start_timeout: float = 60.0
    stall_timeout: float = 60.0
    source: str = "flags"  # or "TF_CONFIG", or "Slurm"
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.job}:{self.index}"

    @property
    def address(self) -> str:
        return self.cluster[self.job][self.index]

    @property
    def chief_name(self) -> str:
        """The task that saves checkpoints and summaries: ``chief:0``, else ``worker:0``."""
        return "chief:0" if self.cluster.get("chief") else "worker:0"

    @property
    def is_chief(self) -> bool:
        return self.name == self.chief_name

    @property
    def trains(self) -> bool:
        """Whether this task runs a training loop (the others only serve)."""
        return self.job != "ps" and not (self.flavour == "ps_strategy" and self.job == "worker")

    @property
    def num_workers(self) -> int:
        return len(self.cluster.get("worker", ()))

    def peers(self) -> dict[str, str]:
        """``{"ps:0": address, ...}`` of every other task."""
        return {name: a for name, a in _addresses(self.cluster).items() if name != self.name}

    def tf_config(self) -> str:
        """This task as ``TF_CONFIG`` JSON."""
        task = {"type": self.job, "index": self.index}
        return json.dumps({"cluster": self.cluster, "task": task})


# ----------------------------------------------------------------------------- addresses


def _addresses(cluster: dict) -> dict[str, str]:
    """``{"ps:0": address, ...}`` of every task of ``cluster``."""
    return {f"{j}:{i}": a for j, addresses in cluster.items() for i, a in enumerate(addresses)}


def _example(flag=lambda name: f"--{name}") -> str:
    return f"{flag('ps-hosts')}=10.0.0.1:2222 {flag('worker-hosts')}=10.0.0.2:2222,10.0.0.3:2222"


def check_address(entry: str, where: str) -> str:
    """Return ``entry`` if it is ``HOST:PORT``, else raise a :class:`LaunchError`."""
    if not isinstance(entry, str):
        raise LaunchError(
            f"{where}: {entry!r} is not an address; write HOST:PORT, e.g. {_example()}"
        )
    if not entry:
        raise LaunchError(
            f"{where} has an empty entry (two commas, or a comma at an end); write HOST:PORT "
            f"entries separated by single commas, e.g. {_example()}"
        )
    host, sep, port = entry.rpartition(":")
    if not sep or not host:
        raise LaunchError(
            f"{where}: {entry!r} is not HOST:PORT (no port); add the port each task listens "
            f"on, e.g. {entry.strip(':')}:{PORT}"
        )
    if not port.isdigit():
        raise LaunchError(
            f"{where}: the port {port!r} in {entry!r} is not a number; write HOST:PORT with a "
            f"port number, e.g. {host}:{PORT}"
        )
    if not 1 <= int(port) <= 65535:
        raise LaunchError(f"{where}: the port {port} in {entry!r} is outside 1-65535.")
    if not _HOST.match(host):
        raise LaunchError(
            f"{where}: {host!r} in {entry!r} is not a host name or address; write e.g. "
            f"10.0.0.2:{PORT}, worker-0.example:{PORT} or [::1]:{PORT}"
        )
    return entry


# ----------------------------------------------------------------------------- flags


class _Spelling:
    """A flag's name in messages: as the user typed it (``--job_name`` or ``--job-name``);
    a flag they did not type is spelt in the style of the ones they did."""

    def __init__(self, argv: list[str]):
        typed = [a.split("=", 1)[0] for a in argv if a.startswith("--")]
        self.typed = {t.replace("_", "-"): t for t in typed}
        self.underscores = any("_" in t for t in typed)

    def __call__(self, name: str) -> str:
        kebab = "--" + name.replace("_", "-")
        underscored = "--" + name.replace("-", "_")
        return self.typed.get(kebab) or (underscored if self.underscores else kebab)


def _whole(text: str, flag: str, minimum: int) -> int:
    try:
        return checks.whole(int(text.strip()), flag, minimum)
    except ValueError:
        raise LaunchError(f"{flag} must be {checks.whole_range(minimum)}, got {text!r}.") from None


def _positive(text: str, flag: str) -> float:
    try:
        return checks.positive(float(text), flag)
    except ValueError:
        raise LaunchError(f"{flag} must be a positive number, got {text!r}.") from None


def _job(text: str, flag: str) -> str:
    job = text.strip()
    if job not in JOBS:
        hint = " (TF1's 'master' is called 'chief' now)" if job == "master" else ""
        raise LaunchError(f"unknown {flag} {job!r}{hint}; choose ps, worker or chief.")
    return job


def _hosts(text: str, flag: str, example: str) -> list[str]:
    if not text.strip():
        raise LaunchError(
            f"{flag} is empty; list HOST:PORT entries, e.g. {example}, or leave the flag out."
        )
    return [check_address(entry.strip(), flag) for entry in text.split(",")]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # raise instead of printing and exiting
        raise LaunchError(f"{message}; see {self.prog} --help")


def _parser(prog: str, flag: _Spelling) -> argparse.ArgumentParser:
    """The flags; ``flag`` spells their names in the errors of the ``type=`` checks."""
    example = "example, one ps and two workers on three machines (TF1 flavour, worker 0 is chief):"
    for job, index in [("ps", 0), ("worker", 0), ("worker", 1)]:
        example += f"\n  {prog} --tf1 --job-name={job} --task-index={index} {_example()}"
    description = textwrap.fill(
        "Run one task (ps, worker or chief) of a TensorFlow cluster: give the task with "
        "--job-name, --task-index and the host lists, or in TF_CONFIG. Every task of a "
        "cluster gets the same host lists. Each flag also takes TF1's spelling, with "
        "underscores (--job_name, --task_index, --ps_hosts, ...)."
    )
    raw = argparse.RawDescriptionHelpFormatter
    p = _Parser(
        prog, description=description, epilog=example, formatter_class=raw, exit_on_error=False
    )

    def add(group, name, help, convert=None, *args, **kwargs):
        if convert:
            kwargs["type"] = lambda text: convert(text, flag(name), *args)
        if "action" not in kwargs:  # a training setting's default is Task's
            kwargs.update(metavar=name.split("-")[-1].upper())
            kwargs.update(default=getattr(Task, name.replace("-", "_"), None))
        spellings = dict.fromkeys([f"--{name}", f"--{name.replace('-', '_')}"])  # and TF1's
        group.add_argument(*spellings, help=help, **kwargs)

    who = p.add_argument_group("the task (or set TF_CONFIG instead)")
    add(who, "job-name", "ps, worker or chief", _job)
    add(who, "task-index", "index of this task in its job (0, 1, ...)", _whole, 0)
    for job, what in [("ps", "ps tasks"), ("worker", "worker tasks"), ("chief", "chief")]:
        add(who, f"{job}-hosts", f"comma-separated HOST:PORT of the {what}", _hosts, _example(flag))
    where = p.add_argument_group("or read the task from Slurm, inside srun (lesson 08)")
    add(where, "slurm", "the task and cluster from Slurm's variables", action="store_true")
    add(where, "port-base", "with --slurm: task i of a node listens on PORT+i [2222]", _whole, 1024)
    add(where, "slurm-jobs", "with --slurm: tasks that are not workers, e.g. chief:1,ps:1")
    add(where, "gpus-per-task", "with --slurm: GPUs per task (0 on CPU nodes) [0]", _whole, 0)
    how = p.add_argument_group("training [default]")
    add(how, "tf1", "TF1 between-graph replication", action="store_true")
    add(how, "sync-replicas", "with --tf1: SyncReplicasOptimizer", action="store_true")
    gradients = "with --sync-replicas: gradients per update [0: the number of workers]"
    add(how, "replicas-to-aggregate", gradients, _whole, 0)
    for name, help, *check in [
        ("train-steps", "global steps to train", _whole, 1),
        ("batch-size", "examples per step", _whole, 1),
        ("seed", "seed of the weights and the data order", _whole, 0),
        ("checkpoint-every", "steps between checkpoints", _whole, 1),
        ("log-every", "steps between progress lines", _whole, 1),
        ("learning-rate", "SGD learning rate", _positive),
        ("start-timeout", "seconds to wait for the other tasks", _positive),
        ("stall-timeout", "seconds without progress before the task gives up", _positive),
    ]:
        add(how, name, f"{help} [%(default)g]", *check)
    add(how, "logdir", "checkpoints and TensorBoard logs (the chief's) [%(default)s]")
    return p


# ----------------------------------------------------------------------------- parse


def parse(
    argv: list[str] | None = None, environ=None, *, prog: str = "python -m dpkit task"
) -> Task:
    """Read the task from flags (``argv``: the arguments after ``task``), else from
    ``TF_CONFIG`` in ``environ`` (``os.environ`` by default), and check it all: a bad or
    inconsistent flag or ``TF_CONFIG`` is a :class:`LaunchError` with the fix; ``--help``
    prints the help and raises ``SystemExit``."""
    environ = os.environ if environ is None else environ
    argv = [] if argv is None else [str(a) for a in argv]
    flag = _Spelling(argv)
    try:
        args = _parser(prog, flag).parse_args(argv)
    except argparse.ArgumentError as error:
        if isinstance(error.__context__, LaunchError):  # a type= check: it names the flag
            raise LaunchError(error.message) from None
        name = error.argument_name or ""
        if name.startswith("--"):  # argparse names every spelling: name the one typed
            name = flag(name.split("/")[0][2:])
        where = f"argument {name}: " if name else ""
        raise LaunchError(f"{where}{error.message}; see {prog} --help") from None

    given = (args.job_name, args.task_index, args.ps_hosts, args.worker_hosts, args.chief_hosts)
    notes = []
    slurm_only = {"port-base": args.port_base, "slurm-jobs": args.slurm_jobs}
    slurm_only["gpus-per-task"] = args.gpus_per_task
    stray = [flag(name) for name, value in slurm_only.items() if value is not None]
    if stray and not args.slurm:
        raise LaunchError(f"{', '.join(stray)} only apply with --slurm; add --slurm or drop them.")
    if args.slurm:
        if any(v is not None for v in given):
            raise LaunchError(
                f"--slurm reads the task and the cluster from Slurm; drop {flag('job-name')}, "
                f"{flag('task-index')} and the host lists."
            )
        from dpkit import slurm

        port_base = slurm.PORT_BASE if args.port_base is None else args.port_base
        try:
            job, index, cluster = slurm.resolve(
                environ,
                jobs=args.slurm_jobs or "",
                port_base=port_base,
                gpus_per_task=args.gpus_per_task or 0,
            )
        except ValueError as error:
            raise LaunchError(str(error)) from None
        for name, hosts in cluster.items():
            for host in hosts:
                check_address(host, f"Slurm's {name} list")
        _check_cluster(cluster, job, index, lambda j: f"Slurm's {j!r} list", flag)
        source = "Slurm"
        if environ.get("TF_CONFIG"):
            notes.append("TF_CONFIG is set but ignored: --slurm reads the task from Slurm")
    elif any(v is not None for v in given):
        job, index, source = args.job_name, args.task_index, "flags"
        for name, value in (("job-name", job), ("task-index", index)):
            if value is None:
                example = "0 for the first task of a job"
                if name == "job-name":
                    example = f"ps, worker or chief ({_example(flag)})"
                raise LaunchError(f"{flag(name)} is missing; pass {flag(name)}={example}.")
        jobs = {"chief": args.chief_hosts, "ps": args.ps_hosts, "worker": args.worker_hosts}
        cluster = {job: hosts for job, hosts in jobs.items() if hosts}
        _check_cluster(cluster, job, index, lambda j: flag(f"{j}-hosts"), flag)
        if environ.get("TF_CONFIG"):
            notes.append("TF_CONFIG is set but ignored: the flags name the task")
    elif environ.get("TF_CONFIG"):
        job, index, cluster = _from_tf_config(environ["TF_CONFIG"], flag)
        source = "TF_CONFIG"
    else:
        raise LaunchError(
            f"no task given: pass {flag('job-name')}, {flag('task-index')} and the host lists "
            f"(e.g. {flag('job-name')}=worker {flag('task-index')}=0 {_example(flag)}), or set "
            "TF_CONFIG."
        )
    flavour = _flavour(cluster, args, flag, notes)
    fields = {f.name for f in dataclasses.fields(Task)}  # the training flags, by their names
    settings = {name: value for name, value in vars(args).items() if name in fields}
    task = Task(job, index, cluster, flavour, source=source, notes=notes, **settings)
    workers = task.num_workers
    task.sync_replicas = bool(args.sync_replicas) and task.flavour == "tf1"
    aggregate = args.replicas_to_aggregate
    if aggregate and not task.sync_replicas:
        raise LaunchError(
            f"{flag('replicas-to-aggregate')} only applies with --tf1 {flag('sync-replicas')}."
        )
    if aggregate > workers:
        raise LaunchError(
            f"{flag('replicas-to-aggregate')}={aggregate} is more than the {workers} workers; "
            "a step would never complete. Use at most the number of workers."
        )
    task.replicas_to_aggregate = aggregate or (workers if task.sync_replicas else 0)
    training = workers + len(cluster.get("chief", ()))
    if task.flavour == "mirrored":
        what = f"{flag('batch-size')}={task.batch_size}"
        try:
            checks.divides(task.batch_size, training, what, f"over {training} workers")
        except ValueError as error:
            raise LaunchError(str(error)) from None
    return task


def read(argv: list[str], environ=None, *, prog: str = "python -m dpkit task") -> Task | int:
    """:func:`parse`, or the exit code when there is no task to run: 0 after ``--help``, and
    ``contract.Exit.USAGE`` after a :class:`LaunchError`, printed to stderr. The ``dpkit task``
    command reads its task so, before it imports the program (and TensorFlow)."""
    try:
        return parse(argv, environ, prog=prog)
    except LaunchError as error:
        print(f"error: {error}", file=sys.stderr)
        return Exit.USAGE
    except SystemExit as done:  # --help
        return done.code or 0


def _from_tf_config(text: str, flag: _Spelling) -> tuple[str, int, dict]:
    try:
        config = json.loads(text)
    except ValueError as error:
        raise LaunchError(
            f"TF_CONFIG is not valid JSON ({error}); it should look like "
            '{"cluster": {"worker": ["host:2222"]}, "task": {"type": "worker", "index": 0}}'
        ) from None
    if not isinstance(config, dict) or not isinstance(config.get("cluster"), dict):
        raise LaunchError(
            'TF_CONFIG has no "cluster" object; it should map job names to HOST:PORT lists.'
        )
    task = config.get("task")
    if not isinstance(task, dict) or "type" not in task:
        raise LaunchError(
            'TF_CONFIG has no "task": {"type": ..., "index": ...}; add the task it describes.'
        )
    job = task["type"]
    if job not in JOBS:
        raise LaunchError(f"TF_CONFIG task type {job!r} is not ps, worker or chief.")
    index = task.get("index", 0)
    if not checks.is_whole(index) or index < 0:
        raise LaunchError(f"TF_CONFIG task index {index!r} is not a whole number >= 0.")
    cluster = {}
    for name, hosts in config["cluster"].items():
        if name not in JOBS:
            hint = " ('master' is called 'chief' now)" if name == "master" else ""
            raise LaunchError(f"TF_CONFIG cluster job {name!r} is not ps, worker or chief{hint}.")
        if not isinstance(hosts, list):
            raise LaunchError(
                f'TF_CONFIG cluster job {name!r} must be a list of "HOST:PORT" strings.'
            )
        if hosts:
            cluster[name] = [check_address(h, f"TF_CONFIG cluster {name!r}") for h in hosts]
    _check_cluster(cluster, job, index, lambda j: f"TF_CONFIG cluster {j!r}", flag)
    return job, index, cluster


def _check_cluster(cluster: dict, job: str, index: int, where, flag: _Spelling) -> None:
    """``where(job)`` names the place that lists a job's addresses (a flag or TF_CONFIG)."""
    if not cluster.get("worker"):
        raise LaunchError(
            f"{where('worker')} is missing or empty; a cluster needs at least one worker, e.g. "
            f"{_example(flag)}"
        )
    if len(cluster.get("chief", ())) > 1:
        raise LaunchError(
            f"{where('chief')} lists {len(cluster['chief'])} tasks; a cluster has one chief."
        )
    count = len(cluster.get(job, ()))
    if count == 0:
        raise LaunchError(
            f"this task is {job}:{index} but {where(job)} is missing or empty; list the {job} "
            f"addresses (every task gets the same lists)."
        )
    if index >= count:
        raise LaunchError(
            f"task index {index} is out of range: {where(job)} lists {count} {job} task(s), "
            f"so the index is 0-{count - 1}."
        )
    tasks = _addresses(cluster)
    for address in dict.fromkeys(tasks.values()):
        names = [name for name, a in tasks.items() if a == address]
        if len(names) > 1:
            raise LaunchError(
                f"the address {address} is given to {' and '.join(names)}; every task needs "
                "an address of its own (another port, or another host)."
            )


def _flavour(cluster: dict, args, flag: _Spelling, notes: list[str]) -> str:
    """The shape of the cluster (and ``--tf1``) decides how it trains."""
    has_ps, has_chief = bool(cluster.get("ps")), bool(cluster.get("chief"))
    sync = flag("sync-replicas")
    if args.tf1:
        if has_chief:
            raise LaunchError(
                "--tf1 clusters have no chief job (worker 0 is the chief); drop the chief "
                "from the host lists, or drop --tf1 for ParameterServerStrategy."
            )
        if not has_ps:
            raise LaunchError(
                f"--tf1 needs at least one ps to hold the variables; add {flag('ps-hosts')}."
            )
        return "tf1"
    if has_ps:
        if not has_chief:
            raise LaunchError(
                "a cluster with ps tasks needs a chief to run ParameterServerStrategy's training "
                f"loop: add {flag('chief-hosts')}=HOST:PORT and start a task with "
                f"{flag('job-name')}=chief, or add --tf1 for TF1 between-graph replication, "
                "where worker 0 is the chief."
            )
        if args.sync_replicas:
            raise LaunchError(
                f"{sync} belongs to the TF1 flavour (ParameterServerStrategy is asynchronous); "
                "add --tf1, or leave out the ps for synchronous MultiWorkerMirroredStrategy."
            )
        return "ps_strategy"
    if args.sync_replicas:
        notes.append(f"{sync} ignored: MultiWorkerMirroredStrategy is synchronous")
    return "mirrored"
