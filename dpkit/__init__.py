"""dpkit: the helper library behind the data-parallel training workbook.

Import modules, not names: ``from dpkit import devices`` then ``devices.setup(4)``.
Importing dpkit does nothing else: no TensorFlow start-up, no seeding, no plotting style.

A lesson module sits at ``dpkit/<idea>.py``; what a learner never opens is in folders:
``views/`` (what notebooks display), ``programs/`` (what runs in a child process),
``cli/`` (the command line and the doctor) and ``plumbing/`` (processes, the child process
contract, argument checks). Imports only go down those tiers; ``dpkit/README.md`` maps them
and pyproject.toml's ``[tool.dpkit.layout]`` is where they are written.

Its modules (written by tools/layout.py):

* ``devices`` (lesson 00): device setup for CPU, one GPU or many GPUs; the device-count rule.
* ``data`` (lesson 01): offline digits, synthetic batches.
* ``models`` (lesson 01): LeNet-5, MLP, CIFAR-10 CNN with their FLOPs; the one-device step.
* ``towers`` (lesson 02): split batches, tower gradients, tower/mirrored steps, make_parallel.
* ``gradients`` (lesson 03): averaging gradients three ways, ring all-reduce, the bandwidth
  model.
* ``compat`` (lesson 02): the same ideas in TF1 graph code, between-graph workers too.
* ``meter`` (lesson 01): examples/sec with warm-up, windows, median and spread; OtherLoad, how
  busy other programs kept the machine.
* ``bench`` (no lesson imports it): throughput runs and sweeps, one child process per device
  count.
* ``report`` (no lesson imports it): a sweep's report: table, plot, speed-up and efficiency.
* ``pinned`` (lesson 05): worker processes pinned to their own cores (real CPU data
  parallelism).
* ``summaries`` (lesson 06): a package: writers (runs and summaries), traces (graph and
  profiler), logs (event files read back), board (the TensorBoard process).
* ``cluster`` (lesson 07): local ps/worker clusters that are always torn down.
* ``in_process`` (no lesson imports it): the servers and coordinators TensorFlow starts in this
  process and cannot stop.
* ``tasks`` (lesson 08): a process per task of a local cluster, talking in records.
* ``softmax`` (lesson 07): the task every process trains: the digits, the initial weights, the
  MWMS and ps steps.
* ``launcher`` (lesson 08): reading and checking one task of a real cluster, from flags or
  TF_CONFIG.
* ``slurm`` (lesson 08): a Slurm job of the task program: its batch script, the task from
  SlurmClusterResolver.
* ``scaling`` (lesson 09): the cost model of a step: alpha-beta exchange, ring and parameter-
  server traffic, overlap.
* ``cards`` (lesson 05): model and hardware cards.
* ``published`` (lesson 09): published figures and one fit per setup.
* ``published_grid`` (no lesson imports it): what a fit may try: each parameter's values within
  the hardware card.
* ``published_tables`` (lesson 05): the published throughput tables with their settings, and
  each collection's split.
* ``calibrate`` (lesson 09): this machine's all-reduce, measured.
* ``diagrams`` (lesson 00): pictures of devices, towers and clusters.
* ``params`` (lesson 00): a lesson's parameters checked at once, before TensorFlow fails
  obscurely.
* ``checking`` (lesson 00): checking.agree: a result against its reference, in float32 epsilons
  of the magnitudes.
* ``memory`` (lesson 10): what one replica holds: parameters, gradients, optimizer slots,
  activations, counted from variables.
* ``mixed`` (lesson 10): mixed precision under a strategy: the loss-scaled step, gradients all-
  reduced in 16 bits.
* ``accumulation`` (lesson 10): gradient accumulation: k micro-batches summed per replica, one
  all-reduce per step.
* ``sharded`` (lesson 10): sharded optimizer state from scratch (ZeRO stage 1): reduce-scatter,
  shard update, all-gather.
* ``overlap`` (lesson 10): overlap and bucketing: gradients all-reduced in packs
  (bytes_per_pack) as TensorFlow packs them, the fraction of the exchange hidden.
* ``preemption`` (lesson 10): training that survives a stop: BackupAndRestore for fit,
  PreemptionCheckpointHandler across two worker processes.
* ``views.widgets`` (views, lesson 05): the device picker, the live sweep view and the sweep
  panel.
* ``views.scaling_panel`` (views, lesson 09): the prediction panel of lesson 09.
* ``views.figures`` (views, lesson 00): figures.show(fig, alt=...): a figure with alt text, its
  fill colours hatched.
* ``views.board`` (views, lesson 06): TensorBoard in a frame below the cell, through the proxy
  that reaches the browser.
* ``plumbing.procs`` (plumbing): the only place that starts a process: process groups, one
  registry reaped at exit, records, kills.
* ``plumbing.contract`` (plumbing): what crosses the process boundary, written once: record
  kinds, environment variables, exit codes; parent and child both import it.
* ``plumbing.tf_server`` (plumbing): a task's TF server: tf.distribute.Server, started; a taken
  port read as one.
* ``plumbing.quota`` (plumbing): the cores and memory this process may really use: affinity cut
  by a container's CPU quota, the cgroup memory limit.
* ``plumbing.checks`` (plumbing): argument checks every module shares (ranges, even splits);
  each error names the argument, what it got and a good value.
* ``plumbing.notebook`` (plumbing): whether a notebook front end is attached.
* ``cli.main`` (cli): the command line's one router: devices, bench, task, doctor.
* ``cli.doctor`` (cli): python -m dpkit doctor: the build, the GPUs, real checks of this
  machine, in one report.

(end of the list)
"""

from importlib import metadata as _metadata

try:  # the installed distribution's version: what `make release` writes into pyproject.toml
    __version__ = _metadata.version("dpkit")
except _metadata.PackageNotFoundError:  # a source tree on sys.path, never installed
    __version__ = "unknown (not installed)"
