"""What crosses the process boundary, written once: the parent and the child import it from here.

A parent (``bench``, ``cluster``, ``tasks``, ``pinned``, ``calibrate``, the command line, a
benchmark) starts a registered program (:class:`Program`, :mod:`dpkit.programs`) in a child
process (:mod:`dpkit.plumbing.procs`). Between the two there are only:

* **environment variables**: :data:`PARENT_PID`, :data:`RECORDS`, :data:`RUNS`,
  :data:`WIDGETS`, :data:`GRPC_FAIL_FAST`, and the quiet-TensorFlow
  variables of :data:`QUIET_TENSORFLOW` (``procs.child_env`` sets them all; a process that
  sets its own environment before importing TensorFlow calls :func:`quiet_tensorflow`), and
  :data:`MEMORY_LIMIT`, which a hub's admin or a tool sets for a kernel;
* **records**: one JSON object per stdout line, one frozen dataclass per kind below. A child
  writes one with ``procs.record(Checksum(checksum=...))`` (a misspelt field is a
  ``TypeError`` there); a parent reads one back with ``Checksum.from_record(line_dict)`` or
  ``group.wait_for(name, Checksum)`` (a missing or unknown field is a :class:`RecordError`
  naming both sides' fields). A kind is told by its first field, the key a parent waits
  for; the ``throughput`` program's records are told by their ``"event"`` instead;
* **stdin lines**: :class:`Command` (to ``pinned`` and ``contender``);
* **exit codes**: :class:`Exit`, and :class:`ThroughBarrier` for a program that joined a
  collective and must leave through TensorFlow's shutdown barrier.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any, ClassVar, NoReturn

# ----------------------------------------------------------------------------- environment

#: The starting process's PID (``procs.child_env``), which ``procs.watch_parent`` watches.
PARENT_PID = "DPKIT_PARENT_PID"

#: Set for the children of ``tasks.Group``: the ``task`` program writes records as well as logs.
RECORDS = "DPKIT_RECORDS"

#: Where run folders go (``summaries.writers.runs_root``) instead of ``<checkout>/runs``.
RUNS = "DPKIT_RUNS"

#: ``text`` (or 0/off/no): nobody watches the kernel; ``widgets`` (or 1/on/yes): somebody
#: does. Overrides ``plumbing.notebook.frontend``'s guess (test runners and tools set text).
WIDGETS = "DPKIT_WIDGETS"

#: A memory limit the cgroup does not show (``2G``, ``1500M`` or bytes), read by
#: ``plumbing.quota``; set for a kernel (tools/memory_peak.py) to run a lesson as in a small pod.
MEMORY_LIMIT = "DPKIT_MEMORY_LIMIT"

#: gRPC's fail-fast mode; ``cluster`` gives every task and the coordinator ``use_caller``.
GRPC_FAIL_FAST = "GRPC_FAIL_FAST"

#: Quiet TensorFlow (no C++ info lines) and oneDNN off (the same float maths on every CPU).
QUIET_TENSORFLOW = {"TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0"}


def quiet_tensorflow(environ: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """Set in ``environ`` each :data:`QUIET_TENSORFLOW` variable it does not set; return it.

    A value already there wins (``TF_ENABLE_ONEDNN_OPTS=1 make ...`` turns oneDNN on).
    """
    for name, value in QUIET_TENSORFLOW.items():
        environ.setdefault(name, value)
    return environ


# ----------------------------------------------------------------------------- exit codes


class Exit(enum.IntEnum):
    """The exit codes of dpkit's programs and command line."""

    OK = 0
    FAILED = 1  #: a run failed; a task failed or stalled; a server could not start
    USAGE = 2  #: bad flags or values (argparse's own code), nothing was started
    ORPHANED = 3  #: the parent died (``procs.watch_parent``)
    DIVERGED = 4  #: ``throughput``: the loss stopped being finite
    PORT_TAKEN = 5  #: ``server``: its port was taken (the parent picks new ports)
    PREEMPTED = 42  #: ``preempt``: a checkpoint was saved, start the job again (TF's exit_fn)
    INTERRUPTED = 130  #: Ctrl-C (128 + SIGINT)


@dataclasses.dataclass(frozen=True)
class ThroughBarrier:
    """What a program returns instead of a bare exit code when its process joined a collective
    (``MultiWorkerMirroredStrategy``).

    The router (``python -m dpkit.programs``, ``dpkit task``) then ends the process through
    Python's and TensorFlow's normal exit, which waits at TensorFlow's shutdown barrier until
    every worker is done. ``os._exit`` (used otherwise, to skip a slow teardown) could leave
    while a slower peer is still fetching this worker's share of the last all-reduce, and that
    peer's step fails ("Socket closed").
    """

    code: int = Exit.OK


def leaving(returned: int | ThroughBarrier | None) -> tuple[int, bool]:
    """``(exit code, through the barrier?)`` of what a program returned."""
    if isinstance(returned, ThroughBarrier):
        return int(returned.code), True
    return int(returned or 0), False


def end_process(returned: int | ThroughBarrier | None) -> NoReturn:
    """End this process with what a program returned: a normal exit for a
    :class:`ThroughBarrier`, else ``os._exit``, skipping TensorFlow's slow and noisy teardown
    (and a ps's gRPC server, which cannot be stopped): everything is reported by then."""
    code, barrier = leaving(returned)
    sys.stdout.flush()
    sys.stderr.flush()
    if barrier:
        sys.exit(code)
    os._exit(code)


# ----------------------------------------------------------------------------- programs


class _StrEnum(str, enum.Enum):
    """``enum.StrEnum`` for Python 3.10 too (StrEnum is 3.11+): a member is its value wherever
    a string is made of it (``str()``, f-strings, ``format``, ``" ".join``, ``+``)."""

    __str__ = str.__str__
    __format__ = str.__format__


class Program(_StrEnum):
    """The names of dpkit's programs (``dpkit.programs.PROGRAMS`` maps each to its function)."""

    MWMS = "mwms"
    TF1 = "tf1"
    TASK = "task"
    PINNED = "pinned"
    THROUGHPUT = "throughput"
    SERVER = "server"
    ALLREDUCE = "allreduce"
    CONTENDER = "contender"
    PREEMPT = "preempt"


# ----------------------------------------------------------------------------- stdin commands


class Command(_StrEnum):
    """The stdin lines a parent sends the ``pinned`` and ``contender`` programs."""

    RUN = "run"  #: time steps: ``run K`` (``pinned``: K steps) or ``run`` (``contender``)
    CHECKSUM = "checksum"  #: ``pinned``: ``checksum PATH``: weights to PATH, a :class:`Checksum`
    QUIT = "quit"  #: end (so does the end of stdin)

    def line(self, *args: object) -> str:
        """The stdin line of this command and its arguments, e.g. ``"run 20"``."""
        return " ".join([self.value, *map(str, args)])

    @classmethod
    def parse(cls, line: str) -> tuple[Command, list[str]]:
        """``(command, arguments)`` of a stdin line; an empty line (end of stdin) is ``QUIT``."""
        words = line.split() or [cls.QUIT.value]
        if words[0] not in cls._value2member_map_:
            expected = [c.value for c in cls]
            raise ValueError(f"unknown stdin command {line!r}: expected one of {expected}.")
        return cls(words[0]), words[1:]


# ----------------------------------------------------------------------------- records


class RecordError(ValueError):
    """A record that is not of the kind it was read as (a field missing or unknown)."""


@dataclasses.dataclass(frozen=True)
class Record:
    """A kind of record: subclasses declare its fields; the first is the key a parent waits for.
    A field that defaults to ``None`` is optional: left out of the line while it is ``None``."""

    @classmethod
    def key(cls) -> str:
        return dataclasses.fields(cls)[0].name

    def to_record(self) -> dict[str, Any]:
        """The JSON object of this record (what ``procs.record`` writes)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if not (f.default is None and getattr(self, f.name) is None)
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]):
        """The record of this kind in ``record`` (a parsed stdout line).

        Raises:
            RecordError: a field is missing or unknown; the message names them and the
                fields this kind has, so the writer or the reader can be fixed.
        """
        values = dict(record)
        return cls(**_checked(cls, values, cls.__name__))


def _checked(cls, values: dict, what: str) -> dict:
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    required = [
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    missing = [n for n in required if n not in values]
    unknown = sorted(k for k in values if k not in names)
    if missing or unknown:
        problems = [
            f"missing {missing}" if missing else "",
            f"unknown {unknown}" if unknown else "",
        ]
        raise RecordError(
            f"a {what} record {'; '.join(p for p in problems if p)}: it has the fields "
            f"{names} (dpkit/plumbing/contract.py); got {values!r}. The program that wrote "
            "it and the module that reads it must both use that class."
        )
    return values


@dataclasses.dataclass(frozen=True)
class Event(Record):
    """A record of the ``throughput`` program, told by its ``"event"`` (:data:`EVENTS`)."""

    EVENT: ClassVar[str] = ""

    def to_record(self) -> dict[str, Any]:
        return {"event": self.EVENT, **super().to_record()}

    @classmethod
    def from_record(cls, record: Mapping[str, Any]):
        values = dict(record)
        event = values.pop("event", None)
        if event != cls.EVENT:
            raise RecordError(f"expected the event {cls.EVENT!r}, got {event!r} in {record!r}.")
        return cls(**_checked(cls, values, f"{cls.EVENT!r} event"))


# -- throughput (dpkit.programs.throughput) -> bench
@dataclasses.dataclass(frozen=True)
class ThroughputReady(Event):
    """The devices are set up and the model is built."""

    EVENT: ClassVar[str] = "ready"
    num_devices: int
    device_names: list
    device_case: str
    physical_devices: int
    flops_per_example: int


@dataclasses.dataclass(frozen=True)
class ThroughputPeak(Event):
    """The matmul peak of device 0, in FLOP/s."""

    EVENT: ClassVar[str] = "peak"
    flops_per_sec: float


@dataclasses.dataclass(frozen=True)
class ThroughputWindow(Event):
    """One measurement window of ``meter.ThroughputMeter``."""

    EVENT: ClassVar[str] = "window"
    index: int
    step: int
    of_steps: int
    examples_per_sec: float
    sec_per_step: float
    loss: float


@dataclasses.dataclass(frozen=True)
class ThroughputSummary(Event):
    """The run's ``meter.Summary.as_dict()``, after its last window."""

    EVENT: ClassVar[str] = "summary"
    examples_per_sec: float
    mean_examples_per_sec: float
    spread: float
    sec_per_step: float
    windows: int
    warmup_steps: int


#: The ``throughput`` program's records by their ``"event"``.
EVENTS = {
    e.EVENT: e for e in (ThroughputReady, ThroughputPeak, ThroughputWindow, ThroughputSummary)
}


# -- server (dpkit.programs.server) -> cluster
@dataclasses.dataclass(frozen=True)
class ServerReady(Record):
    """A cluster task's server listens; ``ready`` is its name, e.g. ``"ps:0"``."""

    ready: str


# -- pinned and allreduce (dpkit.programs.pinned, .collective) -> pinned, calibrate
@dataclasses.dataclass(frozen=True)
class WorkerReady(Record):
    """A worker has warmed up (``ready`` is its index among ``workers``)."""

    ready: int
    workers: int
    tensorflow: str
    pid: int


@dataclasses.dataclass(frozen=True)
class Timed(Record):
    """``pinned``: the seconds of the steps asked for (``run K``), and the last loss."""

    seconds: float
    loss: float


@dataclasses.dataclass(frozen=True)
class Checksum(Record):
    """``pinned``: the sum of every weight (the workers must hold the same model)."""

    checksum: float


@dataclasses.dataclass(frozen=True)
class AllReduceTimes(Record):
    """``allreduce``: seconds per all-reduce of ``size_bytes``, one per timed sample."""

    size_bytes: int
    seconds: list
    per_sample: int


@dataclasses.dataclass(frozen=True)
class MatmulPeak(Record):
    """``allreduce``, worker 0: the FLOP/s of ``matmul_size`` square matmuls on one core."""

    matmul_flops_per_s: float
    matmul_size: int


@dataclasses.dataclass(frozen=True)
class Done(Record):
    """``allreduce``: worker ``done`` has written its last record."""

    done: int


# -- mwms and tf1 (dpkit.programs.workers) -> lesson 07's tasks.Group
@dataclasses.dataclass(frozen=True)
class MirroredStep(Record):
    """``mwms``: one step's loss of the whole global batch, seconds since the first."""

    step: int
    loss: float
    seconds: float


@dataclasses.dataclass(frozen=True)
class Saved(Record):
    """``mwms``: ``done`` steps trained, the weights saved to ``out``."""

    done: int
    out: str


@dataclasses.dataclass(frozen=True)
class Placed(Record):
    """``tf1``: worker ``ready`` has its session; where its variables and loss live."""

    ready: int
    placement: dict


@dataclasses.dataclass(frozen=True)
class Stepped(Record):
    """``tf1``: one step run (the caller steps the workers together)."""

    stepped: int


@dataclasses.dataclass(frozen=True)
class GlobalStep(Record):
    """``tf1``: the global step after every step was run."""

    global_step: int


# -- task (dpkit.programs.task) -> lesson 08's tasks.Group
@dataclasses.dataclass(frozen=True)
class TaskProgress(Record):
    """A training task's progress; ``mine``: steps run by this TF1 worker (TF1 only)."""

    step: int
    loss: float
    mine: int | None = None


@dataclasses.dataclass(frozen=True)
class TaskDone(Record):
    """A training task finished: the chief says its loss, accuracy and logdir; a TF1 worker
    that is not the chief the steps it ran (``mine``)."""

    done: bool
    global_step: int
    loss: float | None = None
    accuracy: float | None = None
    logdir: str | None = None
    mine: int | None = None


# -- contender (dpkit.programs.contender) -> benchmarks/towers_vs_mirrored.py
@dataclasses.dataclass(frozen=True)
class ContenderReady(Record):
    """A contender warmed up (or ``failed`` before its first step, saying why)."""

    ready: str
    tensorflow: str
    intra_op_threads: Any
    inter_op_threads: Any
    devices: list
    device_case: str
    failed: str | None = None


@dataclasses.dataclass(frozen=True)
class Round(Record):
    """A contender's seconds for one round of timed steps."""

    seconds: float


# -- preempt (dpkit.programs.preemption) -> lesson 10's preemption.run_job
@dataclasses.dataclass(frozen=True)
class Restored(Record):
    """``preempt``: the handler is made; ``restored`` is the step counter it restored (0: none)."""

    restored: int
    worker: int


@dataclasses.dataclass(frozen=True)
class Paused(Record):
    """``preempt``: ``paused`` steps done; the worker waits for a ``run`` line on stdin."""

    paused: int


@dataclasses.dataclass(frozen=True)
class Preempted(Record):
    """``preempt``: the handler saved at step counter ``preempted`` and exits with ``code``."""

    preempted: int
    code: int
