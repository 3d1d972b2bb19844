"""Real data parallelism on a CPU: one worker process per core, each pinned to its core.

Introduced in lesson 05. Logical CPU devices (lesson 00) share the same cores, so towers on
them never add compute. Separate *processes*, each pinned to a core of its own with
``os.sched_setaffinity`` and running one intra-op thread, are truly separate compute: the
closest a laptop gets to one GPU per worker. They train data-parallel with
``MultiWorkerMirroredStrategy`` over loopback: each takes its slice of every global batch
and the gradients are all-reduced, so the model sees the same updates as one process
training on the whole batch.

:func:`compare` measures three ways to use ``n`` cores on the same model and global batch:

* ``"1 process, 1 thread"``: one process pinned to one core (the baseline);
* ``"1 process, n threads"``: one process with ``n`` intra-op threads, the cores shared
  *inside* each op (intra-op parallelism: TensorFlow splits one matmul or convolution);
* ``"n pinned workers"``: ``n`` processes, one core and one thread each, data-parallel.

Every contender is started first and warmed up; then the measurement goes in rounds: each
round asks every contender in turn for one window of ``window_steps`` steps while the
others wait idle on their stdin. Ratios are taken per round (under the same load on the
machine) and summarised by their median and range. That holds ``workers + 2`` TensorFlow
processes in memory at once; where they would not fit (:func:`schedule`, e.g. a 2 GB Binder
pod) ``compare(at_once=False)`` runs the contenders one after the other instead.

Where the system cannot pin (macOS has no ``sched_setaffinity``) the workers run unpinned.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from dataclasses import dataclass, field

from dpkit import models
from dpkit.plumbing import checks, contract, procs, quota

BASELINE = "1 process, 1 thread"


SYSFS_CPU = "/sys/devices/system/cpu"  # Linux: each logical CPU's topology/ folder


def _cpu_list(text: str) -> list[int]:
    """Linux's CPU list, ``"0-3,8,10-11"``, as numbers."""
    cpus = []
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        cpus += range(int(low), int(high or low) + 1)
    return cpus


def physical_cores(cpus: list[int], sysfs: str | None = None) -> list[list[int]]:
    """``cpus`` grouped by the physical core they run on: each group the hardware threads
    (hyperthreads) of one core that are among ``cpus``, in core order. Threads of one core
    share its arithmetic units, so two busy workers on them do not compute twice as fast.
    Where the topology cannot be read (not Linux, no sysfs), each CPU counts as a core."""
    groups: dict[int, list[int]] = {}
    for cpu in cpus:
        path = os.path.join(sysfs or SYSFS_CPU, f"cpu{cpu}", "topology", "thread_siblings_list")
        try:
            with open(path) as f:
                siblings = _cpu_list(f.read())
        except (OSError, ValueError):
            siblings = [cpu]
        groups.setdefault(min(siblings), []).append(cpu)
    return [sorted(groups[first]) for first in sorted(groups)]


def _allowed_cpus() -> list[int]:
    """The logical CPUs this process may run on (all of ``os.cpu_count()`` where unknown)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def usable_cores(sysfs: str | None = None) -> list[int]:
    """The physical cores this process may keep busy, one CPU number for each (the first of
    its hardware threads this process may run on): of the CPUs it may run on, one per core,
    cut to the whole cores a container's CPU quota allows (a pod limited to 1.5 cores of an
    8-core host gets one core: plumbing.quota). Colab's 2 vCPUs are two threads of one core:
    one usable core."""
    cores = [group[0] for group in physical_cores(_allowed_cpus(), sysfs)]
    return cores[: quota.read().cores]


def _shared_threads(sysfs: str | None = None) -> list[int]:
    """Where fewer than 2 cores are usable: the hardware threads of the first core (Colab's
    2 vCPUs), which 2 workers can be pinned to, sharing that core's arithmetic units."""
    groups = physical_cores(_allowed_cpus(), sysfs)
    return groups[0] if quota.read().cores >= 2 else groups[0][:1]


def describe_cores(sysfs: str | None = None) -> str:
    """What this machine offers pinned workers, in one sentence."""
    cpus = _allowed_cpus()
    groups = physical_cores(cpus, sysfs)
    usable = usable_cores(sysfs)
    threads = max(len(g) for g in groups)
    shape = f"{len(cpus)} logical CPU(s) on {len(groups)} physical core(s)"
    if threads > 1:
        shape += f" ({threads} hardware threads per core share its arithmetic units)"
    workers = f"so at most {len(usable)} pinned worker(s), one per core: {usable}"
    if len(usable) < len(groups):
        workers += " (the container's CPU quota allows no more)"
    shared = _shared_threads(sysfs)
    if len(usable) < 2 and len(shared) >= 2:
        workers += (
            f"; 2 workers can still be pinned to its hardware threads {shared[:2]}, but they "
            "share one core, so expect no speed-up from them"
        )
    return f"{shape}, {workers}."


def cores_for(workers: int, example: str = "e.g. workers=2 (one per core)") -> list[int]:
    """The first ``workers`` (at least 2) usable cores, one for each pinned worker; on a
    machine with a single usable core of several hardware threads, 2 workers get two of its
    threads (:func:`describe_cores` says so)."""
    checks.whole(workers, "workers", 2, example)
    cores = usable_cores()
    if len(cores) < 2 and workers == 2 and len(_shared_threads()) >= 2:
        return _shared_threads()[:2]
    if workers > len(cores):
        raise ValueError(
            f"workers={workers} but this process may use only {len(cores)} core(s) {cores}; "
            f"a pinned worker needs a core of its own: use workers<={len(cores)}."
        )
    return cores[:workers]


def can_pin() -> bool:
    """Whether this operating system lets a process pin itself to a core."""
    return hasattr(os, "sched_setaffinity")


def contender_names(workers: int) -> list[str]:
    """The three contenders' names for ``workers`` cores, baseline first."""
    return [BASELINE, f"1 process, {workers} threads", f"{workers} pinned workers"]


@dataclass(frozen=True)
class Schedule:
    """How :func:`compare` runs its contenders: all at once, or one at a time, and why."""

    at_once: bool
    reason: str  # one line for the lesson to print


def schedule(workers: int, limits: quota.Quota | None = None) -> Schedule:
    """Whether the three contenders for ``workers`` cores fit in memory at once.

    All at once (``workers + 2`` TensorFlow processes beside the kernel) lets each round
    compare the contenders back to back. Where the memory this process may use
    (``limits``, default :func:`plumbing.quota.read`: a container's limit, the machine, or
    ``DPKIT_MEMORY_LIMIT``) is too small for that by ``plumbing.quota.fits`` (a 2 GB Binder
    pod), they run one after the other: at most ``workers`` processes at a time.
    """
    limits = quota.read() if limits is None else limits
    processes = workers + 2
    if limits.memory is None:
        return Schedule(True, f"memory unknown: the {processes} contender processes run at once")
    have = limits.describe_memory()
    need = quota.need(processes) / 2**30
    need = f"{processes} TensorFlow processes and the kernel need about {need:.1f} GiB"
    if quota.fits(processes, limits.memory):
        return Schedule(True, f"{have}: {need}, so the contenders run at once")
    alone = "" if quota.fits(workers, limits.memory) else f" (even {workers} at a time may not fit)"
    return Schedule(False, f"{have}: {need}, so the contenders run one at a time{alone}")


@dataclass
class Comparison:
    """What :func:`compare` measured."""

    model: str
    global_batch: int
    workers: int
    window_steps: int
    seconds: dict = field(default_factory=dict)  # {contender: [seconds of each window]}
    pinned: bool = True  # whether the processes were pinned to cores
    cores: list = field(default_factory=list)  # the cores used
    threads: dict = field(default_factory=dict)  # {contender: intra-op threads per process}
    machine: dict = field(default_factory=dict)  # what ran it (cores, TensorFlow version)
    checksums: dict = field(default_factory=dict)  # {contender: [sum of each one's weights]}
    # {contender: [each process's weights at the end, a list of arrays in the model's order]}
    weights: dict = field(default_factory=dict, repr=False)
    at_once: bool = True  # False: the contenders ran one after the other (schedule())

    def rates(self, name: str) -> list[float]:
        """Examples/sec of each window of contender ``name``."""
        return [self.global_batch * self.window_steps / s for s in self.seconds[name]]

    def median(self, name: str) -> float:
        return statistics.median(self.rates(name))

    def interval(self, name: str) -> tuple[float, float]:
        """The lowest and highest window rate: the range the plot draws."""
        rates = self.rates(name)
        return min(rates), max(rates)

    def speedups(self, name: str, over: str = BASELINE) -> list[float]:
        """``name``'s rate over ``over``'s, one ratio per round (paired)."""
        return [b / a for a, b in zip(self.seconds[name], self.seconds[over])]

    def speedup(self, name: str, over: str = BASELINE) -> float:
        """Median of the paired per-round ratios."""
        return statistics.median(self.speedups(name, over))

    def table(self) -> str:
        """Medians, ranges and paired speed-ups, one line per contender."""
        lines = [
            f"{self.model}, global batch {self.global_batch}, {len(self.seconds[BASELINE])} rounds "
            f"of {self.window_steps} steps; cores {self.cores}"
            + ("" if self.pinned else " (NOT pinned: this OS has no sched_setaffinity)")
            + ("" if self.at_once else "; contenders one at a time, paired by round number"),
            f"{'contender':24s} {'examples/sec':>12s} {'range':>15s} {'speed-up':>9s} "
            f"{'range':>13s}",
        ]
        for name in self.seconds:
            low, high = self.interval(name)
            ups = self.speedups(name)
            lines.append(
                f"{name:24s} {self.median(name):12,.0f} {low:7,.0f}-{high:<7,.0f} "
                f"{self.speedup(name):8.2f}x {min(ups):6.2f}-{max(ups):.2f}x"
            )
        return "\n".join(lines)

    def plot(self, ax=None):
        """Median examples/sec per contender, with a bar for the range of its windows."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(7, 2.8))
        names = list(self.seconds)
        medians = [self.median(n) for n in names]
        lows = [m - self.interval(n)[0] for m, n in zip(medians, names)]
        highs = [self.interval(n)[1] - m for m, n in zip(medians, names)]
        colours = ["#8ecae6", "#219ebc", "#fb8500"][: len(names)]
        ax.barh(names, medians, xerr=[lows, highs], color=colours, capsize=4)
        base = self.median(BASELINE)
        for i, name in enumerate(names):
            ax.text(medians[i] * 0.02, i, f"{self.speedup(name):.2f}x", va="center", fontsize=9)
        ax.axvline(base * self.workers, ls="--", color="grey")
        ax.text(base * self.workers, len(names) - 0.55, f" {self.workers}x baseline", fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("examples / sec (bar: median; whisker: slowest to fastest window)")
        return ax

    def as_dict(self) -> dict:
        """The fields for a results file: all but ``weights`` (arrays; the checksums stay)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "weights"}


def _check(model, global_batch, workers, rounds, window_steps, warmup_steps, timeout):
    checks.one_of(model, models.MODELS, "model")
    cores = cores_for(max(2, len(usable_cores())) if workers is None else workers)
    workers = len(cores)
    checks.whole(global_batch, "global_batch", workers, "e.g. global_batch=256")
    what = f"a global batch of {global_batch}"
    checks.divides(global_batch, workers, what, f"over {workers} workers")
    checks.whole(rounds, "rounds", 1, "e.g. rounds=5")
    checks.whole(window_steps, "window_steps", 1, "e.g. window_steps=2")
    checks.whole(warmup_steps, "warmup_steps", 1, "e.g. warmup_steps=2 (tracing happens there)")
    checks.positive_seconds(timeout, "timeout")
    return workers, cores


def compare(
    *,
    model: str = "lenet5",
    global_batch: int = 256,
    workers: int | None = None,
    rounds: int = 5,
    window_steps: int = 2,
    warmup_steps: int = 2,
    seed: int = 0,
    timeout: float = 600.0,
    at_once: bool | None = None,
    echo=None,
) -> Comparison:
    """Measure one thread, all threads in one process, and pinned worker processes.

    ``global_batch`` is the same for every contender (strong scaling): each pinned worker
    takes ``global_batch / workers``; ``workers`` defaults to every core this process may
    use; ``rounds`` windows are measured per contender, interleaved round by round.
    ``at_once=False`` runs the contenders one after the other instead (each started,
    measured and stopped before the next starts: at most ``workers`` processes at a time,
    for a small memory limit); their windows are then paired by round number, not taken
    back to back. ``None`` (the default) lets :func:`schedule` choose from the memory this
    process may use, and says why to ``echo``.
    ``timeout`` is what any one wait may take (start-up included; generous, so that a busy
    machine only runs slower); ``echo`` (e.g. ``print``) gets progress lines. A bad argument
    raises ``ValueError`` before any process starts.
    """
    workers, cores = _check(
        model, global_batch, workers, rounds, window_steps, warmup_steps, timeout
    )
    pin = can_pin()
    names = contender_names(workers)
    # each contender's processes, cores to pin them to (None: unpinned) and intra-op threads
    plan = dict(zip(names, [(1, cores[:1], 1), (1, None, workers), (workers, cores, 1)]))
    common = ["--model", model, "--global_batch", global_batch, "--seed", seed]
    common += ["--warmup_steps", warmup_steps]
    say = echo or (lambda line: None)
    if at_once is None:
        chosen = schedule(workers)
        at_once = chosen.at_once
        say(chosen.reason)
    result = Comparison(model, int(global_batch), workers, int(window_steps), pinned=pin)
    result.cores, result.threads = cores, {name: plan[name][2] for name in names}
    result.at_once = bool(at_once)
    result.seconds = {name: [] for name in names}
    with procs.Group(timeout=timeout, echo=None) as group:  # tasks.Group's plumbing
        tasks_of = {}
        for batch in [names] if at_once else [[name] for name in names]:
            for name in batch:
                count, pin_to, threads = plan[name]
                hosts = [f"127.0.0.1:{procs.free_port()}" for _ in range(count)]
                tasks_of[name] = [f"{name} #{i}" if count > 1 else name for i in range(count)]
                for i, task in enumerate(tasks_of[name]):
                    spec = {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": i}}
                    env = {"TF_CONFIG": json.dumps(spec)} if count > 1 else {}
                    core = pin_to[i] if (pin and pin_to) else -1
                    argv = procs.program_argv(
                        contract.Program.PINNED, *common, "--core", core, "--threads", threads
                    )
                    group.start(task, argv, env=env)
            started = sum(len(tasks_of[n]) for n in batch)
            say(f"started {started} process{'es' if started > 1 else ''}; warming up")
            _measure(group, result, {name: tasks_of[name] for name in batch}, rounds, say)
    result.machine["usable_cores"] = len(usable_cores())
    return result


def _load_weights(path: str) -> list:
    import numpy as np

    with np.load(path) as arrays:
        return [arrays[f"arr_{i}"] for i in range(len(arrays.files))]


def _measure(group, result: Comparison, tasks_of: dict, rounds: int, say) -> None:
    """Wait until the contenders in ``tasks_of`` are ready, time ``rounds`` windows of each,
    interleaved, then take their checksums and let them end."""
    for name, members in tasks_of.items():
        for task in members:
            ready = group.wait_for(task, contract.WorkerReady)
        result.machine.setdefault("tensorflow", ready.tensorflow)
        say(f"  ready: {name} (pid {', '.join(str(group.pids[t]) for t in members)})")
    for r in range(rounds):
        for name, members in tasks_of.items():
            for task in members:
                group.send(task, contract.Command.RUN.line(result.window_steps))
            windows = [group.wait_for(task, contract.Timed) for task in members]
            # the window ends when the slowest worker is done
            result.seconds[name].append(max(w.seconds for w in windows))
        rates = ", ".join(f"{name} {result.rates(name)[-1]:,.0f}" for name in tasks_of)
        say(f"  round {r + 1}/{rounds}: {rates} examples/sec")
    with tempfile.TemporaryDirectory(prefix="dpkit-pinned-") as folder:
        for name, members in tasks_of.items():
            paths = [os.path.join(folder, f"{i}.npz") for i in range(len(members))]
            for task, path in zip(members, paths):
                group.send(task, contract.Command.CHECKSUM.line(path))
            result.checksums[name] = [
                group.wait_for(t, contract.Checksum).checksum for t in members
            ]
            result.weights[name] = [_load_weights(path) for path in paths]
            for task in members:
                group.send(task, contract.Command.QUIT)
    group.wait()  # every process has ended: the next contenders get their memory
