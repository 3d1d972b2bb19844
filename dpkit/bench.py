"""Throughput runs and scaling sweeps, each configuration in a fresh child process.

Introduced in lesson 05. TensorFlow fixes its device list once per process, so a run on
``n`` devices needs a process of its own. :func:`run` starts one child for one
:class:`Config`; the child sets up the devices, builds the model, trains, and prints one
JSON line per measurement window (from :class:`dpkit.meter.ThroughputMeter`) and a final
summary. :class:`Sweep` runs several device counts in turn and yields :class:`Event` s as
they arrive, so the command line (``python -m dpkit bench``), the notebook widget
(:mod:`dpkit.widgets`) and the benchmarks all share this one runner.

Safety: every input is checked before a child starts; a child that crashes, or outlives
its timeout, is killed and reported as failed with the tail of its stderr; a child runs in
its own process group and is killed with it on Ctrl-C, on :meth:`Sweep.stop`, at
interpreter exit, and (through a watchdog thread in the child) when the parent dies.

Scaling, from the results of a sweep (:class:`Report`):

* speed-up ``S(n) = rate(n) / rate(n0)`` against the smallest device count ``n0``;
* efficiency ``E(n) = S(n) / (n / n0)``: 1.0 is perfect scaling;
* strong scaling keeps the global batch fixed (each device gets less work as ``n``
  grows); weak scaling keeps the per-device batch fixed (the global batch grows);
* model FLOPs utilisation ``MFU = rate x FLOPs per training example / peak FLOP/s``, the
  peak measured once with a large matmul on the same hardware.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import math
import numbers
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from dpkit import _checks, _procs

STRATEGIES = ("single", "towers", "mirrored")
MODELS = ("lenet5", "cifar10_cnn", "mnist_mlp")
DATASETS = ("synthetic", "digits", "mnist", "fashion_mnist", "cifar10")

#: Example shape each model trains on with synthetic data.
INPUT_SHAPES = {"lenet5": (28, 28, 1), "mnist_mlp": (28, 28, 1), "cifar10_cnn": (24, 24, 3)}

#: Results file format version (``save`` / ``load``).
FORMAT_VERSION = 1


@dataclass(frozen=True)
class Config:
    """One throughput run.

    Attributes:
        model: one of ``MODELS``.
        devices: how many devices the child sets up (``dpkit.devices.setup``).
        strategy: ``"single"`` (one device, the plain step), ``"towers"``
            (:func:`dpkit.towers.make_tower_train_step`) or ``"mirrored"``
            (``tf.distribute.MirroredStrategy``, custom loop).
        batch: examples per step: global, or per device when ``per_device`` is true.
        per_device: whether ``batch`` is per device (weak scaling) or global (strong).
        dataset: ``"synthetic"`` (one batch from memory: the input pipeline never limits
            speed) or a dataset name for :func:`dpkit.data.load`.
        warmup_steps: steps dropped before measuring (tracing, allocation).
        window_steps: steps per measurement window.
        windows: measurement windows to run.
        timeout: seconds the child may take in all (start-up included) before it is killed.
        seed: seeds weights and data.
        measure_peak: also measure the hardware's matmul peak (for MFU).
    """

    model: str = "lenet5"
    devices: int = 1
    strategy: str = "towers"
    batch: int = 256
    per_device: bool = False
    dataset: str = "synthetic"
    warmup_steps: int = 3
    window_steps: int = 5
    windows: int = 4
    timeout: float = 180.0
    seed: int = 0
    measure_peak: bool = False

    def __post_init__(self):
        self.validate()

    @property
    def global_batch(self) -> int:
        return self.batch * self.devices if self.per_device else self.batch

    @property
    def per_device_batch(self) -> float:
        return self.batch if self.per_device else self.batch / self.devices

    @property
    def steps(self) -> int:
        return self.warmup_steps + self.window_steps * self.windows

    @property
    def label(self) -> str:
        unit = "per device" if self.per_device else "global"
        n = f"{self.devices} device" + ("s" if self.devices != 1 else "")
        return f"{self.model}, {self.strategy}, {n}, batch {self.batch} {unit}"

    def validate(self) -> None:
        """Raise ``ValueError`` naming the problem and the fix; no TensorFlow involved."""
        from dpkit import devices as _devices

        if self.model not in MODELS:
            raise ValueError(f"unknown model {self.model!r}; choose one of {', '.join(MODELS)}.")
        if self.strategy not in STRATEGIES:
            raise ValueError(
                f"unknown strategy {self.strategy!r}; choose one of {', '.join(STRATEGIES)}."
            )
        if self.dataset not in DATASETS:
            raise ValueError(
                f"unknown dataset {self.dataset!r}; choose one of {', '.join(DATASETS)}."
            )
        if (
            isinstance(self.devices, bool)
            or not isinstance(self.devices, numbers.Integral)
            or not 1 <= self.devices <= _devices.MAX_DEVICES
        ):
            raise ValueError(
                f"devices must be a whole number from 1 to {_devices.MAX_DEVICES}, got "
                f"{self.devices!r}; e.g. devices=2 (or --devices 1 2 4 on the command line)."
            )
        _checks.whole(self.batch, "batch", 1, "e.g. batch=256")
        for name in ("warmup_steps", "window_steps", "windows"):
            _checks.whole(
                getattr(self, name), name, 0 if name == "warmup_steps" else 1, f"e.g. {name}=5"
            )
        if self.strategy == "single" and self.devices != 1:
            raise ValueError(
                f"strategy 'single' trains on one device, but devices={self.devices}; use "
                "strategy='towers' or 'mirrored' for several devices (single is the baseline)."
            )
        if not self.per_device and self.batch % self.devices:
            low = self.batch - self.batch % self.devices
            options = f"{low} or {low + self.devices}" if low else f"{self.devices}"
            raise ValueError(
                f"a global batch of {self.batch} does not split evenly over {self.devices} "
                f"devices; use {options} (a multiple of {self.devices}), or weak scaling "
                "(a per-device batch) instead."
            )
        if (
            isinstance(self.timeout, bool)
            or not isinstance(self.timeout, numbers.Real)
            or not self.timeout > 0
        ):
            raise ValueError(f"timeout must be a positive number of seconds, got {self.timeout!r}.")

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> Config:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise ValueError(f"unknown Config field(s) {sorted(unknown)}; known: {sorted(known)}.")
        return cls(**values)


@dataclass
class Result:
    """What one run measured (or why it failed).

    Attributes:
        config: the run's configuration.
        status: ``"ok"``, ``"failed"`` (crashed), ``"timeout"`` (killed at the timeout)
            or ``"stopped"`` (killed on request).
        num_devices: devices the child reports it trained on.
        device_names: their TensorFlow names.
        device_case: which ``dpkit.devices.CASES`` applied in the child.
        physical_devices: physical devices underneath (1 for logical devices).
        window_rates: examples/sec of each measurement window.
        examples_per_sec: median over windows.
        mean_examples_per_sec: mean over windows.
        spread: ``(max - min) / median`` of the windows.
        sec_per_step: median seconds per step.
        flops_per_example: estimated training FLOPs per example (forward + backward).
        peak_flops_per_sec: matmul peak of one physical device, if measured.
        error: the tail of the child's stderr when it did not finish.
        seconds: wall time of the whole child, start-up included.
        pid: the child's process id.
    """

    config: Config
    status: str = "ok"
    num_devices: int | None = None
    device_names: list = field(default_factory=list)
    device_case: str = ""
    physical_devices: int = 1
    window_rates: list = field(default_factory=list)
    examples_per_sec: float | None = None
    mean_examples_per_sec: float | None = None
    spread: float | None = None
    sec_per_step: float | None = None
    flops_per_example: int | None = None
    peak_flops_per_sec: float | None = None
    error: str = ""
    seconds: float = 0.0
    pid: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def model_flops_per_sec(self) -> float | None:
        if self.examples_per_sec is None or self.flops_per_example is None:
            return None
        return self.examples_per_sec * self.flops_per_example

    def as_dict(self) -> dict:
        values = dataclasses.asdict(self)
        values["config"] = self.config.as_dict()
        return values

    @classmethod
    def from_dict(cls, values: dict) -> Result:
        values = dict(values)
        values["config"] = Config.from_dict(values["config"])
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


@dataclass(frozen=True)
class Event:
    """Something that happened during a run, as it happened.

    Attributes:
        kind: ``"start"`` (a child was started), ``"ready"`` (it set up its devices and
            built the model), ``"peak"`` (matmul peak measured), ``"window"`` (a
            measurement window finished) or ``"result"`` (the run ended, well or not).
        index: position of the run in its sweep (0 for a single run).
        total: number of runs in the sweep.
        config: the run's configuration.
        data: the child's message (``"ready"``, ``"peak"``, ``"window"``), else ``{}``.
        result: the :class:`Result` (``"result"`` only).
    """

    kind: str
    index: int
    total: int
    config: Config
    data: dict = field(default_factory=dict)
    result: Result | None = None


# ----------------------------------------------------------------------------- processes

_live: dict[int, subprocess.Popen] = {}
_live_lock = threading.Lock()


def _kill(proc: subprocess.Popen) -> None:
    """Kill the child's whole process group, reap it, and forget it."""
    _procs.kill_group(proc)
    with _live_lock:
        _live.pop(proc.pid, None)


@atexit.register
def _kill_all() -> None:
    with _live_lock:
        procs = list(_live.values())
    for proc in procs:
        _kill(proc)


def live_children() -> list[int]:
    """PIDs of bench children still running (for tests and the curious)."""
    with _live_lock:
        return [pid for pid, proc in _live.items() if proc.poll() is None]


class _Child:
    """One running child: its process, a thread reading its stdout lines, its stderr file."""

    def __init__(self, config: Config, argv: list[str] | None = None):
        self.lines: queue.Queue = queue.Queue()
        argv = argv or [
            sys.executable,
            "-m",
            "dpkit.bench",
            "--child",
            json.dumps(config.as_dict()),
        ]
        self.proc, self.stderr = _procs.spawn(argv, text=True)
        with _live_lock:
            _live[self.proc.pid] = self.proc
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)  # end of output

    def close(self) -> str:
        """Kill if still running, reap, and return the stderr tail."""
        _kill(self.proc)
        self.reader.join(timeout=5)
        self.proc.stdout.close()
        tail = _procs.tail(self.stderr)
        self.stderr.close()
        return tail


def _events(config, index, total, stop: threading.Event, on_child=None, argv=None):
    """Run one config in a child; yield its events, the last one a ``"result"``."""
    started = time.perf_counter()
    deadline = started + config.timeout
    result = Result(config=config)
    child = _Child(config, argv)
    result.pid = child.proc.pid
    if on_child is not None:
        on_child(child)
    status = None
    try:
        yield Event("start", index, total, config, {"pid": child.proc.pid})
        while status is None:
            if stop.is_set():
                status = "stopped"
                break
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                status = "timeout"
                break
            try:
                line = child.lines.get(timeout=min(remaining, 0.2))
            except queue.Empty:
                continue
            if line is None:  # the child closed stdout: it has finished, died or was stopped
                code = child.proc.wait()
                if stop.is_set():
                    status = "stopped"
                else:
                    done = code == 0 and result.examples_per_sec is not None
                    status = "ok" if done else "failed"
                break
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # anything else a library printed
            if not isinstance(msg, dict) or "event" not in msg:
                continue
            kind = msg.pop("event")
            if kind == "ready":
                result.num_devices = msg["num_devices"]
                result.device_names = msg["device_names"]
                result.device_case = msg["device_case"]
                result.physical_devices = msg["physical_devices"]
                result.flops_per_example = msg["flops_per_example"]
            elif kind == "peak":
                result.peak_flops_per_sec = msg["flops_per_sec"]
            elif kind == "window":
                result.window_rates.append(msg["examples_per_sec"])
            elif kind == "summary":
                for key in ("examples_per_sec", "mean_examples_per_sec", "spread", "sec_per_step"):
                    setattr(result, key, msg[key])
                continue
            yield Event(kind, index, total, config, msg)
    finally:
        tail = child.close()  # also on GeneratorExit and KeyboardInterrupt
        result.seconds = time.perf_counter() - started
    result.status = status
    if status == "timeout":
        result.error = f"killed after its timeout of {config.timeout:g} s.\n{tail}".strip()
    elif status == "stopped":
        result.error = "stopped on request."
    elif status == "failed":
        result.error = tail or f"the child exited with code {child.proc.returncode}."
    yield Event("result", index, total, config, {}, result)


def run(config: Config, *, on_event=None) -> Result:
    """Run one configuration in a child process and return what it measured.

    Args:
        config: a :class:`Config` (already checked when it was made).
        on_event: called with each :class:`Event` as it arrives.

    Returns:
        A :class:`Result`; check ``result.ok``.
    """
    for event in _events(config, 0, 1, threading.Event()):
        if on_event is not None:
            on_event(event)
        if event.kind == "result":
            return event.result
    raise AssertionError("unreachable: a run always ends with a result")


def describe_event(event: Event) -> str:
    """One line of live progress for an :class:`Event` (the command line prints these)."""
    n, head = event.config.devices, f"[{event.index + 1}/{event.total}]"
    if event.kind == "start":
        return f"{head} {n} device(s): starting (pid {event.data['pid']})"
    if event.kind == "ready":
        return f"{head} {n} device(s): {event.data['device_case'].replace('_', ' ')} ready"
    if event.kind == "peak":
        return f"{head} matmul peak {event.data['flops_per_sec'] / 1e9:,.1f} GFLOP/s"
    if event.kind == "window":
        d = event.data
        return (
            f"{head} {n} device(s): window {d['index'] + 1}/{event.config.windows}"
            f"  {d['examples_per_sec']:10,.0f} examples/sec  (step {d['step']}/{d['of_steps']})"
        )
    r = event.result
    if r.ok:
        return (
            f"{head} {n} device(s): done, median {r.examples_per_sec:,.0f} examples/sec "
            f"over {len(r.window_rates)} windows, {r.seconds:.1f} s"
        )
    return f"{head} {n} device(s): {r.status.upper()}: {r.error.splitlines()[0] if r.error else ''}"


# ----------------------------------------------------------------------------- sweeps


def _device_counts(counts) -> list[int]:
    from dpkit import devices as _devices

    if isinstance(counts, numbers.Integral):
        counts = [counts]
    counts = list(counts)
    if not counts:
        raise ValueError("device_counts is empty; pass e.g. [1, 2, 4].")
    for n in counts:
        if (
            isinstance(n, bool)
            or not isinstance(n, numbers.Integral)
            or not 1 <= n <= _devices.MAX_DEVICES
        ):
            raise ValueError(
                f"device counts must be whole numbers from 1 to {_devices.MAX_DEVICES}, got "
                f"{n!r} in {counts}; e.g. [1, 2, 4]."
            )
    checked = [int(n) for n in counts]
    if len(set(checked)) != len(checked):
        raise ValueError(
            f"device_counts {checked} repeats a count; list each once, e.g. [1, 2, 4]."
        )
    return sorted(checked)


def powers_of_two(up_to: int) -> list[int]:
    """``[1, 2, 4, ...]`` up to and including ``up_to`` (which is added if not a power)."""
    up_to = _checks.whole(up_to, "up_to", 1, "e.g. powers_of_two(4)")
    counts = [2**k for k in range(int(math.log2(up_to)) + 1)]
    return counts if counts[-1] == up_to else [*counts, up_to]


class Sweep:
    """Run the same configuration on several device counts, one child process each.

    Example::

        sweep = bench.Sweep([1, 2, 4], model="lenet5", batch=256)   # strong scaling
        for event in sweep.events():
            if event.kind == "result":
                print(event.result.num_devices, event.result.examples_per_sec)
        print(sweep.report.table())

    Args:
        device_counts: e.g. ``[1, 2, 4]``.
        scaling: ``"strong"`` (``batch`` is the global batch, the same for every count)
            or ``"weak"`` (``batch`` is per device, the global batch grows with ``n``).
        measure_peak: measure the matmul peak in the first run, for MFU.
        **config: the other :class:`Config` fields (``model``, ``strategy``, ``batch``, ...).

    Raises:
        ValueError: a bad count, scaling, or configuration, before any child starts.
    """

    def __init__(
        self, device_counts: Iterable[int], *, scaling: str = "strong", measure_peak=True, **config
    ):
        if scaling not in ("strong", "weak"):
            raise ValueError(f"scaling must be 'strong' or 'weak', got {scaling!r}.")
        for name in ("devices", "per_device", "measure_peak"):
            if name in config:
                raise ValueError(f"{name} is set by the sweep; leave it out of the config.")
        counts = _device_counts(device_counts)
        self.configs = [
            Config(
                devices=n,
                per_device=scaling == "weak",
                measure_peak=bool(measure_peak) and i == 0,
                **config,
            )
            for i, n in enumerate(counts)
        ]
        self.report = Report(scaling=scaling)
        self._stop = threading.Event()
        self._child = None
        self._argv = None  # tests swap the child's command line

    def events(self) -> Iterator[Event]:
        """Run the configurations in turn; yield every :class:`Event` as it arrives."""
        total = len(self.configs)
        for index, config in enumerate(self.configs):
            if self._stop.is_set():
                break
            run = _events(config, index, total, self._stop, self._set_child, self._argv)
            with contextlib.closing(run):  # leaving early kills the child now, not at GC
                for event in run:
                    if event.kind == "result":
                        self.report.results.append(event.result)
                        if event.result.peak_flops_per_sec:
                            self.report.peak_flops_per_sec = event.result.peak_flops_per_sec
                    yield event

    def _set_child(self, child):
        self._child = child

    def run(self, on_event=None) -> Report:
        """Run to the end (or :meth:`stop`), calling ``on_event`` for each event."""
        for event in self.events():
            if on_event is not None:
                on_event(event)
        return self.report

    def stop(self) -> None:
        """Kill the running child and start no more (safe from another thread)."""
        self._stop.set()
        child = self._child
        if child is not None:
            _kill(child.proc)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()


def sweep(device_counts: Iterable[int], **kwargs) -> Iterator[Event]:
    """Shorthand for ``Sweep(device_counts, **kwargs).events()``; the last events are results."""
    return Sweep(device_counts, **kwargs).events()


@dataclass
class Report:
    """The results of a sweep, with speed-up, efficiency and MFU.

    Attributes:
        results: one :class:`Result` per device count, in the order they ran.
        scaling: ``"strong"`` or ``"weak"``.
        peak_flops_per_sec: matmul peak of one physical device, if measured.
    """

    results: list = field(default_factory=list)
    scaling: str = "strong"
    peak_flops_per_sec: float | None = None

    def rows(self) -> list[dict]:
        """One dict per result: devices, examples/sec, speed-up, efficiency, MFU, status."""
        ok = [r for r in self.results if r.ok]
        base = min(ok, key=lambda r: r.config.devices) if ok else None
        rows = []
        for r in self.results:
            row = {
                "devices": r.config.devices,
                "reported_devices": r.num_devices,
                "global_batch": r.config.global_batch,
                "status": r.status,
                "examples_per_sec": r.examples_per_sec,
                "spread": r.spread,
                "sec_per_step": r.sec_per_step,
                "speedup": None,
                "efficiency": None,
                "mfu": None,
            }
            if r.ok and base is not None:
                row["speedup"] = r.examples_per_sec / base.examples_per_sec
                row["efficiency"] = row["speedup"] / (r.config.devices / base.config.devices)
            if r.ok and self.peak_flops_per_sec and r.model_flops_per_sec:
                row["mfu"] = r.model_flops_per_sec / (
                    self.peak_flops_per_sec * max(1, r.physical_devices)
                )
            rows.append(row)
        return rows

    def table(self) -> str:
        """A plain-text table (what the command line and the text fallback print)."""
        head = (
            "devices",
            "global batch",
            "examples/sec",
            "spread",
            "speed-up",
            "efficiency",
            "MFU",
        )
        lines = ["  ".join(f"{h:>12s}" for h in head)]
        for row in self.rows():
            if row["status"] != "ok":
                cells = [f"{row['devices']:>12d}", f"{row['global_batch']:>12d}", row["status"]]
                lines.append("  ".join(cells))
                continue
            mfu = f"{row['mfu']:.1%}" if row["mfu"] is not None else "n/a"
            cells = (
                f"{row['devices']:d}",
                f"{row['global_batch']:d}",
                f"{row['examples_per_sec']:,.0f}",
                f"{row['spread']:.0%}",
                f"{row['speedup']:.2f}x",
                f"{row['efficiency']:.0%}",
                mfu,
            )
            lines.append("  ".join(f"{c:>12s}" for c in cells))
        if self.peak_flops_per_sec:
            lines.append(
                f"matmul peak of one physical device: {self.peak_flops_per_sec / 1e9:.1f} GFLOP/s"
            )
        return "\n".join(lines)

    def plot(self, fig=None, *, live: dict | None = None):
        """Draw throughput per device count, and speed-up against the ideal line.

        Args:
            fig: a matplotlib ``Figure`` to draw on (cleared first); a new one if ``None``.
                Uses ``matplotlib.figure.Figure``, not pyplot, so it is safe in a thread.
            live: ``{devices: [window rates]}`` of runs still going, drawn as dots.

        Returns:
            The figure.
        """
        from matplotlib.figure import Figure

        fig = fig or Figure(figsize=(9, 3.4))
        fig.clear()
        ax_rate, ax_speed = fig.subplots(1, 2)
        rows = [r for r in self.rows() if r["status"] == "ok"]
        counts = sorted({c.config.devices for c in self.results} | set(live or {}))
        positions = {n: i for i, n in enumerate(counts)}
        for row in rows:
            ax_rate.bar(
                positions[row["devices"]], row["examples_per_sec"], color="#219ebc", width=0.6
            )
        for r in self.results:
            for rate in r.window_rates:
                ax_rate.plot(positions[r.config.devices], rate, ".", color="#023047", ms=4)
        for n, rates in (live or {}).items():
            for rate in rates:
                ax_rate.plot(positions[n], rate, "o", color="#fb8500", ms=5)
        ax_rate.set_xticks(range(len(counts)), [str(n) for n in counts])
        ax_rate.set_xlabel("devices")
        ax_rate.set_ylabel("examples / sec")
        ax_rate.set_title("throughput (bars: median; dots: windows)", fontsize=10)
        if rows:
            xs = [r["devices"] for r in rows]
            n0 = min(xs)
            top = max(counts) if counts else n0
            ax_speed.plot([n0, top], [1, top / n0], "--", color="grey", label="ideal")
            ax_speed.plot(xs, [r["speedup"] for r in rows], "o-", color="#219ebc", label="measured")
            for r in rows:
                ax_speed.annotate(
                    f"{r['efficiency']:.0%}",
                    (r["devices"], r["speedup"]),
                    textcoords="offset points",
                    xytext=(0, 7),
                    ha="center",
                    fontsize=8,
                )
            ax_speed.legend(fontsize=8, loc="upper left")
            ax_speed.set_xticks(counts)
            ax_speed.set_ylim(0, max(top / n0, *(r["speedup"] for r in rows)) * 1.15)
        ax_speed.set_xlabel("devices")
        ax_speed.set_ylabel(f"speed-up vs {min(counts) if counts else 1} device(s)")
        ax_speed.set_title(f"{self.scaling} scaling (labels: efficiency)", fontsize=10)
        fig.tight_layout()
        return fig

    def as_dict(self) -> dict:
        return {
            "format": FORMAT_VERSION,
            "scaling": self.scaling,
            "peak_flops_per_sec": self.peak_flops_per_sec,
            "results": [r.as_dict() for r in self.results],
        }

    def save(self, path: str) -> None:
        """Write the results as JSON, atomically (a crash never leaves half a file)."""
        path = os.fspath(path)
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".bench-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.as_dict(), f, indent=1)
                f.write("\n")
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path: str) -> Report:
        """Read results written by :meth:`save`."""
        with open(path) as f:
            values = json.load(f)
        if not isinstance(values, dict) or values.get("format") != FORMAT_VERSION:
            raise ValueError(
                f"{path} is not a dpkit bench results file (format {FORMAT_VERSION}); write one "
                "with Report.save or `python -m dpkit bench --out FILE`."
            )
        return cls(
            results=[Result.from_dict(r) for r in values["results"]],
            scaling=values["scaling"],
            peak_flops_per_sec=values["peak_flops_per_sec"],
        )


def load(path: str) -> Report:
    """Shorthand for :meth:`Report.load`."""
    return Report.load(path)


# ----------------------------------------------------------------------------- the child


def _emit(event: str, **values) -> None:
    print(json.dumps({"event": event, **values}), flush=True)


def matmul_peak(device: str, size: int | None = None, seconds: float = 1.0) -> float:
    """FLOP/s of repeated square float32 matmuls on ``device`` (best of a few rounds).

    A large matmul is about the fastest work a device does, so it stands for the peak
    that model FLOPs utilisation is measured against.
    """
    import tensorflow as tf

    size = size or (4096 if "GPU" in device.upper() else 1024)
    with tf.device(device):
        a = tf.random.stateless_uniform((size, size), seed=(1, 2))
        b = tf.random.stateless_uniform((size, size), seed=(3, 4))

        @tf.function
        def chain(a, b):
            c = a
            for _ in range(8):
                c = tf.matmul(c, b) * (1.0 / size)
            return tf.reduce_sum(c)

        float(chain(a, b))  # trace and warm up
        best, start_all = 0.0, time.perf_counter()
        while True:
            start = time.perf_counter()
            float(chain(a, b))
            best = max(best, 8 * 2 * size**3 / (time.perf_counter() - start))
            if time.perf_counter() - start_all > seconds:
                return best


def make_step(
    strategy: str,
    build,
    devices,
    dataset,
    *,
    global_batch: int,
    lr: float = 0.01,
    steps_per_call: int = 1,
):
    """Build a model and one SGD training step for ``strategy`` on ``devices``.

    Args:
        strategy: ``"single"`` (the whole batch on ``devices[0]``), ``"towers"``
            (:func:`dpkit.towers.make_tower_train_step`, variables on the CPU) or
            ``"mirrored"`` (``MirroredStrategy`` and ``strategy.run`` in a ``tf.function``).
        build: makes the Keras model (called under the right device or strategy scope).
        devices: device names from ``dpkit.devices.setup``.
        dataset: an endless ``tf.data.Dataset`` of global batches ``(x, y)``.
        global_batch: examples per step (the mirrored loss divides by it).
        lr: the SGD learning rate.
        steps_per_call: training steps per call of ``step()``. Above 1 the steps run in a
            ``tf.range`` loop inside one ``tf.function`` that reads its batches from the
            iterator itself (the idea behind Keras' ``steps_per_execution``), so Python
            dispatches one call per ``steps_per_call`` steps.

    Returns:
        ``(step, model)``: ``step()`` trains on the next ``steps_per_call`` batches and
        returns the last step's loss.
    """
    import keras
    import tensorflow as tf

    from dpkit import towers

    _checks.whole(steps_per_call, "steps_per_call", 1, "e.g. steps_per_call=10")
    devs = list(devices)

    def calling(one_step, batches):
        """`one_step(batch)` once per Python call, or `steps_per_call` times in a tf.function."""
        if steps_per_call == 1:
            return lambda: one_step(next(batches))

        @tf.function
        def several(iterator):
            for _ in tf.range(steps_per_call - 1):
                one_step(next(iterator))
            return one_step(next(iterator))

        return lambda: several(batches)

    if strategy == "towers":
        with towers.variables_on(devs, "cpu"):
            model = build()
        tower_step = towers.make_tower_train_step(model, keras.optimizers.SGD(lr), devs)
        return calling(lambda batch: tower_step(*batch), iter(dataset)), model

    if strategy == "single":
        with tf.device(devs[0]):
            model = build()
        optimizer = keras.optimizers.SGD(lr)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        @tf.function
        def plain_step(x, y):
            with tf.device(devs[0]):
                with tf.GradientTape() as tape:
                    loss = loss_fn(y, model(x, training=True))
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        return calling(lambda batch: plain_step(*batch), iter(dataset)), model

    if strategy != "mirrored":
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}.")
    mirrored = tf.distribute.MirroredStrategy(devs)
    with mirrored.scope():
        model = build()
        optimizer = keras.optimizers.SGD(lr)
    per_example = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    batches = iter(mirrored.experimental_distribute_dataset(dataset))

    @tf.function
    def mirrored_step(batch_xy):
        def replica(xr, yr):
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(
                    per_example(yr, model(xr, training=True)), global_batch_size=global_batch
                )
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        return mirrored.reduce("SUM", mirrored.run(replica, args=batch_xy), axis=None)

    return calling(mirrored_step, batches), model


def _child_main(config: Config) -> int:
    _procs.watch_parent()
    import keras

    from dpkit import data, devices, meter, models

    setup = devices.setup(config.devices)
    devs = list(setup.devices)
    keras.utils.set_random_seed(config.seed)
    batch = config.global_batch
    if config.dataset == "synthetic":
        shape = INPUT_SHAPES[config.model]
        dataset = data.synthetic(shape, 10, batch_size=batch, seed=config.seed)
    else:
        arrays = data.load(config.dataset, seed=config.seed, download=False)
        shape = tuple(arrays.x_train.shape[1:])
        dataset = data.make_dataset(
            arrays.x_train, arrays.y_train, batch, seed=config.seed, repeat=True
        )

    step, model = make_step(
        config.strategy,
        lambda: models.build(config.model, input_shape=shape),
        devs,
        dataset,
        global_batch=batch,
    )

    _emit(
        "ready",
        num_devices=setup.num_devices,
        device_names=devs,
        device_case=setup.case,
        physical_devices=len(setup.physical),
        flops_per_example=models.flops_per_example(model, training=True),
    )
    if config.measure_peak:
        _emit("peak", flops_per_sec=matmul_peak(devs[0]))
    m = meter.ThroughputMeter(
        batch, warmup_steps=config.warmup_steps, window_steps=config.window_steps
    )
    m.start()
    for _ in range(config.steps):
        loss = float(step())  # reading the loss waits for the step to finish
        if not math.isfinite(loss):
            print(
                f"the loss became {loss}; throughput of a diverged run means nothing.",
                file=sys.stderr,
            )
            return 4
        window = m.tick()
        if window is not None:
            _emit(
                "window",
                index=window.index,
                step=m.steps,
                of_steps=config.steps,
                examples_per_sec=window.examples_per_sec,
                sec_per_step=window.sec_per_step,
                loss=loss,
            )
    _emit("summary", **m.summary().as_dict())
    return 0


def _main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="dpkit bench child (started by dpkit.bench.run)")
    parser.add_argument("--child", required=True, help="the Config as JSON")
    args = parser.parse_args(argv)
    code = _child_main(Config.from_dict(json.loads(args.child)))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip TensorFlow's teardown (about a second): everything is reported


if __name__ == "__main__":
    sys.exit(_main())
