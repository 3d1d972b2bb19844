"""Throughput runs and scaling sweeps, each configuration in a fresh child process.

Introduced in lesson 05. TensorFlow fixes its device list once per process, so a run on
``n`` devices needs a process of its own: :func:`run` starts the program ``throughput``
(:mod:`dpkit.programs.throughput`) for one :class:`~dpkit.report.Config` and reads what it measures.
:class:`Sweep` runs several device counts in turn and yields :class:`Event` s as they
arrive; the command line (``python -m dpkit bench``), the notebook widgets
(:mod:`dpkit.views.widgets`) and the benchmarks all share this one runner. ``Config``,
``Result`` and ``Report`` (speed-up, efficiency, MFU) come from :mod:`dpkit.report`.

Safety: every input is checked before a child starts; a child that crashes, or outlives
its timeout, is killed and reported as failed with the tail of its stderr; a child runs in
its own process group and is killed with it on Ctrl-C, on :meth:`Sweep.stop`, at
interpreter exit, and (it watches its parent) when the parent dies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import numbers
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from dpkit import devices, report
from dpkit.plumbing import checks, contract, procs


@dataclass(frozen=True)
class Event:
    """Something that happened during a run, as it happened."""

    # "start" (a child was started), "ready" (it set up its devices and built the model),
    # "peak" (matmul peak measured), "window" (a measurement window finished) or "result"
    # (the run ended, well or not)
    kind: str
    index: int  # position of the run in its sweep (0 for a single run)
    total: int  # number of runs in the sweep
    config: report.Config
    # the child's record ("ready", "peak", "window"); {"reused": True} for a "result" that an
    # earlier run measured (Sweep's reuse)
    data: dict = field(default_factory=dict)
    result: report.Result | None = None  # "result" only
    record: contract.Event | None = None  # "ready", "peak", "window": data as the contract's


def _events(config, index, total, stop: threading.Event, on_child=None, argv=None):
    """Run one config in a child; yield its events, the last one a ``"result"``."""
    started = time.perf_counter()
    deadline = started + config.timeout
    result = report.Result(config=config)
    lines: queue.Queue = queue.Queue()
    argv = argv or procs.program_argv(
        contract.Program.THROUGHPUT, "--config", json.dumps(config.as_dict())
    )
    child = procs.Child(argv, name=f"bench:{config.devices}", kind="bench", lines=lines)
    result.pid = child.pid
    if on_child is not None:
        on_child(child)
    status, broken = None, ""
    try:
        yield Event("start", index, total, config, {"pid": child.pid})
        while status is None:
            if stop.is_set():
                status = "stopped"
                break
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                status = "timeout"
                break
            try:
                _, line = lines.get(timeout=min(remaining, 0.2))
            except queue.Empty:
                continue
            if line is None:  # the child closed stdout: it has finished, died or was stopped
                code = child.wait()
                if stop.is_set():
                    status = "stopped"
                else:
                    done = code == contract.Exit.OK and result.examples_per_sec is not None
                    status = "ok" if done else "failed"
                break
            record = procs.parse_record(line)
            if record is None or "event" not in record:
                continue  # anything else a library printed
            kind, message = record["event"], None
            if kind in contract.EVENTS:  # else not the throughput program's: passed on as is
                try:
                    message = contract.EVENTS[kind].from_record(record)
                except contract.RecordError as error:
                    status, broken = "failed", str(error)
                    break
                _keep(result, message)
                if isinstance(message, contract.ThroughputSummary):
                    continue
            record.pop("event")
            yield Event(kind, index, total, config, record, record=message)
    finally:
        tail = child.close()  # also on GeneratorExit and KeyboardInterrupt
        result.seconds = time.perf_counter() - started
    result.status = status
    if status == "timeout":
        result.error = f"killed after its timeout of {config.timeout:g} s.\n{tail}".strip()
    elif status == "stopped":
        result.error = "stopped on request."
    elif status == "failed":
        result.error = "\n".join(filter(None, [broken, tail])) or (
            f"the child exited with code {child.returncode}."
        )
    yield Event("result", index, total, config, {}, result)


def _keep(result: report.Result, message: contract.Event) -> None:
    """Copy what ``result`` keeps of one of the throughput program's records."""
    if isinstance(message, contract.ThroughputPeak):
        result.peak_flops_per_sec = message.flops_per_sec
    elif isinstance(message, contract.ThroughputWindow):
        result.window_rates.append(message.examples_per_sec)
    else:  # ready, summary: every field report.Result has by the same name
        for name, value in message.to_record().items():
            if hasattr(result, name):
                setattr(result, name, value)


def run(config: report.Config, *, on_event=None) -> report.Result:
    """Run one configuration in a child process, calling ``on_event`` with each :class:`Event`
    as it arrives; return the :class:`~dpkit.report.Result` (check ``result.ok``)."""
    for event in _events(config, 0, 1, threading.Event()):
        if on_event is not None:
            on_event(event)
    return event.result  # the last event is always the result


def describe_event(event: Event) -> str:
    """One line of live progress for an :class:`Event` (the command line prints these)."""
    n, head, d = event.config.devices, f"[{event.index + 1}/{event.total}]", event.record
    if event.kind == "start":
        return f"{head} {n} device(s): starting (pid {event.data['pid']})"
    if isinstance(d, contract.ThroughputReady):
        return f"{head} {n} device(s): {d.device_case.replace('_', ' ')} ready"
    if isinstance(d, contract.ThroughputPeak):
        return f"{head} matmul peak {d.flops_per_sec / 1e9:,.1f} GFLOP/s"
    if isinstance(d, contract.ThroughputWindow):
        return (
            f"{head} {n} device(s): window {d.index + 1}/{event.config.windows}"
            f"  {d.examples_per_sec:10,.0f} examples/sec  (step {d.step}/{d.of_steps})"
        )
    r = event.result
    if event.data.get("reused"):
        return (
            f"{head} {n} device(s): reused the run already measured with the same settings "
            f"(global batch {r.config.global_batch}), median {r.examples_per_sec:,.0f} "
            f"examples/sec over {len(r.window_rates)} windows"
        )
    if r.ok:
        return (
            f"{head} {n} device(s): done, median {r.examples_per_sec:,.0f} examples/sec "
            f"over {len(r.window_rates)} windows, {r.seconds:.1f} s"
        )
    return f"{head} {n} device(s): {r.status.upper()}: {r.error.splitlines()[0] if r.error else ''}"


def load(path: str) -> report.Report:
    """Read the results of ``python -m dpkit bench`` back (:meth:`Report.load`)."""
    return report.Report.load(path)


# ----------------------------------------------------------------------------- sweeps


def _device_counts(counts) -> list[int]:
    counts = [counts] if isinstance(counts, numbers.Integral) else list(counts)
    if not counts:
        raise ValueError("device_counts is empty; pass e.g. [1, 2, 4].")
    checked = [
        devices.count(n, f"every device count in {counts}", "e.g. [1, 2, 4]") for n in counts
    ]
    if len(set(checked)) != len(checked):
        raise ValueError(
            f"device_counts {checked} repeats a count; list each once, e.g. [1, 2, 4]."
        )
    return sorted(checked)


#: What two runs must share to be the same run: strong or weak, only the global batch counts.
SAME_RUN = ("model", "devices", "strategy", "global_batch", "dataset", "seed")
SAME_RUN += ("warmup_steps", "window_steps", "windows")


def same_run(a: report.Config, b: report.Config) -> bool:
    """Whether ``a`` and ``b`` train and measure the same thing (:data:`SAME_RUN`): a weak run
    whose global batch equals a strong run's on as many devices is that strong run."""
    return all(getattr(a, name) == getattr(b, name) for name in SAME_RUN)


def _reusable(configs: list[report.Config], reuse) -> dict[int, report.Result]:
    """``{index: result}``: the configs an earlier, successful result already measured."""
    reuse = list(reuse)
    for r in reuse:
        if not isinstance(r, report.Result):
            raise ValueError(
                f"reuse takes the Results of an earlier sweep (e.g. reuse=report.results), "
                f"got {type(r).__name__}."
            )
    found = {}
    for i, config in enumerate(configs):
        for r in reuse:
            # a run that must measure the peak reuses only a result that measured it
            if (
                r.ok
                and same_run(r.config, config)
                and (r.peak_flops_per_sec or not config.measure_peak)
            ):
                found[i] = dataclasses.replace(r, window_rates=list(r.window_rates))
                break
    return found


def powers_of_two(up_to: int) -> list[int]:
    """``[1, 2, 4, ...]`` up to and including ``up_to`` (which is added if not a power)."""
    up_to = checks.whole(up_to, "up_to", 1, "e.g. powers_of_two(4)")
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

    ``scaling="strong"``: ``batch`` is the global batch, the same for every count;
    ``"weak"``: ``batch`` is per device, the global batch grows with ``n``. ``measure_peak``
    measures the matmul peak in the first run, for MFU; ``reuse``: results of earlier runs
    (``report.results``), each taken over by the configuration it already measured
    (:func:`same_run`) instead of running it again; ``**config`` holds the other
    :class:`~dpkit.report.Config` fields. A bad count, scaling or configuration raises
    ``ValueError`` before any child starts.
    """

    def __init__(
        self,
        device_counts: Iterable[int],
        *,
        scaling: str = "strong",
        measure_peak=True,
        reuse: Iterable[report.Result] = (),
        **config,
    ):
        if scaling not in ("strong", "weak"):
            raise ValueError(f"scaling must be 'strong' or 'weak', got {scaling!r}.")
        for name in ("devices", "per_device", "measure_peak"):
            if name in config:
                raise ValueError(f"{name} is set by the sweep; leave it out of the config.")
        weak, peak = scaling == "weak", bool(measure_peak)
        self.configs = [
            report.Config(devices=n, per_device=weak, measure_peak=peak and i == 0, **config)
            for i, n in enumerate(_device_counts(device_counts))
        ]
        self.reused = _reusable(self.configs, reuse)  # {index: result}: runs not run again
        self.report = report.Report(scaling=scaling)
        self._stop = threading.Event()
        self._child = None
        self._argv = None  # tests swap the child's command line

    def events(self) -> Iterator[Event]:
        """Run the configurations in turn; yield every :class:`Event` as it arrives."""
        total = len(self.configs)
        for index, config in enumerate(self.configs):
            if self._stop.is_set():
                break
            if index in self.reused:
                result = self.reused[index]
                self.report.results.append(result)
                if result.peak_flops_per_sec and config.measure_peak:
                    self.report.peak_flops_per_sec = result.peak_flops_per_sec
                yield Event("result", index, total, config, {"reused": True}, result)
                continue
            run = _events(config, index, total, self._stop, self._set_child, self._argv)
            with contextlib.closing(run):  # leaving early kills the child now, not at GC
                for event in run:
                    if event.kind == "result":
                        self.report.results.append(event.result)
                        if event.result.peak_flops_per_sec and config.measure_peak:
                            self.report.peak_flops_per_sec = event.result.peak_flops_per_sec
                    yield event

    def _set_child(self, child: procs.Child) -> None:
        self._child = child

    def run(self, on_event=None) -> report.Report:
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
            child.kill()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()


def sweep(device_counts: Iterable[int], **kwargs) -> Iterator[Event]:
    """Shorthand for ``Sweep(device_counts, **kwargs).events()``; the last events are results."""
    return Sweep(device_counts, **kwargs).events()
