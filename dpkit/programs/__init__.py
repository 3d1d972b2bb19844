"""Programs that run inside dpkit's child processes (a tier of their own: pyproject.toml's
``[tool.dpkit.layout]``; dpkit/README.md says which module starts each).

A lesson never imports these: a lesson module starts one as a child with
``procs.Child(procs.program_argv(NAME, ...))``, and the child runs
``python -m dpkit.programs NAME ARGS...``, which watches for its parent's death first and
then runs the program. Each program writes records (JSON lines) to stdout with
``procs.record`` and anything else as log lines.

What crosses the boundary (records, environment variables, exit codes) is
:mod:`dpkit.plumbing.contract`'s. A program returns its exit code, or
``contract.ThroughBarrier(code)`` when its process joined a collective.
"""

#: program name (a ``contract.Program``) -> "module:function"; the function takes the argument
#: list and returns the exit code (or ``contract.ThroughBarrier``).
PROGRAMS = {
    "throughput": "dpkit.programs.throughput:main",
    "server": "dpkit.programs.server:main",
    "mwms": "dpkit.programs.workers:mwms_main",
    "tf1": "dpkit.programs.workers:tf1_main",
    "pinned": "dpkit.programs.pinned:main",
    "task": "dpkit.programs.task:main",
    "allreduce": "dpkit.programs.collective:main",
    "contender": "dpkit.programs.contender:main",
    "preempt": "dpkit.programs.preemption:main",
}
