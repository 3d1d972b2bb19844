"""Programs that run inside dpkit's child processes (the second tier of the library).

A lesson never imports these: a lesson module starts one as a child with
``procs.Child(procs.program_argv(NAME, ...))``, and the child runs
``python -m dpkit.programs NAME ARGS...``, which watches for its parent's death first and
then runs the program. Each program writes records (JSON lines) to stdout with
``procs.record`` and anything else as log lines.

================ ===================================== =====================================
program          module                                started by
================ ===================================== =====================================
``throughput``   :mod:`dpkit.programs.throughput`      ``bench.run`` / ``bench.Sweep``
``server``       :mod:`dpkit.programs.server`          ``cluster.LocalCluster`` (one task)
``mwms``         :mod:`dpkit.programs.workers`         ``tasks.Group`` (lesson 07)
``tf1``          :mod:`dpkit.programs.workers`         ``tasks.Group`` (lesson 07)
``pinned``       :mod:`dpkit.programs.pinned`          ``pinned.compare`` (lesson 05)
``task``         :mod:`dpkit.programs.task`            ``tasks.Group``, ``python -m dpkit task``
``allreduce``    :mod:`dpkit.programs.collective`      ``calibrate.measure`` (lesson 09)
``contender``    :mod:`dpkit.programs.contender`       ``benchmarks/towers_vs_mirrored.py``
================ ===================================== =====================================

What crosses the boundary (records, environment variables, exit codes) is
:mod:`dpkit.plumbing.contract`'s. A program returns its exit code, or
``contract.ThroughBarrier(code)`` when its process joined a collective.
"""

#: program name -> "module:function"; the function takes the argument list and returns the
#: exit code (or ``contract.ThroughBarrier``).
PROGRAMS = {
    "throughput": "dpkit.programs.throughput:main",
    "server": "dpkit.programs.server:main",
    "mwms": "dpkit.programs.workers:mwms_main",
    "tf1": "dpkit.programs.workers:tf1_main",
    "pinned": "dpkit.programs.pinned:main",
    "task": "dpkit.programs.task:main",
    "allreduce": "dpkit.programs.collective:main",
    "contender": "dpkit.programs.contender:main",
}
