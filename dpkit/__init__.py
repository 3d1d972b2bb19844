"""dpkit: the helper library behind the data-parallel training workbook.

Import modules, not names: ``from dpkit import devices`` then ``devices.setup(4)``.
Importing dpkit does nothing else: no TensorFlow start-up, no seeding, no plotting style.

The modules come in three tiers, and imports only go down them (``dpkit/README.md``):

Lesson modules, what the notebooks import (one idea each; the lesson that introduces it):

* ``devices`` (00): the same device set-up on a CPU, one GPU or many GPUs.
* ``data``, ``models`` (01): offline datasets and synthetic batches; the sources' models.
* ``towers`` (02): one tower per device, each on its shard of the batch.
* ``gradients`` (03): averaging the towers' gradients, all-reduce.
* ``compat`` (01-02): the same ideas as TF1 graph code.
* ``meter``, ``bench``, ``report``, ``pinned``, ``widgets`` (05): throughput honestly
  measured, sweeps over device counts (one child process each) and their report,
  workers pinned to cores, the notebook views of a sweep.
* ``summaries`` (06), a package: ``writers``, ``traces``, ``logs``, ``board`` (TensorBoard).
* ``cluster``, ``tasks`` (07): local clusters of ps and worker tasks, always torn down;
  ``in_process``: what TensorFlow starts in this process and cannot stop.
* ``launcher`` (08): one task of a real cluster, from flags or ``TF_CONFIG``.
* ``diagrams``, ``params``, ``checking`` (all): pictures, notebook parameter checks, and
  what the exercises' checks share.

Programs, what runs inside a child process (``dpkit.programs``, never imported by a lesson
module): ``throughput``, ``server``, ``workers``, ``pinned``, ``task``.

Plumbing, for contributors: ``_procs`` (the only place that starts processes) and
``_checks`` (the argument checks every module shares).

The command line is ``dpkit`` (``python -m dpkit``): ``devices``, ``bench``, ``task`` and
``doctor``.
"""

__version__ = "0.1.0"
