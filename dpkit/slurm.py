"""Slurm: the batch script that starts the task program, and the task read from Slurm (lesson 08).

On a Slurm cluster nobody types host lists: ``sbatch`` queues a script, ``srun`` inside it
starts one copy of the program per task, and Slurm tells each copy who it is in variables
(``SLURM_PROCID``, ``SLURM_STEP_NODELIST``, ...). TensorFlow's ``SlurmClusterResolver`` turns
them into a cluster spec. :func:`resolve` calls it the way a CPU-only cluster needs, and checks
what it cannot; :func:`batch_script` writes the script that runs
``python -m dpkit task --slurm`` (:func:`dpkit.launcher.parse` calls :func:`resolve`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import time

from dpkit.plumbing import checks, procs

PORT_BASE = 2222  # task i on a node listens on PORT_BASE + i (TensorFlow's default is 8888)
STEP = ("SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_STEP_NODELIST", "SLURM_STEP_TASKS_PER_NODE")
_TIME = re.compile(r"^(\d+-)?\d{1,2}(:\d{2}){0,2}$")


def tasks_per_node(text: str) -> list[int]:
    """Slurm's compressed counts, ``"2(x3),1"``, as a list: ``[2, 2, 2, 1]``."""
    counts = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(\(x(\d+)\))?", part.strip())
        if not m or int(m.group(1)) == 0:
            raise ValueError(
                f"SLURM_STEP_TASKS_PER_NODE={text!r} is not Slurm's form (e.g. '2(x3),1'); "
                "run the program with srun inside a job, which sets it."
            )
        counts += [int(m.group(1))] * int(m.group(3) or 1)
    return counts


def parse_jobs(text: str, num_tasks: int) -> dict[str, int]:
    """``"chief:1,ps:1"`` and the step's task count: every job's task count, the tasks not
    named being workers (``{"chief": 1, "ps": 1, "worker": num_tasks - 2}``)."""
    jobs: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        job, _, count = part.partition(":")
        if job not in ("chief", "ps") or not count.isdigit() or int(count) < 1 or job in jobs:
            raise ValueError(
                f"--slurm-jobs={text!r}: each entry is chief:1 or ps:N (N >= 1), once each; "
                "every task not named there is a worker."
            )
        jobs[job] = int(count)
    if jobs.get("chief", 1) != 1:
        raise ValueError(
            f"--slurm-jobs={text!r} asks for {jobs['chief']} chiefs; a cluster has one."
        )
    workers = num_tasks - sum(jobs.values())
    if workers < 1:
        raise ValueError(
            f"--slurm-jobs={text!r} names {sum(jobs.values())} tasks but the step has "
            f"{num_tasks}, leaving no worker; start more tasks (sbatch --ntasks) or name fewer."
        )
    return {**jobs, "worker": workers}


@contextlib.contextmanager
def environment(environ):
    """Run with ``os.environ`` replaced by ``environ`` (the resolver reads only os.environ)."""
    if environ is None or environ is os.environ:
        yield
        return
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def resolve(
    environ=None, *, jobs: str = "", port_base: int = PORT_BASE, gpus_per_task: int = 0
) -> tuple[str, int, dict[str, list[str]]]:
    """This task's ``(job, index, cluster)`` from Slurm's variables, through TensorFlow's
    ``SlurmClusterResolver``.

    Args:
        environ: the variables (``os.environ`` by default): a job step's, as srun sets them.
        jobs: tasks that are not workers, ``"chief:1,ps:1"`` (empty: every task a worker).
        port_base: task i on a node listens on ``port_base + i``.
        gpus_per_task: 0 on a CPU-only cluster. Otherwise the resolver gives each task of a
            node its own GPUs and sets ``CUDA_VISIBLE_DEVICES`` in ``environ`` to them.

    Returns:
        The job name, the index in that job, and every job's ``host:port`` list.

    Raises:
        ValueError: a variable is missing or malformed (not inside ``srun``), the ports do
            not fit, or this task's host in the spec is not the node Slurm started it on.
    """
    env = os.environ if environ is None else environ
    for name in STEP:
        if not env.get(name):
            raise ValueError(
                f"{name} is not set: this is not a Slurm job step. Start the program with srun "
                "inside an sbatch script (dpkit.slurm.batch_script writes one)."
            )
    rank, num_tasks = env["SLURM_PROCID"], env["SLURM_STEP_NUM_TASKS"]
    if not (rank.isdigit() and num_tasks.isdigit() and int(rank) < int(num_tasks)):
        raise ValueError(
            f"SLURM_PROCID={rank!r} is not a rank below SLURM_STEP_NUM_TASKS={num_tasks!r}."
        )
    per_node = tasks_per_node(env["SLURM_STEP_TASKS_PER_NODE"])
    checks.whole(port_base, "port_base", 1024, maximum=65535 - max(per_node) + 1)
    checks.whole(gpus_per_task, "gpus_per_task", 0)
    counts = parse_jobs(jobs, int(num_tasks))

    import tensorflow as tf  # here: `dpkit task --slurm` checks its flags first

    # Without gpus_per_node the resolver runs nvidia-smi (missing on a CPU node); with 0 it
    # hands each task range(0, 0, 0) GPUs, a ValueError. One pretend GPU per task keeps one
    # port per task; auto_set_gpu=False leaves CUDA_VISIBLE_DEVICES alone.
    gpus = gpus_per_task or 1
    with environment(env):
        resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
            jobs=counts,
            port_base=port_base,
            gpus_per_node=gpus * max(per_node),
            gpus_per_task=gpus,
            auto_set_gpu=gpus_per_task > 0,
        )
        cluster = {job: list(hosts) for job, hosts in resolver.cluster_spec().as_dict().items()}
        job, index = resolver.task_type, resolver.task_id
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if gpus_per_task and env is not os.environ:  # the resolver set it in the stand-in
        env["CUDA_VISIBLE_DEVICES"] = visible
    node = env.get("SLURMD_NODENAME")
    host = cluster[job][index].rsplit(":", 1)[0]
    if node and node != host:
        raise ValueError(
            f"Slurm started rank {rank} on {node}, but SlurmClusterResolver puts {job}:{index} "
            f"on {host}: the resolver orders the nodes by their names as text (node10 before "
            "node9), not in the order Slurm gave out the ranks. Ask for nodes whose names sort "
            "the same both ways (zero-padded numbers, e.g. sbatch --nodelist=node[09-10]), or "
            "give the cluster in TF_CONFIG instead."
        )
    return job, index, cluster


def batch_script(
    task_flags: list[str],
    *,
    nodes: int = 1,
    tasks_per_node: int = 2,
    cpus_per_task: int = 1,
    gpus_per_task: int = 0,
    time_limit: str = "00:10:00",
    jobs: str = "",
    port_base: int = PORT_BASE,
    job_name: str = "dpkit",
    output: str = "slurm-%j.out",
    python: str = "python",
    overcommit: bool = False,
) -> str:
    """An ``sbatch`` script that runs ``python -m dpkit task --slurm`` as every task.

    Args:
        task_flags: the training flags every task gets (``--train-steps=100``, ...); no host
            lists: each task reads the cluster from Slurm.
        nodes, tasks_per_node, cpus_per_task: what to ask Slurm for.
        gpus_per_task: GPUs per task; the script asks for ``--gres=gpu:`` that many per node.
        time_limit: ``[D-]HH:MM:SS`` (or MM, MM:SS); Slurm ends the job after it.
        jobs, port_base: passed to every task (see :func:`resolve`).
        job_name, output: the job's name and its output file (``%j``: the job id).
        python: the interpreter on the compute nodes.
        overcommit: allow more tasks than CPUs (``--overcommit``: a laptop-sized node).

    Returns:
        The script's text.

    Raises:
        ValueError: a count, the time or a flag that cannot work (the message says why).
    """
    for name, value, low in [("nodes", nodes, 1), ("tasks_per_node", tasks_per_node, 1)]:
        checks.whole(value, name, low)
    checks.whole(cpus_per_task, "cpus_per_task", 1)
    checks.whole(gpus_per_task, "gpus_per_task", 0)
    if not _TIME.match(time_limit):
        raise ValueError(f"time_limit={time_limit!r} is not Slurm's form; write e.g. '00:10:00'.")
    named = {f.split("=")[0].replace("_", "-") for f in task_flags}
    clash = named & {"--job-name", "--task-index", "--ps-hosts", "--worker-hosts", "--chief-hosts"}
    if clash:
        raise ValueError(
            f"task_flags has {', '.join(sorted(clash))}: under --slurm each task reads who it is "
            "from Slurm; leave the task and host flags out."
        )
    parse_jobs(jobs, nodes * tasks_per_node)  # the same check every task makes, made now
    lines = ["#!/bin/bash", f"#SBATCH --job-name={job_name}", f"#SBATCH --nodes={nodes}"]
    lines += [
        f"#SBATCH --ntasks-per-node={tasks_per_node}",
        f"#SBATCH --cpus-per-task={cpus_per_task}",
    ]
    if gpus_per_task:
        lines.append(f"#SBATCH --gres=gpu:{gpus_per_task * tasks_per_node}")
    if overcommit:
        lines.append("#SBATCH --overcommit")
    lines += [f"#SBATCH --time={time_limit}", f"#SBATCH --output={output}", ""]
    command = [python, "-m", "dpkit", "task", "--slurm", f"--port-base={port_base}"]
    command += [f"--slurm-jobs={jobs}"] if jobs else []
    command += [f"--gpus-per-task={gpus_per_task}"] if gpus_per_task else []
    lines.append("srun " + shlex.join(command + list(task_flags)))
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- a job


def _command(argv: list[str], env=None, cwd=None, timeout: float = 30) -> str:
    code, out, err = procs.command(argv, env=env, cwd=cwd, timeout=timeout)
    if code == 127:
        raise RuntimeError(f"{argv[0]} is not installed here: this is not a Slurm login node.")
    if code:
        raise RuntimeError(f"{' '.join(map(str, argv))} failed: {(err or out).strip()}")
    return out.strip()


def available(env=None) -> bool:
    """Whether ``sbatch`` is here and a Slurm controller answers (``scontrol ping``)."""
    try:
        return "UP" in _command(["scontrol", "ping"], env, timeout=10)
    except (RuntimeError, TimeoutError):  # not installed, refused, or hung: not usable here
        return False


def submit(script: os.PathLike | str, env=None, cwd=None) -> int:
    """Queue a batch script with ``sbatch``; returns the job id."""
    return int(_command(["sbatch", "--parsable", str(script)], env, cwd).split(";")[0])


def state(job_id: int, env=None) -> str:
    """The job's state as ``scontrol show job`` says it: PENDING, RUNNING, COMPLETED, ..."""
    text = _command(["scontrol", "show", "job", "-o", str(job_id)], env)
    m = re.search(r"\bJobState=(\S+)", text)
    if not m:
        raise RuntimeError(f"scontrol shows no state for job {job_id}: {text[:200]}")
    return m.group(1)


def wait(job_id: int, env=None, timeout: float = 300, poll: float = 0.5) -> str:
    """Wait until the job has left PENDING, RUNNING and COMPLETING (``sbatch --wait`` does
    this too, but checks less and less often: up to half a minute late); its final state.
    On a timeout the job is cancelled, and :class:`TimeoutError` says so."""
    checks.positive_seconds(timeout, "timeout")
    deadline = time.monotonic() + timeout
    while (now := state(job_id, env)) in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
        if time.monotonic() > deadline:
            cancel(job_id, env)
            raise TimeoutError(f"job {job_id} still {now} after {timeout:g} s; cancelled it.")
        time.sleep(poll)
    return now


def cancel(job_id: int, env=None) -> None:
    """``scancel``: Slurm signals every task of the job, then kills what is left."""
    _command(["scancel", str(job_id)], env)
