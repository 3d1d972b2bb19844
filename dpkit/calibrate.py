"""Calibrating the all-reduce cost model on this machine (lesson 09).

Lesson 04's ring all-reduce takes ``2(n-1)`` steps; in each, every worker sends one chunk,
``1/n`` of the message, to its neighbour. With a fixed cost ``alpha`` per step (latency)
and ``beta`` seconds per byte on a link (one over its bandwidth), all-reducing ``M`` bytes
over ``n`` workers takes::

    t(M) = 2(n-1) * alpha  +  2(n-1)/n * M * beta

:func:`measure` times real all-reduces of several sizes between pinned worker processes
(lesson 05's workers, joined by ``MultiWorkerMirroredStrategy`` over loopback), and one core's
matmul rate; :func:`fit_alpha_beta` finds the ``alpha`` and ``beta`` that fit the times
best. The :class:`Calibration` they make predicts any message's all-reduce time, which is
what a scaling prediction needs next to the compute time.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field

import numpy as np

from dpkit import gradients, pinned
from dpkit.plumbing import checks, contract, procs

#: Message sizes :func:`measure` times by default: 4 KB to 16 MB, each 4 times the last.
DEFAULT_SIZES = tuple(4096 * 4**i for i in range(7))

#: The largest message :func:`measure` accepts (each worker holds a few copies of it).
MAX_BYTES = 1 << 28

#: Square matmul size and seconds of worker 0's matmul timing.
MATMUL_SIZE, MATMUL_SECONDS = 512, 0.5


def format_bytes(nbytes: float) -> str:
    """``4096`` -> ``"4.0 KB"`` (powers of 1024)."""
    if abs(nbytes) < 1024:
        return f"{nbytes:.0f} B"
    for unit in ("KB", "MB"):
        nbytes /= 1024
        if abs(nbytes) < 1024:
            return f"{nbytes:.1f} {unit}"
    return f"{nbytes / 1024:.1f} GB"


def ring_coefficients(workers: int) -> tuple[int, float]:
    """``(2(n-1), 2(n-1)/n)``: what multiplies ``alpha`` and ``M * beta`` in the ring model."""
    return 2 * (workers - 1), 2 * (workers - 1) / workers


def fit_alpha_beta(sizes_bytes, seconds, workers: int) -> tuple[float, float]:
    """Fit the ring model ``t(M) = 2(n-1) alpha + 2(n-1)/n M beta`` to measured times.

    ``sizes_bytes[i]`` took ``seconds[i]`` over ``workers`` workers (a size may repeat, one
    entry per sample). Returns ``(alpha_s, beta_s_per_byte)``: seconds per step, and seconds
    per byte on a link.

    A least-squares fit of *relative* errors (each equation divided by its measured time),
    so that a 4 KB message counts as much as a 16 MB one: in plain least squares the
    largest messages decide everything and ``alpha`` drowns in their noise. Neither may be
    negative (a negative latency or bandwidth means nothing), so when the best fit has one
    below zero it is fixed at 0 and the other fitted alone (non-negative least squares).
    """
    workers = checks.whole(workers, "workers", 2, "e.g. workers=2 (a ring needs two)")
    m = _positive_array(sizes_bytes, "sizes_bytes", "message sizes in bytes, e.g. [4096, 65536]")
    t = _positive_array(seconds, "seconds", "all-reduce times in seconds, e.g. [3e-4, 2e-3]")
    if len(m) != len(t):
        raise ValueError(
            f"got {len(m)} sizes_bytes but {len(t)} seconds; pass one time per size "
            "(repeat a size for each of its samples)."
        )
    if len(np.unique(m)) < 2:
        raise ValueError(
            f"need at least 2 distinct message sizes to separate latency from bandwidth, "
            f"got {sorted(set(m.tolist()))}; measure e.g. 4 KB and 4 MB."
        )
    a, b = ring_coefficients(workers)
    design = np.stack([np.full_like(m, a), b * m], axis=1) / t[:, None]
    target = np.ones_like(t)
    best, best_error = (0.0, 0.0), float(np.sum(target**2))  # alpha = beta = 0
    candidates = [np.linalg.lstsq(design, target, rcond=None)[0]]
    for keep in (0, 1):  # one of them at 0, the other fitted alone
        column = design[:, keep]
        solution = np.zeros(2)
        solution[keep] = column @ target / (column @ column)
        candidates.append(solution)
    for solution in candidates:
        if np.all(solution >= 0):
            error = float(np.sum((design @ solution - target) ** 2))
            if error < best_error:
                best, best_error = (float(solution[0]), float(solution[1])), error
    return best


def _positive_array(values, what: str, example: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a list of numbers, got {values!r}; {example}.") from None
    if array.ndim != 1 or len(array) < 2:
        raise ValueError(f"{what} must be a flat list of 2 or more numbers; {example}.")
    bad = ~(np.isfinite(array) & (array > 0))
    if bad.any():
        raise ValueError(
            f"{what} must all be positive numbers, got {array[bad].tolist()}; {example}."
        )
    return array


@dataclass
class Calibration:
    """What :func:`measure` found on this machine."""

    workers: int  # worker processes that all-reduced (n)
    sizes_bytes: list  # the message sizes, smallest first
    seconds: list  # the median all-reduce time of each size
    raw_seconds: list  # every sample of each size (one list per size)
    alpha_s: float  # the fitted latency, seconds per ring step
    beta_s_per_byte: float  # the fitted seconds per byte on a link
    matmul_flops_per_s: float | None = None  # float32 matmuls of one pinned core, one thread
    cores: list = field(default_factory=list)  # the cores the workers ran on
    pinned: bool = True  # whether each worker was pinned to its core
    machine: dict = field(default_factory=dict)  # what ran it (TensorFlow, usable cores)

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Bytes per second on a link, ``1 / beta`` (``inf`` if ``beta`` fitted to 0)."""
        return 1.0 / self.beta_s_per_byte if self.beta_s_per_byte > 0 else float("inf")

    def predict(self, nbytes):
        """All-reduce seconds of ``nbytes`` (a number or an array) by the fitted model.

        The same formula as lesson 04's ``gradients.all_reduce_seconds("ring", ...)`` with
        ``latency_sec=alpha_s`` and ``link_bytes_per_sec=bandwidth_bytes_per_s``.
        """
        link, alpha = self.bandwidth_bytes_per_s, self.alpha_s
        seconds = gradients.all_reduce_seconds
        values = [
            seconds("ring", self.workers, float(m), link, latency_sec=alpha)
            for m in np.ravel(nbytes)
        ]
        return values[0] if np.ndim(nbytes) == 0 else np.reshape(values, np.shape(nbytes))

    def table(self) -> str:
        """Each size's measured median, the fitted time and their difference."""
        lines = [
            f"{self.workers} workers, cores {self.cores}"
            + ("" if self.pinned else " (NOT pinned)")
            + f": alpha {self.alpha_s * 1e6:.0f} us per step, "
            f"bandwidth {self.bandwidth_bytes_per_s / 1e6:,.0f} MB/s per link",
            f"{'size':>9s} {'measured':>11s} {'fitted':>11s} {'error':>7s}",
        ]
        for size, measured in zip(self.sizes_bytes, self.seconds):
            fitted = self.predict(size)
            lines.append(
                f"{format_bytes(size):>9s} {measured * 1e3:8.3f} ms {fitted * 1e3:8.3f} ms "
                f"{(fitted - measured) / measured:+7.0%}"
            )
        if self.matmul_flops_per_s:
            lines.append(f"matmul, one core: {self.matmul_flops_per_s / 1e9:.1f} GFLOP/s")
        return "\n".join(lines)

    def plot(self, ax=None):
        """Log-log: each size's median (bar: fastest to slowest sample) and the fitted line."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.5))
        sizes, medians = np.asarray(self.sizes_bytes), np.asarray(self.seconds)
        low = medians - np.array([min(s) for s in self.raw_seconds])
        high = np.array([max(s) for s in self.raw_seconds]) - medians
        ax.errorbar(sizes, medians, yerr=[low, high], fmt="o", capsize=3, label="measured")
        line = np.geomspace(sizes.min() / 2, sizes.max() * 2, 100)
        fit = (
            f"fit: alpha {self.alpha_s * 1e6:.0f} us, {self.bandwidth_bytes_per_s / 1e6:,.0f} MB/s"
        )
        ax.plot(line, self.predict(line), label=fit)
        ax.set(xscale="log", yscale="log", xlabel="message size (bytes)")
        ax.set(
            ylabel="seconds per all-reduce", title=f"ring all-reduce over {self.workers} workers"
        )
        ax.legend()
        return ax

    def as_dict(self) -> dict:
        """Every field, as plain JSON types (``json.dumps`` takes it)."""
        return json.loads(json.dumps({k: getattr(self, k) for k in self.__dataclass_fields__}))

    @classmethod
    def from_dict(cls, values: dict) -> Calibration:
        """The calibration :meth:`as_dict` gave (e.g. read back from a JSON file)."""
        required = ("workers", "sizes_bytes", "seconds", "raw_seconds")
        required += ("alpha_s", "beta_s_per_byte")
        missing = [k for k in required if k not in values]
        if missing:
            raise ValueError(
                f"not a saved Calibration: {', '.join(missing)} missing; pass what "
                "Calibration.as_dict() returned."
            )
        return cls(**{k: values[k] for k in cls.__dataclass_fields__ if k in values})


def _check(workers, sizes_bytes, repeats, timeout, echo):
    cores = pinned.cores_for(workers, "e.g. workers=2 (a ring needs two)")
    if isinstance(sizes_bytes, (str, bytes)) or not hasattr(sizes_bytes, "__iter__"):
        raise ValueError(f"sizes_bytes must be a list of byte counts, got {sizes_bytes!r}.")
    sizes = sorted(set(sizes_bytes))
    for size in sizes:
        checks.whole(size, "each of sizes_bytes", 4, "e.g. sizes_bytes=[4096, 65536, 1048576]")
        if size % 4 or size > MAX_BYTES:
            raise ValueError(
                f"sizes_bytes holds {size}; a message is float32 values: use multiples of "
                f"4 bytes up to {MAX_BYTES} ({format_bytes(MAX_BYTES)}), e.g. 4096."
            )
    if len(sizes) < 2:
        raise ValueError(
            f"sizes_bytes needs at least 2 different sizes to separate latency from "
            f"bandwidth, got {sizes}; e.g. [4096, 4194304]."
        )
    checks.whole(repeats, "repeats", 1, "e.g. repeats=5")
    checks.positive_seconds(timeout, "timeout")
    if echo is not None and not callable(echo):
        raise ValueError(f"echo must be a function such as print, or None, got {echo!r}.")
    return sizes, cores


def measure(
    workers: int = 2,
    sizes_bytes=None,
    repeats: int = 5,
    timeout: float = 600.0,
    echo=None,
) -> Calibration:
    """Time all-reduces between pinned worker processes and fit the ring model to them.

    Starts ``workers`` processes, each pinned to a core of its own with one intra-op
    thread (as lesson 05's pinned workers), joined by ``MultiWorkerMirroredStrategy`` over
    127.0.0.1. They all-reduce float32 tensors of each size ``repeats`` times (each sample
    averages several all-reduces run back to back); the slowest worker's time counts.
    Worker 0 then times float32 matmuls on its one core.

    ``workers`` is at most the cores this process may use; ``sizes_bytes`` are multiples of
    4 (default :data:`DEFAULT_SIZES`); ``timeout`` is what any one wait may take (TensorFlow's
    start-up included) before every worker is killed; ``echo`` (e.g. ``print``) gets progress
    lines. A bad argument raises ``ValueError`` before any process starts; a failed worker
    ``dpkit.tasks.TaskFailedError``, with the end of its stderr.
    """
    sizes_bytes = DEFAULT_SIZES if sizes_bytes is None else sizes_bytes
    sizes, cores = _check(workers, sizes_bytes, repeats, timeout, echo)
    say = echo or (lambda line: None)
    pin = pinned.can_pin()
    names = [f"worker {i}" for i in range(workers)]
    hosts = [f"127.0.0.1:{procs.free_port()}" for _ in names]
    arguments = ["--sizes", ",".join(map(str, sizes)), "--repeats", repeats]
    arguments += ["--matmul_size", MATMUL_SIZE, "--matmul_seconds", MATMUL_SECONDS]
    raw = []
    with procs.Group(timeout=timeout, echo=None) as group:  # stops every worker on the way out
        for i, name in enumerate(names):
            spec = {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": i}}
            core = cores[i] if pin else -1
            argv = procs.program_argv(contract.Program.ALLREDUCE, *arguments, "--core", core)
            group.start(name, argv, env={"TF_CONFIG": json.dumps(spec)})
        say(f"started {workers} workers on cores {cores}" + ("" if pin else " (not pinned)"))
        ready = [group.wait_for(name, contract.WorkerReady) for name in names]
        say(f"joined the collective (TensorFlow {ready[0].tensorflow})")
        for size in sizes:
            samples = [group.wait_for(name, contract.AllReduceTimes).seconds for name in names]
            raw.append([max(each) for each in zip(*samples)])  # the slowest worker's sample
            say(f"{format_bytes(size)}: {statistics.median(raw[-1]) * 1e3:.2f} ms")
        flops = group.wait_for(names[0], contract.MatmulPeak).matmul_flops_per_s
        say(f"matmul on one core: {flops / 1e9:.1f} GFLOP/s")
        for name in names:
            group.wait_for(name, contract.Done)
        # every worker has reported after its last collective, so nothing is left in
        # flight: stopping them here saves TensorFlow's slow teardown (seconds)
    medians = [statistics.median(samples) for samples in raw]
    alpha, beta = fit_alpha_beta(sizes, medians, workers)  # medians: a busy moment counts less
    machine = {"tensorflow": ready[0].tensorflow, "usable_cores": len(pinned.usable_cores())}
    return Calibration(workers, sizes, medians, raw, alpha, beta, flops, cores, pin, machine)
