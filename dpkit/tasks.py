"""Child processes, one per task of a cluster: :class:`Group` (lesson 08; lesson 07 describes it).

Some distributed set-ups need one *process* per task, each with its own ``TF_CONFIG``
(``MultiWorkerMirroredStrategy``) or its own TF1 session (between-graph replication).
:class:`Group` starts those processes from a notebook, each running a dpkit program
(a ``contract.Program``, see :mod:`dpkit.programs`), and keeps them safe: a child exits by itself
when the notebook's kernel dies, and the ``with`` block kills and reaps every child's process
group on exit, on an exception, on a kernel interrupt and on a timeout. Children talk in lines:
a JSON object is a *record* (``{"step": 3, "loss": 0.4}``), collected per task; any other line
is a log line, echoed live as ``[worker:1] ...``. What the processes train, the same in each,
is :mod:`dpkit.softmax`.
"""

from __future__ import annotations

from dpkit.plumbing import contract, procs

#: Raised when a task's process exits with an error (its stderr is in the message).
TaskFailedError = procs.TaskFailedError


class Group(procs.Group):
    """Child processes, one per task, each running a dpkit program, as a context manager.

    Introduced in lesson 07::

        with tasks.Group(timeout=60) as group:
            for i in range(2):
                group.start(f"worker:{i}", "mwms", "--steps", "20",
                            env={"TF_CONFIG": c.tf_config("worker", i, as_json=True)})
            group.wait()
        group.records["worker:0"]  # [{"step": 0, "loss": ...}, ...]
        group.arguments["worker:0"]  # ["--steps", "20"]: what start was given

    The rest (``send``, ``wait_for``, ``wait``, ``kill``, ``close``, ``pids``) is the
    plumbing's ``procs.Group``, which ``dpkit.pinned`` of lesson 05 uses too: ``timeout`` is
    what any one ``wait`` or ``wait_for`` may take before every child is killed and
    ``TimeoutError`` is raised; ``echo`` gets each log line (``print``; ``None``: silence).
    """

    def start(
        self, name: str, program: str, *args, env: dict | None = None, wrap: list | None = None
    ) -> int:
        """Start ``program`` (a ``contract.Program``) as task ``name``; return its PID.

        ``wrap`` goes before the command line, for a command that runs it somewhere else and
        then becomes it, e.g. ``["ip", "netns", "exec", "host1"]``.
        """
        argv = [*(wrap or []), *procs.program_argv(program, *args)]
        env = {contract.RECORDS: "1", **(env or {})}  # the task program: records too
        return super().start(name, argv, env=env, arguments=list(args))
