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
================ ===================================== =====================================
"""

#: program name -> "module:function"; the function takes the argument list, returns the exit code.
PROGRAMS = {
    "throughput": "dpkit.programs.throughput:main",
    "server": "dpkit.programs.server:main",
    "mwms": "dpkit.programs.workers:mwms_main",
    "tf1": "dpkit.programs.workers:tf1_main",
    "pinned": "dpkit.programs.pinned:main",
    "task": "dpkit.programs.task:main",
    "allreduce": "dpkit.programs.collective:main",
}

#: Set to True by a program whose process joined a collective (``MultiWorkerMirroredStrategy``):
#: the router then ends it through Python's and TensorFlow's normal exit, which waits at
#: TensorFlow's shutdown barrier until every worker is done. ``os._exit`` (what the router
#: uses otherwise, to skip a slow teardown) could leave while a slower peer is still fetching
#: this worker's share of the last all-reduce, and that peer's step fails ("Socket closed").
leave_through_barrier = False
